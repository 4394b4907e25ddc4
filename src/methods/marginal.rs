//! What MST and AIM share: the rows as public discrete levels, the zCDP budget a plan
//! may spend, Gaussian measurements of marginals, fitting, and the released model.
//!
//! Accounting. Both methods are zCDP compositions (Bun & Steinke 2016): a Gaussian
//! measurement of a count marginal has L2 sensitivity 1 under add/remove-one (a record
//! sits in one cell) and costs ρ = 1/(2σ²); an exponential-mechanism selection at ε₀ is
//! ε₀-bounded-range, ε₀²/8-zCDP. The budget ρ is the largest for which the job's earlier
//! charges plus the plan fit (ε, δ) as the job's accountant composes them: RDP (of a zCDP
//! total, αρ), or PLD for earlier Gaussian-type steps (a private domain estimate) plus RDP
//! for the rest.

use crate::privacy::discrete::DiscreteGaussian;

use super::pgm::domain::Domain;
use super::pgm::estimate::{Estimate, Measurement};
#[cfg(test)]
use super::pgm::factor::count;
use super::pgm::{GraphicalModel, factor};
use super::released::{MODEL_FORMAT, ModelHeader, ReleasedModel};
use super::{MethodError, Result, TrainSetup};
use crate::privacy::{Budget, Charge, rdp::product_orders};

/// The largest ρ for which `prior` followed by `make(ρ)` fits `budget` (RDP, or PLD for
/// the prior's Gaussian-type steps plus RDP for the rest): ρ and the plan's charges
/// (bisection keeps the end that fits, so the answer never overshoots).
pub(crate) fn rho_for(
    prior: &[Charge],
    make: impl Fn(f64) -> Vec<Charge>,
    budget: Budget,
    what: &str,
) -> Result<(f64, Vec<Charge>)> {
    let orders = product_orders();
    // A prior step RDP cannot bound (a private domain estimate of categories) is bounded
    // by PLD and composed with the plan, as the job's final check does.
    let after = crate::privacy::compose::after_prior(prior, &orders, budget.delta);
    let eps = |rho: f64| after(&make(rho));
    let tiny = 1e-12;
    if eps(tiny) > budget.epsilon {
        return Err(MethodError::Plan(format!(
            "{what}: the budget ε={} at δ={} is spent before the measurements (earlier charges use it all)",
            budget.epsilon, budget.delta
        )));
    }
    let (mut lo, mut hi) = (tiny, 1.0);
    while eps(hi) <= budget.epsilon {
        lo = hi;
        hi *= 2.0;
        if hi > 1e9 {
            return Ok((lo, make(lo)));
        }
    }
    for _ in 0..80 {
        let mid = 0.5 * (lo + hi);
        if eps(mid) <= budget.epsilon {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok((lo, make(lo)))
}

/// The `exact` counts over `attrs` ([`super::counts`]) plus exact discrete Gaussian noise N_ℤ(0, σ²) per
/// cell ([`DiscreteGaussian`]: integer counts plus integer noise, never a float sample,
/// whose low bits could give the count away); no noise for a non-private run, whose σ is
/// then only the measurement's weight in the fit. One record moves one cell by one, so
/// the measurement is 1/(2σ²)-zCDP, the [`crate::privacy::Mechanism::Zcdp`] charge the
/// callers make before calling (the discrete Gaussian meets the continuous one's zCDP
/// bound for integer shifts, Canonne, Kamath & Steinke 2020).
pub(crate) fn measure<R: rand::RngCore + ?Sized>(
    rng: &mut R,
    exact: &[f64],
    attrs: &[usize],
    sigma: f64,
    private: bool,
) -> Result<Measurement> {
    let mut noisy = exact.to_vec();
    if private {
        let g = DiscreteGaussian::new(sigma).ok_or_else(|| {
            MethodError::Plan(format!(
                "a marginal's noise σ = {sigma} is outside what exact discrete noise allows (0 < σ ≤ {}); raise ε",
                crate::privacy::discrete::MAX_STD
            ))
        })?;
        use crate::privacy::probe::{Norm, Value, noise_call};
        noisy = noise_call(
            "marginal",
            (Norm::L2, 1.0),
            || crate::privacy::mechanism::Mechanism::DiscreteGaussian {
                std: g.variance().sqrt(),
            },
            || Value::Dense(exact.to_vec()),
            || {
                for v in noisy.iter_mut() {
                    *v += g.sample(rng) as f64;
                }
                noisy
            },
        );
    }
    Ok(Measurement {
        attrs: attrs.to_vec(),
        noisy,
        sigma,
    })
}

/// The L1 distance of two tables.
pub(crate) fn l1(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum()
}

/// The model's marginal over `attrs` in counts: exact when one node holds them,
/// otherwise estimated from `sample` (rows drawn from the model, column by column).
pub(crate) fn model_marginal(
    e: &Estimate,
    sizes: &[usize],
    attrs: &[usize],
    sample: &[Vec<u32>],
) -> Vec<f64> {
    if let Some(m) = e.project(attrs) {
        return m;
    }
    let m = sample.first().map_or(0, Vec::len).max(1) as f64;
    let scale = e.total() / m;
    factor::count(sample, sizes, attrs)
        .into_iter()
        .map(|c| c * scale)
        .collect()
}

/// Charges `rho` of zCDP (refused when it does not fit the plan).
pub(crate) fn charge(s: &mut TrainSetup<'_>, mechanism: crate::privacy::Mechanism) -> Result<()> {
    s.accountant
        .charge(mechanism, 1)
        .map_err(|e| MethodError::Plan(format!("a measurement does not fit the plan: {e}")))
}

/// The released model of a fitted estimate.
/// Whether every node of `e` is a distribution with mass: what sampling needs. Zeros
/// from several sources (rules, the noise floor, a one-to-one map) could in principle
/// close every cell of a node together.
pub(crate) fn has_mass(e: &Estimate) -> bool {
    e.marginals.iter().all(|m| {
        let t: f64 = m.iter().sum();
        t.is_finite() && t > 0.0 && m.iter().all(|x| x.is_finite() && *x >= 0.0)
    })
}

/// The error for a fit that lost all its mass (never written as a model).
pub(crate) fn massless() -> MethodError {
    MethodError::Plan(
        "the fitted model has no mass left in some node: the zeros of the rules and of the noise floor close every cell together. Remove a rule, or run with --set noise_floor=false".into(),
    )
}

pub(crate) fn release(
    s: &TrainSetup<'_>,
    private: bool,
    (method, preset): (&str, &str),
    config: serde_json::Value,
    domain: Domain,
    e: &Estimate,
    (measured, one_to_one): (&[Measurement], &[(usize, usize)]),
) -> ReleasedModel {
    let names = |attrs: &[usize]| -> Vec<String> {
        attrs
            .iter()
            .map(|a| domain.attributes[*a].name.clone())
            .collect()
    };
    let mut graphical = GraphicalModel::of_estimate(domain.clone(), e, measured, names);
    graphical.header.one_to_one = one_to_one
        .iter()
        .map(|(a, b)| {
            [
                domain.attributes[*a].name.clone(),
                domain.attributes[*b].name.clone(),
            ]
        })
        .collect();
    let schema = s.encoding.schema.clone();
    let header = ModelHeader {
        format: MODEL_FORMAT.into(),
        method: if private {
            method.to_string()
        } else {
            format!("{method} (non-private)")
        },
        preset: preset.into(),
        library_version: env!("CARGO_PKG_VERSION").into(),
        latent_dim: 0,
        generator: Vec::new(),
        privacy: super::statement::statement(
            s.accountant,
            super::statement::Accounting::Best,
            private,
            &schema,
            s.noise.seeded_by_user,
        ),
        schema,
        config,
        conditioning: None,
        mixture: None,
        graphical: Some(graphical.header.clone()),
        labeller: None,
    };
    ReleasedModel::graphical(header, graphical)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// A private estimate of categories (a thresholded Gaussian: infinite RDP) before the
    /// plan no longer leaves "no budget": PLD bounds that step, RDP the zCDP plan, and the
    /// whole history composed the job's way fits the budget, close to its edge.
    #[test]
    fn a_thresholded_gaussian_prior_leaves_room_for_the_plan() {
        use crate::privacy::Mechanism;
        let prior = [
            Charge {
                mechanism: Mechanism::Gaussian {
                    sensitivity: 1.0,
                    std: 40.0,
                },
                count: 2,
            },
            Charge {
                mechanism: Mechanism::ThresholdedGaussian {
                    std: 40.0,
                    delta_inf: 1e-7,
                },
                count: 1,
            },
        ];
        let budget = Budget {
            epsilon: 1.0,
            delta: 1e-4,
        };
        let make = |rho| {
            vec![Charge {
                mechanism: Mechanism::Zcdp { rho },
                count: 1,
            }]
        };
        let (rho, plan) = rho_for(&prior, make, budget, "test").expect("room is left");
        assert!(rho > 0.005, "ρ = {rho}");
        let all: Vec<Charge> = prior.iter().chain(&plan).copied().collect();
        let e = crate::privacy::compose::compose(&all, &product_orders(), budget.delta).epsilon;
        assert!(e <= 1.0 + 1e-9 && e > 0.9, "composed ε = {e}");
    }

    /// The noise added is N_ℤ(0, σ²) per cell — integers, at the scale each zCDP charge
    /// 1/(2σ²) assumes.
    #[test]
    fn measurement_noise_has_the_charged_scale() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let sizes = [50usize, 40];
        let data: Vec<Vec<u32>> = vec![
            (0..1000).map(|i| i % 50).collect(),
            (0..1000).map(|i| i % 40).collect(),
        ];
        let truth = count(&data, &sizes, &[0, 1]);
        for sigma in [2.0, 7.0, 120.0] {
            let m = measure(&mut rng, &truth, &[0, 1], sigma, true).unwrap();
            assert!(m.noisy.iter().all(|v| v.fract() == 0.0));
            let k = truth.len() as f64;
            let diffs: Vec<f64> = m.noisy.iter().zip(&truth).map(|(a, b)| a - b).collect();
            let mean = diffs.iter().sum::<f64>() / k;
            let var = diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (k - 1.0);
            // 2,000 cells: the sample std is within 5 % of σ with overwhelming probability.
            assert!(
                (var.sqrt() / sigma - 1.0).abs() < 0.05,
                "σ {sigma}: {}",
                var.sqrt()
            );
            assert!(
                mean.abs() < 4.0 * sigma / k.sqrt(),
                "σ {sigma}: mean {mean}"
            );
            assert_eq!(m.sigma, sigma);
        }
        // A non-private measurement is exact.
        let m = measure(&mut rng, &truth, &[0, 1], 3.0, false).unwrap();
        assert_eq!(m.noisy, truth);
    }
}
