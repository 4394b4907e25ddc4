//! The few dense linear-algebra steps the metrics need, on row-major `f64` slices.
//! Eigendecomposition comes from smartcore; the rest is arithmetic too small for a crate.

use smartcore::linalg::basic::matrix::DenseMatrix;
use smartcore::linalg::traits::evd::EVDDecomposable;

/// Eigenvalues (descending) and unit eigenvectors (one per row) of a symmetric d×d matrix.
pub fn sym_eigen(a: &[f64], d: usize) -> Result<(Vec<f64>, Vec<Vec<f64>>), String> {
    if d == 0 {
        return Ok((vec![], vec![]));
    }
    let m = DenseMatrix::new(d, d, a.to_vec(), false).map_err(|e| e.to_string())?;
    let evd = m.evd(true).map_err(|e| e.to_string())?;
    use smartcore::linalg::basic::arrays::Array;
    let vecs = (0..d)
        .map(|k| (0..d).map(|i| *evd.V.get((i, k))).collect())
        .collect();
    Ok((evd.d, vecs))
}

/// Column means and the sample covariance (divisor n − 1) of an n×d matrix.
pub fn mean_cov(x: &[f64], n: usize, d: usize) -> (Vec<f64>, Vec<f64>) {
    let mut mean = vec![0.0; d];
    for r in 0..n {
        for j in 0..d {
            mean[j] += x[r * d + j];
        }
    }
    mean.iter_mut().for_each(|m| *m /= n.max(1) as f64);
    let mut cov = vec![0.0; d * d];
    let mut c = vec![0.0; d];
    for r in 0..n {
        for j in 0..d {
            c[j] = x[r * d + j] - mean[j];
        }
        for i in 0..d {
            if c[i] == 0.0 {
                continue;
            }
            for j in i..d {
                cov[i * d + j] += c[i] * c[j];
            }
        }
    }
    let div = (n.max(2) - 1) as f64;
    for i in 0..d {
        for j in i..d {
            let v = cov[i * d + j] / div;
            cov[i * d + j] = v;
            cov[j * d + i] = v;
        }
    }
    (mean, cov)
}

/// Solves A x = b for a symmetric positive definite A (d×d) by Cholesky; `None` when A is
/// not positive definite.
pub fn solve_spd(a: &[f64], b: &[f64], d: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| l[i * d + k] * l[j * d + k]).sum();
            if i == j {
                let v = a[i * d + i] - s;
                if v <= 0.0 || !v.is_finite() {
                    return None;
                }
                l[i * d + i] = v.sqrt();
            } else {
                l[i * d + j] = (a[i * d + j] - s) / l[j * d + j];
            }
        }
    }
    let mut y = vec![0.0; d];
    for i in 0..d {
        let s: f64 = (0..i).map(|k| l[i * d + k] * y[k]).sum();
        y[i] = (b[i] - s) / l[i * d + i];
    }
    let mut x = vec![0.0; d];
    for i in (0..d).rev() {
        let s: f64 = (i + 1..d).map(|k| l[k * d + i] * x[k]).sum();
        x[i] = (y[i] - s) / l[i * d + i];
    }
    Some(x)
}

/// Euclidean distance.
pub fn dist(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(s, t)| (s - t) * (s - t))
        .sum::<f64>()
        .sqrt()
}
