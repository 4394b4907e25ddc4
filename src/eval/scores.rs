//! Scores of predictions against truth: AUROC, AUPRC, accuracy, F1, R².
//!
//! Written by hand (as the research notes advise) because the crates' versions are f32,
//! panic on labels other than 0/1, or differ from scikit-learn in edge cases; each function
//! states the scikit-learn definition it reproduces and is checked against
//! `shared/fixtures/metrics_reference.json`.

/// AUROC as `roc_auc_score`: the Mann–Whitney U over all positive–negative pairs, a tie
/// counting ½. `None` when only one class is present (undefined).
pub fn roc_auc(y_true: &[bool], score: &[f64]) -> Option<f64> {
    let n_pos = y_true.iter().filter(|&&y| y).count();
    let n_neg = y_true.len() - n_pos;
    if n_pos == 0 || n_neg == 0 {
        return None;
    }
    // Rank-sum with average ranks over ties: O(n log n).
    let mut idx: Vec<usize> = (0..score.len()).collect();
    idx.sort_by(|&a, &b| score[a].total_cmp(&score[b]));
    let mut rank_sum_pos = 0.0;
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && score[idx[j + 1]] == score[idx[i]] {
            j += 1;
        }
        // Ranks i+1 ..= j+1 share their mean.
        let avg = (i + j + 2) as f64 / 2.0;
        for &k in &idx[i..=j] {
            if y_true[k] {
                rank_sum_pos += avg;
            }
        }
        i = j + 1;
    }
    let (p, n) = (n_pos as f64, n_neg as f64);
    Some((rank_sum_pos - p * (p + 1.0) / 2.0) / (p * n))
}

/// The precision–recall points at each distinct threshold, highest score first:
/// (recall, precision) pairs, without the (0, 1) end point.
fn pr_points(y_true: &[bool], score: &[f64]) -> Vec<(f64, f64)> {
    let n_pos = y_true.iter().filter(|&&y| y).count() as f64;
    let mut idx: Vec<usize> = (0..score.len()).collect();
    idx.sort_by(|&a, &b| score[b].total_cmp(&score[a]));
    let (mut tp, mut fp) = (0.0, 0.0);
    let mut out = Vec::new();
    let mut i = 0;
    while i < idx.len() {
        let s = score[idx[i]];
        while i < idx.len() && score[idx[i]] == s {
            if y_true[idx[i]] {
                tp += 1.0;
            } else {
                fp += 1.0;
            }
            i += 1;
        }
        let recall = if n_pos > 0.0 { tp / n_pos } else { 1.0 };
        out.push((recall, tp / (tp + fp)));
    }
    out
}

/// AUPRC as `average_precision_score`: Σ (Rₙ − Rₙ₋₁) Pₙ over distinct thresholds, no
/// interpolation. 0 when there is no positive (scikit-learn's value, with a warning).
pub fn average_precision(y_true: &[bool], score: &[f64]) -> f64 {
    if !y_true.iter().any(|&y| y) {
        return 0.0;
    }
    let mut prev_r = 0.0;
    let mut ap = 0.0;
    for (r, p) in pr_points(y_true, score) {
        ap += (r - prev_r) * p;
        prev_r = r;
    }
    ap
}

/// The trapezoidal area under the PR curve, `auc(recall, precision)` on
/// `precision_recall_curve`'s points (which end at recall 0, precision 1). Not the same
/// number as [`average_precision`]; papers use both.
pub fn pr_auc_trapezoid(y_true: &[bool], score: &[f64]) -> f64 {
    // scikit-learn stops the curve once full recall is reached.
    let mut pts = Vec::new();
    for (r, p) in pr_points(y_true, score) {
        pts.push((r, p));
        if r >= 1.0 {
            break;
        }
    }
    pts.insert(0, (0.0, 1.0));
    pts.windows(2)
        .map(|w| (w[1].0 - w[0].0) * (w[1].1 + w[0].1) / 2.0)
        .sum()
}

/// Fraction of exact matches.
pub fn accuracy<T: PartialEq>(y_true: &[T], y_pred: &[T]) -> f64 {
    if y_true.is_empty() {
        return f64::NAN;
    }
    let hit = y_true.iter().zip(y_pred).filter(|(a, b)| a == b).count();
    hit as f64 / y_true.len() as f64
}

/// What F1 is when a class has no true positive, false positive or false negative.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ZeroDivision {
    Zero,
    One,
    /// NaN, and the macro mean skips such classes.
    Nan,
}

/// Per-class and averaged F1 over class indices `0..n_classes`, as scikit-learn's
/// `f1_score` with `labels = 0..n_classes`: per class 2TP / (2TP + FP + FN).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct F1 {
    pub per_class: Vec<f64>,
    pub micro: f64,
    pub macro_: f64,
    pub weighted: f64,
}

pub fn f1_scores(y_true: &[usize], y_pred: &[usize], labels: &[usize], zd: ZeroDivision) -> F1 {
    let k = labels.len();
    let pos = |c: usize| labels.iter().position(|&l| l == c);
    let (mut tp, mut fp, mut fnn, mut support) =
        (vec![0f64; k], vec![0f64; k], vec![0f64; k], vec![0f64; k]);
    for (&t, &p) in y_true.iter().zip(y_pred) {
        let (ti, pi) = (pos(t), pos(p));
        if let Some(ti) = ti {
            support[ti] += 1.0;
        }
        if ti.is_some() && ti == pi {
            tp[ti.unwrap_or(0)] += 1.0;
        } else {
            if let Some(pi) = pi {
                fp[pi] += 1.0;
            }
            if let Some(ti) = ti {
                fnn[ti] += 1.0;
            }
        }
    }
    let zero = match zd {
        ZeroDivision::Zero => 0.0,
        ZeroDivision::One => 1.0,
        ZeroDivision::Nan => f64::NAN,
    };
    let per_class: Vec<f64> = (0..k)
        .map(|c| {
            let d = 2.0 * tp[c] + fp[c] + fnn[c];
            if d == 0.0 { zero } else { 2.0 * tp[c] / d }
        })
        .collect();
    let (stp, sfp, sfn): (f64, f64, f64) = (tp.iter().sum(), fp.iter().sum(), fnn.iter().sum());
    let d = 2.0 * stp + sfp + sfn;
    let micro = if d == 0.0 { zero } else { 2.0 * stp / d };
    let defined: Vec<f64> = per_class.iter().copied().filter(|v| !v.is_nan()).collect();
    let macro_ = if defined.is_empty() {
        f64::NAN
    } else {
        defined.iter().sum::<f64>() / defined.len() as f64
    };
    let total: f64 = support.iter().sum();
    let weighted = if total == 0.0 {
        zero
    } else {
        per_class
            .iter()
            .zip(&support)
            .filter(|(v, s)| !(v.is_nan() && **s == 0.0))
            .map(|(v, s)| v * s)
            .sum::<f64>()
            / total
    };
    F1 {
        per_class,
        micro,
        macro_,
        weighted,
    }
}

/// Binary F1 of class 1 (`average="binary"`).
pub fn f1_binary(y_true: &[bool], y_pred: &[bool], zd: ZeroDivision) -> f64 {
    let t: Vec<usize> = y_true.iter().map(|&b| usize::from(b)).collect();
    let p: Vec<usize> = y_pred.iter().map(|&b| usize::from(b)).collect();
    f1_scores(&t, &p, &[1], zd).per_class[0]
}

/// R² = 1 − SS_res/SS_tot with `force_finite=True`: a constant truth gives 1 for a perfect
/// prediction and 0 otherwise.
pub fn r2(y_true: &[f64], y_pred: &[f64]) -> f64 {
    let n = y_true.len() as f64;
    if y_true.is_empty() {
        return f64::NAN;
    }
    let mean = y_true.iter().sum::<f64>() / n;
    let ss_res: f64 = y_true
        .iter()
        .zip(y_pred)
        .map(|(a, b)| (a - b) * (a - b))
        .sum();
    let ss_tot: f64 = y_true.iter().map(|a| (a - mean) * (a - mean)).sum();
    if ss_tot == 0.0 {
        return if ss_res == 0.0 { 1.0 } else { 0.0 };
    }
    1.0 - ss_res / ss_tot
}
