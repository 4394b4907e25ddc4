//! Distribution-level comparisons that no maintained crate offers: total variation,
//! NIST 3-way marginals, MMD, pMSE, agreed ranking and distance to closest record. Each
//! reproduces the definition in `shared/fixtures/metrics_README.md` and is tested there.

use std::collections::BTreeMap;

use super::linalg;

/// Total variation distance ½ Σ |p_c − q_c| between the empirical frequencies of two
/// samples, over the union of their categories.
pub fn tvd<T: Ord>(a: &[T], b: &[T]) -> f64 {
    let mut freq: BTreeMap<&T, (f64, f64)> = BTreeMap::new();
    for x in a {
        freq.entry(x).or_default().0 += 1.0 / a.len() as f64;
    }
    for x in b {
        freq.entry(x).or_default().1 += 1.0 / b.len() as f64;
    }
    0.5 * freq.values().map(|(p, q)| (p - q).abs()).sum::<f64>()
}

/// NIST-style bin of `x` on a column whose real range is [lo, hi]: 100 equal bins, values
/// below go to bin 0 and at or above `hi` to bin 99.
pub fn nist_bin(x: f64, lo: f64, hi: f64) -> u8 {
    if hi <= lo {
        return 0;
    }
    let b = ((x - lo) * 100.0 / (hi - lo)).floor();
    b.clamp(0.0, 99.0) as u8
}

/// L1 distance Σ |p − q| between the 3-way marginals of columns (a, b, c) after NIST
/// binning; `bins_real[j]` and `bins_syn[j]` hold column j's bins. Lies in [0, 2].
pub fn three_way_l1(bins_real: [&[u8]; 3], bins_syn: [&[u8]; 3]) -> f64 {
    let count = |bins: [&[u8]; 3]| {
        let n = bins[0].len();
        let mut m: BTreeMap<[u8; 3], f64> = BTreeMap::new();
        for i in 0..n {
            *m.entry([bins[0][i], bins[1][i], bins[2][i]]).or_default() += 1.0 / n as f64;
        }
        m
    };
    let (r, s) = (count(bins_real), count(bins_syn));
    let mut l1 = 0.0;
    for (k, p) in &r {
        l1 += (p - s.get(k).copied().unwrap_or(0.0)).abs();
    }
    for (k, q) in &s {
        if !r.contains_key(k) {
            l1 += q;
        }
    }
    l1
}

/// Agreed ranking probability (PATE-GAN eq. 8): the share of ordered pairs of models whose
/// scores order them the same way in both settings; a tie counts as disagreement.
pub fn agreed_ranking(a: &[f64], c: &[f64]) -> Option<f64> {
    let l = a.len();
    if l < 2 || c.len() != l {
        return None;
    }
    let mut agree = 0usize;
    for j in 0..l {
        for k in 0..l {
            if j != k && (a[j] - a[k]) * (c[j] - c[k]) > 0.0 {
                agree += 1;
            }
        }
    }
    Some(agree as f64 / (l * (l - 1)) as f64)
}

/// Distance from each query row to its closest reference row (Euclidean), with the index.
pub fn closest(queries: &[Vec<f64>], reference: &[Vec<f64>]) -> Vec<(f64, usize)> {
    use rayon::prelude::*;
    queries
        .par_iter()
        .map(|q| {
            let mut best = (f64::INFINITY, 0);
            for (j, r) in reference.iter().enumerate() {
                let d2: f64 = q.iter().zip(r).map(|(a, b)| (a - b) * (a - b)).sum();
                if d2 < best.0 {
                    best = (d2, j);
                }
            }
            (best.0.sqrt(), best.1)
        })
        .collect()
}

/// numpy's median (mean of the two middle values for an even count).
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The median heuristic bandwidth: the median of the non-zero pairwise distances of the
/// pooled sample (unordered pairs).
pub fn median_heuristic(x: &[Vec<f64>], y: &[Vec<f64>]) -> f64 {
    let z: Vec<&Vec<f64>> = x.iter().chain(y).collect();
    let mut d = Vec::with_capacity(z.len() * z.len().saturating_sub(1) / 2);
    for i in 0..z.len() {
        for j in i + 1..z.len() {
            let v = linalg::dist(z[i], z[j]);
            if v > 0.0 {
                d.push(v);
            }
        }
    }
    median(&mut d)
}

/// Squared MMD with the Gaussian kernel exp(−‖x−y‖²/(2s²)).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Mmd2 {
    /// V-statistic (diagonal included; ≥ 0).
    pub biased: f64,
    /// U-statistic (diagonal excluded; may be negative).
    pub unbiased: f64,
}

pub fn mmd2(x: &[Vec<f64>], y: &[Vec<f64>], s: f64) -> Mmd2 {
    let k = |a: &[f64], b: &[f64]| {
        let d2: f64 = a.iter().zip(b).map(|(p, q)| (p - q) * (p - q)).sum();
        (-d2 / (2.0 * s * s)).exp()
    };
    let within = |z: &[Vec<f64>]| {
        let (mut all, mut diag) = (0.0, 0.0);
        for i in 0..z.len() {
            for j in 0..z.len() {
                let v = k(&z[i], &z[j]);
                all += v;
                if i == j {
                    diag += v;
                }
            }
        }
        (all, diag)
    };
    let (m, n) = (x.len() as f64, y.len() as f64);
    let (kxx, dx) = within(x);
    let (kyy, dy) = within(y);
    let kxy: f64 = x
        .iter()
        .map(|a| y.iter().map(|b| k(a, b)).sum::<f64>())
        .sum();
    Mmd2 {
        biased: kxx / (m * m) + kyy / (n * n) - 2.0 * kxy / (m * n),
        unbiased: (kxx - dx) / (m * (m - 1.0)) + (kyy - dy) / (n * (n - 1.0)) - 2.0 * kxy / (m * n),
    }
}

/// pMSE: an unpenalised logistic regression (with intercept) separates synthetic (label 1)
/// from real rows; pMSE = mean (pᵢ − c)², c = n_syn / N. Fitted by Newton/IRLS to machine
/// precision (the exact maximum-likelihood fit, not an early-stopped one).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Pmse {
    pub pmse: f64,
    /// pMSE over its null expectation (k−1)(1−c)²c/N (Snoke et al. 2018): 1 is perfect.
    pub ratio: f64,
    pub intercept: f64,
    pub coef: Vec<f64>,
    pub iterations: usize,
    /// False when Newton stopped without converging (separable data): the fit is the last
    /// iterate.
    pub converged: bool,
}

pub fn pmse(real: &[Vec<f64>], synthetic: &[Vec<f64>]) -> Pmse {
    let d = real.first().or(synthetic.first()).map_or(0, Vec::len) + 1;
    let rows: Vec<(&Vec<f64>, f64)> = real
        .iter()
        .map(|r| (r, 0.0))
        .chain(synthetic.iter().map(|r| (r, 1.0)))
        .collect();
    let n = rows.len() as f64;
    let c = synthetic.len() as f64 / n;
    let feat = |r: &Vec<f64>, j: usize| if j == 0 { 1.0 } else { r[j - 1] };
    let mut w = vec![0.0; d];
    let mut converged = false;
    let mut iterations = 0;
    for it in 0..100 {
        iterations = it + 1;
        let mut grad = vec![0.0; d];
        let mut hess = vec![0.0; d * d];
        for (r, y) in &rows {
            let z: f64 = (0..d).map(|j| w[j] * feat(r, j)).sum();
            let p = 1.0 / (1.0 + (-z).exp());
            let h = p * (1.0 - p);
            for i in 0..d {
                let fi = feat(r, i);
                grad[i] += (p - y) * fi;
                for j in i..d {
                    hess[i * d + j] += h * fi * feat(r, j);
                }
            }
        }
        for i in 0..d {
            for j in 0..i {
                hess[i * d + j] = hess[j * d + i];
            }
        }
        let gmax = grad.iter().fold(0.0f64, |m, g| m.max(g.abs()));
        if gmax < 1e-10 * n.max(1.0) {
            converged = true;
            break;
        }
        // A tiny ridge keeps the step defined on (near) separable or collinear data.
        for i in 0..d {
            hess[i * d + i] += 1e-12 * n;
        }
        let Some(step) = linalg::solve_spd(&hess, &grad, d) else {
            break;
        };
        w.iter_mut().zip(&step).for_each(|(a, s)| *a -= s);
    }
    let pm: f64 = rows
        .iter()
        .map(|(r, _)| {
            let z: f64 = (0..d).map(|j| w[j] * feat(r, j)).sum();
            let p = 1.0 / (1.0 + (-z).exp());
            (p - c) * (p - c)
        })
        .sum::<f64>()
        / n;
    let null = (d as f64 - 1.0) * (1.0 - c) * (1.0 - c) * c / n;
    Pmse {
        pmse: pm,
        ratio: if null > 0.0 { pm / null } else { f64::NAN },
        intercept: w[0],
        coef: w[1..].to_vec(),
        iterations,
        converged,
    }
}
