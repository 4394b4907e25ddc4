//! DP-GAN, the baseline: a Wasserstein GAN whose critic is trained by DP-SGD.
//!
//! Only the critic reads private rows. Each critic step: a Poisson batch of real rows,
//! per-example gradients of −D(x) clipped jointly to C and noised (one subsampled-Gaussian
//! charge, made before the batch is drawn), plus the gradient of D on a batch of generated
//! rows (public: a function of the current, already-private critic and fresh randomness).
//! Weight clipping keeps the critic Lipschitz. Every `n_critic` steps the generator takes
//! a plain step through the critic — post-processing. The generator has one output head
//! per encoded column (Gumbel-softmax per categorical span while training).
//!
//! With `private = false` (method `gan`, `--epsilon inf`) the same networks train without
//! clipping, noise or accounting: the reference line of every plot.

pub use super::gan_phase::GanLoss;
use super::gan_phase::{GanLoop, GanSchedule, gan_loop, sampling_heads};
use super::image_nets::{self, CONV_SPEEDUP, ConvCost, ImageLayout};
use super::method::{
    Common, DataKind, MethodConfig, MethodInfo, PresetOf, build, listed, settings,
};
use super::released::{Conditioning, ReleasedModel};
use super::statement::{Accounting, release};
use super::{
    MethodError, Plan, Result, Synthesizer, TrainSetup, calibrated, heads_for, plan_preamble,
    planned_sigma,
};
use crate::nn::layers::{Act, Block, Net, mlp};
use crate::privacy::calibrate::sigma_for;
use crate::privacy::{Budget, Charge, Mechanism};

/// DP-GAN settings; presets below.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DpGanConfig {
    /// The preset and the private switch, which the registry sets.
    #[serde(flatten)]
    pub common: Common,
    pub latent_dim: usize,
    pub generator_hidden: Vec<usize>,
    /// Critic hidden widths as fractions of the encoded width (the papers' 2d/3, d/3).
    pub critic_hidden_fractions: Vec<f64>,
    pub batch: usize,
    /// Critic (private) steps in the whole run.
    pub critic_steps: u64,
    /// Critic steps per generator step.
    pub n_critic: u64,
    pub lr: f64,
    /// Per-example gradient clipping norm C.
    pub clip: f64,
    /// Critic weights are clipped to ±this after each step (WGAN Lipschitz control; used
    /// with the Wasserstein loss only).
    pub weight_clip: f64,
    /// The adversarial loss (`logistic` unless a preset reproduces a paper).
    #[serde(default)]
    pub gan_loss: GanLoss,
    /// Gumbel-softmax temperature of the categorical heads.
    pub tau: f64,
    /// Class column of a class-conditional GAN ("" for none; images only): the generator
    /// is given a class drawn uniformly (a public default, nothing read from the rows)
    /// and the critic sees the class beside the image as label maps.
    #[serde(default)]
    pub label: String,
    /// Channels of a DCGAN-style convolutional critic (empty: the dense critic); images
    /// with a `label` only.
    #[serde(default)]
    pub conv_critic: Vec<usize>,
    /// Channels of a DCGAN-style convolutional generator (empty: the dense generator).
    #[serde(default)]
    pub conv_generator: Vec<usize>,
}

impl DpGanConfig {
    /// The GAN phase's schedule under these settings.
    fn schedule(&self) -> GanSchedule {
        GanSchedule {
            loss: self.gan_loss,
            latent_dim: self.latent_dim,
            batch: self.batch,
            critic_steps: self.critic_steps,
            n_critic: self.n_critic,
            lr: self.lr,
            clip: self.clip,
            weight_clip: self.weight_clip,
        }
    }

    /// `quick` (under a minute on two cores, for teaching and tests; on ADULT at ε = 1
    /// it is also the best setting measured), `adult` (the same settings, named for the
    /// paper's dataset), `mnist` (28×28 images with their label: 794 → 529 → 265 → 1
    /// critic, 64 → 256 → 512 → 794 generator), `mnist-conv` (a conditional DCGAN, see
    /// below) and `tiny` (seconds, for tests).
    ///
    /// Every preset uses the logistic loss with a large batch and one critic step per
    /// generator step: under DP-SGD the noise on an averaged gradient falls as 1/batch
    /// while the number of steps the budget allows falls more slowly, and the
    /// paper's WGAN settings (batch 128, 15 critic steps per generator step, weight
    /// clipping) collapse to the majority class at ε = 1 (see [`GanLoss`]).
    fn base() -> Self {
        Self {
            common: Common::private(),
            latent_dim: 64,
            generator_hidden: vec![128, 128],
            critic_hidden_fractions: vec![2.0 / 3.0, 1.0 / 3.0],
            batch: 512,
            critic_steps: 2_000,
            n_critic: 1,
            lr: 0.002,
            clip: 1.0,
            weight_clip: 0.01,
            gan_loss: GanLoss::Logistic,
            tau: 0.2,
            label: String::new(),
            conv_critic: Vec::new(),
            conv_generator: Vec::new(),
        }
    }

    // For tests and smoke checks: seconds, not minutes.
    fn tiny() -> Self {
        Self {
            critic_steps: 300,
            batch: 128,
            generator_hidden: vec![32],
            latent_dim: 16,
            ..Self::base()
        }
    }

    fn mnist() -> Self {
        Self {
            generator_hidden: vec![256, 512],
            critic_steps: 2_000,
            lr: 0.001,
            ..Self::base()
        }
    }

    // A conditional DCGAN: convolutions see neighbouring pixels together, and
    // the label conditions both networks, so the critic judges "a plausible 3"
    // rather than "a plausible digit". Large batches shrink the noise on the mean
    // gradient. One critic step per generator step: measured on MNIST at ε = 10,
    // five (the advice of Bie et al. 2023, *Private GANs, revisited*, for long
    // runs) left 600 generator steps against a critic that always won (CNN judge
    // 57.6 %); one, with lr 7e-4, reached 77.8 % in the same time.
    fn mnist_conv() -> Self {
        Self {
            latent_dim: 64,
            label: "label".into(),
            conv_critic: vec![32, 64],
            conv_generator: vec![64, 32],
            batch: 256,
            critic_steps: 2_000,
            n_critic: 1,
            lr: 0.0007,
            ..Self::base()
        }
    }

    // For a GPU. Measured on an H200 at ε = 10, δ = 1e-5 (docs/gpu.md): a critic and
    // generator twice as wide, five critic steps per generator step (Bie et al.
    // 2023, *Private GANs, revisited*: under DP-SGD the critic needs more steps to
    // keep up) over 13,000 critic steps reached a CNN judge of 94.1 % in 5.4 min
    // beside three other runs; `mnist-conv`'s settings over as many steps, 83.4 %.
    // On two CPU cores it would take many hours.
    fn mnist_conv_gpu() -> Self {
        Self {
            conv_critic: vec![64, 128],
            conv_generator: vec![128, 64],
            n_critic: 5,
            critic_steps: 13_000,
            ..Self::mnist_conv()
        }
    }
}

/// Every preset, the default first.
const PRESETS: [PresetOf<DpGanConfig>; 6] = [
    PresetOf {
        name: "quick",
        doc: "about a minute on two cores; on ADULT at ε = 1 also the best setting measured",
        settings: DpGanConfig::base,
    },
    PresetOf {
        name: "tiny",
        doc: "seconds: for tests and smoke checks",
        settings: DpGanConfig::tiny,
    },
    // Measured on ADULT at ε = 1: batch 1024 with 4,000 steps (lr 0.001) fell back
    // to the majority class (RF 0.764, AUROC 0.62), so `adult` keeps `quick`'s
    // settings, the best measured (RF AUROC 0.73–0.84 over runs).
    PresetOf {
        name: "adult",
        doc: "quick's settings, named for the paper's dataset",
        settings: DpGanConfig::base,
    },
    PresetOf {
        name: "mnist",
        doc: "28×28 digits with their label: wider generator, 2,000 critic steps",
        settings: DpGanConfig::mnist,
    },
    PresetOf {
        name: "mnist-conv",
        doc: "28×28 digits: a conditional DCGAN (convolutional critic and generator, the label as maps beside the pixels), 2,000 steps of each",
        settings: DpGanConfig::mnist_conv,
    },
    PresetOf {
        name: "mnist-conv-gpu",
        doc: "for a GPU: mnist-conv twice as wide, 5 critic steps per generator step, 13,000 critic steps (94 % CNN judge at ε = 10 in about 5 minutes on an H200)",
        settings: DpGanConfig::mnist_conv_gpu,
    },
];

impl MethodConfig for DpGanConfig {
    const PRESETS: &'static [PresetOf<Self>] = &PRESETS;

    fn common(&mut self) -> &mut Common {
        &mut self.common
    }

    fn into_method(self) -> Box<dyn Synthesizer + Send> {
        Box::new(DpGan::new(self))
    }
}

/// The registry entry of DP-GAN.
pub const INFO: MethodInfo = MethodInfo {
    id: "dp-gan",
    title: "DP-SGD GAN",
    sentence: "A generator learns to fool a critic that sees the data only through noisy, clipped gradients: the standard baseline.",
    pick_when: "Better as a teaching baseline: the plain DP-SGD GAN that most papers compare against.",
    paper: "Xie et al., Differentially Private Generative Adversarial Network (2018)",
    url: "https://arxiv.org/abs/1802.06739",
    kinds: &[DataKind::Table, DataKind::Images],
    private: true,
    critic: true,
    streams: false,
    presets: &listed(&PRESETS),
    settings: settings::<DpGanConfig>,
    build: build::<DpGanConfig>,
};

/// The registry entry of the non-private reference: DP-GAN's networks with no noise.
pub const NON_PRIVATE_INFO: MethodInfo = MethodInfo {
    id: "gan",
    title: "GAN without privacy",
    sentence: "The same GAN with no noise (ε = ∞): a reference line for comparisons, never for release.",
    pick_when: "Only as the ceiling a private run is compared with; its output is never for release.",
    paper: "Goodfellow et al., Generative Adversarial Nets (2014)",
    url: "https://arxiv.org/abs/1406.2661",
    private: false,
    ..INFO
};

/// The DP-GAN method.
pub struct DpGan {
    pub config: DpGanConfig,
    sigma: Option<f64>,
}

impl DpGan {
    pub fn new(config: DpGanConfig) -> Self {
        Self {
            config,
            sigma: None,
        }
    }

    fn sampling_rate(&self, n: usize) -> f64 {
        (self.config.batch as f64 / n as f64).min(1.0)
    }
}

/// The critic's layer widths: width → the configured fractions of it (capped) → 1.
fn critic_dims(width: usize, cfg: &DpGanConfig) -> Vec<usize> {
    let mut dims = vec![width];
    dims.extend(
        cfg.critic_hidden_fractions
            .iter()
            .map(|f| super::derived_hidden(width, *f)),
    );
    dims.push(1);
    dims
}

pub(crate) fn critic_net(
    width: usize,
    cfg: &DpGanConfig,
    dev: &candle_core::Device,
    rng: &mut impl rand::Rng,
) -> Result<Net> {
    let dims = critic_dims(width, cfg);
    Ok(Net::new(mlp(&dims, Act::LeakyRelu(0.2), dev, rng)?, dev))
}

fn generator_net(
    setup_width: usize,
    heads: Vec<crate::nn::layers::HeadSpan>,
    cfg: &DpGanConfig,
    dev: &candle_core::Device,
    rng: &mut impl rand::Rng,
) -> Result<Net> {
    let mut dims = vec![cfg.latent_dim];
    dims.extend(&cfg.generator_hidden);
    dims.push(setup_width);
    let mut blocks = mlp(&dims, Act::LeakyRelu(0.2), dev, rng)?;
    blocks.push(Block::Head(heads));
    Ok(Net::new(blocks, dev))
}

impl Synthesizer for DpGan {
    fn id(&self) -> &'static str {
        if self.config.common.private {
            "dp-gan"
        } else {
            "gan"
        }
    }

    fn plan(&self, n: usize, budget: Budget, prior: &[Charge]) -> Result<Plan> {
        if let Some(p) = plan_preamble(n, self.config.common.private, budget)? {
            return Ok(p);
        }
        let q = self.sampling_rate(n);
        let t = self.config.critic_steps;
        let orders = crate::privacy::rdp::product_orders();
        let rdp = sigma_for(q, t, budget.epsilon, budget.delta, &orders, &[], 1e-4)
            .map_err(|e| MethodError::Plan(e.to_string()))?;
        let make = |sigma| {
            vec![Charge {
                mechanism: Mechanism::SubsampledGaussian { q, sigma },
                count: t,
            }]
        };
        let (sigma, charges, c) = calibrated(prior, make, budget, rdp, "DP-SGD")?;
        Ok(Plan {
            charges,
            epsilon: c.epsilon,
            accountant: c.by.name(),
            summary: format!(
                "{t} critic steps by DP-SGD at q = {q:.5}, noise multiplier σ = {sigma:.4} (RDP alone would need {rdp:.4}), clip C = {}",
                self.config.clip
            ),
        })
    }

    fn footprint(&self, n: usize, width: usize) -> super::Footprint {
        let c = &self.config;
        if !c.conv_critic.is_empty() || !c.conv_generator.is_empty() {
            return conv_footprint(n, width, c);
        }
        let cd = critic_dims(width, c);
        let mut gd = vec![c.latent_dim];
        gd.extend(&c.generator_hidden);
        gd.push(width);
        let (critic, generator) = (super::mlp_params(&cd), super::mlp_params(&gd));
        let batch = (c.batch.min(n.max(1))) as u64;
        let gen_steps = c.critic_steps / c.n_critic.max(1);
        super::Footprint {
            params: critic + generator,
            passes: super::Footprint::phase(c.critic_steps, 2 * batch, critic + generator)
                .saturating_add(super::Footprint::phase(
                    gen_steps,
                    batch,
                    critic + generator,
                )),
            batch: 2 * batch,
            steps: c.critic_steps + gen_steps,
            widest: cd.iter().chain(&gd).copied().max().unwrap_or(1) as u64,
            extra_values: 0,
            ..Default::default()
        }
    }

    fn train(&mut self, mut s: TrainSetup<'_>) -> Result<ReleasedModel> {
        let cfg = self.config.clone();
        let (_n, width) = s.data.dims2()?;
        let sigma = if cfg.common.private {
            planned_sigma(s.plan, 0)?
        } else {
            0.0
        };
        self.sigma = Some(sigma);
        let dev = s.device.clone();
        let conditioning = image_nets::uniform_conditioning(s.encoding, &cfg.label)?;
        let heads = heads_for(s.encoding, cfg.tau);
        let (critic, generator) = if cfg.conv_critic.is_empty() && cfg.conv_generator.is_empty() {
            if conditioning.is_some() {
                return Err(MethodError::Plan(
                    "a label for DP-GAN needs its convolutional networks (the `mnist-conv` preset)"
                        .into(),
                ));
            }
            let critic = critic_net(width, &cfg, &dev, s.noise.rng())?;
            let generator = generator_net(width, heads, &cfg, &dev, s.noise.rng())?;
            (critic, generator)
        } else {
            conv_nets(
                width,
                heads,
                conditioning.as_ref(),
                &cfg,
                &dev,
                s.noise.rng(),
            )?
        };
        let mut loop_cfg = GanLoop::new(
            self.id(),
            &cfg.common,
            serde_json::to_value(&cfg).unwrap_or_default(),
            cfg.schedule(),
            sigma,
        );
        loop_cfg.conditioning = conditioning.clone();
        gan_loop(&mut s, &loop_cfg, &critic, &generator, None)?;
        let released = sampling_heads(generator);
        let mut model = release(
            &s,
            Accounting::Best,
            cfg.common.private,
            self.id(),
            &cfg.common.preset,
            cfg.latent_dim,
            released,
            serde_json::to_value(&cfg).unwrap_or_default(),
        )?;
        model.header.conditioning = conditioning;
        Ok(model)
    }
}

/// The conditional DCGAN: a critic that reads the label as maps beside the image and a
/// generator given latent and class whose pixels are placed beside the label span (set
/// to the drawn class by the GAN loop); see [`image_nets`].
fn conv_nets(
    width: usize,
    heads: Vec<crate::nn::layers::HeadSpan>,
    cond: Option<&Conditioning>,
    cfg: &DpGanConfig,
    dev: &candle_core::Device,
    rng: &mut impl rand::Rng,
) -> Result<(Net, Net)> {
    let Some(cond) = cond else {
        return Err(MethodError::Plan(
            "DP-GAN's convolutional networks are for labelled images: set `label` to the class column"
                .into(),
        ));
    };
    if cfg.conv_critic.is_empty() || cfg.conv_generator.is_empty() {
        return Err(MethodError::Plan(
            "DP-GAN's convolutional preset needs both `conv_critic` and `conv_generator` channels"
                .into(),
        ));
    }
    let layout = ImageLayout::new(width, Some(cond))?;
    let critic = image_nets::reader(&layout, &cfg.conv_critic, 1, dev, rng)?;
    let mut generator = image_nets::writer(
        cfg.latent_dim + cond.classes,
        &cfg.conv_generator,
        &layout,
        dev,
        rng,
    )?;
    generator.push(Block::Head(heads));
    Ok((Net::new(critic, dev), Net::new(generator, dev)))
}

/// The size of the conditional DCGAN's run, in multiply-adds per row.
fn conv_footprint(n: usize, width: usize, c: &DpGanConfig) -> super::Footprint {
    let layout = ImageLayout::estimate(width);
    let classes = layout.label_width;
    let cost = ConvCost::reader(&layout, &c.conv_critic, 1).plus(ConvCost::writer(
        c.latent_dim + classes,
        &c.conv_generator,
        &layout,
    ));
    let (params, work, widest) = (cost.params, cost.work / CONV_SPEEDUP, cost.widest);
    let batch = (c.batch.min(n.max(1))) as u64;
    let gen_steps = c.critic_steps / c.n_critic.max(1);
    super::Footprint {
        params,
        passes: super::Footprint::phase(c.critic_steps, 2 * batch, work)
            .saturating_add(super::Footprint::phase(gen_steps, batch, work)),
        batch: 2 * batch,
        steps: c.critic_steps + gen_steps,
        widest,
        extra_values: 0,
        ..Default::default()
    }
}
