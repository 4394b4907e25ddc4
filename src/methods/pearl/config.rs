//! PEARL's settings and presets, its privacy budget's split between the releases, and its
//! registry entry.

use crate::methods::embedding::{self};
use crate::methods::labeller::LabellerFit;
use crate::methods::method::{
    Common, DataKind, MethodConfig, MethodInfo, PresetOf, build, listed, settings,
};
use crate::methods::{MethodError, Result, Synthesizer};
use crate::privacy::{Charge, Mechanism};

use super::Pearl;

/// The settings PEARL and DP-MERF share: the embedding's release and the generator fitted
/// to it. Flattened into both configs, so `--set features=…` and the model headers read
/// the same as when each method wrote them out in full.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EmbedFit {
    /// Frequencies k (the embedding has 2k numbers per class).
    pub features: usize,
    /// Kernel length scale ℓ; 0 estimates it privately (`aux_share` > 0) or takes the
    /// public rule √(number of columns) (`aux_share` = 0).
    pub bandwidth: f64,
    /// Share of the budget (of ρ) for the private bandwidth.
    #[serde(default)]
    pub aux_share: f64,
    /// Share of the budget (of ρ) for the class counts (with a label).
    #[serde(default = "default_count_share")]
    pub count_share: f64,
    /// Class column of a class-conditional embedding ("" for none). For images, `label`.
    #[serde(default)]
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
    /// Weigh the generated batch's own pairs by n_c/(n_c − 1) so the loss is an unbiased
    /// estimate of the distance to the release (see `objective::pair_scale`); off keeps
    /// the measured presets' plain batch distance.
    #[serde(default)]
    pub unbiased: bool,
    /// Images: the side of the squares local frequencies read (0: none). See
    /// `embedding::local_frequencies`.
    #[serde(default)]
    pub patch: usize,
    /// The share of the frequencies that are local (the rest read the whole row); with
    /// `patch_filters`, the local kernel's weight beside the whole row's.
    #[serde(default)]
    pub patch_share: f64,
    /// The local kernel's length scale, over one square's pixels.
    #[serde(default)]
    pub patch_bandwidth: f64,
    /// Local frequencies as this many random filters read at every place of the image
    /// (`embedding::SquareFilters`: places × filters frequencies for the arithmetic of a
    /// few dense ones) instead of `patch_share` of `features` at random places; 0: off.
    #[serde(default)]
    pub patch_filters: usize,
    /// Frequencies each generator step reads, drawn afresh (0: all): the step's distance
    /// over them, scaled by features / step_features, is an unbiased estimate of the whole
    /// distance at a fraction of the arithmetic, buying more steps in the same time.
    /// Post-processing of the one release: no privacy cost.
    #[serde(default)]
    pub step_features: usize,
    /// A DP-SGD classifier released beside the generator, which sampling uses to keep
    /// only the images it reads as their class (`labeller_share` > 0; see
    /// [`crate::methods::labeller`]).
    #[serde(flatten)]
    pub labeller: LabellerFit,
}

fn default_count_share() -> f64 {
    0.05
}

impl EmbedFit {
    /// Both methods' `tiny`: seconds, for tests and smoke checks.
    pub fn tiny(f: &mut Self) {
        f.features = 200;
        f.steps = 200;
        f.batch = 256;
        f.generator_hidden = vec![64];
    }

    /// Random-feature work per row (evaluations, projection multiply-adds) and the values
    /// the frequencies hold, for rows `width` wide (an image's side is estimated from the
    /// width, as the footprints do). `dense`: local frequencies as dense columns (PEARL's
    /// critic and `step_features` read them so), else each costs its square's patch².
    pub fn feature_cost(&self, width: usize, dense: bool) -> (u64, u64, u64) {
        let w = width as u64;
        let all = (
            self.features as u64,
            self.features as u64 * w,
            self.features as u64 * w,
        );
        if self.patch == 0 || self.patch_share <= 0.0 || (dense && self.patch_filters == 0) {
            return all;
        }
        let side = crate::methods::image_nets::ImageLayout::estimate(width).side;
        let across = side.saturating_sub(self.patch) as u64 + 1;
        let local = ((self.features as f64 * self.patch_share).round() as u64).min(all.0);
        let row = all.0 - local;
        let patch2 = (self.patch * self.patch) as u64;
        if self.patch_filters == 0 {
            return (
                all.0,
                row * w + local * patch2,
                row * w + 3 * local * patch2,
            );
        }
        let squares = across * across * self.patch_filters as u64;
        (row + squares, row * w + squares * patch2, row * w)
    }

    /// Both methods' `mnist`: one embedding per digit, 5,000 frequencies, a wider MLP.
    pub fn mnist(f: &mut Self) {
        f.features = 5_000;
        f.generator_hidden = vec![256, 512];
        f.batch = 500;
        f.steps = 3_000;
        f.label = "label".into();
    }

    /// The defaults both methods start their presets from (PEARL adds a private scale).
    pub fn base() -> Self {
        Self {
            features: 1_000,
            bandwidth: 0.0,
            aux_share: 0.0,
            count_share: default_count_share(),
            label: String::new(),
            latent_dim: 32,
            generator_hidden: vec![128, 128],
            conv_generator: Vec::new(),
            batch: 500,
            steps: 2_000,
            lr: 0.002,
            tau: 0.2,
            bandwidth_mix: Vec::new(),
            lr_cosine: false,
            embed_device: embedding::EmbedDevice::Cpu,
            unbiased: false,
            patch: 0,
            patch_share: 0.0,
            patch_bandwidth: 0.0,
            patch_filters: 0,
            step_features: 0,
            labeller: LabellerFit::default(),
        }
    }
}

/// PEARL settings: the shared embedding fit and the critic; presets below.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PearlConfig {
    /// The preset and the private switch, which the registry sets.
    #[serde(flatten)]
    pub common: Common,
    #[serde(flatten)]
    pub fit: EmbedFit,
    /// One critic (re-weighting) step per this many generator steps; 0: no critic.
    pub critic_every: u64,
    pub critic_lr: f64,
}

impl PearlConfig {
    fn base() -> Self {
        Self {
            common: Common::private(),
            fit: EmbedFit {
                aux_share: 0.1,
                ..EmbedFit::base()
            },
            critic_every: 10,
            // On log ℓ': the paper's 0.01 on ℓ'² ≈ 129 is a far smaller relative step, and
            // 0.01 here drives the weights onto a few frequencies (pixels saturate).
            critic_lr: 0.001,
        }
    }

    /// The base settings with the fit changed by `edit`.
    fn with(edit: impl FnOnce(&mut EmbedFit)) -> Self {
        let mut c = Self::base();
        edit(&mut c.fit);
        c
    }

    fn tiny() -> Self {
        Self::with(EmbedFit::tiny)
    }

    // Tuned on public UCI Adult (its income column as the label).
    fn adult() -> Self {
        Self::with(|f| {
            f.features = 2_000;
            f.batch = 1_000;
            f.steps = 3_000;
            f.label = "income".into();
        })
    }

    // The paper's tabular script: 500 frequencies (1,000 features), batches of a
    // tenth of the data, lr 0.01, 8,000 steps, a critic step every 10, the budget
    // split equally between the bandwidth and the embedding.
    fn paper_adult() -> Self {
        Self::with(|f| {
            f.features = 500;
            f.batch = 2_000;
            f.steps = 8_000;
            f.lr = 0.01;
            f.aux_share = 0.5;
            f.count_share = 0.05;
            f.label = "income".into();
        })
    }

    fn mnist() -> Self {
        Self::with(EmbedFit::mnist)
    }

    // The paper's image script: 1,500 frequencies, batches of 100, 5 × 600 steps,
    // a critic step every 5, the budget split equally; lr 0.002, as our MLP
    // generator diverges at the paper's 0.01 (theirs is convolutional).
    fn paper_mnist() -> Self {
        Self {
            critic_every: 5,
            ..Self::with(|f| {
                f.features = 1_500;
                f.generator_hidden = vec![200, 512];
                f.batch = 100;
                f.steps = 3_000;
                f.lr = 0.002;
                f.aux_share = 0.5;
                f.label = "label".into();
            })
        }
    }

    /// Settings the plan refuses before anything is charged.
    pub(super) fn check(&self) -> Result<()> {
        self.shares()?;
        self.fit.labeller.check(&self.fit.label)?;
        if self.critic_every > 0 && (!self.fit.bandwidth_mix.is_empty() || self.fit.patch > 0) {
            return Err(MethodError::Plan(
                "bandwidth_mix and patch need critic_every = 0: the critic re-weighs frequencies drawn at one scale over the whole row".into(),
            ));
        }
        if let Some(bad) = self
            .fit
            .bandwidth_mix
            .iter()
            .find(|l| !(**l > 0.0 && l.is_finite()))
        {
            return Err(MethodError::Plan(format!(
                "every bandwidth in bandwidth_mix must be a positive number, got {bad}"
            )));
        }
        let f = &self.fit;
        if f.step_features > 0 && (f.patch_filters > 0 || self.critic_every > 0) {
            return Err(MethodError::Plan(
                "step_features needs critic_every = 0 and no patch_filters: a step draws some of the dense frequencies".into(),
            ));
        }
        if f.patch_filters > 0 && f.patch == 0 {
            return Err(MethodError::Plan(
                "patch_filters needs patch (the side of the squares the filters read) above 0"
                    .into(),
            ));
        }
        if f.patch > 0
            && !((0.0..=1.0).contains(&f.patch_share)
                && f.patch_bandwidth > 0.0
                && f.patch_bandwidth.is_finite())
        {
            return Err(MethodError::Plan(format!(
                "local frequencies need patch_share between 0 and 1 and a positive patch_bandwidth, got {} and {}",
                f.patch_share, f.patch_bandwidth
            )));
        }
        Ok(())
    }

    /// What each release measures, with its share of the budget, for the plan's summary.
    pub(super) fn release_parts(&self) -> Result<Vec<String>> {
        let (aux, count, emb) = self.shares()?;
        let mut parts = Vec::new();
        if aux.is_some() {
            parts.push(format!(
                "the data's scale ({:.0} %)",
                100.0 * aux.unwrap_or(0.0)
            ));
        } else {
            parts.push(format!(
                "no scale (bandwidth {})",
                if self.fit.bandwidth > 0.0 {
                    self.fit.bandwidth.to_string()
                } else {
                    "√columns, public".into()
                }
            ));
        }
        if let Some(share) = count {
            parts.push(format!(
                "'{}' counts ({:.0} %)",
                self.fit.label,
                100.0 * share
            ));
        }
        let f = &self.fit;
        let per_class = if f.label.is_empty() {
            String::new()
        } else {
            format!(" per '{}' class", f.label)
        };
        let local = f.patch > 0 && f.patch_share > 0.0;
        parts.push(if local && f.patch_filters > 0 {
            let on_squares = ((f.features as f64 * f.patch_share).round() as usize).min(f.features);
            format!(
                "a {}-number embedding of the whole row and {} filters read at every {p}×{p} square (2 × {} numbers a place; the squares weigh {:.0} % of the kernel){per_class} ({:.0} %)",
                2 * (f.features - on_squares),
                f.patch_filters,
                f.patch_filters,
                100.0 * f.patch_share,
                100.0 * emb,
                p = f.patch
            )
        } else {
            format!(
                "a {}-number embedding{per_class}{} ({:.0} %)",
                2 * f.features,
                if local {
                    format!(
                        ", {:.0} % of its frequencies on {p}×{p} squares",
                        100.0 * f.patch_share,
                        p = f.patch
                    )
                } else {
                    String::new()
                },
                100.0 * emb
            )
        });
        Ok(parts)
    }

    /// The releases' shares of ρ: (bandwidth, counts, embedding).
    pub(super) fn shares(&self) -> Result<(Option<f64>, Option<f64>, f64)> {
        let f = &self.fit;
        let aux = (f.bandwidth <= 0.0 && f.aux_share > 0.0).then_some(f.aux_share);
        let count = (!f.label.is_empty() && f.count_share > 0.0).then_some(f.count_share);
        let emb = 1.0 - aux.unwrap_or(0.0) - count.unwrap_or(0.0);
        // The embedding carries the method: it keeps at least a tenth of the budget.
        if !(emb >= 0.1 - 1e-12 && emb <= 1.0) || f.aux_share < 0.0 || f.count_share < 0.0 {
            return Err(MethodError::Plan(format!(
                "aux_share and count_share must be ≥ 0 and leave at least 0.1 for the embedding, got {} + {}",
                f.aux_share, f.count_share
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
            out.push(gauss(embedding::MOMENTS_SENSITIVITY, a));
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
        out.push(gauss(embedding::SUM_SENSITIVITY, emb));
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
