//! The full evaluation: every metric of DESIGN.md §4 in one serde report, each with the
//! sizes of its inputs and the model used.

use std::time::Instant;

use rand::SeedableRng;
use rand::seq::index::sample;
use rayon::prelude::*;
use serde::Serialize;

use crate::data::encode::SpanKind;
use crate::data::schema::{Kind, Schema};
use crate::data::table::Table;

use super::frame::{Frame, Target};
use super::models::{Classifier, Regressor, Xy};
use super::pca::Pca;
use super::{scores, stats, transport};

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

#[derive(Debug, Clone, Serialize)]
pub struct Sizes {
    pub real_train: usize,
    pub real_test: usize,
    pub synthetic: usize,
    pub encoded_width: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub dpsynth_version: String,
    pub sizes: Sizes,
    /// The schema the tables were encoded with (widened for evaluation).
    pub schema: Schema,
    /// (column, count) of synthetic values outside the real categories or bounds.
    pub synthetic_out_of_domain: Vec<(String, usize)>,
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
    /// Seconds per section.
    pub timings: Vec<(String, f64)>,
}

/// Share of the second category (the "1") of a binary column.
#[derive(Debug, Clone, Serialize)]
pub struct ColumnProbability {
    pub column: String,
    pub value: String,
    /// Over real-test (the reference code's held-out split).
    pub real: f64,
    pub synthetic: f64,
}

#[derive(Debug, Clone, Serialize)]
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

#[derive(Debug, Clone, Serialize)]
pub struct DimwisePrediction {
    pub train_rows: usize,
    pub test_rows: usize,
    pub points: Vec<PredictionPoint>,
    /// Mean perpendicular distance of the points from y = x (|real − synthetic| / √2).
    pub mean_distance_from_diagonal: f64,
    /// Mean |real − synthetic| (the reference code's figure).
    pub mean_abs_difference: f64,
}

#[derive(Debug, Clone, Serialize)]
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

#[derive(Debug, Clone, Serialize)]
pub struct ThreeWay {
    /// NIST binning: 100 bins per continuous column over the real range.
    pub triples: usize,
    pub mean_tv: f64,
    pub max_tv: f64,
    pub worst_triple: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
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

#[derive(Debug, Clone, Serialize)]
pub struct PcaReport {
    pub explained_variance_ratio: Vec<f64>,
    /// Up to 2,000 projected points each (for plots).
    pub real_points: Vec<[f64; 2]>,
    pub synthetic_points: Vec<[f64; 2]>,
    /// Eq. 4: normalised by √v, v = the two components' explained variance ratio.
    pub wasserstein: WassersteinScore,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Scores {
    pub accuracy: f64,
    /// On predicted probabilities (binary: of the positive class; multiclass: macro
    /// one-vs-rest).
    pub auroc: Option<f64>,
    /// Average precision (no interpolation), same conventions.
    pub auprc: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TstrRow {
    pub model: Classifier,
    pub label: String,
    pub train_rows: usize,
    /// Seconds to fit and score both models.
    pub seconds: f64,
    pub real: Result<Scores, String>,
    pub synthetic: Result<Scores, String>,
}

#[derive(Debug, Clone, Serialize)]
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

#[derive(Debug, Clone, Serialize)]
pub struct PmseReport {
    pub rows_per_side: usize,
    pub model: String,
    #[serde(flatten)]
    pub fit: stats::Pmse,
}

#[derive(Debug, Clone, Serialize)]
pub struct MmdReport {
    pub rows_per_side: usize,
    /// Median heuristic on the encoded (public-scale) rows.
    pub bandwidth: f64,
    pub mmd2_biased: f64,
    pub mmd2_unbiased: f64,
}

#[derive(Debug, Clone, Serialize)]
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

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// Loads nothing: takes decoded tables and returns the report. `progress` receives a line
/// per section.
pub fn evaluate(
    schema: Option<Schema>,
    real_train: &Table,
    real_test: &Table,
    synthetic: &Table,
    opts: &Options,
    progress: &mut dyn FnMut(&str),
) -> Result<Report, String> {
    for (t, what) in [
        (real_train, "real-train"),
        (real_test, "real-test"),
        (synthetic, "synthetic"),
    ] {
        if t.n_rows < 2 {
            return Err(format!(
                "{what} has {} rows; evaluation needs at least 2",
                t.n_rows
            ));
        }
    }
    let mut timings = Vec::new();
    let t0 = Instant::now();
    progress("encoding the three tables");
    let f = Frame::new(schema, real_train, real_test, synthetic)?;
    if let Some(l) = &opts.label {
        let ok = f
            .schema
            .column(l)
            .is_some_and(|c| matches!(c.kind, Kind::Binary | Kind::Categorical));
        if !ok {
            return Err(format!(
                "--label {l}: not a binary or categorical column of the real data (columns: {})",
                f.schema
                    .columns
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    timings.push(("encode".into(), secs(t0)));

    let t = Instant::now();
    progress("dimension-wise probability and 1-way histograms");
    let probability = probability(&f);
    let histograms = histograms(&f, real_train, synthetic);
    let three_way = three_way(&f, opts.seed);
    timings.push(("marginals".into(), secs(t)));

    let t = Instant::now();
    progress("dimension-wise prediction (2 models per column, trained twice)");
    let prediction = dimwise(&f, opts)?;
    timings.push(("dimension-wise prediction".into(), secs(t)));

    let t = Instant::now();
    progress("PCA and Wasserstein scores");
    let (pca, whole) = pca_and_wasserstein(&f, opts)?;
    timings.push(("pca and wasserstein".into(), secs(t)));

    let t = Instant::now();
    let tstr = match &opts.label {
        Some(l) => {
            progress(&format!(
                "train on synthetic, test on real: 8 classifiers predicting {l}"
            ));
            Some(tstr(&f, l, opts.seed, progress)?)
        }
        None => None,
    };
    timings.push(("tstr".into(), secs(t)));

    let t = Instant::now();
    progress("pMSE, MMD and privacy risk");
    let (pmse, mmd) = pmse_mmd(&f, opts.seed);
    let privacy_risk = privacy_risk(&f, opts.seed);
    timings.push(("pmse, mmd, privacy".into(), secs(t)));
    timings.push(("total".into(), secs(t0)));

    Ok(Report {
        dpsynth_version: env!("CARGO_PKG_VERSION").into(),
        sizes: Sizes {
            real_train: f.train.n_rows,
            real_test: f.test.n_rows,
            synthetic: f.synthetic.n_rows,
            encoded_width: f.encoding.width,
        },
        schema: f.schema.clone(),
        synthetic_out_of_domain: f.synthetic_out_of_domain.clone(),
        probability,
        prediction,
        histograms,
        three_way,
        pca,
        whole_data_wasserstein: whole,
        tstr,
        pmse,
        mmd,
        privacy_risk,
        timings,
    })
}

fn probability(f: &Frame) -> Vec<ColumnProbability> {
    f.encoding
        .spans
        .iter()
        .filter(|s| s.kind == SpanKind::Binary)
        .map(|s| {
            let share = |d: &crate::data::encode::EncodedData| {
                (0..d.n_rows).filter(|&r| d.row(r)[s.start] > 0.5).count() as f64 / d.n_rows as f64
            };
            let spec = &f.schema.columns[s.column];
            ColumnProbability {
                column: spec.name.clone(),
                value: spec
                    .categories()
                    .and_then(|c| c.get(1))
                    .cloned()
                    .unwrap_or_default(),
                real: share(&f.test),
                synthetic: share(&f.synthetic),
            }
        })
        .collect()
}

/// Bin index of each row for column `ci`: categories (missing last) or 20 equal-width
/// bins over the real range (missing last) for continuous columns; with the bin labels.
fn bins_of(f: &Frame, ci: usize, t: &Table, edges: usize) -> (Vec<usize>, Vec<String>) {
    let spec = &f.schema.columns[ci];
    let col = t.column(&spec.name);
    let n = t.n_rows;
    match spec.kind {
        Kind::Continuous => {
            let (lo, hi) = spec.bounds().unwrap_or((0.0, 1.0));
            let w = (hi - lo) / edges as f64;
            let mut labels: Vec<String> = (0..edges)
                .map(|b| crate::util::fmt::number(lo + w * b as f64))
                .collect();
            labels.push("missing".into());
            let idx = (0..n)
                .map(|r| {
                    match col
                        .and_then(|c| c.text(r))
                        .and_then(|s| crate::util::fmt::parse_number(&s))
                    {
                        Some(x) => (((x - lo) / w).floor().max(0.0) as usize).min(edges - 1),
                        None => edges,
                    }
                })
                .collect();
            (idx, labels)
        }
        _ => {
            let cats = spec.categories().unwrap_or(&[]).to_vec();
            let mut labels = cats.clone();
            labels.push("missing / other".into());
            let idx = (0..n)
                .map(|r| {
                    col.and_then(|c| c.text(r))
                        .and_then(|s| cats.iter().position(|c| *c == s))
                        .unwrap_or(cats.len())
                })
                .collect();
            (idx, labels)
        }
    }
}

fn histograms(f: &Frame, train: &Table, syn: &Table) -> Vec<Histogram> {
    f.columns()
        .into_iter()
        .map(|ci| {
            let (ri, labels) = bins_of(f, ci, train, 20);
            let (si, _) = bins_of(f, ci, syn, 20);
            let share = |idx: &[usize]| {
                let mut h = vec![0.0; labels.len()];
                idx.iter().for_each(|&b| h[b] += 1.0 / idx.len() as f64);
                h
            };
            let (mut real, mut synthetic, mut bins) = (share(&ri), share(&si), labels.clone());
            // Drop the trailing missing bin when neither side has any.
            if real.last() == Some(&0.0) && synthetic.last() == Some(&0.0) {
                real.pop();
                synthetic.pop();
                bins.pop();
            }
            let tvd = 0.5
                * real
                    .iter()
                    .zip(&synthetic)
                    .map(|(a, b)| (a - b).abs())
                    .sum::<f64>();
            Histogram {
                column: f.schema.columns[ci].name.clone(),
                kind: f.schema.columns[ci].kind,
                bins,
                real,
                synthetic,
                tvd,
            }
        })
        .collect()
}

/// NIST 3-way marginals over up to 200 random triples of columns (all triples when fewer).
fn three_way(f: &Frame, seed: u64) -> ThreeWay {
    let cols = f.columns();
    // Per column, a NIST bin per row: continuous by value over the real-train range,
    // categorical by category index.
    let bins = |d: &crate::data::encode::EncodedData,
                span: &crate::data::encode::Span,
                lo: f64,
                hi: f64|
     -> Vec<u8> {
        (0..d.n_rows)
            .map(|r| {
                let row = d.row(r);
                match span.kind {
                    SpanKind::Continuous => stats::nist_bin(f64::from(row[span.start]), lo, hi),
                    SpanKind::Binary => u8::from(row[span.start] > 0.5),
                    _ => {
                        super::frame::argmax(&row[span.start..span.start + span.len]).min(255) as u8
                    }
                }
            })
            .collect()
    };
    let mut rb = Vec::new();
    let mut sb = Vec::new();
    for &ci in &cols {
        // Kept columns come from the spans, so the else branch only keeps indices aligned.
        let Some(span) = f.encoding.spans.iter().find(|s| s.column == ci) else {
            rb.push(vec![0; f.train.n_rows]);
            sb.push(vec![0; f.synthetic.n_rows]);
            continue;
        };
        let (lo, hi) = if span.kind == SpanKind::Continuous {
            let v: Vec<f64> = (0..f.train.n_rows)
                .map(|r| f64::from(f.train.row(r)[span.start]))
                .collect();
            (
                v.iter().copied().fold(f64::INFINITY, f64::min),
                v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            )
        } else {
            (0.0, 1.0)
        };
        rb.push(bins(&f.train, span, lo, hi));
        sb.push(bins(&f.synthetic, span, lo, hi));
    }
    let mut triples = Vec::new();
    let m = cols.len();
    for a in 0..m {
        for b in a + 1..m {
            for c in b + 1..m {
                triples.push([a, b, c]);
            }
        }
    }
    if triples.len() > 200 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let keep = sample(&mut rng, triples.len(), 200).into_vec();
        triples = keep.into_iter().map(|i| triples[i]).collect();
    }
    let tvs: Vec<f64> = triples
        .par_iter()
        .map(|t| {
            0.5 * stats::three_way_l1(
                [&rb[t[0]], &rb[t[1]], &rb[t[2]]],
                [&sb[t[0]], &sb[t[1]], &sb[t[2]]],
            )
        })
        .collect();
    let (mut worst, mut max_tv) = (vec![], 0.0);
    for (t, &tv) in triples.iter().zip(&tvs) {
        if tv >= max_tv {
            max_tv = tv;
            worst = t
                .iter()
                .map(|&i| f.schema.columns[cols[i]].name.clone())
                .collect();
        }
    }
    ThreeWay {
        triples: tvs.len(),
        mean_tv: if tvs.is_empty() {
            f64::NAN
        } else {
            tvs.iter().sum::<f64>() / tvs.len() as f64
        },
        max_tv,
        worst_triple: worst,
    }
}

fn class_scores(y: &[u32], proba: &[f64], k: usize) -> Scores {
    let m = y.len();
    let pred: Vec<u32> = (0..m)
        .map(|r| {
            let row = &proba[r * k..(r + 1) * k];
            row.iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map_or(0, |(i, _)| i as u32)
        })
        .collect();
    let accuracy = scores::accuracy(y, &pred);
    let (auroc, auprc) = if k == 2 {
        let t: Vec<bool> = y.iter().map(|&v| v == 1).collect();
        let s: Vec<f64> = (0..m).map(|r| proba[r * k + 1]).collect();
        (
            scores::roc_auc(&t, &s),
            Some(scores::average_precision(&t, &s)),
        )
    } else {
        // Macro one-vs-rest over the classes present in the test labels.
        let (mut aucs, mut aps) = (vec![], vec![]);
        for c in 0..k {
            let t: Vec<bool> = y.iter().map(|&v| v as usize == c).collect();
            if !t.iter().any(|&b| b) {
                continue;
            }
            let s: Vec<f64> = (0..m).map(|r| proba[r * k + c]).collect();
            if let Some(a) = scores::roc_auc(&t, &s) {
                aucs.push(a);
            }
            aps.push(scores::average_precision(&t, &s));
        }
        let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        (mean(&aucs), mean(&aps))
    };
    Scores {
        accuracy,
        auroc,
        auprc,
    }
}

fn dimwise(f: &Frame, opts: &Options) -> Result<DimwisePrediction, String> {
    let cols = f.columns();
    let jobs: Vec<(usize, bool)> = cols.iter().flat_map(|&c| [(c, false), (c, true)]).collect();
    // Each (column, source) pair trains its two models; pairs run in parallel.
    let results: Vec<Vec<(String, String, Option<f64>)>> = jobs
        .par_iter()
        .map(|&(ci, synthetic)| -> Result<_, String> {
            let src = if synthetic { &f.synthetic } else { &f.train };
            let (x, p, target) = f.xy(ci, src);
            let (tx, _, ttarget) = f.xy(ci, &f.test);
            let seed = opts.seed ^ (ci as u64) << 8;
            Ok(match (target, ttarget) {
                (Target::Classes { y, k }, Target::Classes { y: ty, .. }) => {
                    let train = Xy {
                        x,
                        n: src.n_rows,
                        p,
                        y,
                    }
                    .subsample(opts.dimwise_rows, seed);
                    let mut out = vec![];
                    for (name, model) in [
                        ("logistic regression", 0usize),
                        ("random forest (10 trees)", 1),
                    ] {
                        let proba = if model == 0 {
                            Classifier::LogisticRegression.fit_proba(&train, &tx, k, seed)
                        } else {
                            super::models::forest_proba(&train, &tx, k, 10, seed)
                        };
                        let proba = match proba {
                            Ok(p) => p,
                            Err(_) => {
                                out.push((name.to_string(), "failed".to_string(), None));
                                continue;
                            }
                        };
                        if k == 2 {
                            let t: Vec<bool> = ty.iter().map(|&v| v == 1).collect();
                            let s: Vec<f64> = (0..ty.len()).map(|r| proba[r * 2 + 1]).collect();
                            out.push((name.into(), "auroc".into(), scores::roc_auc(&t, &s)));
                        } else {
                            let pred: Vec<usize> = (0..ty.len())
                                .map(|r| {
                                    proba[r * k..(r + 1) * k]
                                        .iter()
                                        .enumerate()
                                        .max_by(|a, b| a.1.total_cmp(b.1))
                                        .map_or(0, |(i, _)| i)
                                })
                                .collect();
                            let truth: Vec<usize> = ty.iter().map(|&v| v as usize).collect();
                            let mut labels: Vec<usize> =
                                truth.iter().chain(&pred).copied().collect();
                            labels.sort_unstable();
                            labels.dedup();
                            let f1 = scores::f1_scores(
                                &truth,
                                &pred,
                                &labels,
                                scores::ZeroDivision::Zero,
                            );
                            out.push((name.into(), "f1_micro".into(), Some(f1.micro)));
                            out.push((name.into(), "f1_macro".into(), Some(f1.macro_)));
                        }
                    }
                    out
                }
                (Target::Value(y), Target::Value(ty)) => {
                    let idx = super::models::shuffled(y.len(), seed);
                    let m = opts.dimwise_rows.min(y.len());
                    let mut xs = Vec::with_capacity(m * p);
                    let mut ys = Vec::with_capacity(m);
                    for &i in &idx[..m] {
                        xs.extend_from_slice(&x[i * p..(i + 1) * p]);
                        ys.push(y[i]);
                    }
                    [
                        ("linear regression", Regressor::Linear),
                        ("lasso (alpha 0.001)", Regressor::Lasso),
                    ]
                    .into_iter()
                    .map(|(name, r)| {
                        let s = match r.fit_predict(&xs, m, p, &ys, &tx) {
                            Ok(pred) => Some(scores::r2(&ty, &pred)),
                            Err(e) => {
                                eprintln!("dimension-wise prediction of column {ci}: {e}");
                                None
                            }
                        };
                        (name.to_string(), "r2".to_string(), s)
                    })
                    .collect()
                }
                _ => vec![],
            })
        })
        .collect::<Result<_, String>>()?;
    let mut points = Vec::new();
    for (i, &ci) in cols.iter().enumerate() {
        let (real, syn) = (&results[2 * i], &results[2 * i + 1]);
        for (r, s) in real.iter().zip(syn) {
            points.push(PredictionPoint {
                column: f.schema.columns[ci].name.clone(),
                kind: f.schema.columns[ci].kind,
                model: r.0.clone(),
                metric: r.1.clone(),
                real: r.2,
                synthetic: s.2,
            });
        }
    }
    let diffs: Vec<f64> = points
        .iter()
        .filter_map(|p| Some((p.real? - p.synthetic?).abs()))
        .collect();
    let mean = |v: &[f64]| {
        if v.is_empty() {
            f64::NAN
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    Ok(DimwisePrediction {
        train_rows: opts.dimwise_rows.min(f.train.n_rows),
        test_rows: f.test.n_rows,
        mean_abs_difference: mean(&diffs),
        mean_distance_from_diagonal: mean(&diffs) / std::f64::consts::SQRT_2,
        points,
    })
}

/// The largest squared distance between two encoded rows: 2 per one-hot block (two
/// different categories), 1 per other column.
fn max_sq_distance(f: &Frame) -> f64 {
    f.encoding
        .spans
        .iter()
        .map(|s| {
            if s.kind == SpanKind::Categorical && s.len > 1 {
                2.0
            } else {
                s.len as f64
            }
        })
        .sum()
}

fn w1_protocol(
    real: &[Vec<f64>],
    syn: &[Vec<f64>],
    repeats: usize,
    seed: u64,
) -> (f64, f64, usize) {
    let k = 100.min(real.len()).min(syn.len());
    let w: Vec<f64> = (0..repeats)
        .into_par_iter()
        .filter_map(|i| {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed.wrapping_add(i as u64));
            let a: Vec<Vec<f64>> = sample(&mut rng, real.len(), k)
                .iter()
                .map(|j| real[j].clone())
                .collect();
            let b: Vec<Vec<f64>> = sample(&mut rng, syn.len(), k)
                .iter()
                .map(|j| syn[j].clone())
                .collect();
            transport::wasserstein_exact(&a, &b, 1)
        })
        .collect();
    let n = w.len().max(1) as f64;
    let mean = w.iter().sum::<f64>() / n;
    let std = (w.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
    (mean, std, k)
}

fn pca_and_wasserstein(f: &Frame, opts: &Options) -> Result<(PcaReport, WassersteinScore), String> {
    let d = f.encoding.width;
    let real = Frame::rows(&f.train);
    let syn = Frame::rows(&f.synthetic);
    let flat: Vec<f64> = real.iter().flatten().copied().collect();
    let pca = Pca::fit(&flat, real.len(), d, 2)?;
    let proj =
        |rows: &[Vec<f64>]| -> Vec<Vec<f64>> { rows.par_iter().map(|r| pca.project(r)).collect() };
    let (rp, sp) = (proj(&real), proj(&syn));
    let d2 = max_sq_distance(f);
    let v: f64 = pca.explained_variance_ratio.iter().sum();
    let (m, s, k) = w1_protocol(&rp, &sp, opts.wasserstein_repeats, opts.seed);
    let pca_w = WassersteinScore {
        score: 1.0 - m / (v.sqrt() * d2),
        w1_mean: m,
        w1_std: s,
        points_per_side: k,
        repeats: opts.wasserstein_repeats,
        max_sq_distance: d2,
    };
    let (m, s, k) = w1_protocol(&real, &syn, opts.wasserstein_repeats, opts.seed + 7);
    let whole = WassersteinScore {
        score: 1.0 - m / d2,
        w1_mean: m,
        w1_std: s,
        points_per_side: k,
        repeats: opts.wasserstein_repeats,
        max_sq_distance: d2,
    };
    let pick = |pts: &[Vec<f64>], seed: u64| -> Vec<[f64; 2]> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        sample(&mut rng, pts.len(), 2000.min(pts.len()))
            .iter()
            .map(|i| [pts[i][0], pts[i].get(1).copied().unwrap_or(0.0)])
            .collect()
    };
    Ok((
        PcaReport {
            explained_variance_ratio: pca.explained_variance_ratio.clone(),
            real_points: pick(&rp, opts.seed),
            synthetic_points: pick(&sp, opts.seed + 1),
            wasserstein: pca_w,
        },
        whole,
    ))
}

fn tstr(f: &Frame, label: &str, seed: u64, progress: &mut dyn FnMut(&str)) -> Result<Tstr, String> {
    let ci = f
        .schema
        .columns
        .iter()
        .position(|c| c.name == label)
        .ok_or_else(|| format!("--label {label}: no such column"))?;
    let (train, k) = f.classes_xy(ci, &f.train).ok_or("label is continuous")?;
    let (syn, _) = f
        .classes_xy(ci, &f.synthetic)
        .ok_or("label is continuous")?;
    let (test, _) = f.classes_xy(ci, &f.test).ok_or("label is continuous")?;
    let mut classes: Vec<String> = f.schema.columns[ci].categories().unwrap_or(&[]).to_vec();
    if classes.len() < k {
        classes.push("missing / other".into());
    }
    let majority = {
        let mut counts = vec![0usize; k];
        test.y.iter().for_each(|&c| counts[c as usize] += 1);
        counts.iter().copied().max().unwrap_or(0) as f64 / test.n.max(1) as f64
    };
    // Models run one after another; each uses every core inside.
    let rows: Vec<TstrRow> = Classifier::ALL
        .iter()
        .map(|&model| {
            let t = Instant::now();
            let fit = |d: &Xy| {
                model
                    .fit_proba(d, &test.x, k, seed)
                    .map(|p| class_scores(&test.y, &p, k))
            };
            // The two fits are independent: on two cores the single-threaded smartcore
            // models finish in half the time.
            let (real, synthetic) = rayon::join(|| fit(&train), || fit(&syn));
            progress(&format!("  {}: {:.1} s", model.label(), secs(t)));
            TstrRow {
                model,
                label: model.label().into(),
                train_rows: model.max_train_rows().min(syn.n),
                seconds: secs(t),
                real,
                synthetic,
            }
        })
        .collect();
    let pairs = |get: fn(&Scores) -> Option<f64>| -> Option<f64> {
        let (mut a, mut c) = (vec![], vec![]);
        for r in &rows {
            if let (Ok(x), Ok(y)) = (&r.real, &r.synthetic) {
                if let (Some(x), Some(y)) = (get(x), get(y)) {
                    a.push(x);
                    c.push(y);
                }
            }
        }
        stats::agreed_ranking(&a, &c)
    };
    Ok(Tstr {
        label: label.into(),
        classes,
        test_rows: test.n,
        agreed_ranking_auroc: pairs(|s| s.auroc),
        agreed_ranking_accuracy: pairs(|s| Some(s.accuracy)),
        majority_accuracy: majority,
        rows,
    })
}

fn subsample_rows(rows: &[Vec<f64>], m: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    sample(&mut rng, rows.len(), m.min(rows.len()))
        .iter()
        .map(|i| rows[i].clone())
        .collect()
}

fn pmse_mmd(f: &Frame, seed: u64) -> (PmseReport, MmdReport) {
    // Continuous columns and one-hot blocks minus one slot each (the intercept is the
    // dropped slot), so the unpenalised fit is identifiable.
    let mut cols = Vec::new();
    for s in &f.encoding.spans {
        let n = if s.kind == SpanKind::Categorical {
            s.len.saturating_sub(1)
        } else {
            s.len
        };
        cols.extend(s.start..s.start + n);
    }
    let sel = |d: &crate::data::encode::EncodedData| -> Vec<Vec<f64>> {
        (0..d.n_rows)
            .map(|r| cols.iter().map(|&c| f64::from(d.row(r)[c])).collect())
            .collect()
    };
    let m = 3000.min(f.train.n_rows).min(f.synthetic.n_rows);
    let (real, syn) = (
        subsample_rows(&sel(&f.train), m, seed),
        subsample_rows(&sel(&f.synthetic), m, seed + 1),
    );
    let fit = stats::pmse(&real, &syn);
    let pm = PmseReport {
        rows_per_side: m,
        model: "logistic regression, unpenalised, main effects (Newton)".into(),
        fit,
    };
    let mm = 1000.min(f.train.n_rows).min(f.synthetic.n_rows);
    let (real, syn) = (
        subsample_rows(&Frame::rows(&f.train), mm, seed + 2),
        subsample_rows(&Frame::rows(&f.synthetic), mm, seed + 3),
    );
    let s = stats::median_heuristic(&real, &syn);
    let m2 = stats::mmd2(&real, &syn, s);
    (
        pm,
        MmdReport {
            rows_per_side: mm,
            bandwidth: s,
            mmd2_biased: m2.biased,
            mmd2_unbiased: m2.unbiased,
        },
    )
}

fn percentile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn privacy_risk(f: &Frame, seed: u64) -> PrivacyRisk {
    let m = 1000
        .min(f.synthetic.n_rows)
        .min(f.test.n_rows)
        .min(f.train.n_rows);
    let train = Frame::rows(&f.train);
    let syn = subsample_rows(&Frame::rows(&f.synthetic), m, seed + 4);
    let test = subsample_rows(&Frame::rows(&f.test), m, seed + 5);
    let mut ds: Vec<f64> = stats::closest(&syn, &train)
        .into_iter()
        .map(|d| d.0)
        .collect();
    let mut dt: Vec<f64> = stats::closest(&test, &train)
        .into_iter()
        .map(|d| d.0)
        .collect();
    let exact = ds.iter().filter(|&&d| d == 0.0).count();
    // Membership inference: members (train) vs non-members (test), score = −distance to
    // the closest synthetic row.
    let members = subsample_rows(&train, m / 2, seed + 6);
    let test = &test[..m / 2];
    let all_syn = Frame::rows(&f.synthetic);
    let dm = stats::closest(&members, &all_syn);
    let dn = stats::closest(test, &all_syn);
    let labels: Vec<bool> = dm
        .iter()
        .map(|_| true)
        .chain(dn.iter().map(|_| false))
        .collect();
    let score: Vec<f64> = dm.iter().chain(&dn).map(|d| -d.0).collect();
    PrivacyRisk {
        rows: m,
        dcr_synthetic_median: stats::median(&mut ds.clone()),
        dcr_test_median: stats::median(&mut dt.clone()),
        dcr_synthetic_p5: percentile(&mut ds, 0.05),
        dcr_test_p5: percentile(&mut dt, 0.05),
        exact_copies: exact,
        membership_auc: scores::roc_auc(&labels, &score),
    }
}
