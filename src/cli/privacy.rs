//! `dpsynth privacy epsilon|sigma`: the accountant's arithmetic from the command line.

use serde_json::json;

use crate::privacy::calibrate;
use crate::privacy::convert::to_epsilon;
use crate::privacy::rdp::{default_orders, explicit_orders, product_orders, subsampled_gaussian};

#[derive(Debug, clap::Subcommand)]
pub enum PrivacyCmd {
    /// ε of T DP-SGD steps (Poisson sampling rate q, noise multiplier σ) at δ.
    Epsilon {
        /// Poisson sampling rate (expected batch size / number of records).
        #[arg(long)]
        q: f64,
        /// Noise multiplier: noise standard deviation / clipping norm.
        #[arg(long)]
        sigma: f64,
        /// Number of steps.
        #[arg(long)]
        steps: u64,
        #[arg(long)]
        delta: f64,
        /// Accountant to use.
        #[arg(long, value_enum, default_value_t = AccountantKind::Rdp)]
        accountant: AccountantKind,
        /// RDP order grid: dpsynth's (default), dp-accounting's defaults, or integers only.
        #[arg(long, value_enum, default_value_t = OrderGrid::Dpsynth)]
        orders: OrderGrid,
        #[arg(long)]
        json: bool,
    },
    /// The smallest noise multiplier σ that keeps T steps at rate q within (ε, δ).
    Sigma {
        #[arg(long)]
        q: f64,
        #[arg(long)]
        steps: u64,
        #[arg(long)]
        epsilon: f64,
        #[arg(long)]
        delta: f64,
        #[arg(long, value_enum, default_value_t = OrderGrid::Dpsynth)]
        orders: OrderGrid,
        #[arg(long)]
        json: bool,
    },
    /// What a guarantee means for one person: the best membership attack's TPR at each
    /// FPR and its accuracy (from (ε, δ), or from a model's mechanisms by PLD), or the
    /// other way round: the ε an attack risk you accept allows (--advantage, or --tpr
    /// with --fpr).
    Risk {
        #[arg(long, conflicts_with_all = ["advantage", "tpr", "model"])]
        epsilon: Option<f64>,
        #[arg(long, required_unless_present = "model")]
        delta: Option<f64>,
        /// A released model: the curve from its statement's mechanisms (PLD: tighter).
        #[arg(long, conflicts_with_all = ["advantage", "tpr"])]
        model: Option<std::path::PathBuf>,
        /// The largest advantage (TPR − FPR) you accept, in (0, 1).
        #[arg(long, conflicts_with = "tpr")]
        advantage: Option<f64>,
        /// The largest TPR you accept at --fpr.
        #[arg(long, requires = "fpr")]
        tpr: Option<f64>,
        #[arg(long, requires = "tpr")]
        fpr: Option<f64>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum AccountantKind {
    Rdp,
    Pld,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum OrderGrid {
    Dpsynth,
    Default,
    Explicit,
}

impl OrderGrid {
    fn orders(self) -> Vec<f64> {
        match self {
            OrderGrid::Dpsynth => product_orders(),
            OrderGrid::Default => default_orders(),
            OrderGrid::Explicit => explicit_orders(),
        }
    }
}

fn check(q: f64, delta: f64) -> anyhow::Result<()> {
    if !(0.0..=1.0).contains(&q) {
        anyhow::bail!("--q must be a sampling rate in [0, 1], got {q}");
    }
    if !(delta > 0.0 && delta < 1.0) {
        anyhow::bail!("--delta must be in (0, 1), got {delta}");
    }
    Ok(())
}

pub fn run(cmd: PrivacyCmd) -> anyhow::Result<()> {
    match cmd {
        PrivacyCmd::Risk {
            epsilon,
            delta,
            model,
            advantage,
            tpr,
            fpr,
            json,
        } => risk(epsilon, delta, model, advantage, tpr.zip(fpr), json),
        PrivacyCmd::Epsilon {
            q,
            sigma,
            steps,
            delta,
            accountant,
            orders,
            json,
        } => {
            check(q, delta)?;
            if !(sigma > 0.0 && sigma.is_finite()) {
                anyhow::bail!("--sigma must be positive, got {sigma}");
            }
            let grid = orders.orders();
            let per = subsampled_gaussian(q, sigma, &grid);
            let total: Vec<f64> = per.iter().map(|x| x * steps as f64).collect();
            let rdp = to_epsilon(&grid, &total, delta);
            match accountant {
                AccountantKind::Rdp => {
                    if json {
                        return super::print_json(&json!({
                            "epsilon": rdp.epsilon,
                            "delta": delta,
                            "accountant": "rdp",
                            "order": rdp.order,
                            "at_grid_edge": rdp.at_grid_edge,
                        }));
                    }
                    println!(
                        "ε = {:.6} at δ = {delta} (RDP, best order {}) for {steps} steps at q = {q}, σ = {sigma}",
                        rdp.epsilon, rdp.order
                    );
                    if rdp.at_grid_edge {
                        println!(
                            "note: the best order is at the edge of the grid; the true RDP bound may be a little lower"
                        );
                    }
                    Ok(())
                }
                AccountantKind::Pld => {
                    let pld =
                        crate::privacy::pld::epsilon_subsampled_gaussian(q, sigma, steps, delta);
                    if json {
                        return super::print_json(&json!({
                            "epsilon": pld,
                            "delta": delta,
                            "accountant": "pld",
                            "order": serde_json::Value::Null,
                            "epsilon_rdp": rdp.epsilon,
                            "order_rdp": rdp.order,
                            "value_discretization_interval": crate::privacy::pld::DEFAULT_INTERVAL,
                        }));
                    }
                    println!(
                        "ε = {pld:.6} at δ = {delta} (PLD, pessimistic connect-the-dots, grid {}) for {steps} steps at q = {q}, σ = {sigma}",
                        crate::privacy::pld::DEFAULT_INTERVAL
                    );
                    println!(
                        "    (RDP gives ε = {:.6} at order {})",
                        rdp.epsilon, rdp.order
                    );
                    Ok(())
                }
            }
        }
        PrivacyCmd::Sigma {
            q,
            steps,
            epsilon,
            delta,
            orders,
            json,
        } => {
            check(q, delta)?;
            let grid = orders.orders();
            let sigma = calibrate::sigma_for(q, steps, epsilon, delta, &grid, &[], 1e-6)?;
            let achieved = calibrate::epsilon_for(q, sigma, steps, delta, &grid);
            if json {
                return super::print_json(&json!({
                    "sigma": sigma,
                    "q": q,
                    "steps": steps,
                    "epsilon": achieved,
                    "target_epsilon": epsilon,
                    "delta": delta,
                    "accountant": "rdp",
                }));
            }
            println!(
                "σ = {sigma:.6} gives ε = {achieved:.6} ≤ {epsilon} at δ = {delta} for {steps} steps at q = {q}"
            );
            Ok(())
        }
    }
}

/// `privacy risk`: the trade-off curve of a guarantee, or the ε an accepted risk allows.
fn risk(
    epsilon: Option<f64>,
    delta: Option<f64>,
    model: Option<std::path::PathBuf>,
    advantage: Option<f64>,
    tpr_at: Option<(f64, f64)>,
    json: bool,
) -> anyhow::Result<()> {
    use crate::privacy::tradeoff;
    let usage = |m: String| crate::job::JobError::Usage(m);
    // The other way round: an accepted risk → the ε it allows.
    if advantage.is_some() || tpr_at.is_some() {
        let delta = delta.ok_or_else(|| usage("--delta is required".into()))?;
        let (eps, what) = match (advantage, tpr_at) {
            (Some(a), _) => (
                tradeoff::epsilon_for_advantage(a, delta),
                format!("an attacker's advantage (TPR − FPR) of at most {a}"),
            ),
            (None, Some((t, f))) => (
                tradeoff::epsilon_for_tpr(t, f, delta),
                format!("a TPR of at most {t} at FPR {f}"),
            ),
            (None, None) => {
                return Err(usage("give --advantage, or --tpr with --fpr".into()).into());
            }
        };
        let eps = eps.ok_or_else(|| {
            usage(format!(
                "{what} cannot be guaranteed at δ = {delta}: δ alone allows more (lower δ, or accept more)"
            ))
        })?;
        if json {
            return super::print_json(&json!({
                "epsilon": eps,
                "delta": delta,
                "accepts": what,
                "max_accuracy": tradeoff::max_accuracy(eps, delta),
            }));
        }
        println!("{what} at δ = {delta} allows ε ≤ {eps:.4}");
        println!("{}", tradeoff::sentence(eps, delta));
        return Ok(());
    }
    let (eps, delta, curve, source) = match model {
        Some(path) => {
            let m = crate::job::services::read_model(&path)?;
            let st = m.statement;
            let delta = delta.unwrap_or(st.delta);
            let eps = st.epsilon.unwrap_or(f64::INFINITY);
            let curve = crate::privacy::compose::pld_delta_curve(
                &st.mechanisms,
                &tradeoff::epsilon_grid(eps),
            );
            let source = if curve.is_some() {
                "pld"
            } else {
                "epsilon_delta"
            };
            (eps, delta, curve, source)
        }
        None => {
            let eps = epsilon.ok_or_else(|| {
                usage("give --epsilon, --model, --advantage or --tpr with --fpr".into())
            })?;
            let delta = delta.ok_or_else(|| usage("--delta is required".into()))?;
            (eps, delta, None, "epsilon_delta")
        }
    };
    if !(eps >= 0.0) || !(0.0..1.0).contains(&delta) {
        return Err(usage(format!(
            "ε must be ≥ 0 and δ in [0, 1), got {eps} and {delta}"
        ))
        .into());
    }
    let at = |f: f64| match &curve {
        Some(c) => tradeoff::tpr_bound_from_curve(c, f),
        None => tradeoff::tpr_bound(eps, delta, f),
    };
    let points: Vec<(f64, f64)> = tradeoff::fpr_grid()
        .into_iter()
        .map(|f| (f, at(f)))
        .collect();
    let adv = match &curve {
        Some(c) => tradeoff::max_advantage_from_curve(c),
        None => tradeoff::max_advantage(eps, delta),
    };
    let sentence = match &curve {
        Some(_) if eps.is_finite() => format!(
            "An attacker who guesses whether a given person was in the data is right at most {:.1} % of the time, against 50 % by chance (from the privacy-loss distribution; (ε, δ) = ({eps:.3}, {delta}) alone allows {:.1} %).",
            50.0 * (1.0 + adv),
            100.0 * tradeoff::max_accuracy(eps, delta)
        ),
        _ => tradeoff::sentence(eps, delta),
    };
    if json {
        return super::print_json(&json!({
            "epsilon": if eps.is_finite() { json!(eps) } else { json!(null) },
            "delta": delta,
            "source": source,
            "max_accuracy": (1.0 + adv) / 2.0,
            "max_advantage": adv,
            "sentence": sentence,
            "curve": points.iter().map(|(f, t)| json!({"fpr": f, "tpr": t})).collect::<Vec<_>>(),
        }));
    }
    println!("{sentence}");
    println!(
        "the best membership attack's true-positive rate (from {}):",
        if source == "pld" {
            "the model's privacy-loss distribution"
        } else {
            "(ε, δ)"
        }
    );
    for f in [0.001, 0.01, 0.05, 0.1, 0.25, 0.5] {
        println!("  at FPR {f:<5}  TPR ≤ {:.4}", at(f));
    }
    Ok(())
}
