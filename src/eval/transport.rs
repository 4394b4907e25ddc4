//! Exact Wasserstein distances between empirical measures.
//!
//! No maintained Rust crate computes exact optimal transport (the research notes list only
//! stale C/C++ wrappers), so this file holds the two exact algorithms the metrics need:
//! the 1-D closed form (∫|F_u − F_v|) and, for point clouds with uniform weights, the
//! assignment problem solved by the Hungarian method in f64 (no integer scaling of costs).

/// W1 between two 1-D samples with optional weights (normalised to 1), as
/// `scipy.stats.wasserstein_distance`: the integral of |F_u − F_v|.
pub fn w1_1d(u: &[f64], v: &[f64], uw: Option<&[f64]>, vw: Option<&[f64]>) -> f64 {
    let weights = |x: &[f64], w: Option<&[f64]>| -> Vec<f64> {
        match w {
            Some(w) => {
                let s: f64 = w.iter().sum();
                w.iter().map(|a| a / s).collect()
            }
            None => vec![1.0 / x.len() as f64; x.len()],
        }
    };
    let (wu, wv) = (weights(u, uw), weights(v, vw));
    let mut pts: Vec<(f64, f64, f64)> = u
        .iter()
        .zip(&wu)
        .map(|(&x, &w)| (x, w, 0.0))
        .chain(v.iter().zip(&wv).map(|(&x, &w)| (x, 0.0, w)))
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut fu, mut fv, mut total) = (0.0, 0.0, 0.0);
    for i in 0..pts.len() {
        fu += pts[i].1;
        fv += pts[i].2;
        if let Some(next) = pts.get(i + 1) {
            total += (fu - fv as f64).abs() * (next.0 - pts[i].0);
        }
    }
    total
}

/// Minimum-cost perfect matching of a square cost matrix (row-major, n×n): returns the
/// column assigned to each row. The O(n³) shortest-augmenting-path form of the Hungarian
/// method with potentials; costs must be finite.
pub fn assignment(cost: &[f64], n: usize) -> Vec<usize> {
    // 1-based arrays with a virtual column 0, as in the classic formulation.
    let inf = f64::INFINITY;
    let (mut u, mut v) = (vec![0.0; n + 1], vec![0.0; n + 1]);
    let mut p = vec![0usize; n + 1]; // p[j] = row matched to column j
    let mut way = vec![0usize; n + 1];
    for i in 1..=n {
        p[0] = i;
        let mut j0 = 0;
        let mut minv = vec![inf; n + 1];
        let mut used = vec![false; n + 1];
        loop {
            used[j0] = true;
            let i0 = p[j0];
            let mut delta = inf;
            let mut j1 = 0;
            for j in 1..=n {
                if !used[j] {
                    let cur = cost[(i0 - 1) * n + (j - 1)] - u[i0] - v[j];
                    if cur < minv[j] {
                        minv[j] = cur;
                        way[j] = j0;
                    }
                    if minv[j] < delta {
                        delta = minv[j];
                        j1 = j;
                    }
                }
            }
            for j in 0..=n {
                if used[j] {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
            if p[j0] == 0 {
                break;
            }
        }
        loop {
            let j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
            if j0 == 0 {
                break;
            }
        }
    }
    let mut row_to_col = vec![0; n];
    for j in 1..=n {
        if p[j] > 0 {
            row_to_col[p[j] - 1] = j - 1;
        }
    }
    row_to_col
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Largest matching the exact solver accepts (after replication for unequal sizes); above
/// it callers subsample, as the paper's protocol does (100 points per side).
pub const MAX_EXACT_POINTS: usize = 2000;

/// Exact `W_p` (p = 1 or 2) between two point clouds with uniform weights, as POT's
/// `emd2` with a Euclidean (p = 1) or squared Euclidean (p = 2, then the square root) cost.
///
/// For sizes n ≠ m each point is repeated lcm/n (resp. lcm/m) times: a transport plan
/// between uniform measures of equal size is a permutation (Birkhoff), so the matching of
/// the replicated clouds is the exact optimum of the original problem. `None` when the
/// replicated size exceeds [`MAX_EXACT_POINTS`] or a cloud is empty.
pub fn wasserstein_exact(x: &[Vec<f64>], y: &[Vec<f64>], p: u32) -> Option<f64> {
    let (n, m) = (x.len(), y.len());
    if n == 0 || m == 0 {
        return None;
    }
    let l = n / gcd(n, m) * m;
    if l > MAX_EXACT_POINTS {
        return None;
    }
    let (rx, ry) = (l / n, l / m);
    let mut cost = vec![0.0; l * l];
    for i in 0..l {
        let a = &x[i / rx];
        for j in 0..l {
            let b = &y[j / ry];
            let d2: f64 = a.iter().zip(b).map(|(s, t)| (s - t) * (s - t)).sum();
            cost[i * l + j] = if p == 1 { d2.sqrt() } else { d2 };
        }
    }
    let plan = assignment(&cost, l);
    let total: f64 = plan
        .iter()
        .enumerate()
        .map(|(i, &j)| cost[i * l + j])
        .sum::<f64>()
        / l as f64;
    Some(if p == 1 { total } else { total.sqrt() })
}
