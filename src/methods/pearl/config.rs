//! PEARL's settings and presets, its privacy budget's split between the releases, and its
//! registry entry.

use crate::methods::embedding::{self};
use crate::methods::method::{
    Common, DataKind, MethodConfig, MethodInfo, PresetOf, build, listed, settings,
};
use crate::methods::{MethodError, Result, Synthesizer};
use crate::privacy::{Charge, Mechanism};

use super::Pearl;

/// PEARL settings; presets below.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PearlConfig {
    /// The preset and the private switch, which the registry sets.
    #[serde(flatten)]
    pub common: Common,
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
    /// Where the embedding is computed: `auto` (a hardware GPU through the WGSL kernel
    /// when there is one), `cpu` or `gpu`.
    #[serde(default)]
    pub embed_device: embedding::EmbedDevice,
}

impl PearlConfig {
    fn base() -> Self {
        Self {
            common: Common::private(),
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
            embed_device: embedding::EmbedDevice::Cpu,
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

    // Tuned on public UCI Adult (its income column as the label).
    fn adult() -> Self {
        Self {
            features: 2_000,
            batch: 1_000,
            steps: 3_000,
            label: "income".into(),
            ..Self::base()
        }
    }

    // The paper's tabular script: 500 frequencies (1,000 features), batches of a
    // tenth of the data, lr 0.01, 8,000 steps, a critic step every 10, the budget
    // split equally between the bandwidth and the embedding.
    fn paper_adult() -> Self {
        Self {
            features: 500,
            batch: 2_000,
            steps: 8_000,
            lr: 0.01,
            aux_share: 0.5,
            count_share: 0.05,
            label: "income".into(),
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

    // The paper's image script: 1,500 frequencies, batches of 100, 5 × 600 steps,
    // a critic step every 5, the budget split equally; lr 0.002, as our MLP
    // generator diverges at the paper's 0.01 (theirs is convolutional).
    fn paper_mnist() -> Self {
        Self {
            features: 1_500,
            generator_hidden: vec![200, 512],
            batch: 100,
            steps: 3_000,
            lr: 0.002,
            critic_every: 5,
            aux_share: 0.5,
            label: "label".into(),
            ..Self::base()
        }
    }

    /// The releases' shares of ρ: (bandwidth, counts, embedding).
    pub(super) fn shares(&self) -> Result<(Option<f64>, Option<f64>, f64)> {
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
    pub(super) fn releases(&self, sigma: f64) -> Result<Vec<Charge>> {
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

/// Every preset, the default first.
const PRESETS: [PresetOf<PearlConfig>; 6] = [
    PresetOf {
        name: "quick",
        doc: "1,000 frequencies, 2,000 generator steps, no label: about a minute on two cores",
        settings: PearlConfig::base,
    },
    PresetOf {
        name: "tiny",
        doc: "seconds: for tests and smoke checks",
        settings: PearlConfig::tiny,
    },
    PresetOf {
        name: "adult",
        doc: "UCI Adult, class-conditional on income: 2,000 frequencies, 3,000 steps (tuned on the public Adult data)",
        settings: PearlConfig::adult,
    },
    PresetOf {
        name: "paper-adult",
        doc: "the paper's tabular settings: 500 frequencies, 8,000 steps, budget split equally (label: income)",
        settings: PearlConfig::paper_adult,
    },
    PresetOf {
        name: "mnist",
        doc: "digits, one embedding per digit: 5,000 frequencies, a wider generator",
        settings: PearlConfig::mnist,
    },
    PresetOf {
        name: "paper-mnist",
        doc: "the paper's image settings: 1,500 frequencies, batches of 100, 3,000 steps, budget split equally",
        settings: PearlConfig::paper_mnist,
    },
];

impl MethodConfig for PearlConfig {
    const PRESETS: &'static [PresetOf<Self>] = &PRESETS;

    fn common(&mut self) -> &mut Common {
        &mut self.common
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
    streams: false,
    presets: &listed(&PRESETS),
    settings: settings::<PearlConfig>,
    build: build::<PearlConfig>,
};
