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
