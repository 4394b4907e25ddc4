//! The exponential mechanism (McSherry & Talwar 2007): pick one of a few candidates with
//! probability growing exponentially in its utility, and the per-round ε₀ a number of
//! rounds may use.
//!
//! Privacy: with utilities of sensitivity Δ (one record moves any utility by at most Δ),
//! P(r) ∝ exp(ε₀·u(r) / (2Δ)) is ε₀-DP and ε₀-bounded-range. When the utilities are
//! *monotone* — adding a record moves every utility in the same direction, by at most Δ —
//! the factor 2 can go: P(r) ∝ exp(ε₀·u(r) / Δ) is ε₀-bounded-range too, because the
//! change of log P(r) − log P(r′) between neighbours is then (ε₀/Δ)·(a − b) with a, b of
//! one sign and at most Δ, i.e. at most ε₀ in size. ε₀-bounded-range is ε₀²/8-zCDP
//! (Cesar & Rogers 2021), which [`super::Mechanism::Exponential`] charges.
//!
//! The sampler draws one uniform number against the exact probabilities (computed with a
//! log-sum-exp shift, so large ε₀·n·u do not overflow).

use rand::Rng;

use super::compose::compose;
use super::mechanism::Charge;
use super::mechanism::Mechanism;

/// The selection probabilities of the exponential mechanism over `utilities` at ε₀ with
/// sensitivity Δ (`monotone`: utilities all move the same way between neighbours).
/// Non-finite utilities get probability 0 (unless all are, then uniform).
pub fn probabilities(
    utilities: &[f64],
    epsilon: f64,
    sensitivity: f64,
    monotone: bool,
) -> Vec<f64> {
    let c = epsilon / (sensitivity * if monotone { 1.0 } else { 2.0 });
    let logits: Vec<f64> = utilities
        .iter()
        .map(|u| {
            if u.is_finite() {
                c * u
            } else {
                f64::NEG_INFINITY
            }
        })
        .collect();
    let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        let n = utilities.len().max(1) as f64;
        return vec![1.0 / n; utilities.len()];
    }
    let w: Vec<f64> = logits.iter().map(|l| (l - max).exp()).collect();
    let z: f64 = w.iter().sum();
    w.into_iter().map(|x| x / z).collect()
}

/// One draw of the exponential mechanism (see [`probabilities`]). `utilities` must not be
/// empty.
pub fn select(
    utilities: &[f64],
    epsilon: f64,
    sensitivity: f64,
    monotone: bool,
    rng: &mut (impl Rng + ?Sized),
) -> usize {
    let p = probabilities(utilities, epsilon, sensitivity, monotone);
    let mut u: f64 = rng.random::<f64>();
    for (i, pi) in p.iter().enumerate() {
        if u < *pi {
            return i;
        }
        u -= pi;
    }
    // Rounding left a sliver above the last bin: the last candidate with mass.
    p.iter().rposition(|x| *x > 0.0).unwrap_or(0)
}

/// The largest per-round ε₀ such that `rounds` uses of the exponential mechanism alone
/// compose (by the accountants of [`compose`]) to at most `target` at `delta`; `None`
/// when no positive ε₀ fits.
pub fn epsilon0_for(target: f64, delta: f64, rounds: u64, orders: &[f64]) -> Option<f64> {
    if !(target > 0.0 && target.is_finite()) || rounds == 0 {
        return None;
    }
    let eps = |e0: f64| {
        compose(
            &[Charge {
                mechanism: Mechanism::Exponential { epsilon: e0 },
                count: rounds,
            }],
            orders,
            delta,
        )
        .epsilon
    };
    // ε₀ = target is always within budget for one round and an upper end for more.
    let (mut lo, mut hi) = (0.0, target);
    if eps(hi) <= target {
        return Some(hi);
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if eps(mid) <= target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo > 0.0).then_some(lo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::rdp::product_orders;
    use rand::SeedableRng;

    /// The obviously-correct reference: exp of each scaled utility, divided by their sum.
    fn reference(u: &[f64], eps: f64, sens: f64, monotone: bool) -> Vec<f64> {
        let c = eps / (sens * if monotone { 1.0 } else { 2.0 });
        let w: Vec<f64> = u.iter().map(|x| (c * x).exp()).collect();
        let z: f64 = w.iter().sum();
        w.iter().map(|x| x / z).collect()
    }

    #[test]
    fn probabilities_match_the_direct_formula_and_the_sampler_follows_them() {
        let u = [0.2, 0.5, 0.9, 0.4];
        for monotone in [false, true] {
            let p = probabilities(&u, 2.0, 0.25, monotone);
            let r = reference(&u, 2.0, 0.25, monotone);
            for (a, b) in p.iter().zip(&r) {
                assert!((a - b).abs() < 1e-12, "{p:?} vs {r:?}");
            }
            let mut rng = rand::rngs::StdRng::seed_from_u64(7);
            let draws = 200_000;
            let mut counts = [0usize; 4];
            for _ in 0..draws {
                counts[select(&u, 2.0, 0.25, monotone, &mut rng)] += 1;
            }
            for (c, pi) in counts.iter().zip(&p) {
                let f = *c as f64 / draws as f64;
                let sd = (pi * (1.0 - pi) / draws as f64).sqrt();
                assert!((f - pi).abs() < 5.0 * sd + 1e-4, "{counts:?} vs {p:?}");
            }
        }
    }

    #[test]
    fn huge_scaled_utilities_do_not_overflow() {
        // ε₀·n·u ≈ 10⁶: the shift keeps it finite and picks the best.
        let p = probabilities(&[0.50, 0.51], 1.0, 1e-6, true);
        assert!(p.iter().all(|x| x.is_finite()));
        assert!(p[1] > 0.999_999);
        let p = probabilities(&[f64::NAN, 0.3], 1.0, 1.0, false);
        assert_eq!(p[0], 0.0);
    }

    /// Monotone neighbours (every utility up by at most Δ): each probability moves by at
    /// most a factor e^ε₀, with the factor-1 scaling.
    #[test]
    fn monotone_scaling_is_epsilon_dp_on_monotone_neighbours() {
        let (eps, sens) = (0.7, 0.1);
        let u = [0.3, 0.35, 0.1, 0.6];
        let shifts = [
            [0.0, 0.1, 0.1, 0.0],
            [0.1, 0.0, 0.05, 0.1],
            [0.1; 4],
            [0.0; 4],
        ];
        for s in shifts {
            let v: Vec<f64> = u.iter().zip(&s).map(|(a, b)| a + b).collect();
            let p = probabilities(&u, eps, sens, true);
            let q = probabilities(&v, eps, sens, true);
            for (a, b) in p.iter().zip(&q) {
                assert!((a / b).ln().abs() <= eps + 1e-12, "{p:?} {q:?}");
            }
        }
    }

    #[test]
    fn rounds_fit_their_target() {
        let o = product_orders();
        let e0 = epsilon0_for(0.1, 1e-5, 400, &o).unwrap();
        let spent = compose(
            &[Charge {
                mechanism: Mechanism::Exponential { epsilon: e0 },
                count: 400,
            }],
            &o,
            1e-5,
        )
        .epsilon;
        assert!(spent <= 0.1 && spent > 0.099, "{e0} → {spent}");
        // One round may use about the whole target (the RDP conversion loses a little).
        let one = epsilon0_for(0.3, 1e-5, 1, &o).unwrap();
        assert!(one <= 0.3 && one > 0.2, "{one}");
        assert_eq!(epsilon0_for(0.0, 1e-5, 10, &o), None);
    }
}
