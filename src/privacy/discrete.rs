//! Exact discrete noise for integer releases: the discrete Gaussian and the discrete
//! Laplace of Canonne, Kamath & Steinke ("The Discrete Gaussian for Differential Privacy",
//! NeurIPS 2020, Algorithms 1–3), on integers only, driven by the run's CSPRNG.
//!
//! Why not a float sample added to a count: the low-order bits of `count + z` in floating
//! point depend on `count` (a large count leaves fewer fractional bits), which can reveal
//! the exact count whatever σ says (Mironov 2012; Jin et al. 2022 for Gaussian samplers).
//! Here the released value is `count + Z` with `Z` an exact integer draw that never sees
//! the count, so the release is an integer whose noise has the stated pmf exactly.
//!
//! Why written here rather than taken from a crate: the vetted implementation (OpenDP's
//! samplers) comes inside the `opendp` crate, whose build pulls in a large dependency tree
//! and its own FFI layer for a few dozen lines; the algorithms are short and their tests
//! below check the samplers against the exact pmf. No floating-point number is used on
//! the sampling path: Bernoulli trials are uniform integers compared with integers.
//!
//! The noise parameter is a rational. A caller's σ (a float) becomes σ² = ⌈σ²·2¹⁶⌉/2¹⁶,
//! never below the planned σ², so the noise is at least as large as accounted; the PLD
//! accountant builds its distribution from this same rational ([`DiscreteGaussian::variance`]).
//!
//! Arithmetic is in u128. The discrete Gaussian's acceptance test squares a number that
//! grows with the Laplace proposal; a proposal so far out that the square would overflow
//! (beyond 280·t for the largest σ allowed, [`MAX_STD`]) is rejected, an event of
//! probability below e⁻²⁸⁰ per proposal: the sampler's distance to the exact pmf is below
//! 10⁻¹²⁰.

use rand::RngCore;

/// Denominator of the rational σ².
const DENOMINATOR: u128 = 1 << 16;
/// The largest σ a count release may use (a count with more noise says nothing; the
/// u128 arithmetic is exact up to here, see the module doc).
pub const MAX_STD: f64 = 1e6;

/// A uniform integer in [0, n) for n ≥ 1: rejection from the smallest power-of-two range,
/// so every value has probability exactly 1/n.
pub(super) fn uniform_below<R: RngCore + ?Sized>(rng: &mut R, n: u128) -> u128 {
    if n <= 1 {
        return 0;
    }
    let bits = 128 - (n - 1).leading_zeros();
    let mask = if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    };
    loop {
        let x = ((u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64())) & mask;
        if x < n {
            return x;
        }
    }
}

/// Bernoulli(num / den), 0 ≤ num ≤ den, den ≥ 1.
fn bernoulli<R: RngCore + ?Sized>(rng: &mut R, num: u128, den: u128) -> bool {
    uniform_below(rng, den) < num
}

/// Bernoulli(exp(−num/den)) for num/den ∈ [0, 1] (CKS Algorithm 1, first case).
/// `None` when den·k overflows (k is geometric with mean below e: never in practice).
fn bernoulli_exp_neg_small<R: RngCore + ?Sized>(rng: &mut R, num: u128, den: u128) -> Option<bool> {
    let mut k: u128 = 1;
    loop {
        let d = den.checked_mul(k)?;
        if !bernoulli(rng, num, d) {
            break;
        }
        k += 1;
    }
    Some(k % 2 == 1)
}

/// Bernoulli(exp(−num/den)) for any num/den ≥ 0 (CKS Algorithm 1): one Bernoulli(e⁻¹) per
/// whole unit of the exponent, then the fractional rest.
pub(super) fn bernoulli_exp_neg<R: RngCore + ?Sized>(
    rng: &mut R,
    num: u128,
    den: u128,
) -> Option<bool> {
    let mut rest = num;
    while rest > den {
        if !bernoulli_exp_neg_small(rng, 1, 1)? {
            return Some(false);
        }
        rest -= den;
    }
    bernoulli_exp_neg_small(rng, rest, den)
}

/// The discrete Laplace with scale t/s (pmf ∝ exp(−|x|·s/t) on the integers), s, t ≥ 1
/// (CKS Algorithm 2).
fn discrete_laplace_rational<R: RngCore + ?Sized>(rng: &mut R, s: u128, t: u128) -> Option<i128> {
    loop {
        let u = uniform_below(rng, t);
        if !bernoulli_exp_neg(rng, u, t)? {
            continue;
        }
        let mut v: u128 = 0;
        while bernoulli_exp_neg(rng, 1, 1)? {
            v += 1;
        }
        let x = u.checked_add(t.checked_mul(v)?)?;
        let y = x / s;
        let negative = bernoulli(rng, 1, 2);
        if negative && y == 0 {
            continue;
        }
        let y = i128::try_from(y).ok()?;
        return Some(if negative { -y } else { y });
    }
}

/// Exact discrete Gaussian noise N_ℤ(0, σ²): pmf ∝ exp(−x²/(2σ²)) on the integers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiscreteGaussian {
    /// σ² = num / [`DENOMINATOR`].
    num: u128,
    /// The Laplace proposal's scale, ⌊σ⌋ + 1 (any positive integer is correct; this one
    /// is efficient).
    t: u128,
}

impl DiscreteGaussian {
    /// Noise of standard deviation parameter at least `std` (σ² rounded up to a multiple
    /// of 2⁻¹⁶). `None` unless 0 < std ≤ [`MAX_STD`].
    pub fn new(std: f64) -> Option<Self> {
        if !(std.is_finite() && std > 0.0 && std <= MAX_STD) {
            return None;
        }
        // ×2¹⁶ is exact in floating point; +1 covers the rounding of std·std.
        let num = ((std * std) * DENOMINATOR as f64).ceil() as u128 + 1;
        let t = (std.floor() as u128) + 1;
        Some(Self { num, t })
    }

    /// The exact σ² the samples have, as a float (for the accountant's distributions).
    pub fn variance(&self) -> f64 {
        self.num as f64 / DENOMINATOR as f64
    }

    /// One draw (CKS Algorithm 3).
    pub fn sample<R: RngCore + ?Sized>(&self, rng: &mut R) -> i64 {
        let (num, den, t) = (self.num, DENOMINATOR, self.t);
        // γ(y) = (|y| − σ²/t)² / (2σ²) = (|y|·den·t − num)² / (2·num·den·t²).
        let scale = den * t;
        let denom = 2 * num * den * t * t;
        loop {
            let Some(y) = discrete_laplace_rational(rng, 1, t) else {
                continue;
            };
            let Some(a) = y.unsigned_abs().checked_mul(scale) else {
                continue;
            };
            let Some(sq) = a.abs_diff(num).checked_pow(2) else {
                continue;
            };
            if bernoulli_exp_neg(rng, sq, denom) == Some(true) {
                // |y| < 2⁶³ whenever the square above did not overflow.
                return i64::try_from(y).unwrap_or(0);
            }
        }
    }

    /// `count` plus one draw: the exact integer release of a count.
    pub fn release<R: RngCore + ?Sized>(&self, count: u64, rng: &mut R) -> i64 {
        i64::try_from(count)
            .unwrap_or(i64::MAX)
            .saturating_add(self.sample(rng))
    }

    /// P(Z > k) for k ≥ 0, from the exact pmf (for thresholds on released counts).
    pub fn upper_tail(&self, k: u64) -> f64 {
        let pmf = self.pmf_weights();
        let tail: f64 = pmf.iter().skip(k as usize + 1).sum();
        tail / mass(&pmf)
    }

    /// The unnormalised pmf exp(−x²/(2σ²)) at x = 0, 1, …, until it falls below 1e-300
    /// (the rest of the mass is below anything a δ can resolve).
    fn pmf_weights(&self) -> Vec<f64> {
        let v = self.variance();
        let mut w = Vec::new();
        let mut x = 0f64;
        loop {
            let p = (-(x * x) / (2.0 * v)).exp();
            if p < 1e-300 {
                break;
            }
            w.push(p);
            x += 1.0;
        }
        w
    }

    /// The normalised pmf on −k..=k with k = the support where it exceeds 1e-300:
    /// (values, probabilities), for the PLD accountant.
    pub fn pmf(&self) -> (Vec<i64>, Vec<f64>) {
        let w = self.pmf_weights();
        let total = mass(&w);
        let k = w.len() as i64 - 1;
        let xs: Vec<i64> = (-k..=k).collect();
        let ps = xs
            .iter()
            .map(|x| w[x.unsigned_abs() as usize] / total)
            .collect();
        (xs, ps)
    }
}

/// The whole mass of a symmetric pmf given by its weights at 0, 1, 2, …
fn mass(weights: &[f64]) -> f64 {
    weights
        .iter()
        .enumerate()
        .map(|(x, w)| if x == 0 { *w } else { 2.0 * w })
        .sum()
}

/// Exact discrete Laplace noise with scale b (pmf ∝ exp(−|x|/b)): ε = 1/b pure DP for a
/// count of sensitivity 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiscreteLaplace {
    /// b = t / [`DENOMINATOR`].
    t: u128,
}

impl DiscreteLaplace {
    /// Noise of scale at least `scale` (rounded up to a multiple of 2⁻¹⁶). `None` unless
    /// 0 < scale ≤ [`MAX_STD`].
    pub fn new(scale: f64) -> Option<Self> {
        if !(scale.is_finite() && scale > 0.0 && scale <= MAX_STD) {
            return None;
        }
        Some(Self {
            t: (scale * DENOMINATOR as f64).ceil() as u128 + 1,
        })
    }

    /// The exact scale the samples have.
    pub fn scale(&self) -> f64 {
        self.t as f64 / DENOMINATOR as f64
    }

    pub fn sample<R: RngCore + ?Sized>(&self, rng: &mut R) -> i64 {
        loop {
            if let Some(y) = discrete_laplace_rational(rng, DENOMINATOR, self.t) {
                if let Ok(y) = i64::try_from(y) {
                    return y;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn rng(seed: u64) -> StdRng {
        StdRng::seed_from_u64(seed)
    }

    /// Total variation between the empirical histogram of `draws` and `pmf(x)`.
    fn tv(draws: &[i64], pmf: impl Fn(i64) -> f64) -> f64 {
        let mut counts = std::collections::BTreeMap::<i64, f64>::new();
        for d in draws {
            *counts.entry(*d).or_default() += 1.0;
        }
        let n = draws.len() as f64;
        let lo = draws.iter().min().copied().unwrap_or(0).min(-60);
        let hi = draws.iter().max().copied().unwrap_or(0).max(60);
        (lo..=hi)
            .map(|x| (counts.get(&x).copied().unwrap_or(0.0) / n - pmf(x)).abs())
            .sum::<f64>()
            / 2.0
    }

    #[test]
    fn uniform_and_bernoulli_are_exact_in_frequency() {
        let mut r = rng(1);
        let mut c = [0u32; 3];
        for _ in 0..30_000 {
            c[uniform_below(&mut r, 3) as usize] += 1;
        }
        for x in c {
            assert!((x as f64 - 10_000.0).abs() < 400.0, "{c:?}");
        }
        // exp(−1/2) ≈ 0.6065.
        let hits = (0..40_000)
            .filter(|_| bernoulli_exp_neg(&mut r, 1, 2).unwrap())
            .count() as f64
            / 40_000.0;
        assert!((hits - (-0.5f64).exp()).abs() < 0.01, "{hits}");
        // exp(−2.5) through the whole-unit loop.
        let hits = (0..40_000)
            .filter(|_| bernoulli_exp_neg(&mut r, 5, 2).unwrap())
            .count() as f64
            / 40_000.0;
        assert!((hits - (-2.5f64).exp()).abs() < 0.006, "{hits}");
    }

    #[test]
    fn the_discrete_gaussian_matches_its_exact_pmf() {
        for (std, seed) in [(0.7, 2), (2.0, 3), (6.5, 4)] {
            let g = DiscreteGaussian::new(std).unwrap();
            let v = g.variance();
            assert!(v >= std * std && v < std * std + 1e-3, "{v}");
            let (xs, ps) = g.pmf();
            let pmf = |x: i64| xs.iter().position(|y| *y == x).map_or(0.0, |i| ps[i]);
            let mut r = rng(seed);
            let draws: Vec<i64> = (0..60_000).map(|_| g.sample(&mut r)).collect();
            let d = tv(&draws, pmf);
            // Sampling error of a 60,000-draw histogram over ~6σ cells is about 0.01.
            assert!(d < 0.02, "σ = {std}: total variation {d}");
            let mean = draws.iter().sum::<i64>() as f64 / draws.len() as f64;
            let var = draws
                .iter()
                .map(|x| (*x as f64 - mean).powi(2))
                .sum::<f64>()
                / draws.len() as f64;
            assert!(mean.abs() < 0.05 * std.max(1.0), "mean {mean}");
            // The discrete Gaussian's variance is at most σ² (CKS Prop. 19).
            assert!(var < v * 1.05, "variance {var} vs σ² {v}");
        }
        // A large σ: the moments still match.
        let g = DiscreteGaussian::new(1_000.0).unwrap();
        let mut r = rng(5);
        let draws: Vec<f64> = (0..20_000).map(|_| g.sample(&mut r) as f64).collect();
        let sd = (draws.iter().map(|x| x * x).sum::<f64>() / draws.len() as f64).sqrt();
        assert!((sd / 1_000.0 - 1.0).abs() < 0.03, "{sd}");
    }

    #[test]
    fn the_discrete_laplace_matches_its_exact_pmf() {
        let l = DiscreteLaplace::new(1.5).unwrap();
        let b = l.scale();
        let z: f64 = (1.0 + (-1.0 / b).exp()) / (1.0 - (-1.0 / b).exp());
        let pmf = |x: i64| (-(x.abs() as f64) / b).exp() / z;
        let mut r = rng(6);
        let draws: Vec<i64> = (0..60_000).map(|_| l.sample(&mut r)).collect();
        let d = tv(&draws, pmf);
        assert!(d < 0.02, "total variation {d}");
    }

    /// The point of exact noise: the released integer is the count plus a draw that never
    /// saw the count, so its low bits say nothing about it. A float sample added to a
    /// count does not have that property: at a count of 2⁴⁰ the sum keeps no bits below
    /// 2⁻¹², while the noise alone keeps many, so the low bits tell the counts apart.
    #[test]
    fn low_bits_of_a_released_count_carry_nothing_about_it() {
        let g = DiscreteGaussian::new(3.0).unwrap();
        let counts = [0u64, 1, 1_000, 1 << 40];
        for seed in 0..200 {
            let noise: Vec<i64> = counts
                .iter()
                .map(|c| g.release(*c, &mut rng(seed)) - *c as i64)
                .collect();
            assert!(noise.windows(2).all(|w| w[0] == w[1]), "{noise:?}");
        }
        // The float mechanism this replaces: the fractional bits of count + z below 2⁻¹²
        // are all zero at a count of 1.5·2⁴⁰ (its binade's spacing is 2⁻¹²) and almost
        // never at count 0.
        use rand_distr::{Distribution, StandardNormal};
        let mut r = rng(7);
        let fine = |x: f64| (x * 4096.0).fract() != 0.0;
        let big = (3u64 << 39) as f64;
        let mut tells = 0;
        for _ in 0..1_000 {
            let z: f64 = StandardNormal.sample(&mut r);
            let z = 3.0 * z;
            if fine(0.0 + z) && !fine(big + z) {
                tells += 1;
            }
        }
        assert!(tells > 990, "{tells}");
    }

    #[test]
    fn tails_and_limits() {
        let g = DiscreteGaussian::new(2.0).unwrap();
        // P(Z > 0) is just under a half; the tail falls fast.
        let p0 = g.upper_tail(0);
        assert!(p0 > 0.35 && p0 < 0.5, "{p0}");
        assert!(g.upper_tail(10) < 1e-5);
        assert!(g.upper_tail(10) > 0.0);
        assert!(DiscreteGaussian::new(0.0).is_none());
        assert!(DiscreteGaussian::new(f64::NAN).is_none());
        assert!(DiscreteGaussian::new(2e6).is_none());
        assert!(DiscreteLaplace::new(-1.0).is_none());
    }
}
