//! What ε means for a person in the data: the hypothesis-testing view of DP (Kairouz, Oh &
//! Viswanath 2015; Dong, Roth & Su 2019). An attacker who sees the release and must say
//! whether one given person was in the data is a test of "in" against "out"; DP bounds
//! its true-positive rate at every false-positive rate.
//!
//! - From (ε, δ) alone: TPR ≤ min(1, e^ε·FPR + δ, 1 − e^{−ε}(1 − δ − FPR)).
//! - From a privacy-loss distribution, whose δ(ε′) is known at every ε′ (tighter: a run is
//!   (ε′, δ(ε′))-DP for all ε′ at once): the same bound minimised over ε′.
//!
//! With a prior of ½ (in or out by a coin), the best attacker is right at most
//! (1 + adv)/2 of the time, adv = max(TPR − FPR) = (e^ε − 1 + 2δ)/(e^ε + 1) under (ε, δ).
//! The inverses turn an attack risk the user accepts into the ε that guarantees it.

/// The largest TPR any attack reaches at `fpr` against an (ε, δ)-DP release.
pub fn tpr_bound(epsilon: f64, delta: f64, fpr: f64) -> f64 {
    let fpr = fpr.clamp(0.0, 1.0);
    let delta = delta.clamp(0.0, 1.0);
    if !epsilon.is_finite() {
        return if fpr > 0.0 { 1.0 } else { delta.min(1.0) };
    }
    let a = epsilon.exp() * fpr + delta;
    let b = 1.0 - (-epsilon).exp() * (1.0 - delta - fpr);
    a.min(b).clamp(fpr, 1.0)
}

/// The TPR bound from a δ(ε′) curve (pairs (ε′, δ(ε′)), e.g. from the PLD): the smallest
/// (ε′, δ(ε′)) bound over the curve.
pub fn tpr_bound_from_curve(curve: &[(f64, f64)], fpr: f64) -> f64 {
    curve
        .iter()
        .map(|(e, d)| tpr_bound(*e, *d, fpr))
        .fold(1.0, f64::min)
}

/// FPRs to draw a trade-off curve at: 0, then log-spaced from 1e-4 to 1.
pub fn fpr_grid() -> Vec<f64> {
    let mut g = vec![0.0];
    let n = 60;
    for i in 0..=n {
        g.push(10f64.powf(-4.0 + 4.0 * i as f64 / n as f64));
    }
    g
}

/// ε′ values to read a PLD's δ(ε′) at for [`tpr_bound_from_curve`].
pub fn epsilon_grid(max: f64) -> Vec<f64> {
    let top = if max.is_finite() {
        (3.0 * max).max(1.0)
    } else {
        20.0
    };
    (0..=200).map(|i| top * i as f64 / 200.0).collect()
}

/// The best attacker's advantage max(TPR − FPR) against (ε, δ)-DP.
pub fn max_advantage(epsilon: f64, delta: f64) -> f64 {
    if !epsilon.is_finite() {
        return 1.0;
    }
    ((epsilon.exp() - 1.0 + 2.0 * delta) / (epsilon.exp() + 1.0)).clamp(0.0, 1.0)
}

/// The best attacker's advantage under a δ(ε′) curve: the smallest (ε′, δ(ε′)) advantage
/// over the curve. A sound upper bound (max over FPR of a min is at most the min of the
/// maxima), and exact when the curve holds ε′ = 0, where δ(0) is the total variation
/// distance between the two output distributions, the best test's advantage.
pub fn max_advantage_from_curve(curve: &[(f64, f64)]) -> f64 {
    curve
        .iter()
        .map(|(e, d)| max_advantage(*e, *d))
        .fold(1.0, f64::min)
}

/// The best attacker's accuracy guessing "in or out" for one person, against a coin's ½.
pub fn max_accuracy(epsilon: f64, delta: f64) -> f64 {
    (1.0 + max_advantage(epsilon, delta)) / 2.0
}

/// The largest ε at which no attacker's advantage exceeds `advantage` (at `delta`); `None`
/// when δ alone already allows it.
pub fn epsilon_for_advantage(advantage: f64, delta: f64) -> Option<f64> {
    if !(0.0..1.0).contains(&advantage) || advantage < 2.0 * delta {
        return None;
    }
    Some(
        ((1.0 + advantage - 2.0 * delta) / (1.0 - advantage))
            .ln()
            .max(0.0),
    )
}

/// The largest ε at which no attacker exceeds `tpr` at `fpr` (at `delta`): the bound is
/// the smaller of [`tpr_bound`]'s two halves, each increasing in ε, so it stays at or below
/// `tpr` until the later of the two reaches it. `None` when δ alone allows it.
pub fn epsilon_for_tpr(tpr: f64, fpr: f64, delta: f64) -> Option<f64> {
    if !(fpr > 0.0 && fpr < tpr && tpr < 1.0) || tpr <= fpr + delta {
        return None;
    }
    let a = ((tpr - delta) / fpr).ln();
    let b = ((1.0 - delta - fpr) / (1.0 - tpr)).ln();
    Some(a.max(b).max(0.0))
}

/// One plain sentence about (ε, δ).
pub fn sentence(epsilon: f64, delta: f64) -> String {
    if !epsilon.is_finite() {
        return "Not private: an attacker may tell for certain whether a given person was in the data.".into();
    }
    format!(
        "An attacker who guesses whether a given person was in the data is right at most {:.1} % of the time, against 50 % by chance (ε = {epsilon:.3}, δ = {delta}).",
        100.0 * max_accuracy(epsilon, delta)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ε = 0 is a coin: TPR = FPR (plus δ); ε = ∞ is certainty.
    #[test]
    fn the_ends_of_the_scale() {
        for f in [0.0, 0.01, 0.3, 0.9] {
            assert!((tpr_bound(0.0, 0.0, f) - f).abs() < 1e-12);
        }
        assert_eq!(tpr_bound(f64::INFINITY, 0.0, 0.01), 1.0);
        assert_eq!(max_accuracy(0.0, 0.0), 0.5);
        assert_eq!(max_accuracy(f64::INFINITY, 0.0), 1.0);
    }

    /// Pure ε: TPR ≤ e^ε·FPR where that is below the symmetric bound, and the symmetric
    /// bound 1 − e^{−ε}(1 − FPR) above the crossing at FPR = 1/(1 + e^ε).
    #[test]
    fn pure_epsilon_closed_forms() {
        let e: f64 = 1.0;
        let cross = 1.0 / (1.0 + e.exp());
        for f in [0.001, 0.05, 0.2, cross - 1e-6] {
            assert!((tpr_bound(e, 0.0, f) - e.exp() * f).abs() < 1e-12, "{f}");
        }
        for f in [cross + 1e-6, 0.5, 0.9] {
            let sym = 1.0 - (-e).exp() * (1.0 - f);
            assert!((tpr_bound(e, 0.0, f) - sym).abs() < 1e-12, "{f}");
        }
        // The best accuracy is reached at the crossing.
        let adv = tpr_bound(e, 0.0, cross) - cross;
        assert!((adv - max_advantage(e, 0.0)).abs() < 1e-9);
        assert!((max_accuracy(1.0, 0.0) - e.exp() / (1.0 + e.exp())).abs() < 1e-12);
    }

    fn phi(x: f64) -> f64 {
        0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
    }

    fn phi_inv(p: f64) -> f64 {
        let (mut lo, mut hi) = (-40.0, 40.0);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if phi(mid) < p {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        0.5 * (lo + hi)
    }

    /// For the Gaussian mechanism the exact trade-off is μ-GDP's Φ(Φ⁻¹(FPR) + μ): the
    /// bound read off the PLD is sound (never below it) and tight (within 0.01), and
    /// tighter than the single (ε, δ) point.
    #[test]
    fn the_pld_curve_matches_the_gaussian_trade_off() {
        use crate::privacy::{Charge, Mechanism};
        let std = 2.0;
        let charges = [Charge {
            mechanism: Mechanism::Gaussian {
                sensitivity: 1.0,
                std,
            },
            count: 1,
        }];
        let curve = crate::privacy::compose::pld_delta_curve(&charges, &epsilon_grid(2.0)).unwrap();
        let eps = crate::privacy::compose::pld_epsilon(&charges, 1e-5).unwrap();
        for f in [1e-4, 1e-3, 0.01, 0.05, 0.2, 0.5, 0.8] {
            let exact = phi(phi_inv(f) + 1.0 / std);
            let pld = tpr_bound_from_curve(&curve, f);
            assert!(
                pld >= exact - 1e-6,
                "FPR {f}: {pld} below the exact {exact}"
            );
            assert!(pld <= exact + 0.01, "FPR {f}: {pld} vs the exact {exact}");
            assert!(pld <= tpr_bound(eps, 1e-5, f) + 1e-9, "FPR {f}");
        }
    }

    /// A DP-SGD run's curve from its PLD lies under the (ε, δ) bound of the same run and
    /// above the diagonal.
    #[test]
    fn a_dpsgd_run_curve_sits_under_its_epsilon_delta_bound() {
        use crate::privacy::{Charge, Mechanism};
        let charges = [Charge {
            mechanism: Mechanism::SubsampledGaussian {
                q: 0.01,
                sigma: 1.1,
            },
            count: 1_000,
        }];
        let eps = crate::privacy::compose::pld_epsilon(&charges, 1e-5).unwrap();
        let curve = crate::privacy::compose::pld_delta_curve(&charges, &epsilon_grid(eps)).unwrap();
        for f in fpr_grid() {
            let pld = tpr_bound_from_curve(&curve, f);
            assert!(
                pld >= f - 1e-12 && pld <= tpr_bound(eps, 1e-5, f) + 1e-9,
                "{f}: {pld}"
            );
        }
    }

    /// A one-point curve is the (ε, δ) bound: the same advantage.
    #[test]
    fn a_one_point_curve_is_its_epsilon_delta() {
        let adv = max_advantage_from_curve(&[(1.0, 1e-5)]);
        assert!((adv - max_advantage(1.0, 1e-5)).abs() < 1e-12, "{adv}");
        // Over a grid of 1,001 FPRs the curve never beats the bound.
        let curve = [(0.0, 0.3), (1.0, 0.05), (3.0, 1e-3)];
        let grid = (0..=1000)
            .map(|i| tpr_bound_from_curve(&curve, i as f64 / 1000.0) - i as f64 / 1000.0)
            .fold(0.0, f64::max);
        assert!(grid <= max_advantage_from_curve(&curve) + 1e-12);
        assert!(
            (max_advantage_from_curve(&curve) - 0.3).abs() < 1e-12,
            "δ(0) is the TV"
        );
    }

    /// The inverses give back the ε they came from.
    #[test]
    fn inverses_round_trip() {
        for (e, d) in [(0.1, 0.0), (1.0, 1e-5), (3.0, 1e-6), (8.0, 1e-9)] {
            let adv = max_advantage(e, d);
            assert!((epsilon_for_advantage(adv, d).unwrap() - e).abs() < 1e-9);
            let fpr = 0.01;
            let tpr = tpr_bound(e, d, fpr);
            assert!(
                (epsilon_for_tpr(tpr, fpr, d).unwrap() - e).abs() < 1e-9,
                "{e}"
            );
        }
        assert!(epsilon_for_advantage(1e-6, 1e-5).is_none());
    }
}
