//! PEARL (Liew, Takahashi & Ueno, ICLR 2022): private embeddings and adversarial
//! reconstruction learning. The private rows are read once, for up to three Gaussian
//! releases; the generator and the critic then train on those releases alone, as long as
//! they like, at no further privacy cost.
//!
//! Releases, each charged before its statistic is computed, under add/remove-one
//! neighbouring (the relation of DP-SGD and the ledger; N is public, see
//! [`crate::job::records_statement`]):
//! 1. **Bandwidth** (when `bandwidth` = 0 and `aux_share` > 0): the moments
//!    Σ [x/√c, ‖x‖²/c] (c = one per span bounds ‖x‖²), sensitivity √2
//!    ([`embedding::distance_moments`]), giving the RMS distance between two rows ℓ, the
//!    scale of the frequencies t ~ N(0, ℓ⁻²I). The paper releases the *mean* pairwise
//!    distance at sensitivity 2√d/n (replace-one, O(n²) pairs); the RMS distance has an
//!    exact O(nd) form and an exact sensitivity, and plays the same median-heuristic role.
//!    `aux_share` = 0 takes the public rule √(columns) instead.
//! 2. **Class counts** (with a label column): one record moves one count by 1; integer
//!    counts plus exact discrete Gaussian noise: `DiscreteGaussian { std }` (same RDP as a
//!    Gaussian of sensitivity 1, so the shares still compose to one Gaussian's ρ). The
//!    real-valued releases 1 and 3 draw their noise in f64.
//! 3. **The characteristic-function embedding**: per class c, S_c = Σ_{y_i = c} φ(x_i) with
//!    φ(x) = k^{−1/2}[cos(t_j·x), sin(t_j·x)], ‖φ‖ = 1; a record lies in one class, so the
//!    [C, 2k] matrix moves by exactly 1: `Gaussian { sensitivity: 1 }`. (The paper's
//!    2√k/n is the same release for the unnormalised mean under replace-one: two rows
//!    change, each by √k, divided by n.)
//!
//! The budget is split as shares of the Gaussian's ρ = Δ²/(2 std²): the releases' RDP
//! curves add to that of one Gaussian at the calibrated σ, and the whole plan (with any
//! domain estimate before it) is calibrated by the tighter accountant.
//!
//! After the releases: the generator minimises Σ_j w_j Σ_c |Φ̃_c(t_j) − Φ̂_c(t_j)|² (the
//! joint embedding of rows and label, mass-weighted, so an unconditional generator learns
//! the label with the rest), plus the squared gap between the released class proportions
//! and the generated ones. The critic (paper eq. 1) re-weights the fixed frequencies by
//! the density ratio of N(0, diag(ℓ'_k⁻²)) to N(0, ℓ⁻²I), self-normalised, and every
//! `critic_every` generator steps takes one Adam step *up* the same distance in log ℓ'.
//! Both read only generated rows and the released statistics: post-processing.

use super::embedding::{self, Frequencies, LabelSpan};
use super::gan_phase::sampling_heads;
use super::image_nets::{self, ImageLayout};
use super::released::ReleasedModel;
use super::released::with_label;
use super::statement::{Accounting, release};
use super::{
    Flow, MethodError, Plan, Progress, Result, Synthesizer, TrainSetup, calibrated, heads_for,
    plan_preamble,
};
use crate::nn::layers::{Act, Block, Net, mlp, summed_grads};
use crate::nn::optim::{Adam, Optimizer};
use crate::privacy::calibrate::sigma_for;
use crate::privacy::{Budget, Charge, Mechanism};

mod config;
mod frequencies;
mod fused;
mod objective;
mod releases;

pub use config::{EmbedFit, INFO, PearlConfig};
use frequencies::*;
use fused::distance_grad_fused;
use objective::*;
use releases::*;

/// The PEARL method, and DP-MERF as PEARL without its critic (see `dp_merf.rs`).
pub struct Pearl {
    pub config: PearlConfig,
    /// The registry name the model is released under.
    id: &'static str,
}

impl Pearl {
    /// PEARL's training under `config`, released as method `id`.
    pub fn new(config: PearlConfig, id: &'static str) -> Self {
        Self { config, id }
    }
}

impl Synthesizer for Pearl {
    fn id(&self) -> &'static str {
        self.id
    }

    fn plan(&self, n: usize, budget: Budget, prior: &[Charge]) -> Result<Plan> {
        if let Some(p) = plan_preamble(n, self.config.common.private, budget)? {
            return Ok(p);
        }
        let c = &self.config;
        c.check()?;
        let orders = crate::privacy::rdp::product_orders();
        // The shares' RDP curves add to one Gaussian's at σ: its RDP σ is the hint.
        let rdp = sigma_for(1.0, 1, budget.epsilon, budget.delta, &orders, &[], 1e-4)
            .map_err(|e| MethodError::Plan(e.to_string()))?;
        let make = |s| c.releases(s).unwrap_or_default();
        // The labeller's steps are fixed first (its share of ε alone); the releases are
        // calibrated to what is left, so the whole composes to the budget.
        let labeller = c.fit.labeller.charge_for(budget, n)?;
        let before: Vec<Charge> = prior.iter().copied().chain(labeller).collect();
        let (_, mut charges, whole) = calibrated(&before, make, budget, rdp, "PEARL's releases")?;
        charges.extend(labeller);
        let stds: Vec<String> = charges
            .iter()
            .filter_map(|ch| match ch.mechanism {
                Mechanism::Gaussian { std, .. } | Mechanism::DiscreteGaussian { std } => {
                    Some(format!("{std:.2}"))
                }
                _ => None,
            })
            .collect();
        let parts = c.release_parts()?;
        let beside = match labeller.map(|l| l.mechanism) {
            Some(Mechanism::SubsampledGaussian { sigma, .. }) => format!(
                "; and a '{}' classifier trained by DP-SGD (the labeller: {} steps of about {} rows at σ {sigma:.2}, {:.0} % of ε alone), which sampling uses to keep the images it reads as their class",
                c.fit.label,
                c.fit.labeller.labeller_steps,
                c.fit.labeller.labeller_batch,
                100.0 * c.fit.labeller.labeller_share
            ),
            _ => String::new(),
        };
        Ok(Plan {
            charges,
            epsilon: whole.epsilon,
            accountant: whole.by.name(),
            summary: format!(
                "Gaussian releases of {} (noise std {}), then {} free generator steps{}{beside}",
                parts.join(", "),
                stds.join(" / "),
                c.fit.steps,
                if c.critic_every > 0 {
                    " with a critic"
                } else {
                    ""
                }
            ),
        })
    }

    fn needs_images(&self) -> Option<String> {
        self.config.fit.labeller.on().then(|| {
            "a labeller (labeller_share above 0) learns the classes of square images: this data is a table, so set labeller_share=0".into()
        })
    }

    fn footprint(&self, n: usize, width: usize) -> super::Footprint {
        let c = &self.config;
        let critic_steps = c.fit.steps.checked_div(c.critic_every).unwrap_or(0);
        let generator = if c.fit.conv_generator.is_empty() {
            let mut dims = vec![c.fit.latent_dim];
            dims.extend(&c.fit.generator_hidden);
            dims.push(width);
            let params = super::mlp_params(&dims);
            (
                params,
                params,
                dims.iter().copied().max().unwrap_or(1) as u64,
            )
        } else {
            let layout = ImageLayout::estimate(width);
            let g = image_nets::ConvCost::writer(
                c.fit.latent_dim + layout.label_width,
                &c.fit.conv_generator,
                &layout,
            );
            (g.params, g.work / image_nets::CONV_SPEEDUP, g.widest)
        };
        let dense = c.critic_every > 0 || c.fit.step_features > 0;
        let (evals, macs, matrix) = c.fit.feature_cost(width, dense);
        let (l_steps, l_batch, l_work) = c.fit.labeller.phase(width);
        let mut f = super::Footprint::embedding_method(
            n,
            generator,
            super::FeatureCost { evals, macs },
            (c.fit.steps, c.fit.steps + critic_steps, c.fit.batch),
            // The frequencies (twice with the critic's copy), and the release's chunk of
            // projections, cosines, sines and features (about four chunk-sized tensors).
            matrix * (1 + u64::from(c.critic_every > 0))
                + 4 * embedding::FEATURE_CHUNK_VALUES as u64,
        );
        // The labeller's DP-SGD steps: forward, backward and the per-example norms.
        f.passes = f
            .passes
            .saturating_add(super::Footprint::phase(l_steps, l_batch, 3 * l_work));
        f.steps += l_steps;
        f
    }

    fn train(&mut self, mut s: TrainSetup<'_>) -> Result<ReleasedModel> {
        let c = self.config.clone();
        let label = match c.fit.label.as_str() {
            "" => None,
            name => Some(LabelSpan::find(s.encoding, name)?),
        };
        let width = s.data.dims2()?.1;
        let n = s.records as f64;
        if let (Some(l), true) = (label, c.fit.labeller.on()) {
            // Before any release: the job refuses tables before it plans (`needs_images`),
            // so this stops only rows whose pixels do not make a square.
            ImageLayout::of_span(width, Some((l.start, l.width())))?;
        }
        let mut stds = planned_stds(&c, s.plan)?.into_iter();
        let aux_std = c.shares()?.0.map(|_| stds.next().unwrap_or(0.0));
        let count_std = label.and(c.shares()?.1).map(|_| stds.next().unwrap_or(0.0));
        let emb_std = stds.next().unwrap_or(0.0);
        let ell = bandwidth(&c, &mut s, aux_std, n)?;
        let scales: Vec<f64> = std::iter::once(ell)
            .chain(c.fit.bandwidth_mix.iter().copied())
            .collect();
        let dense = c.critic_every > 0 || c.fit.step_features > 0;
        let omega = frequencies(&c.fit, width, label, &scales, dense, &mut s)?;
        let released = Released {
            proportions: match (label, count_std) {
                (Some(l), Some(std)) => Some(noisy_proportions(&mut s, l, std, c.common.private)?),
                _ => None,
            },
            target: noisy_embedding(
                &mut s,
                &omega,
                label,
                (emb_std, c.common.private, n),
                c.fit.embed_device,
            )?,
            label,
            conditioning: None,
        };
        let released = Released {
            conditioning: conditioning(label, released.proportions.as_ref())?,
            ..released
        };
        let labeller = match label {
            Some(l) if c.fit.labeller.on() => Some(train_labeller(&mut s, &c, l)?),
            _ => None,
        };
        let generator = self.fit(&mut s, &c, &omega, &released, ell)?;
        let mut model = release(
            &s,
            Accounting::Best,
            c.common.private,
            self.id(),
            &c.common.preset,
            c.fit.latent_dim,
            sampling_heads(generator),
            serde_json::to_value(&c).unwrap_or_default(),
        )?;
        model.header.conditioning = released.conditioning;
        model.header.labeller = labeller.as_ref().map(|l| l.header.clone());
        model.labeller = labeller;
        Ok(model)
    }
}

impl Pearl {
    /// The minimax loop on the released statistics alone.
    fn fit(
        &self,
        s: &mut TrainSetup<'_>,
        c: &PearlConfig,
        omega: &Frequencies,
        r: &Released,
        ell: f64,
    ) -> Result<Net> {
        let dev = s.device.clone();
        let width = s.data.dims2()?.1;
        let classes_in = r.conditioning.as_ref().map_or(0, |k| k.classes);
        let mut blocks = if c.fit.conv_generator.is_empty() {
            let mut dims = vec![c.fit.latent_dim + classes_in];
            dims.extend(&c.fit.generator_hidden);
            dims.push(width);
            mlp(&dims, Act::LeakyRelu(0.2), &dev, s.noise.rng())?
        } else {
            // The pixels are every column but the label's span, which the conditioning
            // overwrites: the image comes out of the convolutions, zeros fill the span.
            let layout = ImageLayout::new(width, r.conditioning.as_ref())?;
            image_nets::writer(
                c.fit.latent_dim + classes_in,
                &c.fit.conv_generator,
                &layout,
                &dev,
                s.noise.rng(),
            )?
        };
        blocks.push(Block::Head(heads_for(s.encoding, c.fit.tau)));
        let generator = Net::new(blocks, &dev);
        let mut opt = Adam::new(c.fit.lr);
        let params = generator.params();
        let mut critic = Critic::new(omega, ell)?;
        // Ten snapshots a run (the window previews images from them).
        let tenth = c.fit.steps / 10;
        for step in 0..c.fit.steps {
            if c.fit.lr_cosine {
                opt.set_learning_rate(cosine_lr(c.fit.lr, step, c.fit.steps));
            }
            let (z, classes) = r.input(s, c)?;
            let fix = r.label_fix(&classes, width, &dev)?;
            let (y, caches) = generator.forward_train(&z, Some(s.noise.rng()))?;
            let w = critic.weights_tensor(&dev)?;
            let (l, dy) = match step_subset(c.fit.step_features, omega, r, &w, s)? {
                Some((sub, r_sub, w_sub)) => {
                    distance_grad(&y, &fix, &sub, &r_sub, &w_sub, c.fit.unbiased)?
                }
                None => match distance_grad_fused(&y, &fix, omega, r, &w, c.fit.unbiased)? {
                    Some(fused) => fused,
                    None => distance_grad(&y, &fix, omega, r, &w, c.fit.unbiased)?,
                },
            };
            let (_, signals) = generator.backward(&caches, &dy)?;
            opt.step(&params, &summed_grads(&signals)?)?;
            if c.critic_every > 0 && (step + 1) % c.critic_every == 0 {
                critic.ascend(
                    &per_frequency(&with_label(&y, &fix)?, omega, r)?,
                    c.critic_lr,
                );
            }
            if tenth > 0 && (step + 1) % tenth == 0 {
                let at = ((step + 1) / tenth, step + 1);
                snapshot(s, (self.id, c), &generator, r, at)?;
            }
            if (step + 1) % 50 == 0 || step + 1 == c.fit.steps {
                let losses = vec![("weighted CF distance".into(), l)];
                let p = Progress::at(
                    s,
                    c.common.private,
                    "generator",
                    (step + 1, c.fit.steps),
                    losses,
                );
                if (s.observer)(p) == Flow::Stop {
                    break;
                }
            }
        }
        Ok(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::embedding::SquareFilters;
    use crate::methods::method::MethodConfig as _;
    use crate::nn::layers::loss_grad;
    use candle_core::Tensor;

    /// The hand-written gradient against candle's autograd of the same loss, with a label
    /// (its span fixed, as training fixes it) and without.
    #[test]
    fn the_hand_gradient_matches_autograd() {
        use rand::SeedableRng;
        let dev = candle_core::Device::Cpu;
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        // Two label columns beside a 3×3 image: frequencies over the whole row, and the
        // same beside 2×2 square filters at every place (4 places × 6 filters).
        let (width, b) = (11, 6);
        let whole = embedding::frequencies(width, 40, 0.7, &mut rng, &dev).unwrap();
        let layout = ImageLayout::of_span(width, Some((0, 2))).unwrap();
        let sq = SquareFilters::draw(width, &layout, 6, (2, 1.0), &mut rng, &dev).unwrap();
        let kinds = [
            Frequencies::whole_row(whole.clone()).unwrap(),
            Frequencies::with_squares(Some(whole), sq, 0.5).unwrap(),
        ];
        let y = Tensor::rand(0f32, 1f32, (b, width), &dev).unwrap();
        for omega in &kinds {
            let k = omega.count();
            let w = Tensor::rand(0.5f32, 1.5f32, (1, 2 * k), &dev).unwrap();
            let label = LabelSpan {
                start: 0,
                classes: 2,
                binary: false,
            };
            let cond = conditioning(Some(label), None).unwrap().unwrap();
            let fix = Some(cond.fix(&[0, 1, 1, 0, 1, 0], width, &dev).unwrap());
            let cases = [
                (
                    Released {
                        target: Tensor::rand(-0.3f32, 0.3f32, (2, 2 * k), &dev).unwrap(),
                        proportions: Some(Tensor::new(&[[0.4f32, 0.6]], &dev).unwrap()),
                        label: Some(label),
                        conditioning: Some(cond.clone()),
                    },
                    fix,
                ),
                (
                    Released {
                        target: Tensor::rand(-0.3f32, 0.3f32, (1, 2 * k), &dev).unwrap(),
                        proportions: None,
                        label: None,
                        conditioning: None,
                    },
                    None,
                ),
            ];
            for ((r, fix), unbiased) in cases.iter().flat_map(|c| [(c, false), (c, true)]) {
                let (l0, g0) = loss_grad(&y, |y| {
                    distance(&with_label(y, fix)?, omega, r, &w, unbiased)
                })
                .unwrap();
                let (l1, g1) = distance_grad(&y, fix, omega, r, &w, unbiased).unwrap();
                assert!(
                    (l0 - l1).abs() < 1e-5 * l0.abs().max(1.0),
                    "loss {l0} vs {l1}"
                );
                let (a, c): (Vec<f32>, Vec<f32>) = (
                    g0.flatten_all().unwrap().to_vec1().unwrap(),
                    g1.flatten_all().unwrap().to_vec1().unwrap(),
                );
                let scale = a.iter().fold(0f32, |m, v| m.max(v.abs()));
                assert!(scale > 0.0);
                for (i, (u, v)) in a.iter().zip(&c).enumerate() {
                    assert!((u - v).abs() <= 1e-4 * scale, "gradient {i}: {u} vs {v}");
                }
            }
        }
    }

    /// A step's share of the frequencies estimates the whole distance without bias: over
    /// the four quarters of the frequencies, the subsets' distances average to the whole
    /// one (with the class-proportion term, and with the unbiased batch distance).
    #[test]
    fn frequency_subsets_average_to_the_whole_distance() {
        use rand::SeedableRng;
        let dev = candle_core::Device::Cpu;
        let mut rng = rand::rngs::StdRng::seed_from_u64(8);
        let (width, k, b) = (7, 40, 6);
        let omega =
            Frequencies::whole_row(embedding::frequencies(width, k, 0.7, &mut rng, &dev).unwrap())
                .unwrap();
        let label = LabelSpan {
            start: 0,
            classes: 2,
            binary: false,
        };
        let cond = conditioning(Some(label), None).unwrap().unwrap();
        let fix = Some(cond.fix(&[0, 1, 1, 0, 1, 0], width, &dev).unwrap());
        let y = with_label(&Tensor::rand(0f32, 1f32, (b, width), &dev).unwrap(), &fix).unwrap();
        let r = Released {
            target: Tensor::rand(-0.3f32, 0.3f32, (2, 2 * k), &dev).unwrap(),
            proportions: Some(Tensor::new(&[[0.4f32, 0.6]], &dev).unwrap()),
            label: Some(label),
            conditioning: Some(cond),
        };
        let w = Tensor::ones((1, 2 * k), candle_core::DType::F32, &dev).unwrap();
        let value = |t: Tensor| t.to_scalar::<f32>().unwrap() as f64;
        for unbiased in [false, true] {
            let whole = value(distance(&y, &omega, &r, &w, unbiased).unwrap());
            let quarters: Vec<f64> = (0..4u32)
                .map(|q| {
                    let picked: Vec<u32> = (q * 10..q * 10 + 10).rev().collect();
                    let (sub, r_sub, w_sub) = subset_of(&picked, &omega, &r, &w).unwrap();
                    value(distance(&y, &sub, &r_sub, &w_sub, unbiased).unwrap())
                })
                .collect();
            let mean = quarters.iter().sum::<f64>() / 4.0;
            assert!(
                (mean - whole).abs() < 1e-5 * whole.max(1.0),
                "{mean} vs {whole}"
            );
            assert!(
                quarters.iter().any(|d| (d - whole).abs() > 1e-4),
                "the quarters differ"
            );
        }
    }

    #[test]
    fn the_cosine_schedule_starts_at_lr_and_ends_near_zero() {
        assert_eq!(cosine_lr(0.002, 0, 3_000), 0.002);
        assert!((cosine_lr(0.002, 1_500, 3_000) - 0.001).abs() < 1e-12);
        assert!(cosine_lr(0.002, 2_999, 3_000) < 1e-8);
    }

    #[test]
    fn a_bandwidth_mix_with_the_critic_is_refused_before_any_charge() {
        let mut c = PearlConfig::preset("tiny").unwrap();
        c.fit.bandwidth_mix = vec![2.0];
        let budget = Budget {
            epsilon: 1.0,
            delta: 1e-5,
        };
        let err = Pearl::new(c, "pearl").plan(1_000, budget, &[]).unwrap_err();
        assert!(err.to_string().contains("critic_every = 0"), "{err}");
    }

    /// The unbiased loss is the U-statistic over pairs of distinct rows of a class: against
    /// that sum written out pair by pair it differs by the same constant (the rows' own
    /// φᵢ·φᵢ terms, fixed by ‖φ‖ = 1) whatever the rows, where the plain loss does not.
    #[test]
    fn the_unbiased_distance_is_the_pairwise_u_statistic() {
        use rand::SeedableRng;
        let dev = candle_core::Device::Cpu;
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let (width, k, b) = (7, 40, 7);
        let classes = [0, 1, 1, 0, 1, 0, 1];
        let omega =
            Frequencies::whole_row(embedding::frequencies(width, k, 0.7, &mut rng, &dev).unwrap())
                .unwrap();
        let label = LabelSpan {
            start: 0,
            classes: 2,
            binary: false,
        };
        let cond = conditioning(Some(label), None).unwrap().unwrap();
        let fix = Some(cond.fix(&classes, width, &dev).unwrap());
        // One weight per frequency, shared by its cos and sin (as the critic's are).
        let half = Tensor::rand(0.5f32, 1.5f32, (1, k), &dev).unwrap();
        let w = Tensor::cat(&[&half, &half], 1).unwrap();
        let r = Released {
            target: Tensor::rand(-0.3f32, 0.3f32, (2, 2 * k), &dev).unwrap(),
            proportions: None,
            label: Some(label),
            conditioning: Some(cond.clone()),
        };
        let t: Vec<Vec<f32>> = r.target.to_vec2().unwrap();
        let wv: Vec<f32> = w.flatten_all().unwrap().to_vec1().unwrap();
        let pairwise = |y: &Tensor| -> f64 {
            let phi: Vec<Vec<f32>> = embedding::features(y, &omega).unwrap().to_vec2().unwrap();
            let mut u = 0.0;
            for (c, tc) in t.iter().enumerate() {
                let rows: Vec<usize> = (0..b).filter(|&i| classes[i] == c).collect();
                let n = rows.len() as f64;
                for j in 0..2 * k {
                    let (tj, wj) = (tc[j] as f64, wv[j] as f64);
                    let e: f64 = rows.iter().map(|&i| phi[i][j] as f64).sum::<f64>() / b as f64;
                    let mut pairs = 0.0;
                    for &i in &rows {
                        for &i2 in &rows {
                            if i != i2 {
                                pairs += phi[i][j] as f64 * phi[i2][j] as f64;
                            }
                        }
                    }
                    u += wj * (tj * tj - 2.0 * tj * e + n / (n - 1.0) * pairs / (b * b) as f64);
                }
            }
            u
        };
        let gap = |unbiased: bool| {
            let y = with_label(&Tensor::rand(0f32, 1f32, (b, width), &dev).unwrap(), &fix).unwrap();
            let d = distance(&y, &omega, &r, &w, unbiased).unwrap();
            d.to_scalar::<f32>().unwrap() as f64 - pairwise(&y)
        };
        let (u1, u2) = (gap(true), gap(true));
        assert!((u1 - u2).abs() < 1e-5, "unbiased: {u1} vs {u2}");
        let (p1, p2) = (gap(false), gap(false));
        assert!((p1 - p2).abs() > 1e-4, "plain: {p1} vs {p2}");
    }

    #[test]
    fn shares_compose_to_one_gaussian() {
        let mut c = PearlConfig::preset("adult").unwrap();
        for (aux, count) in [(0.1, 0.05), (0.5, 0.05), (0.0, 0.2)] {
            c.fit.aux_share = aux;
            c.fit.count_share = count;
            let rs = c.releases(2.0).unwrap();
            let rho: f64 = rs
                .iter()
                .map(|r| match r.mechanism {
                    Mechanism::Gaussian { sensitivity, std } => (sensitivity / std).powi(2),
                    Mechanism::DiscreteGaussian { std } => std.powi(-2),
                    _ => 0.0,
                })
                .sum();
            assert!((rho - 0.25).abs() < 1e-12, "{aux}/{count}: {rho}");
        }
        c.fit.aux_share = 0.7;
        c.fit.count_share = 0.3;
        assert!(c.releases(1.0).is_err());
    }

    /// The critic moves weight toward the frequencies where the distance is largest.
    #[test]
    fn the_critic_weighs_up_discriminating_frequencies() {
        let dev = candle_core::Device::Cpu;
        // Two dimensions; frequencies large in dimension 0 differ most.
        let t = vec![0.1f32, 2.0, 0.1, 2.0, 1.0, 1.0, 1.0, 1.0];
        let omega = Frequencies::whole_row(Tensor::from_vec(t, (2, 4), &dev).unwrap()).unwrap();
        let mut critic = Critic::new(&omega, 1.0).unwrap();
        let d = [0.0, 1.0, 0.0, 1.0];
        let before: f64 = critic.p.iter().zip(&d).map(|(p, d)| p * d).sum();
        for _ in 0..50 {
            critic.ascend(&d, 0.05);
        }
        let after: f64 = critic.p.iter().zip(&d).map(|(p, d)| p * d).sum();
        assert!(after > before + 0.2, "{before} → {after}");
        assert!((critic.p.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    }
}
