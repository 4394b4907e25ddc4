//! Private post-GAN boosting (Neunhoeffer, Wu & Dwork, ICLR 2021) and discriminator
//! rejection sampling, over the generators and critics a GAN run passed through.
//!
//! A run boosted this way keeps its last `generators` snapshots (generator and critic,
//! [`Snapshots`]), draws `samples_per_generator` rows from each — the set B, concrete rows
//! (categories drawn from the generator's probabilities) — and plays T rounds of the
//! post-GAN zero-sum game: the distinguisher picks a critic D_j by the exponential
//! mechanism on the payoff U(φ, D_j) = mean over the private rows of D_j(x) + 1 −
//! Σ_b φ(b)·D_j(b), then the synthetic player re-weights B by multiplicative weights,
//! φ(b) ∝ φ(b)·exp(η·D_j(b)). The released model carries B with the averaged weights φ̄,
//! and with φ̄ after discriminator rejection sampling by the mixture critic D̄.
//!
//! **Mapping critics into [0, 1].** A critic's output y reads as σ(s·y) (s = 1 for a
//! logit, 2 for PATE-GAN's tanh-trained student; see [`Checkpoint::critic_scale`]); a
//! non-finite output reads 1/2. A WGAN critic's unbounded score goes through the same
//! sigmoid.
//!
//! **Sensitivity and accounting.** The payoff's private part is the *sum* of D_j(x) ∈
//! [0, 1] over all private rows (never a subsample — the reference code's subsample breaks
//! the bound it assumes) divided by the public N: adding or removing one record moves
//! every payoff by at most 1/N, and all in the same direction (up when a record is added).
//! For such monotone utilities the exponential mechanism may use P(j) ∝ exp(ε₀·N·U_j)
//! instead of exp(ε₀·N·U_j / 2) and is still ε₀-bounded-range
//! ([`crate::privacy::exponential`]), hence ε₀²/8-zCDP per round:
//! [`Mechanism::Exponential`] with count T, charged once before the first private score is
//! computed. ε₀ is the largest that makes the T rounds alone cost `share`·ε; the GAN's σ
//! is then calibrated so that training and boosting together fit the budget. Multiplicative
//! weights, averaging and rejection sampling use only the selected critics' scores on
//! generated rows: post-processing. The critics never enter the released file.
//!
//! A non-private run (ε = ∞) plays the best response (argmax of the exact payoff) instead:
//! the paper's non-private PGB, named so in the model's header (no ε₀).

use std::collections::VecDeque;

use candle_core::Tensor;
use serde::{Deserialize, Serialize};

use super::released::{Draw, Mixture, MixtureSet, ReleasedModel};
use super::statement::{Accounting, statement};
use super::{
    Checkpoint, Flow, MethodError, Plan, Progress, Result, Snapshots, Synthesizer, TrainSetup,
};
use crate::nn::layers::Net;
use crate::privacy::exponential::epsilon0_for;
use crate::privacy::rdp::product_orders;
use crate::privacy::{Budget, Charge, Mechanism};

mod game;
pub use game::{
    Outcome, Selector, concrete, drs_weights, effective_rows, payoffs, play, real_mean, scores,
    tempered,
};

/// Post-GAN boosting settings (`train --boost`, the window's "Boost" switch).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BoostConfig {
    /// The share of the run's ε the boosting rounds would cost alone (the paper spends
    /// 10–20 %); the GAN's noise is calibrated to what is left.
    pub share: f64,
    /// How many of the run's last generators (and their critics) to combine.
    pub generators: usize,
    /// Over which last fraction of training those generators are spread.
    pub span: f64,
    /// Rows drawn from each generator into the set B.
    pub samples_per_generator: usize,
    /// Rounds T of the game.
    pub rounds: u64,
    /// The multiplicative-weights rate η; `None`: the paper's ½·√(ln|B| / T).
    pub eta: Option<f64>,
    /// Whether sampling applies discriminator rejection sampling by default (off: on ADULT
    /// it made 1-way marginals worse in every run measured, once collapsing them, because
    /// the DP critics' logits are far from calibrated; `sample --draw boosted-drs` has it).
    pub drs: bool,
    /// DRS shifts its acceptance scores by this percentile of them (Azadi et al. 2019).
    pub drs_percentile: f64,
    /// The fewest effective rows (1 / Σ w², as a share of the set) a released weighting
    /// may lean on; a weighting more concentrated is tempered (w^β, the largest β ≤ 1
    /// that reaches it). Confident DP critics can make the game pile its weight on a few
    /// dozen rows (measured on ADULT with DP-auto-GAN: 41 of 20,000, and one after DRS),
    /// and a mixture of 41 rows is a collapse of its own. Post-processing: no ε.
    pub min_effective_share: f64,
}

impl Default for BoostConfig {
    fn default() -> Self {
        Self {
            share: 0.1,
            generators: 20,
            span: 0.5,
            samples_per_generator: 1000,
            rounds: 400,
            eta: None,
            drs: false,
            drs_percentile: 0.95,
            min_effective_share: 0.1,
        }
    }
}

impl BoostConfig {
    /// Settings that make no sense, in words.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if !(self.share > 0.0 && self.share < 1.0) {
            return Err(format!(
                "the boosting share of ε must be between 0 and 1 (exclusive), got {}",
                self.share
            ));
        }
        if self.generators == 0 || self.samples_per_generator == 0 || self.rounds == 0 {
            return Err(
                "boosting needs at least one generator, one row per generator and one round".into(),
            );
        }
        if self.generators.saturating_mul(self.samples_per_generator) > 2_000_000 {
            return Err(format!(
                "boosting over {} × {} rows is more than the 2,000,000 the released set may hold; use fewer generators or rows",
                self.generators, self.samples_per_generator
            ));
        }
        if !(self.span > 0.0 && self.span <= 1.0) {
            return Err(format!(
                "the boosting span must be in (0, 1], got {}",
                self.span
            ));
        }
        if self.eta.is_some_and(|e| !(e > 0.0 && e.is_finite())) {
            return Err("the boosting rate η must be positive".into());
        }
        if !(0.0..=1.0).contains(&self.drs_percentile) {
            return Err("the DRS percentile must be in [0, 1]".into());
        }
        if !(0.0..=1.0).contains(&self.min_effective_share) {
            return Err("the minimum effective share must be in [0, 1]".into());
        }
        Ok(())
    }
}

/// A method whose run is followed by post-GAN boosting over its last snapshots.
pub struct Boosted {
    inner: Box<dyn Synthesizer + Send>,
    cfg: BoostConfig,
    private: bool,
}

/// `inner`, boosted by `cfg` (privately when `private`).
pub fn boosted(
    inner: Box<dyn Synthesizer + Send>,
    cfg: BoostConfig,
    private: bool,
) -> Box<dyn Synthesizer + Send> {
    Box::new(Boosted {
        inner,
        cfg,
        private,
    })
}

/// A snapshot kept for the game.
struct Kept {
    generator: ReleasedModel,
    critic: Net,
    scale: f64,
    step: u64,
}

/// The per-round ε₀ the plan reserved.
fn planned_epsilon0(plan: &Plan) -> Option<f64> {
    plan.charges.iter().rev().find_map(|c| match c.mechanism {
        Mechanism::Exponential { epsilon } => Some(epsilon),
        _ => None,
    })
}

impl Synthesizer for Boosted {
    fn id(&self) -> &'static str {
        self.inner.id()
    }

    fn plan(&self, n: usize, budget: Budget, prior: &[Charge]) -> Result<Plan> {
        self.cfg.validate().map_err(MethodError::Usage)?;
        let what = format!(
            "{} rounds over the last {} generators' {} rows each",
            self.cfg.rounds, self.cfg.generators, self.cfg.samples_per_generator
        );
        if !self.private {
            let mut p = self.inner.plan(n, budget, prior)?;
            p.summary = format!(
                "{}; then post-GAN boosting by best response (non-private): {what}",
                p.summary
            );
            return Ok(p);
        }
        let target = self.cfg.share * budget.epsilon;
        let e0 = epsilon0_for(target, budget.delta, self.cfg.rounds, &product_orders())
            .ok_or_else(|| MethodError::Plan("no positive ε₀ fits the boosting share".into()))?;
        let boost = Charge {
            mechanism: Mechanism::Exponential { epsilon: e0 },
            count: self.cfg.rounds,
        };
        let with_boost: Vec<Charge> = prior.iter().copied().chain([boost]).collect();
        let mut p = self.inner.plan(n, budget, &with_boost)?;
        p.charges.push(boost);
        p.summary = format!(
            "{}; then private post-GAN boosting: {what}, the exponential mechanism at ε₀ = {e0:.3e} per round (ε {target:.3} alone)",
            p.summary
        );
        Ok(p)
    }

    fn footprint(&self, n: usize, width: usize) -> super::Footprint {
        let mut f = self.inner.footprint(n, width);
        // The kept snapshots (generator and critic each) and the boosted set B.
        let set = (self.cfg.generators as u64)
            .saturating_mul(self.cfg.samples_per_generator as u64)
            .saturating_mul(width as u64);
        f.extra_values = f
            .extra_values
            .saturating_add(f.params.saturating_mul(self.cfg.generators as u64))
            .saturating_add(set);
        f
    }

    fn train(&mut self, mut s: TrainSetup<'_>) -> Result<ReleasedModel> {
        let keep = self.cfg.generators;
        let mut kept: VecDeque<Kept> = VecDeque::with_capacity(keep + 1);
        let mut stopped = false;
        let last = {
            let mut outer = s.checkpoint.take();
            let mut sink = |c: Checkpoint| -> std::result::Result<(), String> {
                if let Some(critic) = &c.critic {
                    kept.push_back(Kept {
                        generator: c.generator.clone(),
                        critic: critic.clone(),
                        scale: c.critic_scale,
                        step: c.step,
                    });
                    if kept.len() > keep {
                        kept.pop_front();
                    }
                }
                match (c.epoch_end, outer.as_mut()) {
                    (true, Some(o)) => o(c),
                    _ => Ok(()),
                }
            };
            let observer = &mut *s.observer;
            let mut obs = |p: Progress| {
                let f = observer(p);
                stopped |= f == Flow::Stop;
                f
            };
            self.inner.train(TrainSetup {
                plan: s.plan,
                data: s.data,
                parts: s.parts,
                records: s.records,
                encoding: s.encoding,
                accountant: &mut *s.accountant,
                noise: &mut *s.noise,
                device: s.device,
                observer: &mut obs,
                checkpoint: Some(&mut sink),
                snapshots: Some(Snapshots {
                    count: keep,
                    span: self.cfg.span,
                }),
            })?
        };
        if stopped || kept.is_empty() {
            // Cancelled, or no snapshot with a critic: the plain release, boosting unspent.
            return Ok(last);
        }
        self.boost(&mut s, last, kept.into())
    }
}

impl Boosted {
    /// Plays the post-GAN game over `kept` and returns `last` with the mixture attached.
    fn boost(
        &self,
        s: &mut TrainSetup<'_>,
        mut last: ReleasedModel,
        kept: Vec<Kept>,
    ) -> Result<ReleasedModel> {
        let cfg = &self.cfg;
        let enc = s.encoding;
        let width = enc.width;
        let r = cfg.samples_per_generator;
        let mut rows: Vec<f32> = Vec::with_capacity(kept.len() * r * width);
        for k in &kept {
            let raw = k.generator.generate(r, s.noise.rng())?;
            rows.extend(concrete(enc, &raw, s.noise.rng()));
        }
        let b = Tensor::from_vec(rows.clone(), (kept.len() * r, width), s.device)?;
        let fake: Vec<Vec<f64>> = kept
            .iter()
            .map(|k| scores(&k.critic, k.scale, &b))
            .collect::<Result<_>>()?;
        let selector = self.selector(s)?;
        let real: Vec<f64> = kept
            .iter()
            .map(|k| real_mean(&k.critic, k.scale, s.data, s.records))
            .collect::<Result<_>>()?;
        let eta = cfg
            .eta
            .unwrap_or_else(|| 0.5 * ((fake[0].len() as f64).ln() / cfg.rounds as f64).sqrt());
        let out = play(&fake, &real, cfg.rounds, eta, selector, s.noise.rng());
        let floor = cfg.min_effective_share * out.phi_bar.len() as f64;
        let drs = tempered(
            &drs_weights(&out.phi_bar, &out.d_bar, cfg.drs_percentile),
            floor,
        );
        let phi_bar = tempered(&out.phi_bar, floor);
        last.header.privacy = statement(
            s.accountant,
            Accounting::Best,
            self.private,
            &enc.schema,
            s.noise.seeded_by_user,
        );
        last.header.mixture = Some(Mixture {
            rounds: cfg.rounds,
            epsilon0: selector.epsilon0(),
            generator_steps: kept.iter().map(|k| k.step).collect(),
            samples_per_generator: r,
            eta,
            picks: out.picks.clone(),
            effective_rows: (effective_rows(&phi_bar), effective_rows(&drs)),
            drs_percentile: cfg.drs_percentile,
            draw: if cfg.drs {
                Draw::BoostedDrs
            } else {
                Draw::Boosted
            },
        });
        if let serde_json::Value::Object(o) = &mut last.header.config {
            o.insert(
                "boost".into(),
                serde_json::to_value(cfg).unwrap_or_default(),
            );
        }
        last.mixture = Some(MixtureSet {
            rows,
            weights: phi_bar,
            drs_weights: drs,
        });
        let p = Progress::at(
            s,
            self.private,
            "boosting",
            (cfg.rounds, cfg.rounds),
            vec![("payoff of the mixture critic".into(), out.final_payoff)],
        );
        let _ = (s.observer)(p);
        Ok(last)
    }

    /// How a round picks its generator: the exponential mechanism at the plan's ε₀, its
    /// rounds charged before the first private score is read; the best response when not
    /// private.
    fn selector(&self, s: &mut TrainSetup<'_>) -> Result<Selector> {
        if !self.private {
            return Ok(Selector::BestResponse);
        }
        let e0 = planned_epsilon0(s.plan)
            .ok_or_else(|| MethodError::Plan("the reserved plan has no boosting rounds".into()))?;
        s.accountant
            .charge(Mechanism::Exponential { epsilon: e0 }, self.cfg.rounds)
            .map_err(|e| MethodError::Plan(format!("boosting does not fit: {e}")))?;
        Ok(Selector::Exponential {
            epsilon0: e0,
            records: s.records,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::encode::Encoding;
    use crate::nn::layers::{Act, mlp};
    use candle_core::Device;
    use rand::SeedableRng;

    #[test]
    fn payoff_moves_by_at_most_one_over_n_and_upwards_when_a_record_is_added() {
        let dev = Device::Cpu;
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let critic = Net::new(
            mlp(&[3, 8, 1], Act::LeakyRelu(0.2), &dev, &mut rng).unwrap(),
            &dev,
        );
        let x: Vec<f32> = (0..60).map(|i| ((i * 37) % 11) as f32 / 10.0).collect();
        let n = 20;
        let data = Tensor::from_vec(x.clone(), (n, 3), &dev).unwrap();
        let records = 25; // the public count
        let base = real_mean(&critic, 1.0, &data, records).unwrap();
        for extra in [[0.0f32, 0.0, 0.0], [1.0, 1.0, 1.0], [30.0, -40.0, 9.0]] {
            let mut y = x.clone();
            y.extend(extra);
            let more = Tensor::from_vec(y, (n + 1, 3), &dev).unwrap();
            let up = real_mean(&critic, 2.0, &more, records).unwrap()
                - real_mean(&critic, 2.0, &data, records).unwrap();
            assert!((0.0..=1.0 / records as f64).contains(&up), "{up}");
            let up1 = real_mean(&critic, 1.0, &more, records).unwrap() - base;
            assert!((0.0..=1.0 / records as f64).contains(&up1), "{up1}");
        }
        // The whole payoff: the generated part is the same for both tables.
        let fake = vec![vec![0.2, 0.9], vec![0.5, 0.5]];
        let phi = [0.5, 0.5];
        let u = payoffs(&[base, base], &fake, &phi);
        assert!((u[0] - (base + 1.0 - 0.55)).abs() < 1e-12);
    }

    #[test]
    fn best_response_moves_weight_to_rows_the_critics_call_real() {
        // Both critics score rows 0–1 as real and rows 2–3 as fake, and the real data as
        // real: multiplicative weights move φ onto rows 0–1, and φ̄ follows.
        let fake = vec![vec![0.9, 0.9, 0.1, 0.1], vec![0.8, 0.8, 0.3, 0.3]];
        let real = [0.9, 0.8];
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let out = play(&fake, &real, 200, 0.2, Selector::BestResponse, &mut rng);
        assert!((out.phi_bar.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(
            out.phi_bar[0] > 0.4 && out.phi_bar[2] < 0.1,
            "{:?}",
            out.phi_bar
        );
        assert_eq!(out.picks.iter().sum::<u64>(), 200);
        let drs = drs_weights(&out.phi_bar, &out.d_bar, 0.95);
        assert!((drs.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(
            drs[0] / drs[2] >= out.phi_bar[0] / out.phi_bar[2],
            "DRS sharpens"
        );
    }

    #[test]
    fn the_exponential_selector_is_nearly_uniform_at_tiny_epsilon() {
        let fake = vec![vec![0.9, 0.1], vec![0.1, 0.9], vec![0.5, 0.5]];
        let real = [0.5, 0.5, 0.5];
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let sel = Selector::Exponential {
            epsilon0: 1e-9,
            records: 10,
        };
        let out = play(&fake, &real, 3000, 0.01, sel, &mut rng);
        for p in &out.picks {
            assert!((*p as f64 - 1000.0).abs() < 150.0, "{:?}", out.picks);
        }
    }

    /// A private category estimate before the run (a thresholded histogram, which RDP
    /// cannot express) and boosting after it (which PLD does not model): the plan still
    /// fits the budget, by the split bound, for the two-phase DP-auto-GAN too.
    #[test]
    fn boosting_plans_fit_beside_a_private_category_estimate() {
        let prior = [Charge {
            mechanism: Mechanism::ThresholdedGaussian {
                std: 30.0,
                delta_inf: 1e-7,
            },
            count: 1,
        }];
        let budget = Budget {
            epsilon: 1.0,
            delta: 3e-6,
        };
        let m = super::super::registry::find("dp-auto-gan")
            .unwrap()
            .instantiate_boosted(
                "tiny",
                1.0,
                &Default::default(),
                Some(&BoostConfig::default()),
            )
            .unwrap();
        let p = m.plan(32_561, budget, &prior).unwrap();
        assert!(p.epsilon <= 1.0 + 1e-9 && p.epsilon > 0.95, "{}", p.epsilon);
        assert_eq!(p.accountant, "pld+rdp");
        assert!(matches!(
            p.charges.last().map(|c| c.mechanism),
            Some(Mechanism::Exponential { .. })
        ));
    }

    #[test]
    fn a_collapsed_weighting_is_tempered_to_the_floor_and_keeps_its_order() {
        let mut w = vec![1e-9; 1000];
        w[..10].iter_mut().for_each(|x| *x = 1.0);
        w[10] = 0.5;
        assert!(effective_rows(&w) < 11.0);
        let t = tempered(&w, 100.0);
        assert!(
            (effective_rows(&t) - 100.0).abs() < 1.0,
            "{}",
            effective_rows(&t)
        );
        assert!(t[0] > t[10] && t[10] > t[500]);
        assert!((t.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        // Already spread: unchanged.
        let u = vec![1.0; 50];
        assert_eq!(tempered(&u, 10.0), vec![0.02; 50]);
    }

    #[test]
    fn concrete_rows_are_one_hot_and_binary() {
        let schema: crate::data::schema::Schema = serde_json::from_value(serde_json::json!({
            "columns": [
                {"name": "c", "kind": "categorical", "domain": {"categories": ["a", "b", "c"]}},
                {"name": "b", "kind": "binary", "domain": {"categories": ["n", "y"]}},
                {"name": "x", "kind": "continuous", "domain": {"bounds": {"lower": 0.0, "upper": 1.0}}}
            ]
        }))
        .unwrap();
        let enc = Encoding::new(&schema).unwrap();
        let raw = vec![0.2f32, 0.7, 0.1, 0.6, 0.33, 0.0, 0.0, 0.0, f32::NAN, 1.5];
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let c = concrete(&enc, &raw, &mut rng);
        for row in c.chunks(enc.width) {
            assert_eq!(row[..3].iter().sum::<f32>(), 1.0);
            assert!(row[3] == 0.0 || row[3] == 1.0);
            assert!((0.0..=1.0).contains(&row[4]));
        }
        assert_eq!(c[4], 0.33);
        assert_eq!(c[9], 1.0);
    }
}
