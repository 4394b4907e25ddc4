//! PATE-GAN's settings and presets, and its registry entry.

use crate::methods::Synthesizer;
use crate::methods::method::{
    Common, DataKind, MethodConfig, MethodInfo, PresetOf, build, listed, settings,
};

use super::PateGan;

pub use crate::privacy::votes::Aggregator;

/// What the student learns from each noisy vote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StudentTarget {
    /// The noisy argmax, real or fake, by cross-entropy (the paper).
    Label,
    /// The noisy margin (ñ_real − ñ_fake)/k by least squares on tanh of the student's
    /// output: unbiased, so the noise averages out over queries instead of flipping labels.
    #[default]
    Margin,
}

impl StudentTarget {
    /// The scale that reads the student's output y as the probability "real", σ(scale·y):
    /// 1 for a logit, 2 for a margin trained on tanh(y) (σ(2y) = (1 + tanh y)/2).
    pub fn critic_scale(self) -> f64 {
        match self {
            Self::Label => 1.0,
            Self::Margin => 2.0,
        }
    }
}

/// PATE-GAN settings; presets below.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PateGanConfig {
    /// The preset and the private switch, which the registry sets.
    #[serde(flatten)]
    pub common: Common,
    /// Private rows per teacher: k = ⌊N / this⌋ teachers, at least 2 (the paper's Table 3
    /// finds N/1000 best). N is the public number of records.
    pub records_per_teacher: usize,
    /// Hidden units of each teacher (0: logistic regression, the paper's depth-1 teachers).
    pub teacher_hidden: usize,
    /// Rows of its own part (and as many generated rows) per teacher update.
    pub teacher_batch: usize,
    pub teacher_lr: f64,
    /// Decoupled weight decay of the teachers (AdamW): keeps their logits in the graded
    /// range soft votes read, instead of growing without bound once rows separate.
    #[serde(default)]
    pub teacher_decay: f64,
    /// Soft votes only: a teacher's vote is clamp(logit / (2·range) + ½, 0, 1), linear in
    /// its logit over ±range (0: the logistic sigmoid of the logit).
    #[serde(default)]
    pub soft_range: f64,
    /// Teacher updates per generator step (the paper's n_T = 5).
    pub teacher_steps: u64,
    /// Student updates per generator step (n_S = 5).
    pub student_steps: u64,
    /// Fresh generated rows labelled per student update: each is one charged query.
    pub labels_per_step: usize,
    /// Earlier labelled rows mixed into each student update (re-reading released labels is
    /// free; 0 in the paper).
    pub replay: usize,
    pub student_target: StudentTarget,
    pub aggregator: Aggregator,
    /// Share of each labelled batch drawn from the schema's public domain (uniform
    /// categories, uniform values in the public bounds) instead of from the generator:
    /// data-independent rows that show the student where the teachers say "real" beyond
    /// the generator's current support (0 in the paper).
    #[serde(default)]
    pub anchor_share: f64,
    pub latent_dim: usize,
    /// Generator hidden widths as fractions of the encoded width (the paper: d, d/2, d);
    /// each at least 16 and at most 1,024 units.
    pub generator_hidden_fractions: Vec<f64>,
    pub student_hidden_fractions: Vec<f64>,
    /// Generated rows per generator update.
    pub batch: usize,
    pub generator_steps: u64,
    /// Adam step of the student and the generator.
    pub lr: f64,
    /// Gumbel-softmax temperature of the categorical heads.
    pub tau: f64,
}

impl PateGanConfig {
    fn paper() -> Self {
        Self {
            common: Common::private(),
            records_per_teacher: 1_000,
            teacher_hidden: 0,
            teacher_batch: 64,
            teacher_lr: 1e-4,
            teacher_decay: 0.0,
            soft_range: 0.0,
            teacher_steps: 5,
            student_steps: 5,
            labels_per_step: 64,
            replay: 0,
            student_target: StudentTarget::Label,
            aggregator: Aggregator::Laplace,
            anchor_share: 0.0,
            latent_dim: 64,
            generator_hidden_fractions: vec![1.0, 0.5, 1.0],
            student_hidden_fractions: vec![1.0, 0.5, 1.0],
            batch: 64,
            generator_steps: 1_000,
            lr: 1e-4,
            tau: 0.2,
        }
    }

    fn quick() -> Self {
        Self {
            records_per_teacher: 100,
            teacher_lr: 0.01,
            teacher_decay: 1.0,
            soft_range: 4.0,
            teacher_batch: 64,
            teacher_steps: 5,
            student_steps: 5,
            labels_per_step: 16,
            replay: 240,
            student_target: StudentTarget::Margin,
            aggregator: Aggregator::Soft,
            generator_hidden_fractions: vec![1.0, 1.0],
            student_hidden_fractions: vec![1.0, 0.5],
            batch: 256,
            generator_steps: 1_000,
            lr: 0.0005,
            ..Self::paper()
        }
    }

    fn tiny() -> Self {
        Self {
            records_per_teacher: 20,
            generator_steps: 40,
            teacher_steps: 1,
            student_steps: 1,
            batch: 64,
            generator_hidden_fractions: vec![0.5],
            student_hidden_fractions: vec![0.5],
            ..Self::quick()
        }
    }

    fn mnist() -> Self {
        Self {
            records_per_teacher: 200,
            teacher_hidden: 0,
            generator_hidden_fractions: vec![0.5, 1.0],
            ..Self::quick()
        }
    }

    /// k = ⌊N / records_per_teacher⌋, at least 2 and at most N.
    pub fn teachers(&self, records: usize) -> usize {
        (records / self.records_per_teacher.max(1))
            .max(2)
            .min(records.max(1))
    }

    /// Queries the whole run makes: one per labelled generated row.
    pub fn queries(&self) -> u64 {
        self.generator_steps
            .saturating_mul(self.student_steps)
            .saturating_mul(self.labels_per_step as u64)
    }
}

/// Every preset, the default first.
const PRESETS: [PresetOf<PateGanConfig>; 5] = [
    PresetOf {
        name: "quick",
        doc: "a teacher per 100 rows, the student learns noisy vote margins: a few minutes",
        settings: PateGanConfig::quick,
    },
    PresetOf {
        name: "tiny",
        doc: "seconds: for tests and smoke checks",
        settings: PateGanConfig::tiny,
    },
    PresetOf {
        name: "adult",
        doc: "quick's settings, the ones tuned on public ADULT",
        settings: PateGanConfig::quick,
    },
    PresetOf {
        name: "paper",
        doc: "the paper's: a teacher per 1,000 rows, Laplace votes, 0/1 labels, n_T = n_S = 5, batch 64, Adam 1e-4",
        settings: PateGanConfig::paper,
    },
    PresetOf {
        name: "mnist",
        doc: "digits with their label: a teacher per 200 rows",
        settings: PateGanConfig::mnist,
    },
];

impl MethodConfig for PateGanConfig {
    const PRESETS: &'static [PresetOf<Self>] = &PRESETS;

    fn common(&mut self) -> &mut Common {
        &mut self.common
    }

    fn into_method(self) -> Box<dyn Synthesizer + Send> {
        Box::new(PateGan { config: self })
    }
}

/// The registry entry of PATE-GAN.
pub const INFO: MethodInfo = MethodInfo {
    id: "pate-gan",
    title: "PATE-GAN",
    sentence: "Many small judges each see a separate slice of the data and vote, with noise, on whether generated rows look real; a generator learns from a student of their votes.",
    pick_when: "Better for showing the PATE idea in a lab, or on large tables where many disjoint slices are affordable.",
    paper: "Jordon, Yoon & van der Schaar, PATE-GAN: Generating Synthetic Data with Differential Privacy Guarantees (ICLR 2019)",
    url: "https://openreview.net/forum?id=S1zk9iRqF7",
    kinds: &[DataKind::Table, DataKind::Images],
    private: true,
    critic: true,
    streams: false,
    presets: &listed(&PRESETS),
    settings: settings::<PateGanConfig>,
    build: build::<PateGanConfig>,
};
