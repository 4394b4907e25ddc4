//! Two columns that are one fact written twice (education and its number, a country and
//! its code), found in the noisy counts of MST's and AIM's measured marginals.
//!
//! A fitted graphical model leaves mass on the cells of a pair's table that no row holds:
//! the noise on each of them is as likely up as down, and the fit keeps the ups. With
//! Adult's education × education-num measured at σ = 66, that put 4–7 % of the synthetic
//! people at a number their education never has. When a measured pair's noisy table is a
//! one-to-one map within its noise, the model keeps the map: its other cells become
//! structural zeros, as for a `->` rule the user writes (`structural.rs`), and the map
//! itself is the one the fitted model favours.
//!
//! The test reads only the noisy tables (DP outputs) and the public domain, so it is
//! post-processing and costs nothing. A pair passes when, in the table projected from the
//! measurement that sees it with the least noise:
//! - at least two cells are each the largest of both their row and their column and stand
//!   clearly above the noise (3σ): the matched levels;
//! - every row and column left unmatched holds no more than noise and one cell under that
//!   bar (3σ(√cells + 1) in total), so a level the map misses is one few rows hold;
//! - no other cell of a matched row or column rises above what the largest of that many
//!   zero-mean Gaussians would reach once in a thousand tables, and their sum is within
//!   3σ√cells of zero;
//! - the table's noisy total clears its own noise (3σ√cells) and the matched cells hold at
//!   least 90 % of it. On a small table whose every cell is within noise of zero, the
//!   lines' noise bounds alone would call almost anything "one-to-one" (a survey's hours
//!   and ages on 753 rows did, and the map's zeros emptied the model).
//!
//! A many-to-one pair (a state and its region) fails the first condition at the region's
//! column, and two merely associated columns fail the last; exceptions too few for the
//! noise to show are dropped along with the noise, as the user would by writing the map as a
//! rule.

use super::pgm::domain::Domain;
use super::pgm::estimate::Measurement;
use super::pgm::factor::{cells, strides};

/// How often a table that is exactly one-to-one may fail the off-cell maximum test.
const FALSE_ALARM: f64 = 1e-3;

/// A one-to-one pair of attributes: each left level's right level (`None`: unmatched),
/// and the right levels left unmatched.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pair {
    pub left: usize,
    pub right: usize,
    pub map: Vec<Option<usize>>,
    pub right_open: Vec<bool>,
}

/// Every attribute pair of `measured` whose noisy table is one-to-one (see the module).
pub(crate) fn found(measured: &[Measurement], sizes: &[usize]) -> Vec<Pair> {
    let mut out: Vec<Pair> = Vec::new();
    for a in 0..sizes.len() {
        for b in a + 1..sizes.len() {
            let Some((table, sigma)) = clearest(measured, sizes, a, b) else {
                continue;
            };
            if let Some((map, right_open)) = one_to_one(&table, sizes[a], sizes[b], sigma) {
                out.push(Pair {
                    left: a,
                    right: b,
                    map,
                    right_open,
                });
            }
        }
    }
    out
}

/// What the run log says of the pairs kept (`None`: none).
pub(crate) fn note(domain: &Domain, kept: &[(usize, usize)]) -> Option<String> {
    if kept.is_empty() {
        return None;
    }
    let names: Vec<String> = kept
        .iter()
        .map(|(a, b)| {
            format!(
                "{} and {}",
                domain.attributes[*a].name, domain.attributes[*b].name
            )
        })
        .collect();
    Some(format!(
        "one fact written twice in the noisy counts, kept one-to-one (no charge): {}",
        names.join("; ")
    ))
}

/// The noisy table of `a` × `b` (row-major, `a` the rows) from the measurement that holds
/// both with the least noise per cell, and that noise's standard deviation.
fn clearest(
    measured: &[Measurement],
    sizes: &[usize],
    a: usize,
    b: usize,
) -> Option<(Vec<f64>, f64)> {
    let m = measured
        .iter()
        .filter(|m| m.attrs.contains(&a) && m.attrs.contains(&b))
        .min_by(|x, y| per_cell_sigma(x, sizes, a, b).total_cmp(&per_cell_sigma(y, sizes, a, b)))?;
    let st = strides(sizes, &m.attrs);
    let (ia, ib) = (
        m.attrs.iter().position(|x| *x == a)?,
        m.attrs.iter().position(|x| *x == b)?,
    );
    let mut table = vec![0.0; sizes[a] * sizes[b]];
    for (cell, v) in m.noisy.iter().enumerate() {
        let la = cell / st[ia] % sizes[a];
        let lb = cell / st[ib] % sizes[b];
        table[la * sizes[b] + lb] += v;
    }
    Some((table, per_cell_sigma(m, sizes, a, b)))
}

/// The noise of one cell of `m` projected onto `a` × `b`: σ × √(cells summed into it).
fn per_cell_sigma(m: &Measurement, sizes: &[usize], a: usize, b: usize) -> f64 {
    let summed = cells(sizes, &m.attrs) / (sizes[a] * sizes[b]).max(1);
    m.sigma * (summed as f64).sqrt()
}

/// Whether the `rows` × `cols` noisy `table` is one-to-one within noise `sigma`; if so, each
/// row's matched column (`None`: unmatched) and the unmatched columns.
fn one_to_one(
    table: &[f64],
    rows: usize,
    cols: usize,
    sigma: f64,
) -> Option<(Vec<Option<usize>>, Vec<bool>)> {
    let at = |r: usize, c: usize| table[r * cols + c];
    let row_best: Vec<usize> = (0..rows)
        .map(|r| {
            (0..cols)
                .max_by(|x, y| at(r, *x).total_cmp(&at(r, *y)))
                .unwrap_or(0)
        })
        .collect();
    let col_best: Vec<usize> = (0..cols)
        .map(|c| {
            (0..rows)
                .max_by(|x, y| at(*x, c).total_cmp(&at(*y, c)))
                .unwrap_or(0)
        })
        .collect();
    let mut row_open = vec![true; rows];
    let mut col_open = vec![true; cols];
    for r in 0..rows {
        let c = row_best[r];
        if col_best[c] == r && at(r, c) > 3.0 * sigma {
            row_open[r] = false;
            col_open[c] = false;
        }
    }
    if row_open.iter().filter(|o| !**o).count() < 2 {
        return None;
    }
    // A level left unmatched holds no more than one cell that sank under the bar (3σ)
    // plus the noise of its line (3σ√cells).
    let small = |total: f64, cells: usize| total <= 3.0 * sigma * ((cells as f64).sqrt() + 1.0);
    let empty_row = |r: usize| small((0..cols).map(|c| at(r, c)).sum(), cols);
    let empty_col = |c: usize| small((0..rows).map(|r| at(r, c)).sum(), rows);
    if !(0..rows).all(|r| !row_open[r] || empty_row(r))
        || !(0..cols).all(|c| !col_open[c] || empty_col(c))
    {
        return None;
    }
    let off: Vec<f64> = (0..rows)
        .flat_map(|r| (0..cols).map(move |c| (r, c)))
        .filter(|&(r, c)| (!row_open[r] || !col_open[c]) && !(!row_open[r] && row_best[r] == c))
        .map(|(r, c)| at(r, c))
        .collect();
    let n = off.len().max(1) as f64;
    let ceiling = sigma * (2.0 * (n / FALSE_ALARM).ln()).sqrt();
    let sum: f64 = off.iter().sum();
    if off.iter().any(|v| *v > ceiling) || sum > 3.0 * sigma * n.sqrt() {
        return None;
    }
    let total: f64 = table.iter().sum();
    let matched: f64 = (0..rows)
        .filter(|r| !row_open[*r])
        .map(|r| at(r, row_best[r]))
        .sum();
    if total < 3.0 * sigma * (table.len() as f64).sqrt() || matched < 0.9 * total {
        return None;
    }
    let map = (0..rows)
        .map(|r| (!row_open[r]).then_some(row_best[r]))
        .collect();
    Some((map, col_open))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_distr::{Distribution, Normal};

    /// A noisy `rows` × `cols` table of `counts` with Gaussian noise of `sigma`.
    fn noisy(counts: &[f64], sigma: f64, seed: u64) -> Vec<f64> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let g = Normal::new(0.0, sigma).unwrap();
        counts.iter().map(|c| c + g.sample(&mut rng)).collect()
    }

    /// Adult's education × education-num: 16 levels, each number held by one education,
    /// the rarest 51 rows.
    fn adult_like() -> Vec<f64> {
        let sizes = [
            5355., 7291., 1175., 10501., 576., 1067., 1382., 514., 646., 433., 1723., 168., 933.,
            413., 333., 51.,
        ];
        let number = [13, 10, 7, 9, 15, 12, 11, 5, 4, 8, 14, 2, 6, 16, 3, 1];
        let mut t = vec![0.0; 16 * 16];
        for (e, n) in number.iter().enumerate() {
            t[e * 16 + n - 1] = sizes[e];
        }
        t
    }

    #[test]
    fn a_code_and_its_name_are_found_at_adults_noise() {
        let real = adult_like();
        let mut missed = 0;
        for seed in 0..1000 {
            let Some((map, cols)) = one_to_one(&noisy(&real, 66.0, seed), 16, 16, 66.0) else {
                missed += 1;
                continue;
            };
            // Every level of 500 rows or more is matched to its number; one of 51 or 168
            // rows may sink into the noise (3σ = 198), or rarely meet a noise cell above it.
            for (r, to) in map.iter().enumerate() {
                let held: f64 = real[r * 16..(r + 1) * 16].iter().sum();
                let right = to.is_some_and(|c| real[r * 16 + c] > 0.0);
                if held >= 500.0 {
                    assert!(right, "seed {seed}: level {r} ({held} rows) → {to:?}");
                } else if to.is_some() && !right {
                    missed += 1;
                }
            }
            assert!(
                cols.iter().filter(|o| **o).count() <= 3,
                "seed {seed}: {cols:?}"
            );
        }
        assert!(
            missed <= 10,
            "missed or mismatched in {missed} of 1,000 tables"
        );
    }

    #[test]
    fn a_many_to_one_pair_or_an_association_is_not_taken_for_one_to_one() {
        // Four states in two regions.
        let many = [900., 0., 800., 0., 0., 700., 0., 1000.];
        // Two columns that mostly agree: 6 % of rows differ.
        let mostly = [4700., 300., 300., 4700.];
        for seed in 0..50 {
            assert!(one_to_one(&noisy(&many, 30.0, seed), 4, 2, 30.0).is_none());
            assert!(one_to_one(&noisy(&mostly, 30.0, seed), 2, 2, 30.0).is_none());
        }
    }

    /// Two unrelated columns on a small table, every cell within noise of zero but the
    /// table holding hundreds of rows: not a map (hours by age on a 753-row survey).
    #[test]
    fn a_small_table_of_noise_is_not_taken_for_one_to_one() {
        let mut counts = vec![0.0; 8 * 31];
        for a in 0..31 {
            counts[a] = 10.0; // 0 hours, across every age
            counts[3 * 31 + a] = 8.0; // the workers' hours, across every age
            counts[4 * 31 + a] = 6.0;
        }
        let mut taken = 0;
        for seed in 0..200 {
            taken += usize::from(one_to_one(&noisy(&counts, 20.0, seed), 8, 31, 20.0).is_some());
        }
        assert_eq!(taken, 0, "taken for one-to-one in {taken} of 200 tables");
    }

    #[test]
    fn pairs_are_read_from_the_measurement_that_sees_them_best() {
        let sizes = [16, 16, 2];
        let real = adult_like();
        // The pair measured inside a 3-way marginal (split evenly by a third column) and
        // a pair of unrelated columns.
        let three: Vec<f64> = real.iter().flat_map(|c| [c / 2.0, c / 2.0]).collect();
        let measured = vec![
            Measurement {
                attrs: vec![0, 1, 2],
                noisy: noisy(&three, 20.0, 1),
                sigma: 20.0,
            },
            Measurement {
                attrs: vec![1, 2],
                noisy: noisy(&[500.0; 32], 20.0, 2),
                sigma: 20.0,
            },
        ];
        let found = found(&measured, &sizes);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].left, found[0].right), (0, 1));
    }
}
