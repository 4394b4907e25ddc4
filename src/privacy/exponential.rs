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
//! The sampler draws exactly from that distribution, with no floating-point probability
//! on its path: a float sampler turns weights below 10⁻³⁰⁸ into 0, and a candidate that
//! can never come out on one table but can on its neighbour breaks the guarantee outright.
//! It proposes a candidate uniformly and accepts it with probability exp(−γ), γ = c·(u_max
//! − u) ≥ 0, by an exact Bernoulli trial on integers ([`super::discrete`]'s CKS
//! Algorithm 1); the accepted candidate has probability ∝ exp(−γ) ∝ exp(c·u). γ is rounded
//! up to a grid of 2⁻³² and capped at 2³⁰ (both keep a change of γ between neighbours
//! within the change of c·u, plus the rounding), and c is taken from ε₀ less
//! [`ROUNDING_ROOM`], which covers the rounding and the float arithmetic before it: the
//! draws are ε₀-bounded-range as charged.

use rand::Rng;

use super::discrete::{bernoulli_exp_neg, uniform_below};

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

/// The part of ε₀ kept back for rounding γ to its grid (2⁻³² per candidate) and for the
/// float arithmetic that computes it (below 2⁻²¹ for γ ≤ 2³⁰): the selection's privacy
/// loss stays within ε₀.
pub const ROUNDING_ROOM: f64 = 1.0 / 65_536.0;

/// Bits of the grid γ is rounded up to.
const GRID_BITS: u32 = 32;
/// The cap on γ: exp(−2³⁰) is as good as never, and the float error below it is small.
const MAX_GAMMA: f64 = (1u64 << 30) as f64;

/// One exact draw of the exponential mechanism over `utilities` at ε₀ with sensitivity Δ
/// (`monotone` as in [`probabilities`], which it follows up to [`ROUNDING_ROOM`]).
/// Non-finite utilities are never drawn (unless all are: then uniformly). `utilities`
/// must not be empty.
///
/// The draw's rejection loop takes a number of random values that depends on the
/// utilities, so it draws them from a generator of its own, seeded by one fixed-size
/// draw from `rng`: the caller's stream then moves by the same amount whatever the rows
/// were, as the neighbour harness needs (a run and its neighbour share every later draw).
/// The distribution of the pick is unchanged.
pub fn select(
    utilities: &[f64],
    epsilon: f64,
    sensitivity: f64,
    monotone: bool,
    rng: &mut (impl Rng + ?Sized),
) -> usize {
    use super::probe::{Norm, Value, noise_call};
    use rand::SeedableRng as _;
    noise_call(
        "exponential",
        (Norm::LInf, sensitivity),
        || super::mechanism::Mechanism::Exponential { epsilon },
        || Value::Dense(utilities.to_vec()),
        || {
            let mut rng = rng;
            let mut own = rand::rngs::StdRng::from_rng(&mut rng);
            draw(utilities, epsilon, sensitivity, monotone, &mut own)
        },
    )
}

/// [`select`]'s draw.
fn draw(
    utilities: &[f64],
    epsilon: f64,
    sensitivity: f64,
    monotone: bool,
    rng: &mut (impl Rng + ?Sized),
) -> usize {
    let open: Vec<usize> = (0..utilities.len())
        .filter(|i| utilities[*i].is_finite())
        .collect();
    if open.is_empty() {
        return uniform_below(rng, utilities.len().max(1) as u128) as usize;
    }
    let c = (epsilon - ROUNDING_ROOM).max(0.0) / (sensitivity * if monotone { 1.0 } else { 2.0 });
    let best = open
        .iter()
        .map(|i| utilities[*i])
        .fold(f64::NEG_INFINITY, f64::max);
    let den: u128 = 1 << GRID_BITS;
    let gamma: Vec<u128> = open
        .iter()
        .map(|i| {
            let g = c * (best - utilities[*i]);
            let g = if g.is_finite() {
                g.clamp(0.0, MAX_GAMMA)
            } else {
                MAX_GAMMA
            };
            (g * den as f64).ceil() as u128
        })
        .collect();
    loop {
        let j = uniform_below(rng, open.len() as u128) as usize;
        // `None` (an overflow no exponent below the cap reaches) rejects, as a failed
        // trial does: the draw is retried, never biased towards a candidate.
        if bernoulli_exp_neg(rng, gamma[j], den) == Some(true) {
            return open[j];
        }
    }
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

    /// A candidate whose float weight underflows to 0 still has its exact, positive
    /// chance: scaled utilities 0 and −800 (e⁻⁸⁰⁰ ≈ 10⁻³⁴⁸ is 0 in f64) at ε₀ = 1 give the
    /// float probabilities [1, 0]; the exact sampler never returns a non-finite one, and
    /// with a gap of 2 units it matches e⁻²/(1 + e⁻²) over many draws.
    #[test]
    fn the_exact_sampler_follows_the_weights_without_floats() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let p = probabilities(&[0.0, -800.0], 1.0, 0.5, false);
        assert_eq!(p[1], 0.0, "the float weight underflows");
        for _ in 0..1_000 {
            assert_eq!(select(&[0.0, -800.0], 1.0, 0.5, false, &mut rng), 0);
            assert_eq!(
                select(&[f64::NAN, 0.3, f64::INFINITY], 1.0, 1.0, false, &mut rng),
                1
            );
        }
        // γ = 2 for the second candidate (ε₀ = 1, Δ = 1, monotone, utilities 0 and −2).
        let draws = 200_000;
        let second = (0..draws)
            .filter(|_| select(&[0.0, -2.0], 1.0 + ROUNDING_ROOM, 1.0, true, &mut rng) == 1)
            .count() as f64
            / draws as f64;
        let want = (-2.0f64).exp() / (1.0 + (-2.0f64).exp());
        let sd = (want * (1.0 - want) / draws as f64).sqrt();
        assert!((second - want).abs() < 5.0 * sd, "{second} vs {want}");
        // All non-finite: uniform.
        let mut seen = [0usize; 3];
        for _ in 0..3_000 {
            seen[select(&[f64::NAN; 3], 1.0, 1.0, false, &mut rng)] += 1;
        }
        assert!(seen.iter().all(|c| *c > 850), "{seen:?}");
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
