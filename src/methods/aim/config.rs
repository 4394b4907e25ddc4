//! AIM's settings and presets, and its registry entry.

use crate::methods::Synthesizer;
use crate::methods::method::{
    Common, DataKind, MethodConfig, MethodInfo, PresetOf, build, listed, settings,
};

use super::*;

/// AIM settings; presets below.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AimConfig {
    /// The preset and the private switch, which the registry sets.
    #[serde(flatten)]
    pub common: Common,
    /// Levels a continuous column is cut into (integer columns whose range fits keep one
    /// level per whole number).
    pub bins: usize,
    /// The workload: all marginals of this many columns (3 in the paper). Falls to 2 when
    /// there would be more than 5,000 of them.
    pub degree: usize,
    /// The junction tree's size limit in cells (the paper's 80 MB is 10.5 million).
    pub max_cells: usize,
    /// Planned rounds T, which set the first noise scale (0: 16 × the number of columns, as
    /// the paper; at least the number of columns). Annealing usually ends the loop sooner.
    pub rounds: u64,
    /// Mirror-descent iterations after each measurement.
    pub round_iters: usize,
    /// Mirror-descent iterations of the final fit.
    pub iters: usize,
    /// Rows drawn from the model each round to answer candidates no node holds.
    pub estimate_rows: usize,
    /// The column the synthetic rows will be asked to predict (a public choice, no
    /// privacy cost): candidates that hold it weigh `target_weight` times more, so the
    /// rounds measure the groups a classifier's predictions rest on (`--set
    /// target=income`). `None`: the paper's workload, every group alike.
    #[serde(default)]
    pub target: Option<String>,
    /// How much more a candidate holding the target weighs. On Adult at ε = 1 with the
    /// six rules, 10 moved the mean RF AUROC of six runs from 0.870 to 0.874, within the
    /// runs' spread (docs/results.md).
    #[serde(default = "default_target_weight")]
    pub target_weight: f64,
    /// Keep column pairs whose noisy counts are one-to-one (education and its number) as
    /// one-to-one maps in the model: post-processing, no charge (`one_to_one.rs`).
    #[serde(default = "keep_pairs")]
    pub one_to_one: bool,
    /// Close the bins of a column's empty tails and an empty blank slot where the noisy
    /// one-way counts do not clear the noise (`noise_floor.rs`): post-processing, no charge.
    /// Off, noise in empty cells becomes rows (a wide public bound smears the column).
    #[serde(default = "keep_pairs")]
    pub noise_floor: bool,
}

fn keep_pairs() -> bool {
    true
}

fn default_target_weight() -> f64 {
    10.0
}

impl AimConfig {
    // 100 bins, as the NIST challenge's 3-way scoring cuts continuous columns: on
    // Adult at ε = 1 the same accuracy as 32 bins (RF 0.844 / 0.892 vs 0.842 /
    // 0.894) and a third of the 3-way marginal error (0.128 vs 0.424).
    pub(super) fn base() -> Self {
        Self {
            common: Common::private(),
            bins: 100,
            degree: 3,
            max_cells: 1_000_000,
            rounds: 0,
            round_iters: 50,
            iters: 1_000,
            estimate_rows: 50_000,
            target: None,
            target_weight: default_target_weight(),
            one_to_one: true,
            noise_floor: true,
        }
    }

    // The paper's settings: 80 MB models, 1,000 iterations per round, 2,500 at
    // the end. Much slower (tens of minutes on Adult).
    pub(super) fn paper() -> Self {
        Self {
            max_cells: 10_485_760,
            round_iters: 1_000,
            iters: 2_500,
            estimate_rows: 200_000,
            ..Self::base()
        }
    }

    // Tables of more than 100 columns: pairs, 32 bins, and a fifth of the rows drawn each
    // round to answer the 5,000 candidate pairs (the rounds' main cost there).
    pub(super) fn wide() -> Self {
        Self {
            bins: 32,
            degree: 2,
            round_iters: 25,
            estimate_rows: 10_000,
            ..Self::base()
        }
    }

    pub(super) fn tiny() -> Self {
        Self {
            bins: 8,
            degree: 2,
            max_cells: 20_000,
            round_iters: 20,
            iters: 200,
            estimate_rows: 5_000,
            ..Self::base()
        }
    }
}

/// Every preset, the default first.
pub(super) const PRESETS: [PresetOf<AimConfig>; 4] = [
    PresetOf {
        name: "quick",
        doc: "all 3-way marginals as the workload, 100 bins per continuous column, models up to a million cells, short fits between rounds: under a minute on Adult",
        settings: AimConfig::base,
    },
    PresetOf {
        name: "paper",
        doc: "the paper's settings: models up to 80 MB, 1,000 fitting iterations per round (much slower)",
        settings: AimConfig::paper,
    },
    PresetOf {
        name: "wide",
        doc: "for tables of more than 100 columns: pairs, 32 bins, fewer rows drawn from the model each round",
        settings: AimConfig::wide,
    },
    PresetOf {
        name: "tiny",
        doc: "8 bins, pairs, small models and short fits: for tests and smoke checks",
        settings: AimConfig::tiny,
    },
];

impl MethodConfig for AimConfig {
    const PRESETS: &'static [PresetOf<Self>] = &PRESETS;

    fn common(&mut self) -> &mut Common {
        &mut self.common
    }

    fn into_method(self) -> Box<dyn Synthesizer + Send> {
        Box::new(Aim { config: self })
    }
}

/// The registry entry of AIM.
pub const INFO: MethodInfo = MethodInfo {
    id: "aim",
    title: "AIM",
    sentence: "Repeatedly finds the group of columns its current model gets most wrong, measures that group's counts with noise, and refits: the strongest published method for tables, and the budget goes where the model needs it.",
    pick_when: "The recommended start for tables: within 0.00–0.03 AUROC of real data at ε = 1 on every table measured.",
    paper: "McKenna, Mullins, Sheldon & Miklau, AIM: An Adaptive and Iterative Mechanism for Differentially Private Synthetic Data (2022)",
    url: "https://arxiv.org/abs/2201.12677",
    kinds: &[DataKind::Table],
    private: true,
    critic: false,
    streams: true,
    presets: &listed(&PRESETS),
    settings: settings::<AimConfig>,
    build: build::<AimConfig>,
};
