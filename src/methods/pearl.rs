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

use candle_core::Tensor;

use super::embedding::{self, LabelSpan, features};
use super::gan_phase::{Accounting, latent, release, sampling_heads};
use super::image_nets::{self, ImageLayout};
use super::method::{DataKind, MethodConfig, MethodInfo, Preset, build, settings};
use super::released::with_label;
use super::released::{Conditioning, ReleasedModel};
use super::{
    Flow, MethodError, Plan, Progress, Result, Synthesizer, TrainSetup, calibrated, heads_for,
    plan_preamble,
};
use crate::nn::layers::{Act, Block, Net, loss_grad, mlp, summed_grads};
use crate::nn::optim::{Adam, Optimizer};
use crate::privacy::calibrate::sigma_for;
use crate::privacy::{Budget, Charge, Mechanism};

/// PEARL settings; presets below.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PearlConfig {
    pub preset: String,
    /// Frequencies k (the embedding has 2k numbers per class).
    pub features: usize,
    /// Kernel length scale ℓ; 0 estimates it privately (`aux_share` > 0) or takes the
    /// public rule √(number of columns) (`aux_share` = 0).
    pub bandwidth: f64,
    /// Share of the budget (of ρ) for the private bandwidth.
    pub aux_share: f64,
    /// Share of the budget (of ρ) for the class counts (with a label).
    pub count_share: f64,
    /// Class column of a class-conditional embedding ("" for none). For images, `label`.
    pub label: String,
    pub latent_dim: usize,
    pub generator_hidden: Vec<usize>,
    /// Channels of a convolutional image generator (empty: the MLP of `generator_hidden`):
    /// a linear layer to `[c₀, s, s]`, then one 4×4 stride-2 transposed convolution per
    /// further channel count and one to the single pixel channel, each doubling the side
    /// up to the image's.
    #[serde(default)]
    pub conv_generator: Vec<usize>,
    /// Generated rows per generator step.
    pub batch: usize,
    /// Generator steps (free: they never touch the private rows).
    pub steps: u64,
    pub lr: f64,
    /// One critic (re-weighting) step per this many generator steps; 0: no critic.
    pub critic_every: u64,
    pub critic_lr: f64,
    /// Gumbel-softmax temperature of the categorical heads.
    pub tau: f64,
    /// Further kernel length scales beside ℓ (public settings): the frequencies are dealt
    /// round-robin between them, so the kernel is the average of Gaussians at every scale.
    /// Without the critic only (its re-weighting assumes one scale).
    #[serde(default)]
    pub bandwidth_mix: Vec<f64>,
    /// Anneal the generator's learning rate from `lr` to zero on a half cosine over the
    /// steps: the last steps settle on the embedding instead of jittering around it.
    #[serde(default)]
    pub lr_cosine: bool,
    /// Release with noise (false: the exact statistics, ε = ∞).
    pub private: bool,
    /// Where the embedding is computed: `auto` (a hardware GPU through the WGSL kernel
    /// when there is one), `cpu` or `gpu`.
    #[serde(default)]
    pub embed_device: embedding::EmbedDevice,
}

impl PearlConfig {
    pub fn preset(name: &str) -> Result<Self> {
        let base = Self {
            preset: name.into(),
            features: 1_000,
            bandwidth: 0.0,
            aux_share: 0.1,
            count_share: 0.05,
            label: String::new(),
            latent_dim: 32,
            generator_hidden: vec![128, 128],
            conv_generator: Vec::new(),
            batch: 500,
            steps: 2_000,
            lr: 0.002,
            critic_every: 10,
            // On log ℓ': the paper's 0.01 on ℓ'² ≈ 129 is a far smaller relative step, and
            // 0.01 here drives the weights onto a few frequencies (pixels saturate).
            critic_lr: 0.001,
            tau: 0.2,
            bandwidth_mix: Vec::new(),
            lr_cosine: false,
            private: true,
            embed_device: embedding::EmbedDevice::Cpu,
        };
        match name {
            "quick" => Ok(base),
            "tiny" => Ok(Self {
                features: 200,
                steps: 200,
                batch: 256,
                generator_hidden: vec![64],
                ..base
            }),
            // Tuned on public UCI Adult (its income column as the label).
            "adult" => Ok(Self {
                features: 2_000,
                batch: 1_000,
                steps: 3_000,
                label: "income".into(),
                ..base
            }),
            // The paper's tabular script: 500 frequencies (1,000 features), batches of a
            // tenth of the data, lr 0.01, 8,000 steps, a critic step every 10, the budget
            // split equally between the bandwidth and the embedding.
            "paper-adult" => Ok(Self {
                features: 500,
                batch: 2_000,
                steps: 8_000,
                lr: 0.01,
                aux_share: 0.5,
                count_share: 0.05,
                label: "income".into(),
                ..base
            }),
            "mnist" => Ok(Self {
                features: 5_000,
                generator_hidden: vec![256, 512],
                batch: 500,
                steps: 3_000,
                label: "label".into(),
                ..base
            }),
            // The paper's image script: 1,500 frequencies, batches of 100, 5 × 600 steps,
            // a critic step every 5, the budget split equally; lr 0.002, as our MLP
            // generator diverges at the paper's 0.01 (theirs is convolutional).
            "paper-mnist" => Ok(Self {
                features: 1_500,
                generator_hidden: vec![200, 512],
                batch: 100,
                steps: 3_000,
                lr: 0.002,
                critic_every: 5,
                aux_share: 0.5,
                label: "label".into(),
                ..base
            }),
            _ => Err(INFO.unknown_preset(name)),
        }
    }

    /// The releases' shares of ρ: (bandwidth, counts, embedding).
    fn shares(&self) -> Result<(Option<f64>, Option<f64>, f64)> {
        let aux = (self.bandwidth <= 0.0 && self.aux_share > 0.0).then_some(self.aux_share);
        let count = (!self.label.is_empty() && self.count_share > 0.0).then_some(self.count_share);
        let emb = 1.0 - aux.unwrap_or(0.0) - count.unwrap_or(0.0);
        // The embedding carries the method: it keeps at least a tenth of the budget.
        if !(emb >= 0.1 - 1e-12 && emb <= 1.0) || self.aux_share < 0.0 || self.count_share < 0.0 {
            return Err(MethodError::Plan(format!(
                "aux_share and count_share must be ≥ 0 and leave at least 0.1 for the embedding, got {} + {}",
                self.aux_share, self.count_share
            )));
        }
        Ok((aux, count, emb))
    }

    /// The releases at the Gaussian-equivalent σ, in the order they are made.
    fn releases(&self, sigma: f64) -> Result<Vec<Charge>> {
        let (aux, count, emb) = self.shares()?;
        let gauss = |sensitivity: f64, share: f64| Charge {
            mechanism: Mechanism::Gaussian {
                sensitivity,
                std: sensitivity * sigma / share.sqrt(),
            },
            count: 1,
        };
        let mut out = Vec::new();
        if let Some(a) = aux {
            out.push(gauss(2f64.sqrt(), a));
        }
        if let Some(c) = count {
            // The class counts are integers: exact discrete noise, sensitivity 1.
            out.push(Charge {
                mechanism: Mechanism::DiscreteGaussian {
                    std: sigma / c.sqrt(),
                },
                count: 1,
            });
        }
        out.push(gauss(1.0, emb));
        Ok(out)
    }
}

const PRESETS: &[Preset] = &[
    Preset {
        name: "quick",
        doc: "1,000 frequencies, 2,000 generator steps, no label: about a minute on two cores",
    },
    Preset {
        name: "tiny",
        doc: "seconds: for tests and smoke checks",
    },
    Preset {
        name: "adult",
        doc: "UCI Adult, class-conditional on income: 2,000 frequencies, 3,000 steps (tuned on the public Adult data)",
    },
    Preset {
        name: "paper-adult",
        doc: "the paper's tabular settings: 500 frequencies, 8,000 steps, budget split equally (label: income)",
    },
    Preset {
        name: "mnist",
        doc: "digits, one embedding per digit: 5,000 frequencies, a wider generator",
    },
    Preset {
        name: "paper-mnist",
        doc: "the paper's image settings: 1,500 frequencies, batches of 100, 3,000 steps, budget split equally",
    },
];

impl MethodConfig for PearlConfig {
    fn preset(name: &str) -> Result<Self> {
        Self::preset(name)
    }

    fn set_private(&mut self, private: bool) {
        self.private = private;
    }

    fn into_method(self) -> Box<dyn Synthesizer + Send> {
        Box::new(Pearl::new(self, INFO.id))
    }
}

/// The registry entry of PEARL.
pub const INFO: MethodInfo = MethodInfo {
    id: "pearl",
    title: "PEARL",
    sentence: "Measures the data once (a noisy summary per class, and its scale), then trains a generator against it with a critic that looks where the two differ most: longer training costs no privacy.",
    pick_when: "Better for labelled images when DP-MERF's samples look blurry: a critic sharpens them at the same one-shot cost.",
    paper: "Liew, Takahashi & Ueno, PEARL: Data Synthesis via Private Embeddings and Adversarial Reconstruction Learning (ICLR 2022)",
    url: "https://arxiv.org/abs/2106.04590",
    kinds: &[DataKind::Table, DataKind::Images],
    private: true,
    critic: false,
    presets: PRESETS,
    settings: settings::<PearlConfig>,
    build: build::<PearlConfig>,
};

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
        if let Some(p) = plan_preamble(n, self.config.private, budget)? {
            return Ok(p);
        }
        let c = &self.config;
        c.shares()?;
        if c.critic_every > 0 && !c.bandwidth_mix.is_empty() {
            return Err(MethodError::Plan(
                "bandwidth_mix needs critic_every = 0: the critic re-weighs frequencies drawn at one scale".into(),
            ));
        }
        if let Some(bad) = c
            .bandwidth_mix
            .iter()
            .find(|l| !(**l > 0.0 && l.is_finite()))
        {
            return Err(MethodError::Plan(format!(
                "every bandwidth in bandwidth_mix must be a positive number, got {bad}"
            )));
        }
        let orders = crate::privacy::rdp::product_orders();
        // The shares' RDP curves add to one Gaussian's at σ: its RDP σ is the hint.
        let rdp = sigma_for(1.0, 1, budget.epsilon, budget.delta, &orders, &[], 1e-4)
            .map_err(|e| MethodError::Plan(e.to_string()))?;
        let make = |s| c.releases(s).unwrap_or_default();
        let (_, charges, whole) = calibrated(prior, make, budget, rdp, "PEARL's releases")?;
        let stds: Vec<String> = charges
            .iter()
            .map(|ch| match ch.mechanism {
                Mechanism::Gaussian { std, .. } | Mechanism::DiscreteGaussian { std } => {
                    format!("{std:.2}")
                }
                _ => "?".into(),
            })
            .collect();
        let (aux, count, emb) = c.shares()?;
        let mut parts = Vec::new();
        if aux.is_some() {
            parts.push(format!(
                "the data's scale ({:.0} %)",
                100.0 * aux.unwrap_or(0.0)
            ));
        } else {
            parts.push(format!(
                "no scale (bandwidth {})",
                if c.bandwidth > 0.0 {
                    c.bandwidth.to_string()
                } else {
                    "√columns, public".into()
                }
            ));
        }
        if let Some(share) = count {
            parts.push(format!("'{}' counts ({:.0} %)", c.label, 100.0 * share));
        }
        parts.push(format!(
            "a {}-number embedding{} ({:.0} %)",
            2 * c.features,
            if c.label.is_empty() {
                String::new()
            } else {
                format!(" per '{}' class", c.label)
            },
            100.0 * emb
        ));
        Ok(Plan {
            charges,
            epsilon: whole.epsilon,
            accountant: whole.by.name(),
            summary: format!(
                "Gaussian releases of {} (noise std {}), then {} free generator steps{}",
                parts.join(", "),
                stds.join(" / "),
                c.steps,
                if c.critic_every > 0 {
                    " with a critic"
                } else {
                    ""
                }
            ),
        })
    }

    fn footprint(&self, n: usize, width: usize) -> super::Footprint {
        let c = &self.config;
        let critic_steps = c.steps.checked_div(c.critic_every).unwrap_or(0);
        let generator = if c.conv_generator.is_empty() {
            let mut dims = vec![c.latent_dim];
            dims.extend(&c.generator_hidden);
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
                c.latent_dim + layout.label_width,
                &c.conv_generator,
                &layout,
            );
            (g.params, g.work / image_nets::CONV_SPEEDUP, g.widest)
        };
        let (k, w) = (c.features as u64, width as u64);
        super::Footprint::embedding_method(
            n,
            generator,
            super::FeatureCost {
                evals: k,
                macs: k * w,
            },
            (c.steps, c.steps + critic_steps, c.batch),
            // The frequencies (twice with the critic's copy), and the release's chunk of
            // projections, cosines, sines and features (about four chunk-sized tensors).
            k * w * (1 + u64::from(c.critic_every > 0))
                + 4 * embedding::FEATURE_CHUNK_VALUES as u64,
        )
    }

    fn train(&mut self, mut s: TrainSetup<'_>) -> Result<ReleasedModel> {
        let c = self.config.clone();
        let label = match c.label.as_str() {
            "" => None,
            name => Some(LabelSpan::find(s.encoding, name)?),
        };
        let width = s.data.dims2()?.1;
        let n = s.records as f64;
        let mut stds = planned_stds(&c, s.plan)?.into_iter();
        let aux_std = c.shares()?.0.map(|_| stds.next().unwrap_or(0.0));
        let count_std = label.and(c.shares()?.1).map(|_| stds.next().unwrap_or(0.0));
        let emb_std = stds.next().unwrap_or(0.0);
        let ell = bandwidth(&c, &mut s, aux_std, n)?;
        let scales: Vec<f64> = std::iter::once(ell)
            .chain(c.bandwidth_mix.iter().copied())
            .collect();
        let omega =
            embedding::mixed_frequencies(width, c.features, &scales, s.noise.rng(), s.device)?;
        let released = Released {
            proportions: match (label, count_std) {
                (Some(l), Some(std)) => Some(noisy_proportions(&mut s, l, std, c.private)?),
                _ => None,
            },
            target: noisy_embedding(
                &mut s,
                &omega,
                label,
                (emb_std, c.private, n),
                c.embed_device,
            )?,
            label,
            conditioning: None,
        };
        let released = Released {
            conditioning: conditioning(label, released.proportions.as_ref())?,
            ..released
        };
        let generator = self.fit(&mut s, &c, &omega, &released, ell)?;
        let mut model = release(
            &s,
            Accounting::Best,
            c.private,
            self.id(),
            &c.preset,
            c.latent_dim,
            sampling_heads(generator),
            serde_json::to_value(&c).unwrap_or_default(),
        )?;
        model.header.conditioning = released.conditioning;
        Ok(model)
    }
}

/// What the releases give the training loop: all DP outputs (or public facts).
struct Released {
    /// S̃ / N, [C, 2k].
    target: Tensor,
    /// Released class proportions [1, C], when there is a label.
    proportions: Option<Tensor>,
    label: Option<LabelSpan>,
    /// With a label, the generator is class-conditional, classes drawn from the released
    /// proportions (uniform when none were released).
    conditioning: Option<Conditioning>,
}

impl Released {
    /// The generator's input for a batch: latent ⊕ one-hot class, and the classes drawn.
    fn input(&self, s: &mut TrainSetup<'_>, c: &PearlConfig) -> Result<(Tensor, Vec<usize>)> {
        let z = latent(s.noise, c.batch, c.latent_dim, s.device)?;
        let Some(cond) = &self.conditioning else {
            return Ok((z, Vec::new()));
        };
        let classes = cond.draw(c.batch, s.noise.rng());
        Ok((cond.input(&z, &classes)?, classes))
    }

    /// (mask, fill) that set a batch's label span to its drawn classes: y·mask + fill. The
    /// label columns then carry no gradient, and the rows embed as their class.
    fn label_fix(
        &self,
        classes: &[usize],
        width: usize,
        dev: &candle_core::Device,
    ) -> Result<Option<(Tensor, Tensor)>> {
        let Some(cond) = &self.conditioning else {
            return Ok(None);
        };
        Ok(Some(cond.fix(classes, width, dev)?))
    }
}

impl Pearl {
    /// The minimax loop on the released statistics alone.
    fn fit(
        &self,
        s: &mut TrainSetup<'_>,
        c: &PearlConfig,
        omega: &Tensor,
        r: &Released,
        ell: f64,
    ) -> Result<Net> {
        let dev = s.device.clone();
        let width = s.data.dims2()?.1;
        let classes_in = r.conditioning.as_ref().map_or(0, |k| k.classes);
        let mut blocks = if c.conv_generator.is_empty() {
            let mut dims = vec![c.latent_dim + classes_in];
            dims.extend(&c.generator_hidden);
            dims.push(width);
            mlp(&dims, Act::LeakyRelu(0.2), &dev, s.noise.rng())?
        } else {
            // The pixels are every column but the label's span, which the conditioning
            // overwrites: the image comes out of the convolutions, zeros fill the span.
            let layout = ImageLayout::new(width, r.conditioning.as_ref())?;
            image_nets::writer(
                c.latent_dim + classes_in,
                &c.conv_generator,
                &layout,
                &dev,
                s.noise.rng(),
            )?
        };
        blocks.push(Block::Head(heads_for(s.encoding, c.tau)));
        let generator = Net::new(blocks, &dev);
        let mut opt = Adam::new(c.lr);
        let params = generator.params();
        let mut critic = Critic::new(omega, ell)?;
        // ωᵀ once, contiguous: every step's backward multiplies by it.
        let omega_t = omega.t()?.contiguous()?;
        // Ten snapshots a run (the window previews images from them).
        let tenth = c.steps / 10;
        for step in 0..c.steps {
            if c.lr_cosine {
                opt.set_learning_rate(cosine_lr(c.lr, step, c.steps));
            }
            let (z, classes) = r.input(s, c)?;
            let fix = r.label_fix(&classes, width, &dev)?;
            let (y, caches) = generator.forward_train(&z, Some(s.noise.rng()))?;
            let w = critic.weights_tensor(&dev)?;
            let (l, dy) = distance_grad(&y, &fix, (omega, &omega_t), r, &w)?;
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
            if (step + 1) % 50 == 0 || step + 1 == c.steps {
                let losses = vec![("weighted CF distance".into(), l)];
                let p = Progress::at(s, c.private, "generator", (step + 1, c.steps), losses);
                if (s.observer)(p) == Flow::Stop {
                    break;
                }
            }
        }
        Ok(generator)
    }
}

/// The half-cosine schedule: `lr` at step 0, falling to zero at the last step.
fn cosine_lr(lr: f64, step: u64, steps: u64) -> f64 {
    let t = step as f64 / steps.max(1) as f64;
    lr * 0.5 * (1.0 + (std::f64::consts::PI * t).cos())
}

/// The generator as it would be released now, to the run's checkpoint sink (free: the
/// releases are all made before training starts).
fn snapshot(
    s: &mut TrainSetup<'_>,
    (id, c): (&str, &PearlConfig),
    generator: &Net,
    r: &Released,
    (epoch, step): (u64, u64),
) -> Result<()> {
    if s.checkpoint.is_none() {
        return Ok(());
    }
    let mut model = release(
        s,
        Accounting::Best,
        c.private,
        id,
        &c.preset,
        c.latent_dim,
        sampling_heads(generator.snapshot()?),
        serde_json::to_value(c).unwrap_or_default(),
    )?;
    model.header.conditioning = r.conditioning.clone();
    let ck = super::Checkpoint {
        epoch,
        step,
        generator: model,
        critic: None,
        critic_scale: 1.0,
        epoch_end: true,
    };
    match s.checkpoint.as_mut() {
        Some(sink) => sink(ck).map_err(MethodError::Model),
        None => Ok(()),
    }
}

/// The conditioning of a labelled run: the label's span and the released proportions
/// (uniform, a public default, when no counts were released).
fn conditioning(
    label: Option<LabelSpan>,
    proportions: Option<&Tensor>,
) -> Result<Option<Conditioning>> {
    let Some(l) = label else { return Ok(None) };
    let proportions: Vec<f64> = match proportions {
        Some(p) => p
            .flatten_all()?
            .to_vec1::<f32>()?
            .into_iter()
            .map(f64::from)
            .collect(),
        None => vec![1.0 / l.classes as f64; l.classes],
    };
    Ok(Some(Conditioning {
        start: l.start,
        classes: l.classes,
        binary: l.binary,
        proportions,
    }))
}

/// The noise std of each planned release, in order (none for a non-private run).
fn planned_stds(c: &PearlConfig, plan: &Plan) -> Result<Vec<f64>> {
    if !c.private {
        return Ok(Vec::new());
    }
    let stds: Vec<f64> = plan
        .charges
        .iter()
        .filter_map(|ch| match ch.mechanism {
            Mechanism::Gaussian { std, .. } | Mechanism::DiscreteGaussian { std } => Some(std),
            _ => None,
        })
        .collect();
    if stds.len() != c.releases(1.0)?.len() {
        return Err(MethodError::Plan(
            "the reserved plan does not match PEARL's releases".into(),
        ));
    }
    Ok(stds)
}

/// Charges one Gaussian release of `sensitivity` (nothing when not private).
fn charge(s: &mut TrainSetup<'_>, sensitivity: f64, std: f64, private: bool) -> Result<()> {
    if !private {
        return Ok(());
    }
    s.accountant
        .charge(Mechanism::Gaussian { sensitivity, std }, 1)
        .map_err(|e| MethodError::Plan(format!("a PEARL release does not fit its plan: {e}")))
}

/// ℓ: given, released privately (release 1), or the public rule.
fn bandwidth(c: &PearlConfig, s: &mut TrainSetup<'_>, std: Option<f64>, n: f64) -> Result<f64> {
    if c.bandwidth > 0.0 {
        return Ok(c.bandwidth);
    }
    let Some(std) = std else {
        return Ok(embedding::public_bandwidth(s.encoding));
    };
    charge(s, 2f64.sqrt(), std, c.private)?;
    let bound = embedding::norm_bound(s.encoding);
    let m = embedding::distance_moments(s.data, bound)?;
    let noisy = s.noise.plus_gaussian_f64(&m, std)?;
    Ok(embedding::rms_distance(&noisy.to_vec1()?, bound, n))
}

/// Release 2: the class counts, as proportions [1, C] (post-processing: clamped, summed to 1).
fn noisy_proportions(
    s: &mut TrainSetup<'_>,
    label: LabelSpan,
    std: f64,
    private: bool,
) -> Result<Tensor> {
    if private {
        s.accountant
            .charge(Mechanism::DiscreteGaussian { std }, 1)
            .map_err(|e| {
                MethodError::Plan(format!("a PEARL release does not fit its plan: {e}"))
            })?;
    }
    let counts = embedding::class_counts(s.data, label)?;
    let noisy: Vec<f32> = if private {
        s.noise.plus_discrete_gaussian(&counts, std)?.to_vec1()?
    } else {
        counts.to_vec1()?
    };
    let clamped: Vec<f32> = noisy.iter().map(|v| v.max(0.0)).collect();
    let total: f32 = clamped.iter().sum();
    let props: Vec<f32> = if total > 0.0 {
        clamped.iter().map(|v| v / total).collect()
    } else {
        vec![1.0 / label.classes as f32; label.classes]
    };
    Ok(Tensor::from_vec(props, (1, label.classes), s.device)?)
}

/// Release 3: S̃ / N, the noisy per-class embedding [C, 2k].
fn noisy_embedding(
    s: &mut TrainSetup<'_>,
    omega: &Tensor,
    label: Option<LabelSpan>,
    (std, private, n): (f64, bool, f64),
    on: embedding::EmbedDevice,
) -> Result<Tensor> {
    charge(s, 1.0, std, private)?;
    let (sum, _) = embedding::class_sums_on(s.data, omega, label, on)?;
    let noisy = s.noise.plus_gaussian_f64(&sum, std)?;
    Ok((noisy / n)?)
}

/// The generated rows' joint embedding [C, 2k] and class shares [1, C].
fn generated(
    y: &Tensor,
    omega: &Tensor,
    label: Option<LabelSpan>,
) -> candle_core::Result<(Tensor, Option<Tensor>)> {
    let b = y.dims()[0] as f64;
    let phi = features(y, omega)?;
    match label {
        Some(l) => {
            let m = l.membership(y)?;
            Ok(((m.t()?.matmul(&phi)? / b)?, Some(m.mean_keepdim(0)?)))
        }
        None => Ok((phi.mean_keepdim(0)?, None)),
    }
}

/// The generator's loss: Σ_j w_j Σ_c |Φ̃_c(t_j) − Φ̂_c(t_j)|² (w from the critic, k·p so a
/// uniform critic gives the plain squared distance), plus the class-proportion gap.
fn distance(y: &Tensor, omega: &Tensor, r: &Released, w: &Tensor) -> candle_core::Result<Tensor> {
    let (emb, shares) = generated(y, omega, r.label)?;
    let cf = (r.target.clone() - emb)?
        .sqr()?
        .broadcast_mul(w)?
        .sum_all()?;
    match (shares, &r.proportions) {
        (Some(g), Some(p)) => cf + (p - g)?.sqr()?.sum_all()?,
        _ => Ok(cf),
    }
}

/// [`distance`] of `y` (its label span set by `fix`) and its gradient with respect to `y`,
/// by hand. Candle's backward of the product `y · ω` also forms the gradient of the
/// constant frequencies — as much arithmetic as the product itself and a fresh [width, k]
/// matrix every step, all thrown away. The label columns carry no gradient (`fix` sets
/// them), so membership is a constant; without `fix` but with a label the memberships are
/// the generator's soft class outputs and the autograd path keeps their gradient.
fn distance_grad(
    y: &Tensor,
    fix: &Option<(Tensor, Tensor)>,
    (omega, omega_t): (&Tensor, &Tensor),
    r: &Released,
    w: &Tensor,
) -> Result<(f64, Tensor)> {
    if r.label.is_some() && fix.is_none() {
        return Ok(loss_grad(y, |y| {
            distance(&with_label(y, fix)?, omega, r, w)
        })?);
    }
    let yl = with_label(&y.detach(), fix)?;
    let b = yl.dims()[0] as f64;
    let k = omega.dims()[1];
    let proj = yl.matmul(omega)?;
    let (cos, sin) = (proj.cos()?, proj.sin()?);
    let phi = (Tensor::cat(&[&cos, &sin], 1)? / (k as f64).sqrt())?;
    let membership = r.label.map(|l| l.membership(&yl)).transpose()?;
    let emb = match &membership {
        Some(m) => (m.t()?.matmul(&phi)? / b)?,
        None => phi.mean_keepdim(0)?,
    };
    let gap = (r.target.clone() - emb)?;
    let mut loss = gap.sqr()?.broadcast_mul(w)?.sum_all()?.to_scalar::<f32>()? as f64;
    if let (Some(m), Some(p)) = (&membership, &r.proportions) {
        loss += (p - m.mean_keepdim(0)?)?
            .sqr()?
            .sum_all()?
            .to_scalar::<f32>()? as f64;
    }
    // ∂L/∂emb = −2 w ⊙ gap; each row's share of it is its class's row, over b.
    let d_emb = (gap.broadcast_mul(w)? * (-2.0 / b))?;
    let d_phi = match &membership {
        Some(m) => m.matmul(&d_emb)?,
        None => d_emb.broadcast_as(phi.shape())?.contiguous()?,
    };
    let d_cos = d_phi.narrow(1, 0, k)?;
    let d_sin = d_phi.narrow(1, k, k)?;
    let d_proj = ((cos * d_sin)? - (sin * d_cos)?)? / (k as f64).sqrt();
    let d_yl = d_proj?.matmul(omega_t)?;
    let dy = match fix {
        Some((mask, _)) => d_yl.broadcast_mul(mask)?,
        None => d_yl,
    };
    Ok((loss, dy))
}

/// |Φ̃(t_j) − Φ̂(t_j)|² per frequency j, summed over classes: what the critic weighs.
fn per_frequency(y: &Tensor, omega: &Tensor, r: &Released) -> Result<Vec<f64>> {
    let (emb, _) = generated(&y.detach(), omega, r.label)?;
    let d: Vec<f32> = (r.target.clone() - emb)?.sqr()?.sum(0)?.to_vec1()?;
    let k = d.len() / 2;
    Ok((0..k).map(|j| (d[j] + d[k + j]) as f64).collect())
}

/// PEARL's critic: per-dimension log length scales s_k = ln(ℓ'_k / ℓ), re-weighting the
/// fixed frequencies by N(0, diag(ℓ'⁻²)) / N(0, ℓ⁻²I), self-normalised (the softmax of
/// the log ratio), so the weights stay a distribution whatever the critic does.
struct Critic {
    /// t_kj² ℓ² / 2 for dimension k and frequency j, [width][k].
    half_t2: Vec<Vec<f64>>,
    s: Vec<f64>,
    /// Adam moments.
    m: Vec<f64>,
    v: Vec<f64>,
    steps: i32,
    /// The current weights p_j.
    p: Vec<f64>,
}

impl Critic {
    fn new(omega: &Tensor, ell: f64) -> Result<Self> {
        let t: Vec<Vec<f32>> = omega.to_vec2()?;
        let half_t2: Vec<Vec<f64>> = t
            .iter()
            .map(|row| {
                row.iter()
                    .map(|v| (*v as f64).powi(2) * ell * ell / 2.0)
                    .collect()
            })
            .collect();
        let (width, k) = (t.len(), t.first().map_or(0, |r| r.len()));
        Ok(Self {
            half_t2,
            s: vec![0.0; width],
            m: vec![0.0; width],
            v: vec![0.0; width],
            steps: 0,
            p: vec![1.0 / k.max(1) as f64; k],
        })
    }

    /// p_j ∝ exp(Σ_k t_kj² ℓ²/2 · (1 − e^{2 s_k})).
    fn reweigh(&mut self) {
        let k = self.p.len();
        let mut logw = vec![0.0; k];
        for (row, s) in self.half_t2.iter().zip(&self.s) {
            let a = 1.0 - (2.0 * s).exp();
            if a == 0.0 {
                continue;
            }
            for (l, t) in logw.iter_mut().zip(row) {
                *l += t * a;
            }
        }
        let max = logw.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = logw.iter().map(|l| (l - max).exp()).collect();
        let z: f64 = e.iter().sum();
        self.p = e.iter().map(|x| x / z).collect();
    }

    /// k·p as a [1, 2k] tensor (cos and sin parts of a frequency share its weight).
    fn weights_tensor(&self, dev: &candle_core::Device) -> Result<Tensor> {
        let k = self.p.len() as f64;
        let w: Vec<f32> = self
            .p
            .iter()
            .chain(&self.p)
            .map(|p| (p * k) as f32)
            .collect();
        let len = w.len();
        Ok(Tensor::from_vec(w, (1, len), dev)?)
    }

    /// One Adam step up Σ_j p_j D_j in s: ∂/∂s_k = Σ_j p_j (D_j − D̄)(−t_kj² ℓ² e^{2 s_k}).
    fn ascend(&mut self, d: &[f64], lr: f64) {
        let mean: f64 = self.p.iter().zip(d).map(|(p, d)| p * d).sum();
        self.steps += 1;
        let (b1, b2) = (0.9f64, 0.999f64);
        for (k, row) in self.half_t2.iter().enumerate() {
            let e = (2.0 * self.s[k]).exp();
            let g: f64 = row
                .iter()
                .zip(self.p.iter().zip(d))
                .map(|(t, (p, dj))| p * (dj - mean) * (-2.0 * t * e))
                .sum();
            self.m[k] = b1 * self.m[k] + (1.0 - b1) * g;
            self.v[k] = b2 * self.v[k] + (1.0 - b2) * g * g;
            let mh = self.m[k] / (1.0 - b1.powi(self.steps));
            let vh = self.v[k] / (1.0 - b2.powi(self.steps));
            // Ascent, kept within a factor e³ of the released scale.
            self.s[k] = (self.s[k] + lr * mh / (vh.sqrt() + 1e-12)).clamp(-3.0, 3.0);
        }
        self.reweigh();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The releases' RDP adds to one Gaussian's at σ, whatever the split.
    /// The hand-written gradient against candle's autograd of the same loss, with a label
    /// (its span fixed, as training fixes it) and without.
    #[test]
    fn the_hand_gradient_matches_autograd() {
        use rand::SeedableRng;
        let dev = candle_core::Device::Cpu;
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let (width, k, b) = (7, 40, 6);
        let omega = embedding::frequencies(width, k, 0.7, &mut rng, &dev).unwrap();
        let omega_t = omega.t().unwrap().contiguous().unwrap();
        let y = Tensor::rand(0f32, 1f32, (b, width), &dev).unwrap();
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
        for (r, fix) in &cases {
            let (l0, g0) =
                loss_grad(&y, |y| distance(&with_label(y, fix)?, &omega, r, &w)).unwrap();
            let (l1, g1) = distance_grad(&y, fix, (&omega, &omega_t), r, &w).unwrap();
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

    #[test]
    fn the_cosine_schedule_starts_at_lr_and_ends_near_zero() {
        assert_eq!(cosine_lr(0.002, 0, 3_000), 0.002);
        assert!((cosine_lr(0.002, 1_500, 3_000) - 0.001).abs() < 1e-12);
        assert!(cosine_lr(0.002, 2_999, 3_000) < 1e-8);
    }

    #[test]
    fn a_bandwidth_mix_with_the_critic_is_refused_before_any_charge() {
        let mut c = PearlConfig::preset("tiny").unwrap();
        c.bandwidth_mix = vec![2.0];
        let budget = Budget {
            epsilon: 1.0,
            delta: 1e-5,
        };
        let err = Pearl::new(c, "pearl").plan(1_000, budget, &[]).unwrap_err();
        assert!(err.to_string().contains("critic_every = 0"), "{err}");
    }

    #[test]
    fn shares_compose_to_one_gaussian() {
        let mut c = PearlConfig::preset("adult").unwrap();
        for (aux, count) in [(0.1, 0.05), (0.5, 0.05), (0.0, 0.2)] {
            c.aux_share = aux;
            c.count_share = count;
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
        c.aux_share = 0.7;
        c.count_share = 0.3;
        assert!(c.releases(1.0).is_err());
    }

    /// The critic moves weight toward the frequencies where the distance is largest.
    #[test]
    fn the_critic_weighs_up_discriminating_frequencies() {
        let dev = candle_core::Device::Cpu;
        // Two dimensions; frequencies large in dimension 0 differ most.
        let t = vec![0.1f32, 2.0, 0.1, 2.0, 1.0, 1.0, 1.0, 1.0];
        let omega = Tensor::from_vec(t, (2, 4), &dev).unwrap();
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
