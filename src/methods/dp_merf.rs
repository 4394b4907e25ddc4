//! DP-MERF (Harder, Adamczewski & Park, AISTATS 2021): one noisy release of the private
//! data's random-Fourier-feature mean embedding, then a generator trained for as long as
//! it likes to match it — no DP-SGD, no per-step accounting.
//!
//! Mechanism and accounting. Frequencies ω₁…ω_D ~ N(0, ℓ⁻²I) are drawn from the run's
//! CSPRNG, independently of the data. Each encoded row x ∈ [0,1]^d maps to
//! φ(x) = D^{−1/2} [cos(ω_j·x), sin(ω_j·x)]_{j ≤ D}, so ‖φ(x)‖₂ = 1 exactly
//! (Σ_j cos² + sin² = D). With a label column (the paper's class-conditional DP-MERF, and
//! every digit of an image set) the released statistic is the per-class sum
//! S_c = Σ_{y_i = c} φ(xᵢ) plus N(0, σ²I); a record lies in one class, so under
//! add/remove-one neighbouring (the relation the DP-SGD methods and the ledger use) the
//! [C, 2D] matrix moves by one φ(x): L2 sensitivity 1, one
//! [`Mechanism::Gaussian`]` { sensitivity: 1, std: σ }` — RDP α/(2σ²) — charged before
//! the sums are computed. The class counts are a second release of sensitivity 1, integer
//! counts plus exact discrete Gaussian noise (`count_share` of the budget; the same RDP as
//! a Gaussian's), and the two are split as shares of ρ so they compose to
//! exactly one Gaussian at the calibrated σ. Without a label there is one class and one
//! release. The generator then matches S̃ / N: N is treated as public, as in DP-SGD's
//! division by qN. Everything after the releases (the loss, the generator, the losses
//! shown while training) is post-processing.
//!
//! DP-MERF is PEARL without the critic: the same embedding with fixed frequencies, the
//! same class-conditional generator and heads. So this file is DP-MERF's settings and
//! presets, and training is [`Pearl`] with `critic_every = 0` (one training loop, one
//! place for the release code and its tests).
//!
//! Bandwidth ℓ: a public default from the schema alone (√(number of columns), the typical
//! distance between two encoded rows), never the data's median distance as the paper's
//! code takes it (that reads private rows without charging them). `aux_share` > 0
//! releases PEARL's private scale instead, charged.

use super::Synthesizer;
use super::embedding::EmbedDevice;
use super::method::{
    Common, DataKind, MethodConfig, MethodInfo, PresetOf, build, listed, settings,
};
use super::pearl::{Pearl, PearlConfig};

/// DP-MERF settings; presets below.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DpMerfConfig {
    /// The preset and the private switch, which the registry sets.
    #[serde(flatten)]
    pub common: Common,
    /// Random frequencies D (the embedding has 2D numbers per class).
    pub features: usize,
    /// Kernel length scale ℓ; 0 takes the public default √(number of columns), or the
    /// private scale when `aux_share` > 0.
    pub bandwidth: f64,
    /// Share of the budget (of ρ) for a private bandwidth (0: the public rule).
    #[serde(default)]
    pub aux_share: f64,
    /// Class column of a class-conditional embedding ("" for none). For images, `label`.
    #[serde(default)]
    pub label: String,
    /// Share of the budget (of ρ) for the class counts (with a label).
    #[serde(default = "default_count_share")]
    pub count_share: f64,
    pub latent_dim: usize,
    pub generator_hidden: Vec<usize>,
    /// Channels of a convolutional image generator (empty: the MLP); see PEARL's.
    #[serde(default)]
    pub conv_generator: Vec<usize>,
    /// Generated rows per generator step.
    pub batch: usize,
    /// Generator steps (free: they never touch the private rows).
    pub steps: u64,
    pub lr: f64,
    /// Gumbel-softmax temperature of the categorical heads.
    pub tau: f64,
    /// Further kernel length scales beside `bandwidth` (public settings): the frequencies
    /// are dealt round-robin between them, so the kernel averages Gaussians at each scale.
    #[serde(default)]
    pub bandwidth_mix: Vec<f64>,
    /// Anneal the generator's learning rate to zero on a half cosine over the steps.
    #[serde(default)]
    pub lr_cosine: bool,
    /// Where the embedding is computed: `auto`, `cpu` or `gpu` (the WGSL kernel).
    #[serde(default)]
    pub embed_device: EmbedDevice,
}

fn default_count_share() -> f64 {
    0.05
}

impl DpMerfConfig {
    // Measured on ADULT at ε = 1 (δ = 1e-5, one run each, unconditional): `quick` in
    // 64 s on two cores, RF 0.788 accuracy / 0.835 AUROC, LR 0.809 / 0.854; `adult`
    // in 205 s, RF 0.797 / 0.832, LR 0.813 / 0.847 (majority class 0.764).
    fn base() -> Self {
        Self {
            common: Common::private(),
            features: 1_000,
            bandwidth: 0.0,
            aux_share: 0.0,
            label: String::new(),
            count_share: default_count_share(),
            latent_dim: 32,
            generator_hidden: vec![128, 128],
            conv_generator: Vec::new(),
            batch: 500,
            steps: 2_000,
            lr: 0.002,
            tau: 0.2,
            bandwidth_mix: Vec::new(),
            lr_cosine: false,
            embed_device: EmbedDevice::Cpu,
        }
    }

    // Tuned on public UCI Adult: class-conditional on income.
    fn adult() -> Self {
        Self {
            features: 2_000,
            batch: 1_000,
            label: "income".into(),
            ..Self::base()
        }
    }

    fn tiny() -> Self {
        Self {
            features: 200,
            steps: 200,
            batch: 256,
            generator_hidden: vec![64],
            ..Self::base()
        }
    }

    fn mnist() -> Self {
        Self {
            features: 5_000,
            generator_hidden: vec![256, 512],
            batch: 500,
            steps: 3_000,
            label: "label".into(),
            ..Self::base()
        }
    }

    // Digits from a DCGAN-style generator (see `conv_generator`): pixels that
    // neighbour each other are made together, where the MLP draws each alone.
    // Bandwidth 6, a public choice tuned on public MNIST (never read from the
    // rows): the rule's √794 ≈ 28 is so smooth that the embedding fixes only the
    // strokes' average shape (CNN judge 83 % at ε = 1 and at 10); at 6 the
    // frequencies see stroke width and the digits sharpen (86.5 % at ε = 1).
    fn mnist_conv() -> Self {
        Self {
            features: 5_000,
            bandwidth: 6.0,
            conv_generator: vec![32, 16],
            batch: 200,
            steps: 2_000,
            lr: 0.002,
            label: "label".into(),
            ..Self::base()
        }
    }

    // More arithmetic for no more privacy, tuned on public MNIST: twice the
    // frequencies, so a narrower kernel (4) still has enough of them to see
    // strokes (at 3 the frequencies outrun the pixels and the digits drown in salt
    // noise: 73 %), a generator twice as wide, 3,000 steps, and 400 generated
    // digits a step. The batch matters most: the squared distance of a batch's
    // mean embedding is biased by (1 − ‖μ‖²)/b towards less varied digits and its
    // gradient is noisy, both shrinking with b; at 200 the digits carry salt noise
    // (CNN judge 89.3–90.1 % at ε = 10 on 60,000 synthetic digits), at 400 they
    // are clean (91.8 %).
    fn mnist_conv_wide() -> Self {
        Self {
            features: 10_000,
            bandwidth: 4.0,
            conv_generator: vec![64, 32],
            batch: 400,
            steps: 3_000,
            lr: 0.002,
            label: "label".into(),
            ..Self::base()
        }
    }

    // The paper's tabular script (`code_tab`, as PEARL's fork runs it): 500
    // frequencies (1,000 features), generated batches of a tenth of the data,
    // Adam lr 0.01, 8,000 steps, one embedding per income class.
    fn paper_adult() -> Self {
        Self {
            features: 500,
            batch: 3_000,
            steps: 8_000,
            lr: 0.01,
            label: "income".into(),
            ..Self::base()
        }
    }

    // The paper's image settings: 1,500 frequencies, batches of 100, 5 × 600
    // steps, one embedding per digit; lr 0.002, as our MLP generator diverges at
    // the paper's 0.01 (theirs is convolutional).
    fn paper_mnist() -> Self {
        Self {
            features: 1_500,
            generator_hidden: vec![200, 512],
            batch: 100,
            steps: 3_000,
            label: "label".into(),
            ..Self::base()
        }
    }

    /// The same run as PEARL's training loop sees it: no critic.
    fn as_pearl(&self) -> PearlConfig {
        PearlConfig {
            common: self.common.clone(),
            features: self.features,
            bandwidth: self.bandwidth,
            aux_share: self.aux_share,
            count_share: self.count_share,
            label: self.label.clone(),
            latent_dim: self.latent_dim,
            generator_hidden: self.generator_hidden.clone(),
            conv_generator: self.conv_generator.clone(),
            batch: self.batch,
            steps: self.steps,
            lr: self.lr,
            critic_every: 0,
            critic_lr: 0.0,
            tau: self.tau,
            bandwidth_mix: self.bandwidth_mix.clone(),
            lr_cosine: self.lr_cosine,
            embed_device: self.embed_device,
        }
    }
}

/// Every preset, the default first.
const PRESETS: [PresetOf<DpMerfConfig>; 8] = [
    PresetOf {
        name: "quick",
        doc: "1,000 frequencies, 2,000 generator steps, no label: about a minute on two cores",
        settings: DpMerfConfig::base,
    },
    PresetOf {
        name: "tiny",
        doc: "seconds: for tests and smoke checks",
        settings: DpMerfConfig::tiny,
    },
    PresetOf {
        name: "adult",
        doc: "UCI Adult, one embedding per income class: 2,000 frequencies, batches of 1,000 (tuned on the public Adult data)",
        settings: DpMerfConfig::adult,
    },
    PresetOf {
        name: "mnist",
        doc: "digits, one embedding per digit: 5,000 frequencies, a wider generator (MNIST at ε = 1: 76 % MLP accuracy on real test digits)",
        settings: DpMerfConfig::mnist,
    },
    PresetOf {
        name: "mnist-conv",
        doc: "digits from a convolutional generator (32 → 16 → 1 channels, 7 → 14 → 28 pixels), one embedding per digit, bandwidth 6 (tuned on public MNIST; CNN judge 86.5 % at ε = 1)",
        settings: DpMerfConfig::mnist_conv,
    },
    PresetOf {
        name: "mnist-conv-wide",
        doc: "the convolutional generator twice as wide (64 → 32 → 1 channels), 10,000 frequencies, bandwidth 4, 3,000 steps of 400 generated digits: about 8 minutes on two cores (CNN judge on 60,000 synthetic digits 90.6 % at ε = 1, 91.2–91.8 % at ε = 10)",
        settings: DpMerfConfig::mnist_conv_wide,
    },
    PresetOf {
        name: "paper-adult",
        doc: "the paper's tabular settings: 500 frequencies, batches of 3,000, 8,000 steps, lr 0.01 (label: income)",
        settings: DpMerfConfig::paper_adult,
    },
    PresetOf {
        name: "paper-mnist",
        doc: "the paper's image settings: 1,500 frequencies, batches of 100, 3,000 steps (label: label)",
        settings: DpMerfConfig::paper_mnist,
    },
];

impl MethodConfig for DpMerfConfig {
    const PRESETS: &'static [PresetOf<Self>] = &PRESETS;

    fn common(&mut self) -> &mut Common {
        &mut self.common
    }

    fn into_method(self) -> Box<dyn Synthesizer + Send> {
        Box::new(Pearl::new(self.as_pearl(), INFO.id))
    }
}

/// The registry entry of DP-MERF.
pub const INFO: MethodInfo = MethodInfo {
    id: "dp-merf",
    title: "DP-MERF",
    sentence: "Measures the data once, through a noisy summary of random features, then teaches a generator to reproduce that summary as long as it likes: fast, and longer training costs no privacy.",
    pick_when: "The recommended start for images (preset mnist-conv); on tables, when you want to retrain freely at no extra cost.",
    paper: "Harder, Adamczewski & Park, DP-MERF: Differentially Private Mean Embeddings with Random Features (2021)",
    url: "https://arxiv.org/abs/2002.11603",
    kinds: &[DataKind::Table, DataKind::Images],
    private: true,
    critic: false,
    streams: false,
    presets: &listed(&PRESETS),
    settings: settings::<DpMerfConfig>,
    build: build::<DpMerfConfig>,
};
