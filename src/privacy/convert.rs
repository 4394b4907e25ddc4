//! RDP → (ε, δ): the conversion dp-accounting uses (`rdp.compute_epsilon`), i.e.
//! Canonne, Kamath & Steinke 2020 Prop. 12 (= Asoodeh et al. 2020 Eq. 20):
//!
//! ε = max(0, min_α [ r_α + ln(1 − 1/α) − ln(δ·α)/(α − 1) ]) over orders α > 1.01,
//!
//! with an order giving ε = 0 when δ² + expm1(−r_α) > 0 (δ ≥ √(1 − e^{−KL})), and the
//! classic Mironov 2017 Prop. 3 form for comparison.

use serde::Serialize;

/// An ε and the order that achieved it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EpsilonAt {
    pub epsilon: f64,
    pub order: f64,
    /// The best order is the smallest or largest of the grid: a wider grid might do better.
    pub at_grid_edge: bool,
}

/// The smallest ε over the orders (improved conversion). δ must be in (0, 1).
pub fn to_epsilon(orders: &[f64], rdp: &[f64], delta: f64) -> EpsilonAt {
    best(
        orders,
        rdp.iter().zip(orders).map(|(&r, &a)| eps_at(a, r, delta)),
    )
}

fn eps_at(a: f64, r: f64, delta: f64) -> f64 {
    if r.is_nan() || r.is_infinite() {
        return f64::INFINITY;
    }
    if delta * delta + (-r).exp_m1() > 0.0 {
        0.0
    } else if a > 1.01 {
        r + (-1.0 / a).ln_1p() - (delta * a).ln() / (a - 1.0)
    } else {
        f64::INFINITY
    }
}

/// The classic conversion ε = min_α r_α + ln(1/δ)/(α − 1).
pub fn to_epsilon_classic(orders: &[f64], rdp: &[f64], delta: f64) -> EpsilonAt {
    best(
        orders,
        rdp.iter().zip(orders).map(|(&r, &a)| {
            if a <= 1.0 || r.is_nan() {
                f64::INFINITY
            } else {
                r + (1.0 / delta).ln() / (a - 1.0)
            }
        }),
    )
}

fn best(orders: &[f64], eps: impl Iterator<Item = f64>) -> EpsilonAt {
    let mut out = EpsilonAt {
        epsilon: f64::INFINITY,
        order: f64::NAN,
        at_grid_edge: false,
    };
    let mut idx = 0;
    for (i, e) in eps.enumerate() {
        if e < out.epsilon {
            out.epsilon = e;
            out.order = orders[i];
            idx = i;
        }
    }
    if out.epsilon.is_finite() {
        out.epsilon = out.epsilon.max(0.0);
        out.at_grid_edge = idx == 0 || idx + 1 == orders.len();
    }
    out
}

/// The smallest δ for which the RDP curve gives (ε, δ)-DP (dp-accounting's
/// `compute_delta`), with the order achieving it.
pub fn to_delta(orders: &[f64], rdp: &[f64], epsilon: f64) -> (f64, f64) {
    let mut best = (f64::INFINITY, f64::NAN);
    for (&a, &r) in orders.iter().zip(rdp) {
        if a < 1.01 || r.is_nan() {
            continue;
        }
        // δ ≤ √(1 − e^{−r}) always holds (Pinsker-type bound).
        let mut log_delta = 0.5 * (-(-r).exp()).ln_1p();
        if a > 1.01 {
            let b = (a - 1.0) * (r - epsilon + (-1.0 / a).ln_1p()) - a.ln();
            log_delta = log_delta.min(b);
        }
        if log_delta < best.0 {
            best = (log_delta, a);
        }
    }
    (best.0.exp().min(1.0), best.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_rdp_gives_zero_epsilon() {
        let o = [2.0, 4.0];
        assert_eq!(to_epsilon(&o, &[0.0, 0.0], 1e-5).epsilon, 0.0);
        assert!(
            to_epsilon(&o, &[f64::INFINITY, f64::INFINITY], 1e-5)
                .epsilon
                .is_infinite()
        );
    }

    #[test]
    fn delta_and_epsilon_are_inverse() {
        let orders = super::super::rdp::default_orders();
        let r: Vec<f64> = orders.iter().map(|a| a * 0.05).collect();
        let e = to_epsilon(&orders, &r, 1e-5).epsilon;
        let (d, _) = to_delta(&orders, &r, e);
        assert!(d <= 1e-5 * (1.0 + 1e-9), "{d}");
    }
}

/// ε of a ρ-zCDP guarantee at δ, with the improved conversion minimised over real α > 1
/// (golden-section search on ln(α − 1), where the objective is unimodal).
pub fn zcdp_to_epsilon(rho: f64, delta: f64) -> f64 {
    if rho <= 0.0 {
        return 0.0;
    }
    let f = |t: f64| {
        let a = 1.0 + t.exp();
        let r = a * rho;
        if delta * delta + (-r).exp_m1() > 0.0 {
            return 0.0;
        }
        r + (-1.0 / a).ln_1p() - (delta.ln() + a.ln()) / (a - 1.0)
    };
    let (mut lo, mut hi) = (-30.0f64, 30.0f64);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let mut x1 = hi - g * (hi - lo);
    let mut x2 = lo + g * (hi - lo);
    let (mut f1, mut f2) = (f(x1), f(x2));
    for _ in 0..200 {
        if f1 < f2 {
            hi = x2;
            x2 = x1;
            f2 = f1;
            x1 = hi - g * (hi - lo);
            f1 = f(x1);
        } else {
            lo = x1;
            x1 = x2;
            f1 = f2;
            x2 = lo + g * (hi - lo);
            f2 = f(x2);
        }
    }
    f1.min(f2).max(0.0)
}

/// The classic zCDP conversion ρ + 2√(ρ ln(1/δ)) (Bun & Steinke 2016, Prop. 1.3).
pub fn zcdp_to_epsilon_classic(rho: f64, delta: f64) -> f64 {
    rho + 2.0 * (rho * (1.0 / delta).ln()).sqrt()
}
