//! PATE's noisy vote: k teachers, each trained on its own disjoint part of the rows, vote
//! on a query, and only the noisy counts of their votes leave (Papernot et al. 2017, 2018;
//! PATE-GAN, Jordon et al. 2019).
//!
//! Sensitivity: one record sits in one teacher's part, so adding or removing it changes
//! one teacher's vote: the pair (fake, real) of hard-vote counts moves by one in each
//! (L1 2, L2 √2), a soft-vote sum by at most 1. Accounting per query, charged before it
//! runs ([`query_mechanism`]): Gaussian NoisyMax as [`Mechanism::DiscreteGnMax`]
//! `{ sigma }` (exact discrete Gaussian noise on the integer counts), Laplace NoisyMax as
//! [`Mechanism::LnMax`] `{ lambda }` (exact discrete Laplace), soft votes as
//! [`Mechanism::Gaussian`] `{ sensitivity: 1, std }`.

use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

use super::discrete::{DiscreteGaussian, DiscreteLaplace};
use super::mechanism::Mechanism;

/// How the teachers' counts are noised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregator {
    /// Gaussian NoisyMax (Papernot et al. 2018): tighter composition over many queries.
    #[default]
    Gaussian,
    /// Laplace NoisyMax, as the PATE-GAN paper.
    Laplace,
    /// Soft votes: the sum of the teachers' probabilities of "real" (each in [0, 1], so
    /// one teacher moves the sum by at most 1: L2 sensitivity 1) plus N(0, σ²). Half
    /// GNMax's RDP per query at the same σ, and graded where hard votes are all "fake".
    Soft,
}

/// The mechanism of one query at noise parameter `s` (σ for Gaussian, 1/λ for Laplace).
pub fn query_mechanism(agg: Aggregator, s: f64) -> Mechanism {
    match agg {
        Aggregator::Gaussian => Mechanism::DiscreteGnMax { sigma: s },
        Aggregator::Laplace => Mechanism::LnMax { lambda: 1.0 / s },
        Aggregator::Soft => Mechanism::Gaussian {
            sensitivity: 1.0,
            std: s,
        },
    }
}

/// (ñ_fake, ñ_real) for each query: the counts with the aggregator's noise at scale `s`
/// (σ, or 1/λ for Laplace); exact counts when `s` is 0 (the non-private reference).
pub fn noisy_counts(
    real_votes: &[f64],
    k: usize,
    agg: Aggregator,
    s: f64,
    rng: &mut impl Rng,
) -> Vec<(f64, f64)> {
    // Vote counts are integers: their noise is exact discrete noise on integers (a float
    // sample's low bits could give the count away). Soft votes are sums of probabilities,
    // real numbers, and keep the continuous Gaussian their accounting assumes.
    let gauss = DiscreteGaussian::new(s);
    let laplace = DiscreteLaplace::new(s);
    let draw = |rng: &mut _| -> f64 {
        if s <= 0.0 {
            return 0.0;
        }
        match agg {
            Aggregator::Gaussian => gauss.map_or(f64::NAN, |g| g.sample(rng) as f64),
            Aggregator::Laplace => laplace.map_or(f64::NAN, |l| l.sample(rng) as f64),
            Aggregator::Soft => {
                let z: f64 = StandardNormal.sample(rng);
                s * z
            }
        }
    };
    use super::probe::{Norm, Value, noise_call};
    let k = k as f64;
    real_votes
        .iter()
        .map(|&r| {
            if agg == Aggregator::Soft {
                // One noisy sum; its complement is post-processing.
                let out = noise_call(
                    "pate-soft-votes",
                    (Norm::L2, 1.0),
                    || query_mechanism(agg, s),
                    || Value::Dense(vec![r]),
                    || vec![r + draw(rng)],
                );
                let real = out.first().copied().unwrap_or(f64::NAN);
                return (k - real, real);
            }
            // One record changes one teacher's vote: both counts move by one.
            let out = noise_call(
                "pate-votes",
                (Norm::L2, std::f64::consts::SQRT_2),
                || match (agg, gauss) {
                    (Aggregator::Gaussian, Some(g)) => Mechanism::DiscreteGnMax {
                        sigma: g.variance().sqrt(),
                    },
                    _ => query_mechanism(agg, s),
                },
                || Value::Dense(vec![k - r, r]),
                || {
                    let fake = (k - r) + draw(rng);
                    vec![fake, r + draw(rng)]
                },
            );
            match out[..] {
                [fake, real] => (fake, real),
                _ => (f64::NAN, f64::NAN),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn noise_has_the_planned_scale_and_none_without_privacy() {
        let mut rng = StdRng::seed_from_u64(1);
        let votes = vec![7.0; 20_000];
        for agg in [Aggregator::Gaussian, Aggregator::Laplace] {
            let exact = noisy_counts(&votes, 10, agg, 0.0, &mut rng);
            assert!(exact.iter().all(|&(f, r)| f == 3.0 && r == 7.0));
            let noisy = noisy_counts(&votes, 10, agg, 2.0, &mut rng);
            let var =
                noisy.iter().map(|&(_, r)| (r - 7.0).powi(2)).sum::<f64>() / noisy.len() as f64;
            // Gaussian: σ² = 4; Laplace(b = 2): 2b² = 8.
            let want = if agg == Aggregator::Gaussian {
                4.0
            } else {
                8.0
            };
            assert!((var - want).abs() < 0.1 * want, "{agg:?}: {var}");
        }
    }
}
