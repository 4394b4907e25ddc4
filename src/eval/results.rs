//! The shapes of the evaluation's findings: what each metric returns and the report that
//! gathers them. Apart from the suite that computes them ([`super::report`]) so that each
//! metric's file depends on these shapes only, never on the suite that calls it.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::data::schema::{Kind, Schema};

use super::models::Classifier;
use super::stats;

/// What to evaluate and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// The column the train-on-synthetic / test-on-real table predicts.
    pub label: Option<String>,
    pub seed: u64,
    /// Rows each model of dimension-wise prediction trains on (a seeded subsample).
    pub dimwise_rows: usize,
    /// Repeats of the 100-point Wasserstein protocol.
    pub wasserstein_repeats: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            label: None,
            seed: 0,
            dimwise_rows: 5_000,
            wasserstein_repeats: 100,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sizes {
    pub real_train: usize,
    pub real_test: usize,
    pub synthetic: usize,
    pub encoded_width: usize,
}

/// One exact value of a number column: the share of rows holding it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExactShare {
    pub value: String,
    pub real: f64,
    pub synthetic: f64,
}

/// A number column's commonest exact values and its precision, real against synthetic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExactValues {
    pub column: String,
    pub values: Vec<ExactShare>,
    /// The most decimals a value of the column is written with (real rows / synthetic).
    pub real_decimals: u32,
    pub synthetic_decimals: u32,
}

/// The share of rows breaking one rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleShare {
    pub rule: String,
    pub real: f64,
    pub synthetic: f64,
    /// The share of rows where the rule's condition holds, real and synthetic (a rule
    /// kept by dropping a group shows here: "no" in 43 % of real rows, 0 % of synthetic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<(f64, f64)>,
    /// The share of rows where its consequence holds, real and synthetic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub then: Option<(f64, f64)>,
}

/// The first-look section of a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct FirstLook {
    pub exact: Vec<ExactValues>,
    pub rules: Vec<RuleShare>,
    /// The columns of the rows shown.
    pub header: Vec<String>,
    /// Random real rows (local only) and random synthetic rows, as text.
    pub real_rows: Vec<Vec<String>>,
    pub synthetic_rows: Vec<Vec<String>>,
    /// The worst problem found, in a plain sentence (`None`: nothing stands out).
    pub worst: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub dpsynth_version: String,
    pub sizes: Sizes,
    /// The schema the tables were encoded with (widened for evaluation).
    pub schema: Schema,
    /// (column, count) of synthetic values outside the real categories or bounds, and of
    /// blanks in columns the real rows never leave blank.
    pub synthetic_out_of_domain: Vec<(String, usize)>,
    /// Real columns the synthetic table lacks (scored as all missing).
    pub not_synthesized: Vec<String>,
    pub probability: Vec<ColumnProbability>,
    pub prediction: DimwisePrediction,
    pub histograms: Vec<Histogram>,
    pub three_way: ThreeWay,
    pub pca: PcaReport,
    pub whole_data_wasserstein: WassersteinScore,
    pub tstr: Option<Tstr>,
    pub pmse: PmseReport,
    pub mmd: MmdReport,
    pub privacy_risk: PrivacyRisk,
    /// What a person sees in the rows first: exact values, precision, rules, rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_look: Option<FirstLook>,
    /// Seconds per section.
    pub timings: Vec<(String, f64)>,
}

impl Report {
    /// Whether the report holds real rows verbatim (the first look's sample).
    pub fn has_real_rows(&self) -> bool {
        self.first_look
            .as_ref()
            .is_some_and(|l| !l.real_rows.is_empty())
    }

    /// The report to hand on or keep on disk: the same figures without the real rows the
    /// window shows beside the synthetic ones (they stay in the window that evaluated).
    pub fn without_real_rows(&self) -> Report {
        let mut r = self.clone();
        if let Some(l) = r.first_look.as_mut() {
            l.real_rows.clear();
        }
        r
    }
}

/// Share of the second category (the "1") of a binary column.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ColumnProbability {
    pub column: String,
    pub value: String,
    /// Over real-test (the reference code's held-out split).
    pub real: f64,
    pub synthetic: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PredictionPoint {
    pub column: String,
    pub kind: Kind,
    pub model: String,
    /// "auroc", "f1_micro", "f1_macro" or "r2".
    pub metric: String,
    /// Trained on real-train, scored on real-test.
    pub real: Option<f64>,
    /// Trained on synthetic, scored on real-test.
    pub synthetic: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DimwisePrediction {
    pub train_rows: usize,
    pub test_rows: usize,
    pub points: Vec<PredictionPoint>,
    /// Mean perpendicular distance of the points from y = x (|real − synthetic| / √2).
    pub mean_distance_from_diagonal: f64,
    /// Mean |real − synthetic| (the reference code's figure).
    pub mean_abs_difference: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Histogram {
    pub column: String,
    pub kind: Kind,
    /// Category names, or bin ranges of continuous columns.
    pub bins: Vec<String>,
    /// Shares over real-train and synthetic (each sums to 1).
    pub real: Vec<f64>,
    pub synthetic: Vec<f64>,
    pub tvd: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreeWay {
    /// NIST binning: 100 bins per continuous column over the real range.
    pub triples: usize,
    pub mean_tv: f64,
    pub max_tv: f64,
    pub worst_triple: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WassersteinScore {
    /// 1 − W1 / (normaliser · D²) (paper eq. 3–4 with the reference code's exact W1).
    pub score: f64,
    /// Mean exact W1 over the repeats.
    pub w1_mean: f64,
    pub w1_std: f64,
    pub points_per_side: usize,
    pub repeats: usize,
    /// D² = the largest squared distance between two encoded rows.
    pub max_sq_distance: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PcaReport {
    pub explained_variance_ratio: Vec<f64>,
    /// Up to 2,000 projected points each (for plots).
    pub real_points: Vec<[f64; 2]>,
    pub synthetic_points: Vec<[f64; 2]>,
    /// Eq. 4: normalised by √v, v = the two components' explained variance ratio.
    pub wasserstein: WassersteinScore,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Scores {
    pub accuracy: f64,
    /// On predicted probabilities (binary: of the positive class; multiclass: macro
    /// one-vs-rest).
    pub auroc: Option<f64>,
    /// Average precision (no interpolation), same conventions.
    pub auprc: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TstrRow {
    pub model: Classifier,
    pub label: String,
    pub train_rows: usize,
    /// Seconds to fit and score both models.
    pub seconds: f64,
    pub real: Result<Scores, String>,
    pub synthetic: Result<Scores, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tstr {
    pub label: String,
    pub classes: Vec<String>,
    pub test_rows: usize,
    pub rows: Vec<TstrRow>,
    /// PATE-GAN eq. 8 over the models' AUROC (and accuracy).
    pub agreed_ranking_auroc: Option<f64>,
    pub agreed_ranking_accuracy: Option<f64>,
    /// Share of the majority class in real-test (what always guessing it scores).
    pub majority_accuracy: f64,
}

impl Tstr {
    /// The rows whose classifier works on this label when trained on real rows: its
    /// real-trained accuracy is at least that of always guessing the commonest class (less
    /// a point). A model that falls below guessing on real rows (Gaussian naive Bayes on
    /// skewed, correlated one-hot features scores 0.31 against a 0.76 floor) measures its
    /// own misfit, not the data, and averaging it in drags the real-data ceiling below
    /// what the synthetic data reaches. Returns the rows kept and the names left out; all
    /// rows when none would be kept.
    pub fn working_rows(&self) -> (Vec<&TstrRow>, Vec<&'static str>) {
        let works = |r: &&TstrRow| {
            r.real
                .as_ref()
                .is_ok_and(|s| s.accuracy >= self.majority_accuracy - 0.01)
        };
        let kept: Vec<&TstrRow> = self.rows.iter().filter(works).collect();
        if kept.is_empty() {
            return (self.rows.iter().collect(), Vec::new());
        }
        let left = self
            .rows
            .iter()
            .filter(|r| !works(r))
            .map(|r| r.model.label())
            .collect();
        (kept, left)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PmseReport {
    pub rows_per_side: usize,
    pub model: String,
    #[serde(flatten)]
    pub fit: stats::Pmse,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MmdReport {
    pub rows_per_side: usize,
    /// Median heuristic on the encoded (public-scale) rows.
    pub bandwidth: f64,
    pub mmd2_biased: f64,
    pub mmd2_unbiased: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PrivacyRisk {
    pub rows: usize,
    /// Median distance from a synthetic row to its closest real-train row.
    pub dcr_synthetic_median: f64,
    /// The same for real-test rows (the baseline: unseen people).
    pub dcr_test_median: f64,
    /// 5th percentiles of both.
    pub dcr_synthetic_p5: f64,
    pub dcr_test_p5: f64,
    /// Synthetic rows identical to a real-train row.
    pub exact_copies: usize,
    /// AUROC of "closer to a synthetic row ⇒ member", train rows (members) vs test rows
    /// (non-members); 0.5 = no signal.
    pub membership_auc: Option<f64>,
}

/// Why an evaluation could not be made, in words a person can act on.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EvalError {
    #[error("{table} has {rows} rows; evaluation needs at least 2")]
    TooFewRows { table: &'static str, rows: usize },
    #[error(
        "--label {label}: not a binary or categorical column of the real data (columns: {columns})"
    )]
    BadLabel { label: String, columns: String },
    /// The three tables do not fit one schema (a column missing, a kind that differs).
    #[error("{0}")]
    Tables(String),
    /// One metric failed (a model would not fit, the data are degenerate).
    #[error("{section}: {message}")]
    Metric {
        section: &'static str,
        message: String,
    },
    /// Images could not be scored.
    #[error("images: {0}")]
    Images(String),
}

impl EvalError {
    pub(crate) fn metric(section: &'static str) -> impl Fn(String) -> Self {
        move |message| Self::Metric { section, message }
    }
}

pub(crate) fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}
