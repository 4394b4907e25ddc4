//! Dimension-wise prediction: predict each column from the others, trained on real and
//! on synthetic rows, scored on real-test (AUROC, F1 or R²).

use rayon::prelude::*;

use super::frame::{Frame, Target};
use super::models::{Classifier, Regressor, Xy};
use super::results::*;
use super::scores;

pub(crate) fn class_scores(y: &[u32], proba: &[f64], k: usize) -> Scores {
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

pub(crate) fn dimwise(f: &Frame, opts: &Options) -> Result<DimwisePrediction, String> {
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
                    classification_scores(&train, &tx, &ty, k, seed)
                }
                (Target::Value(y), Target::Value(ty)) => {
                    regression_scores(&x, p, &y, &tx, &ty, ci, seed, opts.dimwise_rows)
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

/// One classifier target's scores: AUROC for two classes, micro and macro F1 otherwise,
/// for logistic regression and a 10-tree forest trained on `train`, tested on `tx`/`ty`.
fn classification_scores(
    train: &Xy,
    tx: &[f64],
    ty: &[u32],
    k: usize,
    seed: u64,
) -> Vec<(String, String, Option<f64>)> {
    let mut out = vec![];
    for (name, model) in [
        ("logistic regression", 0usize),
        ("random forest (10 trees)", 1),
    ] {
        let proba = if model == 0 {
            Classifier::LogisticRegression.fit_proba(train, tx, k, seed)
        } else {
            super::models::forest_proba(train, tx, k, 10, seed)
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
            let mut labels: Vec<usize> = truth.iter().chain(&pred).copied().collect();
            labels.sort_unstable();
            labels.dedup();
            let f1 = scores::f1_scores(&truth, &pred, &labels, scores::ZeroDivision::Zero);
            out.push((name.into(), "f1_micro".into(), Some(f1.micro)));
            out.push((name.into(), "f1_macro".into(), Some(f1.macro_)));
        }
    }
    out
}

/// One numeric target's R² for linear regression and lasso on up to `rows` shuffled rows.
#[allow(clippy::too_many_arguments)]
fn regression_scores(
    x: &[f64],
    p: usize,
    y: &[f64],
    tx: &[f64],
    ty: &[f64],
    ci: usize,
    seed: u64,
    rows: usize,
) -> Vec<(String, String, Option<f64>)> {
    let idx = super::xy::shuffled(y.len(), seed);
    let m = rows.min(y.len());
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
        let s = match r.fit_predict(&xs, m, p, &ys, tx) {
            Ok(pred) => Some(scores::r2(ty, &pred)),
            Err(e) => {
                eprintln!("dimension-wise prediction of column {ci}: {e}");
                None
            }
        };
        (name.to_string(), "r2".to_string(), s)
    })
    .collect()
}
