//! Calibration: the noise a target needs, and the steps a budget allows.
//!
//! Both searches are conservative, as Opacus's: bisection keeps the end of the bracket
//! that satisfies the target and returns it, so the answer never overshoots.

use super::compose::compose;
use super::convert::to_epsilon;
use super::mechanism::Mechanism;
use super::mechanism::{Charge, charges_curve};
use super::rdp::subsampled_gaussian;

/// Largest noise multiplier tried before declaring the target unreachable.
pub const MAX_SIGMA: f64 = 1e4;

/// Why a calibration failed, in words a person can act on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalibrationError {
    #[error(
        "the target ε={epsilon} at δ={delta} cannot be met with {steps} steps at q={q} even with noise multiplier {MAX_SIGMA}; raise ε, sample fewer records per step, or train fewer steps"
    )]
    BudgetTooSmall {
        epsilon: f64,
        delta: f64,
        q: f64,
        steps: u64,
    },
    #[error("invalid input: {0}")]
    Invalid(String),
}

fn eps_of(q: f64, sigma: f64, steps: u64, delta: f64, orders: &[f64]) -> f64 {
    let r: Vec<f64> = subsampled_gaussian(q, sigma, orders)
        .iter()
        .map(|x| x * steps as f64)
        .collect();
    to_epsilon(orders, &r, delta).epsilon
}

/// The smallest σ (within `tol`) such that `steps` Poisson-subsampled Gaussian steps at
/// rate `q` stay within (ε, δ) on `orders`, with the RDP already spent in `base` (one
/// value per order; empty for none) added first.
pub fn sigma_for(
    q: f64,
    steps: u64,
    epsilon: f64,
    delta: f64,
    orders: &[f64],
    base: &[f64],
    tol: f64,
) -> Result<f64, CalibrationError> {
    if !(q > 0.0 && q <= 1.0) {
        return Err(CalibrationError::Invalid(format!(
            "q must be in (0, 1], got {q}"
        )));
    }
    if !(epsilon > 0.0 && epsilon.is_finite()) || !(delta > 0.0 && delta < 1.0) {
        return Err(CalibrationError::Invalid(format!(
            "need ε > 0 and 0 < δ < 1, got ε={epsilon}, δ={delta}"
        )));
    }
    if steps == 0 {
        return Ok(0.0);
    }
    let eps = |s: f64| -> f64 {
        let r: Vec<f64> = subsampled_gaussian(q, s, orders)
            .iter()
            .enumerate()
            .map(|(i, x)| x * steps as f64 + base.get(i).copied().unwrap_or(0.0))
            .collect();
        to_epsilon(orders, &r, delta).epsilon
    };
    let mut hi = 1.0;
    while eps(hi) > epsilon {
        hi *= 2.0;
        if hi > MAX_SIGMA {
            return Err(CalibrationError::BudgetTooSmall {
                epsilon,
                delta,
                q,
                steps,
            });
        }
    }
    let mut lo = 0.0;
    while hi - lo > tol {
        let mid = 0.5 * (lo + hi);
        if eps(mid) > epsilon {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(hi)
}

/// The smallest noise multiplier σ for which the plan `make(σ)` composes to at most ε at
/// δ by the tighter of RDP and PLD ([`compose`]: the figure the run's accountant and the
/// ledger check), to relative precision `rel_tol`. The answer always satisfies the target
/// (bisection keeps the fitting end). `hint` is a σ that probably fits, e.g. the RDP
/// calibration; the search widens from it when it does not.
///
/// Each step costs a PLD composition (tens of milliseconds to about a second), so the
/// search starts from the hint and takes about log₂(1/rel_tol) + 2 of them.
pub fn sigma_for_plan(
    make: impl Fn(f64) -> Vec<Charge>,
    epsilon: f64,
    delta: f64,
    orders: &[f64],
    hint: f64,
    rel_tol: f64,
) -> Result<f64, CalibrationError> {
    if !(epsilon > 0.0 && epsilon.is_finite()) || !(delta > 0.0 && delta < 1.0) {
        return Err(CalibrationError::Invalid(format!(
            "need ε > 0 and 0 < δ < 1, got ε={epsilon}, δ={delta}"
        )));
    }
    let fits = |s: f64| {
        let plan = make(s);
        let rdp = to_epsilon(orders, &charges_curve(&plan, orders), delta).epsilon;
        rdp <= epsilon || compose(&plan, orders, delta).epsilon <= epsilon
    };
    let unreachable = || {
        let plan = make(MAX_SIGMA);
        let (q, steps) = plan
            .iter()
            .find_map(|c| match c.mechanism {
                Mechanism::SubsampledGaussian { q, .. } => Some((q, c.count)),
                _ => None,
            })
            .unwrap_or((1.0, 1));
        CalibrationError::BudgetTooSmall {
            epsilon,
            delta,
            q,
            steps,
        }
    };
    let mut hi = if hint.is_finite() && hint > 0.0 {
        hint
    } else {
        1.0
    };
    while !fits(hi) {
        hi *= 2.0;
        if hi > MAX_SIGMA {
            return Err(unreachable());
        }
    }
    let mut lo = hi / 2.0;
    while fits(lo) {
        hi = lo;
        lo /= 2.0;
        if lo < 1e-3 {
            return Ok(hi);
        }
    }
    while hi - lo > rel_tol * hi {
        let mid = 0.5 * (lo + hi);
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// The largest number of steps (≤ `max_steps`) at (q, σ) that keeps ε ≤ `epsilon`.
pub fn max_steps(
    q: f64,
    sigma: f64,
    epsilon: f64,
    delta: f64,
    orders: &[f64],
    max_steps: u64,
) -> u64 {
    let per: Vec<f64> = subsampled_gaussian(q, sigma, orders);
    let fits = |t: u64| {
        let r: Vec<f64> = per.iter().map(|x| x * t as f64).collect();
        to_epsilon(orders, &r, delta).epsilon <= epsilon
    };
    if !fits(1) {
        return 0;
    }
    if fits(max_steps) {
        return max_steps;
    }
    let (mut lo, mut hi) = (1u64, max_steps);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// ε of `steps` subsampled-Gaussian steps (RDP, improved conversion).
pub fn epsilon_for(q: f64, sigma: f64, steps: u64, delta: f64, orders: &[f64]) -> f64 {
    eps_of(q, sigma, steps, delta, orders)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::rdp::default_orders;

    #[test]
    fn max_steps_is_the_last_step_that_fits() {
        let o = default_orders();
        let t = max_steps(0.01, 1.1, 2.0, 1e-5, &o, 1_000_000);
        assert!(t > 0);
        assert!(epsilon_for(0.01, 1.1, t, 1e-5, &o) <= 2.0);
        assert!(epsilon_for(0.01, 1.1, t + 1, 1e-5, &o) > 2.0);
        assert_eq!(max_steps(0.01, 1.1, 1e-6, 1e-5, &o, 100), 0);
        assert_eq!(max_steps(0.001, 50.0, 10.0, 1e-5, &o, 100), 100);
    }

    #[test]
    fn sigma_respects_prior_spending_and_refuses_the_impossible() {
        let o = default_orders();
        let alone = sigma_for(0.01, 1000, 1.0, 1e-5, &o, &[], 1e-6).unwrap();
        let base: Vec<f64> = subsampled_gaussian(0.01, 2.0, &o)
            .iter()
            .map(|x| x * 500.0)
            .collect();
        let after = sigma_for(0.01, 1000, 1.0, 1e-5, &o, &base, 1e-6).unwrap();
        assert!(after > alone, "spending first must call for more noise");
        assert!(matches!(
            sigma_for(1.0, 1_000_000_000, 1e-3, 1e-9, &o, &[], 1e-6),
            Err(CalibrationError::BudgetTooSmall { .. })
        ));
    }

    #[test]
    fn the_tighter_accountant_buys_less_noise_and_still_fits() {
        let o = crate::privacy::rdp::product_orders();
        let make = |s: f64| {
            vec![Charge {
                mechanism: Mechanism::SubsampledGaussian { q: 0.02, sigma: s },
                count: 500,
            }]
        };
        let rdp = sigma_for(0.02, 500, 1.0, 1e-5, &o, &[], 1e-6).unwrap();
        let best = sigma_for_plan(make, 1.0, 1e-5, &o, rdp, 1e-3).unwrap();
        assert!(best < rdp * 0.95, "PLD σ {best} vs RDP σ {rdp}");
        let c = compose(&make(best), &o, 1e-5);
        assert!(c.epsilon <= 1.0, "{c:?}");
        // …and is the smallest that does, to the tolerance.
        assert!(compose(&make(best * 0.995), &o, 1e-5).epsilon > 1.0);
    }
}
