//! Distinguishing tests of every noise primitive the product uses, run through the
//! product's own code (not a re-implementation): each is run many times on a worst-case
//! pair of neighbouring inputs, and [`crate::privacy::audit`] turns the draws into a lower
//! bound on ε at the stated δ, to set beside the ε the accountant claims for one use.
//!
//! Each test also runs a deliberately broken variant (half the noise, a sensitivity off by
//! 2×, a threshold set for the wrong δ) against the *correct* claim: a test that cannot
//! catch that is no test. The neighbours and statistics are the auditor's best choices:
//!
//! | primitive | D₀ → D₁ | statistic |
//! |---|---|---|
//! | Gaussian on a sum (PEARL/DP-MERF embedding release) | + one row | the noisy sum along the row's feature vector |
//! | DP-SGD step (clip + noise, q = 1) | ∅ → one row whose gradient exceeds C | the noisy gradient along the clipped one |
//! | exponential mechanism (monotone utilities) | one candidate's utility stays, the rest rise by Δ | which candidate is picked |
//! | DP quantile (the bounds estimator's grid histogram) | + one value in an empty cell | that cell's noisy count |
//! | thresholded histogram (category estimator) | + one record of a new level; a count below the threshold + 1 | which levels are released |
//! | PATE NoisyMax (GNMax vote) | one teacher changes its vote | the released label |
//! | discrete Gaussian count (MST/AIM marginals, domain histograms, class counts) | + one row in a cell | that cell's released integer |

use candle_core::{DType, Device, Tensor};
use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::methods::embedding;
use crate::nn::dpsgd::{DpSgdConfig, NoiseSource, private_gradient};
use crate::nn::layers::{Act, Net, mlp};
use crate::privacy::audit::{MechanismAudit, audit_outcomes, audit_scores};
use crate::privacy::compose::compose;
use crate::privacy::estimators::{self, category_mechanism, estimate_categories};
use crate::privacy::votes::{Aggregator, noisy_counts, query_mechanism};
use crate::privacy::{Accountant, Budget, Charge, Mechanism};

/// δ every test is read at.
pub const AUDIT_DELTA: f64 = 1e-5;
/// 1 − confidence of each bound.
pub const AUDIT_ALPHA: f64 = 0.05;

/// One primitive's audit: the correct code against its claim, and a broken variant.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MechanismReport {
    pub name: &'static str,
    /// The neighbouring inputs and the statistic, in words.
    pub test: String,
    /// What the accountant (or, for the exponential mechanism, its ε₀-DP proof) claims for
    /// one use at `delta`.
    pub claimed_epsilon: f64,
    pub delta: f64,
    pub audit: MechanismAudit,
    /// What is broken in the variant, and what the same test proves about it.
    pub broken: String,
    pub broken_audit: MechanismAudit,
}

impl MechanismReport {
    /// The correct code stays within its claim.
    pub fn sound(&self) -> bool {
        self.audit.lower_bound <= self.claimed_epsilon
    }

    /// The broken variant is proved to exceed the claim.
    pub fn catches_broken(&self) -> bool {
        self.broken_audit.lower_bound > self.claimed_epsilon
    }
}

/// The names [`audit`] accepts, in order.
pub const PRIMITIVES: &[&str] = &[
    "gaussian-sum",
    "dpsgd-step",
    "exponential",
    "dp-quantile",
    "thresholded-histogram",
    "pate-noisymax",
    "discrete-count",
];

/// Audits the primitive `name` with `draws` runs per input (per variant), seeded.
pub fn audit(name: &str, draws: usize, seed: u64) -> Result<MechanismReport, String> {
    let draws = draws.max(100);
    let r = match name {
        "gaussian-sum" => gaussian_sum(draws, seed),
        "dpsgd-step" => dpsgd_step(draws, seed),
        "exponential" => Ok(exponential(draws, seed)),
        "dp-quantile" => Ok(dp_quantile(draws, seed)),
        "thresholded-histogram" => Ok(thresholded_histogram(draws, seed)),
        "pate-noisymax" => Ok(pate_noisymax(draws, seed)),
        "discrete-count" => discrete_count(draws, seed),
        other => Err(format!(
            "unknown primitive '{other}'; use one of {}",
            PRIMITIVES.join(", ")
        )),
    };
    r.map_err(|e| format!("{name}: {e}"))
}

/// ε the accountant reports for one use of `m` at [`AUDIT_DELTA`].
fn claim(m: Mechanism) -> f64 {
    let orders = crate::privacy::rdp::product_orders();
    compose(
        &[Charge {
            mechanism: m,
            count: 1,
        }],
        &orders,
        AUDIT_DELTA,
    )
    .epsilon
}

/// The best of several audits of one mechanism (each already at its share of α).
fn best_of(audits: impl IntoIterator<Item = MechanismAudit>) -> MechanismAudit {
    audits
        .into_iter()
        .reduce(|a, b| if b.lower_bound > a.lower_bound { b } else { a })
        .unwrap_or_else(|| audit_outcomes::<bool>(&[], &[], AUDIT_DELTA, AUDIT_ALPHA))
}

fn scores_audit(d0: &[f64], d1: &[f64]) -> MechanismAudit {
    audit_scores(d0, d1, AUDIT_DELTA, AUDIT_ALPHA)
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The embedding release of PEARL and DP-MERF: Σ φ(x) over the rows (‖φ‖ = 1) plus
/// N(0, std²), through `embedding::class_sums` and the run's noise source.
fn gaussian_sum(draws: usize, seed: u64) -> Result<MechanismReport, String> {
    const STD: f64 = 2.0;
    let dev = Device::Cpu;
    let mut rng = StdRng::seed_from_u64(seed);
    let omega = embedding::frequencies(3, 4, 1.0, &mut rng, &dev).map_err(err)?;
    let omega = embedding::Frequencies::whole_row(omega).map_err(err)?;
    let rows: Vec<f32> = (0..60).map(|i| ((i * 37) % 100) as f32 / 100.0).collect();
    let d0 = Tensor::from_vec(rows.clone(), (20, 3), &dev).map_err(err)?;
    let mut with = rows;
    with.extend([1.0f32, 1.0, 1.0]);
    let d1 = Tensor::from_vec(with, (21, 3), &dev).map_err(err)?;
    // The exact f64 sums, as f32 for the audit's own noise and statistic.
    let f32_sums = |d: &Tensor| {
        embedding::class_sums(d, &omega, None)
            .map_err(err)?
            .to_dtype(candle_core::DType::F32)
            .map_err(err)
    };
    let (s0, s1) = (f32_sums(&d0)?, f32_sums(&d1)?);
    // The auditor's statistic: the output minus D₀'s sum, along the added row's φ.
    let base: Vec<f32> = s0.flatten_all().map_err(err)?.to_vec1().map_err(err)?;
    let dir: Vec<f32> = (s1.clone() - &s0)
        .and_then(|t| t.flatten_all())
        .and_then(|t| t.to_vec1())
        .map_err(err)?;
    let mut noise = NoiseSource::from_seed(seed ^ 0x5eed);
    let mut run = |sum: &Tensor, std: f64| -> Result<Vec<f64>, String> {
        let mut out = Vec::with_capacity(draws);
        let chunk = 10_000.min(draws);
        let width = base.len();
        let wide = sum.broadcast_as((chunk, width)).map_err(err)?;
        while out.len() < draws {
            let noisy =
                (wide.clone() + noise.gaussian_like(&wide, std).map_err(err)?).map_err(err)?;
            let v: Vec<Vec<f32>> = noisy.to_vec2().map_err(err)?;
            for row in v.iter().take(draws - out.len()) {
                out.push(
                    row.iter()
                        .zip(&base)
                        .zip(&dir)
                        .map(|((y, b), d)| f64::from((y - b) * d))
                        .sum(),
                );
            }
        }
        Ok(out)
    };
    let ok = scores_audit(&run(&s0, STD)?, &run(&s1, STD)?);
    let broken = scores_audit(&run(&s0, STD / 2.0)?, &run(&s1, STD / 2.0)?);
    Ok(MechanismReport {
        name: "gaussian-sum",
        test: "PEARL/DP-MERF embedding release: 20 rows vs the same plus one, statistic = output along the added row's feature vector".into(),
        claimed_epsilon: claim(Mechanism::Gaussian {
            sensitivity: embedding::SUM_SENSITIVITY,
            std: STD,
        }),
        delta: AUDIT_DELTA,
        audit: ok,
        broken: "half the noise std".into(),
        broken_audit: broken,
    })
}

/// One DP-SGD step (`private_gradient`: clip to C, add N(0, σ²C²)) at q = 1 on a linear
/// layer, from no rows to one row whose gradient (1, 1, 1) exceeds C = 1.
fn dpsgd_step(draws: usize, seed: u64) -> Result<MechanismReport, String> {
    const SIGMA: f64 = 2.0;
    let dev = Device::Cpu;
    let mut rng = StdRng::seed_from_u64(seed);
    let net = Net::new(mlp(&[2, 1], Act::Relu, &dev, &mut rng).map_err(err)?, &dev);
    let d0 = Tensor::zeros((0, 2), DType::F32, &dev).map_err(err)?;
    let d1 = Tensor::ones((1, 2), DType::F32, &dev).map_err(err)?;
    let mut noise = NoiseSource::from_seed(seed ^ 0xd95);
    let mut accountant = Accountant::new(Budget {
        epsilon: f64::MAX,
        delta: AUDIT_DELTA,
    });
    let mut run = |data: &Tensor, sigma: f64| -> Result<Vec<f64>, String> {
        let cfg = DpSgdConfig {
            clip: 1.0,
            noise_multiplier: sigma,
            sample_rate: 1.0,
            n_records: 1,
        };
        let mut out = Vec::with_capacity(draws);
        for _ in 0..draws {
            let (grads, _) = private_gradient(
                &net,
                data,
                None,
                &cfg,
                &mut noise,
                &mut accountant,
                |y: &Tensor, _: &Tensor, _: Option<&Tensor>| y.sum_all(),
            )
            .map_err(err)?
            .ok_or("the audit's accountant refused a step")?;
            let mut s = 0.0;
            for g in grads {
                s += g
                    .sum_all()
                    .and_then(|t| t.to_scalar::<f32>())
                    .map_err(err)? as f64;
            }
            out.push(s);
        }
        Ok(out)
    };
    let ok = scores_audit(&run(&d0, SIGMA)?, &run(&d1, SIGMA)?);
    let broken = scores_audit(&run(&d0, SIGMA / 2.0)?, &run(&d1, SIGMA / 2.0)?);
    Ok(MechanismReport {
        name: "dpsgd-step",
        test: "one DP-SGD step (q = 1, C = 1) on a linear layer: no rows vs one row whose gradient norm is √3 > C, statistic = noisy gradient along the clipped one".into(),
        claimed_epsilon: claim(Mechanism::SubsampledGaussian {
            q: 1.0,
            sigma: SIGMA,
        }),
        delta: AUDIT_DELTA,
        audit: ok,
        broken: "half the noise multiplier".into(),
        broken_audit: broken,
    })
}

/// The exponential mechanism as post-GAN boosting runs it (monotone utilities, no factor
/// 2), over 20 candidates: all utilities 0, against candidate 0 unchanged and the rest
/// raised by Δ = 1. Its claim is its proof's: ε₀-DP (bounded range), δ = 0.
fn exponential(draws: usize, seed: u64) -> MechanismReport {
    const EPS0: f64 = 1.0;
    let mut rng = StdRng::seed_from_u64(seed);
    let u0 = vec![0.0; 20];
    let mut u1 = vec![1.0; 20];
    u1[0] = 0.0;
    let mut run = |u: &[f64], sensitivity: f64| -> Vec<usize> {
        (0..draws)
            .map(|_| crate::privacy::exponential::select(u, EPS0, sensitivity, true, &mut rng))
            .collect()
    };
    let audit = |a: &[usize], b: &[usize]| audit_outcomes(a, b, 0.0, AUDIT_ALPHA);
    let ok = audit(&run(&u0, 1.0), &run(&u1, 1.0));
    let broken = audit(&run(&u0, 0.5), &run(&u1, 0.5));
    MechanismReport {
        name: "exponential",
        test: "20 candidates, monotone utilities: all 0 vs candidate 0 at 0 and the rest at Δ = 1, statistic = the pick".into(),
        claimed_epsilon: EPS0,
        delta: 0.0,
        audit: ok,
        broken: "sensitivity taken as Δ/2".into(),
        broken_audit: broken,
    }
}

/// The bounds estimator's one release (its quantiles are post-processing of it): the
/// grid histogram, 100 values in one cell vs the same plus one value in an empty cell.
fn dp_quantile(draws: usize, seed: u64) -> MechanismReport {
    const STD: f64 = 2.0;
    let mut rng = StdRng::seed_from_u64(seed);
    let d0: Vec<Option<f64>> = vec![Some(3.0); 100];
    let mut d1 = d0.clone();
    d1.push(Some(1e6));
    let grid = estimators::bound_grid();
    let cell = estimators::cell_of(&grid, 1e6);
    let mut run = |v: &[Option<f64>], std: f64| -> Vec<f64> {
        (0..draws)
            .map(|_| estimators::noisy_number_histogram(v, std, &mut rng).cells[cell][0])
            .collect()
    };
    let ok = scores_audit(&run(&d0, STD), &run(&d1, STD));
    let broken = scores_audit(&run(&d0, STD / 2.0), &run(&d1, STD / 2.0));
    MechanismReport {
        name: "dp-quantile",
        test: "the bounds estimator's grid histogram: 100 values of 3 vs the same plus 10⁶, statistic = the noisy count of 10⁶'s cell".into(),
        claimed_epsilon: claim(estimators::number_mechanism(STD)),
        delta: AUDIT_DELTA,
        audit: ok,
        broken: "half the noise std".into(),
        broken_audit: broken,
    }
}

/// The category estimator, at two neighbouring pairs (each at α/2, the better bound kept):
/// a level held by one record must come out with probability at most δ∞ (100 × "a" vs
/// the same plus one "zz"), and a level whose count sits below the threshold moves like a
/// Gaussian count (4 × "a" vs 5 × "a", τ ≈ 10.5 at std 2).
fn thresholded_histogram(draws: usize, seed: u64) -> MechanismReport {
    const STD: f64 = 2.0;
    const DELTA_INF: f64 = 1e-6;
    let mut rng = StdRng::seed_from_u64(seed);
    let level = |c: u64| vec![("a".to_string(), c)];
    let mut new_level = level(100);
    new_level.push(("zz".to_string(), 1));
    let pairs = [(level(100), new_level), (level(4), level(5))];
    let mut run = |delta_inf: f64| -> MechanismAudit {
        let mut draw = |c: &[(String, u64)]| -> Vec<Vec<String>> {
            (0..draws)
                .map(|_| estimate_categories(c, STD, delta_inf, &mut rng))
                .collect()
        };
        let audits: Vec<MechanismAudit> = pairs
            .iter()
            .map(|(d0, d1)| {
                let (a, b) = (draw(d0), draw(d1));
                audit_outcomes(&a, &b, AUDIT_DELTA, AUDIT_ALPHA / 2.0)
            })
            .collect();
        best_of(audits)
    };
    let ok = run(DELTA_INF);
    let broken = run(1e-2);
    MechanismReport {
        name: "thresholded-histogram",
        test: "the category estimator (std 2, δ∞ = 1e-6): 100 × 'a' vs the same plus one 'zz', and 4 × 'a' vs 5 × 'a', statistic = the released levels".into(),
        claimed_epsilon: claim(category_mechanism(STD, DELTA_INF)),
        delta: AUDIT_DELTA,
        audit: ok,
        broken: "threshold set for δ∞ = 1e-2".into(),
        broken_audit: broken,
    }
}

/// One PATE-GAN query with Gaussian NoisyMax over 2 classes (`noisy_counts`, then the
/// argmax the student learns from): one teacher's vote moves from "fake" to "real". The
/// auditor does not know where the noise is weakest, so it tries three vote margins and
/// keeps the best bound, each at α/3.
fn pate_noisymax(draws: usize, seed: u64) -> MechanismReport {
    const SIGMA: f64 = 3.0;
    const TEACHERS: usize = 200;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut run = |real: f64, sigma: f64| -> Vec<bool> {
        (0..draws)
            .map(|_| {
                let (fake, real) =
                    noisy_counts(&[real], TEACHERS, Aggregator::Gaussian, sigma, &mut rng)[0];
                real > fake
            })
            .collect()
    };
    let best = |sigma: f64, run: &mut dyn FnMut(f64, f64) -> Vec<bool>| {
        // Margins at 1.5, 3 and 6 of the claimed σ√2 (the vote difference's noise).
        let audits: Vec<MechanismAudit> = [1.5, 3.0, 6.0]
            .into_iter()
            .map(|z: f64| {
                let m = (z * SIGMA * std::f64::consts::SQRT_2 / 2.0).round();
                let r0 = TEACHERS as f64 / 2.0 - m;
                let (a, b) = (run(r0, sigma), run(r0 + 1.0, sigma));
                audit_outcomes(&a, &b, AUDIT_DELTA, AUDIT_ALPHA / 3.0)
            })
            .collect();
        best_of(audits)
    };
    let ok = best(SIGMA, &mut run);
    let broken = best(SIGMA / 2.0, &mut run);
    MechanismReport {
        name: "pate-noisymax",
        test: "one GNMax query (200 teachers, σ = 3): one teacher's vote flips, at three vote margins, statistic = the released label".into(),
        claimed_epsilon: claim(query_mechanism(Aggregator::Gaussian, SIGMA)),
        delta: AUDIT_DELTA,
        audit: ok,
        broken: "half the noise σ".into(),
        broken_audit: broken,
    }
}

/// A marginal measurement as MST and AIM make it (`marginal::measure`: integer counts plus
/// exact discrete Gaussian noise), at 4 vs 5 rows in one cell; statistic = that cell's
/// released integer. Claimed: the zCDP charge 1/(2σ²) the methods make per measurement.
fn discrete_count(draws: usize, seed: u64) -> Result<MechanismReport, String> {
    const SIGMA: f64 = 2.0;
    let mut rng = StdRng::seed_from_u64(seed);
    // The exact counts of n rows all in the first of three cells.
    let counts = |n: usize| [n as f64, 0.0, 0.0];
    let mut run = |n: usize, sigma: f64| -> Result<Vec<f64>, String> {
        (0..draws)
            .map(|_| {
                crate::methods::marginal::measure(&mut rng, &counts(n), &[0], sigma, true)
                    .map(|m| m.noisy[0])
                    .map_err(err)
            })
            .collect()
    };
    let ok = scores_audit(&run(4, SIGMA)?, &run(5, SIGMA)?);
    let broken = scores_audit(&run(4, SIGMA / 2.0)?, &run(5, SIGMA / 2.0)?);
    Ok(MechanismReport {
        name: "discrete-count",
        test: "a marginal's count with exact discrete Gaussian noise (σ = 2): 4 vs 5 rows in the cell, statistic = the released integer".into(),
        claimed_epsilon: claim(Mechanism::Zcdp {
            rho: 1.0 / (2.0 * SIGMA * SIGMA),
        }),
        delta: AUDIT_DELTA,
        audit: ok,
        broken: "half the noise σ".into(),
        broken_audit: broken,
    })
}
