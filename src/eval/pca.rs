//! Principal components of the encoded real data, to project real and synthetic rows onto
//! the same two axes (the seed paper's 2-way PCA plot).

use super::linalg;

/// A fitted basis: centred, not scaled, as scikit-learn's `PCA`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Pca {
    pub mean: Vec<f64>,
    /// One unit axis per row, sign chosen so its largest-magnitude entry is positive.
    pub components: Vec<Vec<f64>>,
    /// Eigenvalues of the sample covariance (divisor n − 1).
    pub explained_variance: Vec<f64>,
    /// Each eigenvalue over the sum of all variances.
    pub explained_variance_ratio: Vec<f64>,
}

impl Pca {
    /// Fits `k` components to an n×d row-major matrix.
    pub fn fit(x: &[f64], n: usize, d: usize, k: usize) -> Result<Self, String> {
        if n < 2 || d == 0 {
            return Err(format!(
                "PCA needs at least 2 rows and 1 column (got {n}×{d})"
            ));
        }
        let (mean, cov) = linalg::mean_cov(x, n, d);
        let total: f64 = (0..d).map(|i| cov[i * d + i]).sum();
        let (vals, vecs) = linalg::sym_eigen(&cov, d)?;
        let k = k.min(d);
        let components: Vec<Vec<f64>> = vecs
            .into_iter()
            .take(k)
            .map(|mut v| {
                let big = v
                    .iter()
                    .copied()
                    .max_by(|a, b| a.abs().total_cmp(&b.abs()))
                    .unwrap_or(0.0);
                if big < 0.0 {
                    v.iter_mut().for_each(|e| *e = -*e);
                }
                v
            })
            .collect();
        let explained_variance: Vec<f64> = vals.iter().take(k).map(|v| v.max(0.0)).collect();
        let explained_variance_ratio = explained_variance
            .iter()
            .map(|v| if total > 0.0 { v / total } else { 0.0 })
            .collect();
        Ok(Self {
            mean,
            components,
            explained_variance,
            explained_variance_ratio,
        })
    }

    /// Projects one row.
    pub fn project(&self, row: &[f64]) -> Vec<f64> {
        self.components
            .iter()
            .map(|c| {
                c.iter()
                    .zip(row)
                    .zip(&self.mean)
                    .map(|((a, x), m)| a * (x - m))
                    .sum()
            })
            .collect()
    }
}
