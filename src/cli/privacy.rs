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
        } => epsilon_cmd(q, sigma, steps, delta, accountant, orders.orders(), json),
        PrivacyCmd::Sigma {
            q,
            steps,
            epsilon,
            delta,
            orders,
            json,
        } => sigma_cmd(q, steps, epsilon, delta, orders.orders(), json),
    }
}

/// `privacy epsilon`: the ε of `steps` subsampled Gaussian steps, by RDP or PLD.
fn epsilon_cmd(
    q: f64,
    sigma: f64,
    steps: u64,
    delta: f64,
    accountant: AccountantKind,
    grid: Vec<f64>,
    json: bool,
) -> anyhow::Result<()> {
    check(q, delta)?;
    if !(sigma > 0.0 && sigma.is_finite()) {
        anyhow::bail!("--sigma must be positive, got {sigma}");
    }
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
            let pld = crate::privacy::pld::epsilon_subsampled_gaussian(q, sigma, steps, delta);
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

/// `privacy sigma`: the smallest σ that keeps `steps` steps within (ε, δ).
fn sigma_cmd(
    q: f64,
    steps: u64,
    epsilon: f64,
    delta: f64,
    grid: Vec<f64>,
    json: bool,
) -> anyhow::Result<()> {
    check(q, delta)?;
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

/// `privacy risk`: the trade-off curve of a guarantee, or the ε an accepted risk allows.
fn risk(
    epsilon: Option<f64>,
    delta: Option<f64>,
    model: Option<std::path::PathBuf>,
    advantage: Option<f64>,
    tpr_at: Option<(f64, f64)>,
    json: bool,
) -> anyhow::Result<()> {
    use crate::job::risk::{AcceptedRisk, CurveSource, RiskCurve};
    let usage = |m: String| crate::job::JobError::Usage(m);
    // The other way round: an accepted risk → the ε it allows.
    let accepted = match (advantage, tpr_at) {
        (Some(a), _) => Some(AcceptedRisk::Advantage(a)),
        (None, Some((tpr, fpr))) => Some(AcceptedRisk::TprAt { tpr, fpr }),
        (None, None) => None,
    };
    if let Some(accepted) = accepted {
        let delta = delta.ok_or_else(|| usage("--delta is required".into()))?;
        let eps = accepted.epsilon(delta).map_err(usage)?;
        let what = accepted.describe();
        if json {
            return super::print_json(&json!({
                "epsilon": eps,
                "delta": delta,
                "accepts": what,
                "max_accuracy": crate::job::risk::max_accuracy(eps, delta),
            }));
        }
        println!("{what} at δ = {delta} allows ε ≤ {eps:.4}");
        println!("{}", crate::job::risk::sentence(eps, delta));
        return Ok(());
    }
    let curve = match model {
        Some(path) => {
            let m = crate::job::services::read_model(&path)?;
            RiskCurve::of_statement(&m.statement, delta)
        }
        None => {
            let eps = epsilon.ok_or_else(|| {
                usage("give --epsilon, --model, --advantage or --tpr with --fpr".into())
            })?;
            let delta = delta.ok_or_else(|| usage("--delta is required".into()))?;
            if !(eps >= 0.0) {
                return Err(usage(format!("ε must be ≥ 0, got {eps}")).into());
            }
            RiskCurve::of_guarantee(eps, delta)
        }
    };
    if !(0.0..1.0).contains(&curve.delta) {
        return Err(usage(format!("δ must be in [0, 1), got {}", curve.delta)).into());
    }
    if json {
        return super::print_json(&json!({
            "epsilon": curve.epsilon,
            "delta": curve.delta,
            "source": match curve.source {
                CurveSource::Pld => "pld",
                CurveSource::EpsilonDelta => "epsilon_delta",
            },
            "max_accuracy": curve.max_accuracy,
            "max_advantage": curve.max_advantage,
            "sentence": curve.sentence,
            "curve": curve.points.iter().map(|(f, t)| json!({"fpr": f, "tpr": t})).collect::<Vec<_>>(),
        }));
    }
    println!("{}", curve.sentence);
    println!(
        "the best membership attack's true-positive rate (from {}):",
        match curve.source {
            CurveSource::Pld => "the model's privacy-loss distribution",
            CurveSource::EpsilonDelta => "(ε, δ)",
        }
    );
    for f in [0.001, 0.01, 0.05, 0.1, 0.25, 0.5] {
        println!("  at FPR {f:<5}  TPR ≤ {:.4}", curve.tpr_at(f));
    }
    Ok(())
}
