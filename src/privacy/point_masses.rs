//! A DP estimate of a number column's point masses: the exact values many rows hold (0
//! capital gains, 40 hours a week, a top code), for a column whose schema names none.
//!
//! The values come from the rows, so a value held by one person must never come out: it
//! is the category estimate ([`super::estimators`]) run on the column's exact values.
//! Each distinct value is a key of a histogram; every count gets exact discrete Gaussian
//! noise N_ℤ(0, std²), and only keys whose noisy count passes the threshold τ of
//! [`category_threshold`] may be released (DP partition selection). Adding or removing one
//! record moves one key's count by one: **L2 sensitivity 1**; a value held by one record
//! passes with probability at most δ∞. Accounted as
//! [`Mechanism::ThresholdedDiscreteGaussian`] `{ std, delta_inf }`
//! ([`point_mass_mechanism`]), charged once per column before the rows are read.
//!
//! Of the keys that pass, a value is a point mass when its noisy count is at least
//! [`POINT_MASS_SHARE`] of the public row count, the most common first, at most the
//! caller's limit (the schema's): post-processing of the noisy counts with public rules.

use rand::RngCore;

use super::discrete::DiscreteGaussian;
use super::estimators::category_threshold;
use super::mechanism::Mechanism;

/// Share of a column's rows a value must hold (by its noisy count) to be kept exactly: a
/// value this common is one a reader notices when it is missing (0 gains, 40 hours).
pub const POINT_MASS_SHARE: f64 = 0.05;

/// The mechanism [`estimate_point_masses`] runs.
pub fn point_mass_mechanism(std: f64, delta_inf: f64) -> Mechanism {
    Mechanism::ThresholdedDiscreteGaussian { std, delta_inf }
}

/// The exact count of every distinct finite value (−0 counted as 0), in increasing
/// order of value: private, the input of the noisy release.
pub fn value_counts(values: &[Option<f64>]) -> Vec<(f64, u64)> {
    let mut sorted: Vec<f64> = values
        .iter()
        .flatten()
        .filter(|x| x.is_finite())
        .map(|x| if *x == 0.0 { 0.0 } else { *x })
        .collect();
    sorted.sort_by(f64::total_cmp);
    let mut out: Vec<(f64, u64)> = Vec::new();
    for x in sorted {
        match out.last_mut() {
            Some((v, c)) if *v == x => *c += 1,
            _ => out.push((x, 1)),
        }
    }
    out
}

/// The column's point masses, increasing (see the module doc for sensitivity and
/// accounting). `values` holds `None` for blank cells; `n` is the public row count (the
/// user's figure when they gave one); `most` caps how many are kept. Charge [`point_mass_mechanism`]`(std, delta_inf)`
/// once before calling; a σ the sampler refuses releases nothing (fail closed).
pub fn estimate_point_masses(
    values: &[Option<f64>],
    std: f64,
    delta_inf: f64,
    n: f64,
    most: usize,
    rng: &mut dyn RngCore,
) -> Vec<f64> {
    let Some(g) = DiscreteGaussian::new(std) else {
        return Vec::new();
    };
    let tau = category_threshold(std, delta_inf);
    let least = POINT_MASS_SHARE * n;
    use super::probe::{Norm, Value, noise_call};
    let counts = value_counts(values);
    let mut own = super::estimators::keyed_draws(rng);
    let rng = &mut own;
    // Keyed by the value's exact bits, so the key is the value itself.
    let key = |x: f64| format!("{:016x}", x.to_bits());
    let released: Vec<(String, f64)> = noise_call(
        "point-masses",
        (Norm::L2, 1.0),
        || Mechanism::ThresholdedDiscreteGaussian {
            std: g.variance().sqrt(),
            delta_inf,
        },
        || Value::Keyed(counts.iter().map(|(x, c)| (key(*x), *c as f64)).collect()),
        || {
            counts
                .iter()
                .map(|(x, c)| (key(*x), g.release(*c, rng) as f64))
                .filter(|(_, noisy)| *noisy > tau && *noisy >= least)
                .collect()
        },
    );
    let mut kept: Vec<(f64, f64)> = released
        .iter()
        .filter_map(|(k, c)| Some((*c, f64::from_bits(u64::from_str_radix(k, 16).ok()?))))
        .collect();
    kept.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.total_cmp(&b.1)));
    kept.truncate(most);
    let mut out: Vec<f64> = kept.into_iter().map(|(_, x)| x).collect();
    out.sort_by(f64::total_cmp);
    out
}

/// The values a column with public bounds is checked for when its schema names none: 0
/// (when inside the bounds) and the two bounds, the values a codebook's "none", floor and
/// top code sit at. Public (the bounds are), so their counts need no threshold.
pub fn public_candidates(lower: f64, upper: f64) -> Vec<f64> {
    let mut out = Vec::new();
    for x in [0.0, lower, upper] {
        if x >= lower && x <= upper && !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// Which of the public `candidates` are point masses: each one's count among `values`
/// plus exact discrete Gaussian noise N_ℤ(0, std²), kept when the noisy count reaches
/// [`POINT_MASS_SHARE`] of the public row count `n` and stands clear of the noise (3σ).
/// The candidates are public and distinct, so a record sits in at most one count: adding
/// or removing it moves one count by one, **L2 sensitivity 1**, with no infinite-loss
/// part (nothing is selected from the rows): accounted as
/// [`Mechanism::DiscreteGaussian`] `{ std }`, charged once per column before the rows are
/// read ([`candidate_mechanism`]). A value one person holds comes out only as noise lets
/// any value out, and it is a public candidate, not a value read off the rows.
pub fn estimate_candidate_masses(
    values: &[Option<f64>],
    candidates: &[f64],
    std: f64,
    n: f64,
    rng: &mut dyn RngCore,
) -> Vec<f64> {
    let Some(g) = DiscreteGaussian::new(std) else {
        return Vec::new();
    };
    let counts: Vec<u64> = candidates
        .iter()
        .map(|c| values.iter().filter(|v| **v == Some(*c)).count() as u64)
        .collect();
    use super::probe::{Norm, Value, noise_call};
    let noisy: Vec<f64> = noise_call(
        "exact-candidates",
        (Norm::L2, 1.0),
        || Mechanism::DiscreteGaussian {
            std: g.variance().sqrt(),
        },
        || Value::Dense(counts.iter().map(|c| *c as f64).collect()),
        || counts.iter().map(|c| g.release(*c, rng) as f64).collect(),
    );
    let least = (POINT_MASS_SHARE * n).max(3.0 * std);
    let mut out: Vec<f64> = candidates
        .iter()
        .zip(&noisy)
        .filter(|(_, c)| **c >= least)
        .map(|(x, _)| *x)
        .collect();
    out.sort_by(f64::total_cmp);
    out
}

/// The mechanism [`estimate_candidate_masses`] runs.
pub fn candidate_mechanism(std: f64) -> Mechanism {
    Mechanism::DiscreteGaussian { std }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    /// A zero-inflated column: 90 % zeros, 6 % at a top code, the rest spread thin, and
    /// one person's unique value.
    fn gains(n: usize) -> Vec<Option<f64>> {
        (0..n)
            .map(|i| match i % 100 {
                0..=89 => Some(0.0),
                90..=95 => Some(99_999.0),
                96 => None,
                k => Some(1_000.0 * (i as f64) + k as f64),
            })
            .chain([Some(-0.0), Some(123_456.5)])
            .collect()
    }

    #[test]
    fn common_values_come_out_exactly_and_rare_ones_never() {
        let v = gains(20_000);
        let mut rng = StdRng::seed_from_u64(5);
        for _ in 0..200 {
            let m = estimate_point_masses(&v, 20.0, 1e-7, v.len() as f64, 32, &mut rng);
            assert_eq!(m, vec![0.0, 99_999.0]);
            assert!(m[0].is_sign_positive(), "−0 is counted as 0");
        }
        // Too few rows for anything to clear the threshold: nothing comes out.
        let few = gains(40);
        let m = estimate_point_masses(&few, 20.0, 1e-7, few.len() as f64, 32, &mut rng);
        assert!(m.is_empty(), "{m:?}");
    }

    /// The slow, obviously correct check of the sensitivity on neighbouring tables:
    /// removing any one row (a blank, a common value, a unique one) changes the exact
    /// histogram by one in one key, or not at all for a blank.
    #[test]
    fn neighbouring_tables_differ_in_one_count_by_one() {
        let rows = gains(300);
        let full = value_counts(&rows);
        for drop in 0..rows.len() {
            let mut less = rows.clone();
            less.remove(drop);
            let near = value_counts(&less);
            let count = |h: &[(f64, u64)], x: f64| {
                h.iter().find(|(v, _)| *v == x).map_or(0, |(_, c)| *c) as i64
            };
            let l1: i64 = full
                .iter()
                .map(|(x, c)| (*c as i64 - count(&near, *x)).abs())
                .sum();
            assert!(near.iter().all(|(x, _)| count(&full, *x) > 0));
            let expect = i64::from(rows[drop].is_some());
            assert_eq!(l1, expect, "removing row {drop} ({:?})", rows[drop]);
        }
    }

    /// On neighbouring tables that differ by one person with a value nobody else holds,
    /// the release differs only when that value comes out: measured over many draws, it
    /// never does at δ∞ = 1e-7, and the exact chance under the sampler's pmf is ≤ δ∞.
    /// The common values come out alike on both tables.
    #[test]
    fn one_added_person_changes_the_release_at_most_with_delta_inf() {
        let std = 3.0;
        let delta_inf = 1e-7;
        let base: Vec<Option<f64>> = (0..400).map(|i| Some((i % 2) as f64 * 40.0)).collect();
        let mut with = base.clone();
        with.push(Some(37.25));
        let g = DiscreteGaussian::new(std).unwrap();
        let tau = category_threshold(std, delta_inf);
        assert!(g.upper_tail(tau as u64 - 1) <= delta_inf);
        let mut rng = StdRng::seed_from_u64(11);
        for _ in 0..5_000 {
            let a = estimate_point_masses(&base, std, delta_inf, 400.0, 32, &mut rng);
            let b = estimate_point_masses(&with, std, delta_inf, 400.0, 32, &mut rng);
            assert_eq!(a, vec![0.0, 40.0]);
            assert_eq!(b, vec![0.0, 40.0]);
        }
    }

    #[test]
    fn at_most_the_limit_in_increasing_order() {
        let v: Vec<Option<f64>> = (0..10_000).map(|i| Some((i % 20) as f64)).collect();
        let mut rng = StdRng::seed_from_u64(1);
        let m = estimate_point_masses(&v, 2.0, 1e-7, 2_000.0, 32, &mut rng);
        assert_eq!(m.len(), 20, "each of 20 values is common: {m:?}");
        let m = estimate_point_masses(&v, 2.0, 1e-7, 2_000.0, 8, &mut rng);
        assert_eq!(m.len(), 8);
        assert!(m.windows(2).all(|w| w[0] < w[1]));
    }

    /// A small table's zeros are found among the public candidates where the thresholded
    /// search would need more rows than hold them; a candidate few rows hold is not.
    #[test]
    fn public_candidates_find_a_small_tables_zeros() {
        assert_eq!(public_candidates(0.0, 5000.0), vec![0.0, 5000.0]);
        assert_eq!(public_candidates(30.0, 60.0), vec![30.0, 60.0]);
        assert_eq!(public_candidates(-5.0, 5.0), vec![0.0, -5.0, 5.0]);
        // 944 rows, 24 % of them 0, 1 % at the top: noise σ = 44 (a thresholded search at
        // this noise needs about 300 rows holding a value).
        let values: Vec<Option<f64>> = (0..944)
            .map(|i| match i % 100 {
                0..=23 => Some(0.0),
                24 => Some(7300.0),
                k => Some(k as f64 * 10.0),
            })
            .collect();
        let mut rng = StdRng::seed_from_u64(3);
        let found = estimate_candidate_masses(
            &values,
            &public_candidates(0.0, 7300.0),
            44.0,
            944.0,
            &mut rng,
        );
        assert_eq!(found, vec![0.0]);
        assert_eq!(
            candidate_mechanism(44.0),
            Mechanism::DiscreteGaussian { std: 44.0 }
        );
    }
}
