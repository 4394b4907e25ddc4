//! What a sweep runs and what it finds: the configuration, one scored point per run, and
//! the report the chart and the table are drawn from.

use std::path::PathBuf;

use crate::job::{JobError, RunConfig};

/// What a sweep runs.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    /// The settings every run shares (its `method`, `epsilon` and `out` are replaced).
    pub base: RunConfig,
    pub methods: Vec<String>,
    /// `f64::INFINITY` for the non-private point.
    pub epsilons: Vec<f64>,
    /// Runs per (method, ε): more give error bars.
    pub repeats: usize,
    /// The data is public (a bundled sample): charge nothing.
    pub public: bool,
    /// Folder for the models.
    pub out_dir: PathBuf,
}

impl SweepConfig {
    /// Σ ε over the private runs (what the ledger can at most be charged).
    pub fn planned_total(&self) -> f64 {
        self.methods.len() as f64
            * self.repeats.max(1) as f64
            * self.epsilons.iter().filter(|e| e.is_finite()).sum::<f64>()
    }
}

/// A score a failed point does not have: written as `null`, read back as NaN.
pub(crate) fn nan_from_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    use serde::Deserialize as _;
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// One run's headline scores.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SweepPoint {
    pub method: String,
    /// The ε asked for (`None`: ∞, not private).
    pub epsilon: Option<f64>,
    pub epsilon_spent: Option<f64>,
    pub repeat: usize,
    /// Mean over the classifiers, trained on synthetic rows and tested on real ones (for
    /// images: the MLP's accuracy on the real test digits).
    pub tstr_accuracy: Option<f64>,
    pub tstr_auroc: Option<f64>,
    /// Mean 1-way total-variation distance (0 = the same marginals).
    #[serde(deserialize_with = "nan_from_null")]
    pub tv_1way: f64,
    /// The 2-way PCA Wasserstein score (1 = the clouds coincide).
    #[serde(deserialize_with = "nan_from_null")]
    pub pca_score: f64,
    pub seconds: f64,
    pub model: PathBuf,
    /// Why this point has no scores: its run or its scoring failed (the sweep goes on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// The run's settings (for opening its results and auditing it in the window).
    #[serde(skip)]
    pub config: Option<Box<RunConfig>>,
}

impl SweepPoint {
    /// ε spent, TSTR accuracy, TSTR AUROC, 1-way TV and PCA score, in the tables' order;
    /// a score a run does not have (or that is not finite) is `None`.
    pub fn scores(&self) -> [Option<f64>; 5] {
        [
            self.epsilon_spent,
            self.tstr_accuracy,
            self.tstr_auroc,
            Some(self.tv_1way),
            Some(self.pca_score),
        ]
        .map(|v| v.filter(|x| x.is_finite()))
    }
}

impl SweepPoint {
    /// The point of a run that failed: marked with why, scored nothing; the sweep goes on.
    pub(super) fn failed(run: &RunConfig, asked: Option<f64>, repeat: usize, e: &JobError) -> Self {
        Self {
            method: run.method.clone(),
            epsilon: asked,
            epsilon_spent: None,
            repeat,
            tstr_accuracy: None,
            tstr_auroc: None,
            tv_1way: f64::NAN,
            pca_score: f64::NAN,
            seconds: 0.0,
            model: run.out.clone(),
            failed: Some(e.to_string()),
            config: Some(Box::new(run.clone())),
        }
    }
}

/// A sweep's table, with the reference lines.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SweepReport {
    pub data: String,
    pub delta: f64,
    pub label: Option<String>,
    pub points: Vec<SweepPoint>,
    /// Classifiers trained on the real rows (the ceiling).
    pub real_accuracy: Option<f64>,
    pub real_auroc: Option<f64>,
    /// Always guessing the majority class (the floor).
    pub majority_accuracy: Option<f64>,
    pub charged: bool,
    pub planned_total: f64,
}

pub(super) fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = xs.filter(|x| x.is_finite()).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}
