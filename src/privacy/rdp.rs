//! Rényi-DP curves: for each order α on a grid, the RDP ε(α) of one use of a mechanism.
//!
//! The Poisson-subsampled Gaussian follows Mironov, Talwar & Zhang 2019 ("Rényi
//! Differential Privacy of the Sampled Gaussian Mechanism", arXiv:1908.10530): for integer
//! α the exact binomial sum (§3.2), for fractional α the two-sided erfc series (§3.3), both
//! in log space. Edge cases are explicit: q = 0 → 0, σ = 0 → ∞, q = 1 → α/(2σ²). Where the
//! fractional series cannot be evaluated stably the order gets +∞ (it is then never
//! chosen), which only ever makes the reported ε larger.

/// dp-accounting's `DEFAULT_RDP_ORDERS`: 1.1..10.9 by 0.1, 11..63, 128, 256, 512, 1024.
pub fn default_orders() -> Vec<f64> {
    let mut v: Vec<f64> = (1..=99).map(|x| 1.0 + f64::from(x) / 10.0).collect();
    v.extend((11..=63).map(f64::from));
    v.extend([128.0, 256.0, 512.0, 1024.0]);
    v
}

/// Integer orders 2..=64 plus 128, 256, 512, 1024 (the classic moments-accountant grid).
pub fn explicit_orders() -> Vec<f64> {
    let mut v: Vec<f64> = (2..=64).map(f64::from).collect();
    v.extend([128.0, 256.0, 512.0, 1024.0]);
    v
}

/// The grid dpsynth's accountant uses: dp-accounting's defaults plus 64, 2048 and 4096
/// (a superset can only lower the reported ε, and the large orders help tiny-ε runs).
pub fn product_orders() -> Vec<f64> {
    let mut v = default_orders();
    v.extend([64.0, 2048.0, 4096.0]);
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// ln(e^x + e^y) without overflow.
pub(crate) fn log_add(x: f64, y: f64) -> f64 {
    let (a, b) = if x < y { (x, y) } else { (y, x) };
    if a == f64::NEG_INFINITY {
        return b;
    }
    (a - b).exp().ln_1p() + b
}

/// ln(erfc(x)), accurate where erfc underflows (asymptotic series for large x).
pub(crate) fn log_erfc(x: f64) -> f64 {
    if x < 25.0 {
        libm::erfc(x).ln()
    } else {
        let x2 = x * x;
        let inv = 1.0 / (2.0 * x2);
        // erfc(x) ≈ e^{-x²}/(x√π) · (1 − 1/(2x²) + 3/(4x⁴) − 15/(8x⁶) + 105/(16x⁸))
        let series = 1.0 - inv + 3.0 * inv * inv - 15.0 * inv.powi(3) + 105.0 * inv.powi(4);
        -x2 - (x * std::f64::consts::PI.sqrt()).ln() + series.ln()
    }
}

/// ln C(n, k) for integers.
fn log_comb(n: f64, k: f64) -> f64 {
    libm::lgamma(n + 1.0) - libm::lgamma(k + 1.0) - libm::lgamma(n - k + 1.0)
}

/// ln A_α for integer α: ln Σ_k C(α,k) (1−q)^{α−k} q^k exp((k²−k)/(2σ²)).
fn log_a_int(q: f64, sigma: f64, alpha: u64) -> f64 {
    let (lq, l1q) = (q.ln(), (-q).ln_1p());
    let s2 = 2.0 * sigma * sigma;
    let mut acc = f64::NEG_INFINITY;
    let a = alpha as f64;
    for k in 0..=alpha {
        let kf = k as f64;
        let t = log_comb(a, kf) + kf * lq + (a - kf) * l1q + (kf * kf - kf) / s2;
        acc = log_add(acc, t);
    }
    acc
}

/// Most terms of the fractional series before the order is given up on (+∞).
const MAX_FRAC_TERMS: usize = 1000;

/// ln A_α for fractional α: the two-sided series of MTZ 2019 §3.3, summed with the
/// absolute values of the binomial coefficients C(α, i) (as dp-accounting does). Every
/// term is then non-negative, so the sum is an upper bound on A_α: conservative, and
/// free of the cancellation a signed sum suffers. `None` when the terms have not fallen
/// 30 nats below the total within [`MAX_FRAC_TERMS`] terms.
fn log_a_frac(q: f64, sigma: f64, alpha: f64) -> Option<f64> {
    let (lq, l1q) = (q.ln(), (-q).ln_1p());
    let s2 = 2.0 * sigma * sigma;
    let z0 = sigma * sigma * (1.0 / q - 1.0).ln() + 0.5;
    let sq2s = std::f64::consts::SQRT_2 * sigma;
    let (mut a0, mut a1) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    let (mut last0, mut last1) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    for i in 0..MAX_FRAC_TERMS {
        let fi = i as f64;
        let log_coef = log_comb(alpha, fi);
        let j = alpha - fi;
        let t0 = log_coef + fi * lq + j * l1q;
        let t1 = log_coef + j * lq + fi * l1q;
        let e0 = 0.5f64.ln() + log_erfc((fi - z0) / sq2s);
        let e1 = 0.5f64.ln() + log_erfc((z0 - j) / sq2s);
        let s0 = t0 + (fi * fi - fi) / s2 + e0;
        let s1 = t1 + (j * j - j) / s2 + e1;
        a0 = log_add(a0, s0);
        a1 = log_add(a1, s1);
        let total = log_add(a0, a1);
        if s0 < last0 && s1 < last1 && s0.max(s1) < total - 30.0 {
            return Some(total);
        }
        last0 = s0;
        last1 = s1;
    }
    None
}

/// RDP of one step of the Poisson-subsampled Gaussian mechanism (sampling rate `q`,
/// noise multiplier `sigma` = noise std / L2 sensitivity) at each order.
pub fn subsampled_gaussian(q: f64, sigma: f64, orders: &[f64]) -> Vec<f64> {
    orders
        .iter()
        .map(|&a| subsampled_gaussian_at(q, sigma, a))
        .collect()
}

fn subsampled_gaussian_at(q: f64, sigma: f64, alpha: f64) -> f64 {
    if q <= 0.0 {
        return 0.0;
    }
    if sigma <= 0.0 || alpha.is_infinite() {
        return f64::INFINITY;
    }
    if q >= 1.0 {
        return alpha / (2.0 * sigma * sigma);
    }
    let log_a = if alpha.fract() == 0.0 {
        Some(log_a_int(q, sigma, alpha as u64))
    } else {
        log_a_frac(q, sigma, alpha)
    };
    match log_a {
        Some(la) if la.is_finite() => (la / (alpha - 1.0)).max(0.0),
        Some(la) if la == f64::NEG_INFINITY => 0.0,
        _ => f64::INFINITY,
    }
}

/// RDP of a ρ-zCDP mechanism: αρ.
pub fn zcdp(rho: f64, orders: &[f64]) -> Vec<f64> {
    orders.iter().map(|a| a * rho).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_erfc_is_continuous_at_the_switch() {
        let a = libm::erfc(24.999).ln();
        let b = log_erfc(25.0);
        assert!((a - b).abs() < 0.06, "{a} {b}");
        let c = log_erfc(25.0 - 1e-9);
        assert!(((c - b) / b).abs() < 1e-9, "{c} {b}");
    }

    #[test]
    fn q_one_is_the_gaussian() {
        let r = subsampled_gaussian(1.0, 2.0, &[2.0, 10.5]);
        assert_eq!(r, vec![2.0 / 8.0, 10.5 / 8.0]);
        assert_eq!(subsampled_gaussian(0.0, 2.0, &[2.0]), vec![0.0]);
        assert!(subsampled_gaussian(0.1, 0.0, &[2.0])[0].is_infinite());
    }
}
