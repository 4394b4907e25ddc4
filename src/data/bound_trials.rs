//! What a private bound estimate would make of one number column, found before anything
//! is spent by running the estimator's post-processing on trial noise added to the
//! column's exact grid counts.
//!
//! The estimate is one noisy histogram ([`crate::privacy::estimators`]); where the noise
//! swamps the counts, the bounds land on values nobody has (an age of −100,000,000), cut
//! off a large part of the values, or the column is dropped. Whether that will happen
//! depends on the rows, so only the data's owner may be told: this reads the rows, runs
//! on this machine, and its verdict is never released. The trial noise comes from a fixed
//! seed, never from the run's generator, and no trial is a release.

use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::privacy::estimators::{bound_grid, cell_of, noisy_counts, number_domain};

/// Trial estimates per column.
pub const TRIALS: usize = 40;

/// Share of the trials that must go wrong for the column to be named.
pub const NAMED_AT: f64 = 0.1;

/// A column's exact grid counts ([`crate::privacy::estimators::number_counts`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NumberProfile {
    pub cells: Vec<[u64; 2]>,
    pub missing: u64,
}

/// How the trial estimates of one column went.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trials {
    /// No bounds came out: the column would be dropped.
    pub dropped: usize,
    /// A bound more than a decade beyond every value (or of the wrong sign).
    pub wild: usize,
    /// The bounds cut off more than [`CLIPPED_SHARE`] of the values.
    pub clipped: usize,
    /// The first trial that went wrong, in words ("[−200, 0] lies far from the values").
    pub example: Option<String>,
}

/// Share of the values the bounds may leave outside before a trial counts as clipped (the
/// estimate aims at the 1st and 99th percentiles, so 2 % is expected).
pub const CLIPPED_SHARE: f64 = 0.05;

impl Trials {
    /// Whether the estimate goes wrong often enough to name the column.
    pub fn unreliable(&self) -> bool {
        (self.wild + self.clipped) as f64 > NAMED_AT * TRIALS as f64
    }

    /// Whether the column is dropped in most trials.
    pub fn mostly_dropped(&self) -> bool {
        2 * self.dropped > TRIALS
    }
}

/// Runs [`TRIALS`] estimates of a column with counts `p` at noise `std`, `n` the public
/// (or the file's) row count.
pub fn run(p: &NumberProfile, std: f64, n: f64) -> Trials {
    let grid = bound_grid();
    let mut out = Trials::default();
    let held: Vec<u64> = p.cells.iter().map(|c| c[0] + c[1]).collect();
    let total: u64 = held.iter().sum();
    let (Some(first), Some(last)) = (
        held.iter().position(|c| *c > 0),
        held.iter().rposition(|c| *c > 0),
    ) else {
        out.dropped = TRIALS;
        return out;
    };
    let mut rng = StdRng::seed_from_u64(0x5eed);
    for _ in 0..TRIALS {
        // A trial for the owner's eyes, not a release: the probe does not count it.
        let h = crate::privacy::probe::local(|| noisy_counts(&p.cells, p.missing, std, &mut rng));
        let Some((lower, upper)) = number_domain(&h, std, n).bounds else {
            out.dropped += 1;
            continue;
        };
        let (lo, hi) = (cell_of(&grid, lower) + 1, cell_of(&grid, upper));
        if lo + DECADE < first || hi > last + DECADE || sign_flips(&grid, first, last, lower, upper)
        {
            out.wild += 1;
            out.example
                .get_or_insert_with(|| format!("{} lies far from the values", shown(lower, upper)));
            continue;
        }
        let outside: u64 = held
            .iter()
            .enumerate()
            .filter(|(i, _)| *i < lo || *i > hi)
            .map(|(_, c)| c)
            .sum();
        let share = outside as f64 / total as f64;
        if share > CLIPPED_SHARE {
            out.clipped += 1;
            out.example.get_or_insert_with(|| {
                format!(
                    "{} leaves {:.0} % of the values outside",
                    shown(lower, upper),
                    100.0 * share
                )
            });
        }
    }
    out
}

fn shown(lower: f64, upper: f64) -> String {
    use crate::util::fmt::number;
    format!("[{}, {}]", number(lower), number(upper))
}

/// Grid steps in a decade (1, 2, 5).
const DECADE: usize = 3;

/// A lower bound below zero for values that are all positive, or an upper bound above
/// zero for values that are all negative (cells as [`cell_of`]; cell `z` holds 0).
fn sign_flips(grid: &[f64], first: usize, last: usize, lower: f64, upper: f64) -> bool {
    let z = cell_of(grid, 0.0);
    let near_zero = grid[z.saturating_sub(1)];
    (first >= z && lower < near_zero) || (last < z && upper > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::estimators::number_counts;

    fn profile(values: &[Option<f64>]) -> NumberProfile {
        let (cells, missing) = number_counts(values);
        NumberProfile { cells, missing }
    }

    #[test]
    fn ages_of_many_people_at_small_noise_are_estimated_well() {
        let v: Vec<Option<f64>> = (0..20_000).map(|i| Some(17.0 + (i % 70) as f64)).collect();
        let t = run(&profile(&v), 5.0, v.len() as f64);
        assert_eq!(t, Trials::default());
        assert!(!t.unreliable());
    }

    #[test]
    fn a_few_thousand_rows_under_heavy_noise_are_named() {
        let v: Vec<Option<f64>> = (0..3_000).map(|i| Some(17.0 + (i % 70) as f64)).collect();
        let t = run(&profile(&v), 190.0, v.len() as f64);
        assert!(t.unreliable() || t.mostly_dropped(), "{t:?}");
    }
}
