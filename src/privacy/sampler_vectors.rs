//! Statistical test vectors for the exact samplers, in the style of trusted DP libraries:
//! a million seeded draws of each, and a chi-square goodness-of-fit test against the exact
//! distribution whose acceptance threshold is fixed in advance (the 1 − 10⁻⁶ quantile of
//! its chi-square law, so a correct sampler fails one seed in a million; the seed is fixed,
//! so the test cannot flake). A sampler off by a fraction of a percent in any cell that
//! holds a few hundred draws is caught.

use rand::SeedableRng;
use rand::rngs::StdRng;

use super::discrete::{DiscreteGaussian, DiscreteLaplace};
use super::exponential::{ROUNDING_ROOM, probabilities, select};

const DRAWS: usize = 1_000_000;
/// The standard normal quantile at 1 − 10⁻⁶.
const Z: f64 = 4.753_424;

/// The chi-square law's quantile at 1 − 10⁻⁶ with `df` degrees of freedom (Wilson and
/// Hilferty's cube-root approximation, within a fraction of a percent for df ≥ 3).
fn critical(df: usize) -> f64 {
    let k = df as f64;
    let h = 2.0 / (9.0 * k);
    k * (1.0 - h + Z * h.sqrt()).powi(3)
}

/// The chi-square statistic of `counts` (draws per cell) against `p` (each cell's exact
/// probability), cells expected to hold fewer than 20 draws pooled into one.
fn chi_square(counts: &[u64], p: &[f64]) -> (f64, usize) {
    let n = counts.iter().sum::<u64>() as f64;
    let (mut stat, mut cells) = (0.0, 0usize);
    let (mut pooled_o, mut pooled_e) = (0.0, 0.0);
    for (o, pi) in counts.iter().zip(p) {
        let e = n * pi;
        if e < 20.0 {
            pooled_o += *o as f64;
            pooled_e += e;
        } else {
            stat += (*o as f64 - e).powi(2) / e;
            cells += 1;
        }
    }
    if pooled_e > 0.0 {
        stat += (pooled_o - pooled_e).powi(2) / pooled_e.max(1e-300);
        cells += 1;
    }
    (stat, cells.saturating_sub(1))
}

/// Draws of an integer sampler binned over [-width, width] (the rest in the end cells).
fn binned(width: i64, mut draw: impl FnMut() -> i64) -> Vec<u64> {
    let mut counts = vec![0u64; (2 * width + 1) as usize];
    for _ in 0..DRAWS {
        let x = draw().clamp(-width, width);
        counts[(x + width) as usize] += 1;
    }
    counts
}

/// Each cell's probability of a symmetric pmf `f` on the integers, the end cells holding
/// their whole tails (`f` summed far out).
fn cells(width: i64, f: impl Fn(i64) -> f64) -> Vec<f64> {
    let far = 40 * width;
    let z: f64 = (-far..=far).map(&f).sum();
    let mut p: Vec<f64> = (-width..=width).map(|x| f(x) / z).collect();
    let tail: f64 = (width + 1..=far).map(&f).sum::<f64>() / z;
    p[0] += tail;
    let last = p.len() - 1;
    p[last] += tail;
    p
}

#[test]
fn the_discrete_gaussian_passes_a_million_draw_chi_square_test() {
    for (sigma, seed) in [(0.9, 11u64), (3.0, 12), (12.5, 13)] {
        let g = DiscreteGaussian::new(sigma).unwrap();
        let mut rng = StdRng::seed_from_u64(seed);
        let width = (6.0 * sigma).ceil() as i64;
        let counts = binned(width, || g.sample(&mut rng));
        // The exact σ² the sampler holds (σ² rounded up to a multiple of 2⁻¹⁶).
        let v = g.variance();
        let p = cells(width, |x| (-(x as f64).powi(2) / (2.0 * v)).exp());
        let (stat, df) = chi_square(&counts, &p);
        assert!(
            stat < critical(df),
            "σ = {sigma}: χ² = {stat:.1} on {df} df (threshold {:.1})",
            critical(df)
        );
    }
}

#[test]
fn the_discrete_laplace_passes_a_million_draw_chi_square_test() {
    for (scale, seed) in [(0.8, 21u64), (4.0, 22)] {
        let l = DiscreteLaplace::new(scale).unwrap();
        let b = l.scale();
        let mut rng = StdRng::seed_from_u64(seed);
        let width = (12.0 * b).ceil() as i64;
        let counts = binned(width, || l.sample(&mut rng));
        let p = cells(width, |x| (-(x.abs() as f64) / b).exp());
        let (stat, df) = chi_square(&counts, &p);
        assert!(
            stat < critical(df),
            "b = {b}: χ² = {stat:.1} on {df} df (threshold {:.1})",
            critical(df)
        );
    }
}

#[test]
fn the_exponential_mechanism_passes_a_million_draw_chi_square_test() {
    // Twelve candidates, one of them never drawn (−∞), at ε₀ = 1.3 and Δ = 0.5.
    let u = [
        0.1,
        0.4,
        0.45,
        2.0,
        1.1,
        -0.3,
        0.0,
        f64::NEG_INFINITY,
        0.9,
        1.7,
        0.2,
        1.0,
    ];
    for (monotone, seed) in [(false, 31u64), (true, 32)] {
        // The sampler keeps ROUNDING_ROOM of ε₀ back: it follows the weights at ε₀ − room.
        let p = probabilities(&u, 1.3 - ROUNDING_ROOM, 0.5, monotone);
        let mut rng = StdRng::seed_from_u64(seed);
        let mut counts = vec![0u64; u.len()];
        for _ in 0..DRAWS {
            counts[select(&u, 1.3, 0.5, monotone, &mut rng)] += 1;
        }
        assert_eq!(counts[7], 0, "a −∞ candidate was drawn");
        let keep: Vec<usize> = (0..u.len()).filter(|i| *i != 7).collect();
        let c: Vec<u64> = keep.iter().map(|i| counts[*i]).collect();
        let q: Vec<f64> = keep.iter().map(|i| p[*i]).collect();
        let (stat, df) = chi_square(&c, &q);
        assert!(
            stat < critical(df),
            "monotone {monotone}: χ² = {stat:.1} on {df} df (threshold {:.1})",
            critical(df)
        );
    }
}

/// The test above can fail: a sampler a little off (the Gaussian at σ·1.01) is caught.
#[test]
fn the_chi_square_test_catches_a_sampler_one_percent_off() {
    let (sigma, wrong) = (3.0, 3.03);
    let g = DiscreteGaussian::new(wrong).unwrap();
    let mut rng = StdRng::seed_from_u64(41);
    let width = (6.0f64 * sigma).ceil() as i64;
    let counts = binned(width, || g.sample(&mut rng));
    let p = cells(width, |x| {
        (-(x as f64).powi(2) / (2.0 * sigma * sigma)).exp()
    });
    let (stat, df) = chi_square(&counts, &p);
    assert!(
        stat > critical(df),
        "χ² = {stat:.1} on {df} df missed a 1 % error"
    );
}
