//! The models the evaluation trains: classic ones from smartcore, the neural ones (logistic
//! regression, MLP) on candle. Every classifier returns class probabilities so AUROC and
//! AUPRC are computed on scores, not on hard labels (the reference code's flaw P10).
//!
//! Costs are kept inside a report's budget by training each model on at most
//! [`Classifier::max_train_rows`] rows (kernel SVM and k-NN scale quadratically); the report
//! states the rows each model saw.

use rayon::prelude::*;
use smartcore::linalg::basic::matrix::DenseMatrix;

pub use super::forest::forest_proba;
pub use super::xy::Xy;

/// The features of `xy` as smartcore's matrix.
fn xy_matrix(xy: &Xy) -> Result<DenseMatrix<f64>, String> {
    matrix(&xy.x, xy.n, xy.p)
}

fn matrix(x: &[f64], n: usize, p: usize) -> Result<DenseMatrix<f64>, String> {
    DenseMatrix::new(n, p, x.to_vec(), false).map_err(|e| e.to_string())
}

/// The classifiers of the train-on-synthetic / test-on-real table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Classifier {
    LogisticRegression,
    RandomForest,
    DecisionTree,
    GaussianNaiveBayes,
    LinearSvm,
    KNearestNeighbors,
    GradientBoosting,
    Mlp,
}

impl Classifier {
    pub const ALL: [Classifier; 8] = [
        Classifier::LogisticRegression,
        Classifier::RandomForest,
        Classifier::DecisionTree,
        Classifier::GaussianNaiveBayes,
        Classifier::LinearSvm,
        Classifier::KNearestNeighbors,
        Classifier::GradientBoosting,
        Classifier::Mlp,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Classifier::LogisticRegression => "logistic regression",
            Classifier::RandomForest => "random forest (100 trees)",
            Classifier::DecisionTree => "decision tree (depth ≤ 12)",
            Classifier::GaussianNaiveBayes => "Gaussian naive Bayes",
            Classifier::LinearSvm => "linear SVM",
            Classifier::KNearestNeighbors => "k-NN (k = 5)",
            Classifier::GradientBoosting => "gradient boosting (100 trees, depth 3)",
            Classifier::Mlp => "MLP (100 ReLU)",
        }
    }

    /// The most training rows the model sees (quadratic-cost models see fewer).
    pub fn max_train_rows(self) -> usize {
        match self {
            Classifier::LinearSvm => 20_000,
            Classifier::KNearestNeighbors => 2_000,
            Classifier::GradientBoosting => 4_000,
            Classifier::DecisionTree => 20_000,
            _ => 50_000,
        }
    }

    /// Fits on `train` and returns class probabilities for each row of `test_x`
    /// (row-major, `k` per row; classes absent from `train` get 0).
    pub fn fit_proba(
        self,
        train: &Xy,
        test_x: &[f64],
        k: usize,
        seed: u64,
    ) -> Result<Vec<f64>, String> {
        let train = train.subsample(self.max_train_rows(), seed);
        let m = test_x.len() / train.p.max(1);
        let present: Vec<u32> = {
            let mut c = train.y.clone();
            c.sort_unstable();
            c.dedup();
            c
        };
        if train.n == 0 {
            return Err("no training rows".into());
        }
        // One class only: every model would predict it with certainty.
        if present.len() == 1 {
            let mut out = vec![0.0; m * k];
            for r in 0..m {
                out[r * k + present[0] as usize] = 1.0;
            }
            return Ok(out);
        }
        match self {
            Classifier::LogisticRegression => super::net::fit_proba(&train, test_x, k, 0, seed),
            Classifier::Mlp => super::net::fit_proba(&train, test_x, k, 100, seed),
            Classifier::RandomForest => forest_proba(&train, test_x, k, 100, seed),
            Classifier::DecisionTree => tree_proba(&train, test_x, k, seed),
            Classifier::GaussianNaiveBayes => gnb_proba(&train, test_x, k),
            Classifier::KNearestNeighbors => knn_proba(&train, test_x, k),
            Classifier::LinearSvm => one_vs_rest(&train, test_x, k, &present, svm_scores),
            Classifier::GradientBoosting => one_vs_rest(&train, test_x, k, &present, boost_scores),
        }
    }
}

fn tree_proba(train: &Xy, test_x: &[f64], k: usize, seed: u64) -> Result<Vec<f64>, String> {
    use smartcore::linalg::basic::arrays::Array;
    use smartcore::tree::decision_tree_classifier::{
        DecisionTreeClassifier, DecisionTreeClassifierParameters,
    };
    let xm = xy_matrix(train)?;
    let m = test_x.len() / train.p;
    let tm = matrix(test_x, m, train.p)?;
    // Depth ≤ 12: smartcore searches every feature at every node, and an unbounded tree on
    // 20k one-hot rows costs tens of seconds for no gain on held-out data.
    let params = DecisionTreeClassifierParameters {
        seed: Some(seed),
        max_depth: Some(12),
        ..Default::default()
    };
    let t = DecisionTreeClassifier::fit(&xm, &train.y, params).map_err(|e| e.to_string())?;
    let pr = t.predict_proba(&tm).map_err(|e| e.to_string())?;
    let classes = sorted_classes(&train.y);
    let mut out = vec![0.0; m * k];
    for r in 0..m {
        for (j, &c) in classes.iter().enumerate() {
            out[r * k + c as usize] = *pr.get((r, j));
        }
    }
    Ok(out)
}

fn sorted_classes(y: &[u32]) -> Vec<u32> {
    let mut c = y.to_vec();
    c.sort_unstable();
    c.dedup();
    c
}

/// Gaussian naive Bayes with scikit-learn's variance smoothing (1e-9 × the largest
/// feature variance). Written here because smartcore's `GaussianNB::fit` builds nested
/// boxed iterators that take minutes on 30k rows and it predicts labels only.
fn gnb_proba(train: &Xy, test_x: &[f64], k: usize) -> Result<Vec<f64>, String> {
    let p = train.p;
    let mut count = vec![0.0; k];
    let mut mean = vec![vec![0.0; p]; k];
    let mut var = vec![vec![0.0; p]; k];
    for i in 0..train.n {
        let c = train.y[i] as usize;
        count[c] += 1.0;
        for (m, x) in mean[c].iter_mut().zip(train.row(i)) {
            *m += x;
        }
    }
    for c in 0..k {
        if count[c] > 0.0 {
            mean[c].iter_mut().for_each(|m| *m /= count[c]);
        }
    }
    for i in 0..train.n {
        let c = train.y[i] as usize;
        for ((v, x), m) in var[c].iter_mut().zip(train.row(i)).zip(&mean[c]) {
            *v += (x - m) * (x - m);
        }
    }
    for c in 0..k {
        if count[c] > 0.0 {
            var[c].iter_mut().for_each(|v| *v /= count[c]);
        }
    }
    let mut max_var: f64 = 0.0;
    for j in 0..p {
        let mu = (0..train.n).map(|i| train.x[i * p + j]).sum::<f64>() / train.n as f64;
        let v = (0..train.n)
            .map(|i| (train.x[i * p + j] - mu).powi(2))
            .sum::<f64>()
            / train.n as f64;
        max_var = max_var.max(v);
    }
    let eps = 1e-9 * max_var.max(1e-12);
    let classes: Vec<usize> = (0..k).filter(|&c| count[c] > 0.0).collect();
    let m = test_x.len() / p;
    let mut out = vec![0.0; m * k];
    for r in 0..m {
        let row = &test_x[r * p..(r + 1) * p];
        let logp: Vec<f64> = classes
            .iter()
            .map(|&c| {
                (count[c] / train.n as f64).ln()
                    + (0..p)
                        .map(|j| {
                            let v = var[c][j] + eps;
                            -0.5 * ((2.0 * std::f64::consts::PI * v).ln()
                                + (row[j] - mean[c][j]).powi(2) / v)
                        })
                        .sum::<f64>()
            })
            .collect();
        let mx = logp.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = logp.iter().map(|l| (l - mx).exp()).sum();
        for (i, &c) in classes.iter().enumerate() {
            out[r * k + c] = (logp[i] - mx).exp() / z;
        }
    }
    Ok(out)
}

fn knn_proba(train: &Xy, test_x: &[f64], k: usize) -> Result<Vec<f64>, String> {
    use smartcore::neighbors::knn_classifier::{KNNClassifier, KNNClassifierParameters};
    let xm = xy_matrix(train)?;
    let knn = KNNClassifier::fit(&xm, &train.y, KNNClassifierParameters::default().with_k(5))
        .map_err(|e| e.to_string())?;
    let classes = sorted_classes(&train.y);
    let p = train.p;
    let m = test_x.len() / p;
    // Prediction dominates the cost; split the test rows across threads.
    let chunks: Vec<Vec<Vec<f64>>> = test_x
        .par_chunks(p * 512)
        .map(|c| {
            let tm = matrix(c, c.len() / p, p)?;
            knn.predict_proba(&tm).map_err(|e| e.to_string())
        })
        .collect::<Result<_, String>>()?;
    let mut out = vec![0.0; m * k];
    for (r, probs) in chunks.into_iter().flatten().enumerate() {
        for (j, &c) in classes.iter().enumerate() {
            out[r * k + c as usize] = probs.get(j).copied().unwrap_or(0.0);
        }
    }
    Ok(out)
}

/// Scores of "class c vs the rest" for each test row (higher = more likely c).
type BinaryScorer = fn(&Xy, &[f64], u64) -> Result<Vec<f64>, String>;

/// One-vs-rest for models that are binary by nature; scores become probabilities by a
/// softmax over classes (binary: the logistic of the score).
fn one_vs_rest(
    train: &Xy,
    test_x: &[f64],
    k: usize,
    present: &[u32],
    f: BinaryScorer,
) -> Result<Vec<f64>, String> {
    let m = test_x.len() / train.p;
    let targets: Vec<u32> = if present.len() == 2 {
        vec![present[1]]
    } else {
        present.to_vec()
    };
    let scores: Vec<Vec<f64>> = targets
        .par_iter()
        .enumerate()
        .map(|(i, &c)| {
            let bin = Xy {
                y: train.y.iter().map(|&v| u32::from(v == c)).collect(),
                ..train.clone()
            };
            f(&bin, test_x, i as u64)
        })
        .collect::<Result<_, String>>()?;
    let mut out = vec![0.0; m * k];
    if present.len() == 2 {
        for r in 0..m {
            let p1 = 1.0 / (1.0 + (-scores[0][r]).exp());
            out[r * k + present[1] as usize] = p1;
            out[r * k + present[0] as usize] = 1.0 - p1;
        }
    } else {
        for r in 0..m {
            let mx = scores
                .iter()
                .map(|s| s[r])
                .fold(f64::NEG_INFINITY, f64::max);
            let z: f64 = scores.iter().map(|s| (s[r] - mx).exp()).sum();
            for (i, &c) in targets.iter().enumerate() {
                out[r * k + c as usize] = (scores[i][r] - mx).exp() / z;
            }
        }
    }
    Ok(out)
}

/// Linear SVM (L2-regularised hinge loss, C = 1, with a bias feature) by dual coordinate
/// descent, the algorithm of liblinear and so of scikit-learn's `LinearSVC`. smartcore's
/// kernel SMO took over a minute on 3,000 rows here, so this one is written out; the
/// decision function is the score.
fn svm_scores(train: &Xy, test_x: &[f64], seed: u64) -> Result<Vec<f64>, String> {
    let (n, p) = (train.n, train.p);
    let c = 1.0;
    let y: Vec<f64> = train
        .y
        .iter()
        .map(|&v| if v == 1 { 1.0 } else { -1.0 })
        .collect();
    // Weight vector with the bias as its last entry (feature value 1).
    let mut w = vec![0.0; p + 1];
    let mut alpha = vec![0.0; n];
    let qii: Vec<f64> = (0..n)
        .map(|i| train.row(i).iter().map(|x| x * x).sum::<f64>() + 1.0)
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(seed);
    for _epoch in 0..200 {
        rand::seq::SliceRandom::shuffle(order.as_mut_slice(), &mut rng);
        let mut max_change: f64 = 0.0;
        for &i in &order {
            let xi = train.row(i);
            let wx: f64 = xi.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>() + w[p];
            let g = y[i] * wx - 1.0;
            let pg = if alpha[i] == 0.0 {
                g.min(0.0)
            } else if alpha[i] == c {
                g.max(0.0)
            } else {
                g
            };
            if pg.abs() > 1e-12 {
                let old = alpha[i];
                alpha[i] = (old - g / qii[i]).clamp(0.0, c);
                let d = (alpha[i] - old) * y[i];
                for (wj, xj) in w.iter_mut().zip(xi) {
                    *wj += d * xj;
                }
                w[p] += d;
                max_change = max_change.max(pg.abs());
            }
        }
        if max_change < 1e-3 {
            break;
        }
    }
    Ok(test_x
        .chunks(p)
        .map(|r| r.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>() + w[p])
        .collect())
}

/// Gradient boosting of regression trees on the 0/1 indicator with squared loss
/// (smartcore's XGBoost-style booster is regression-only); the fitted value, centred at ½
/// and scaled, is the score.
fn boost_scores(train: &Xy, test_x: &[f64], seed: u64) -> Result<Vec<f64>, String> {
    use smartcore::xgboost::xgb_regressor::{XGRegressor, XGRegressorParameters};
    let xm = xy_matrix(train)?;
    let y: Vec<f64> = train.y.iter().map(|&v| f64::from(v)).collect();
    let params = XGRegressorParameters::default()
        .with_n_estimators(100)
        .with_max_depth(3)
        .with_learning_rate(0.1)
        .with_seed(seed);
    let b = XGRegressor::fit(&xm, &y, params).map_err(|e| e.to_string())?;
    let tm = matrix(test_x, test_x.len() / train.p, train.p)?;
    let pred = b.predict(&tm).map_err(|e| e.to_string())?;
    Ok(pred.into_iter().map(|v| (v - 0.5) * 8.0).collect())
}

/// The regressors of dimension-wise prediction for continuous columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Regressor {
    /// Least squares (ridge with α = 1e-6, so collinear one-hot features are fine).
    Linear,
    /// Lasso with α = 1e-3 on the [0, 1]-scaled target.
    Lasso,
}

impl Regressor {
    pub fn fit_predict(
        self,
        x: &[f64],
        n: usize,
        p: usize,
        y: &[f64],
        test_x: &[f64],
    ) -> Result<Vec<f64>, String> {
        let xm = matrix(x, n, p)?;
        let tm = matrix(test_x, test_x.len() / p, p)?;
        let y = y.to_vec();
        match self {
            Regressor::Linear => {
                // Normal equations on centred data with a tiny ridge: one-hot blocks are
                // collinear with the intercept, which smartcore's solvers reject.
                let _ = (&xm, &tm);
                let mx: Vec<f64> = (0..p)
                    .map(|j| (0..n).map(|i| x[i * p + j]).sum::<f64>() / n as f64)
                    .collect();
                let my = y.iter().sum::<f64>() / n as f64;
                let mut a = vec![0.0; p * p];
                let mut b = vec![0.0; p];
                for i in 0..n {
                    let r: Vec<f64> = (0..p).map(|j| x[i * p + j] - mx[j]).collect();
                    for j in 0..p {
                        if r[j] == 0.0 {
                            continue;
                        }
                        b[j] += r[j] * (y[i] - my);
                        for k in j..p {
                            a[j * p + k] += r[j] * r[k];
                        }
                    }
                }
                for j in 0..p {
                    for k in 0..j {
                        a[j * p + k] = a[k * p + j];
                    }
                    a[j * p + j] += 1e-6 * n as f64;
                }
                let w =
                    super::linalg::solve_spd(&a, &b, p).ok_or("normal equations are singular")?;
                Ok(test_x
                    .chunks(p)
                    .map(|r| {
                        my + r
                            .iter()
                            .zip(&w)
                            .zip(&mx)
                            .map(|((v, wj), m)| (v - m) * wj)
                            .sum::<f64>()
                    })
                    .collect())
            }
            Regressor::Lasso => {
                use smartcore::linear::lasso::{Lasso, LassoParameters};
                let m = Lasso::fit(
                    &xm,
                    &y,
                    LassoParameters::default()
                        .with_alpha(1e-3)
                        .with_normalize(false),
                )
                .map_err(|e| format!("lasso: {e}"))?;
                m.predict(&tm).map_err(|e| e.to_string())
            }
        }
    }
}
