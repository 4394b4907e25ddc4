//! DP estimates of a column's domain, for columns whose bounds or categories the user
//! cannot give. Each is post-processing of one noisy histogram, so one charge per column:
//!
//! - **bounds** of a number column: Gaussian noise on the counts of a public, coarse,
//!   signed log-spaced grid of cells ([`bound_grid`]), each cell split by whether the value
//!   is a whole number, plus one cell for missing values. The bounds are the grid edges
//!   around the noisy 1st and 99th percentiles; whether the column is integer is read off
//!   the noisy count of non-integer values. Every record falls in exactly one cell, so
//!   adding or removing one moves one count by 1: **L2 sensitivity 1**, accounted as
//!   [`Mechanism::DiscreteGaussian`] `{ std }`.
//! - **categories** of a text column: the levels are read from the data, so a level held
//!   by one person must never come out. Noise on each level's count, and only levels whose
//!   noisy count passes a threshold τ are released (DP partition selection; Korolova et
//!   al. 2009, Gopi et al. 2020). τ is the smallest integer with P(1 + Z > τ) ≤ δ∞ under
//!   the noise's exact pmf. Sensitivity 1 as above; a level held by one record passes with
//!   probability at most δ∞. Accounted as [`Mechanism::ThresholdedDiscreteGaussian`]
//!   `{ std, delta_inf }`.
//!
//! Every count is an integer and its noise an exact discrete Gaussian draw
//! ([`DiscreteGaussian`], on the caller's CSPRNG): a float sample added to a count could
//! give the count away in its low bits. Histograms made before this (model files of older
//! versions) name the continuous mechanisms, which their statements still account.
//!
//! The rows a caller passes are private; only the returned estimates may leave.

use rand::RngCore;

use super::discrete::DiscreteGaussian;

use super::mechanism::Mechanism;

/// Percentiles the bounds are read at (values outside are clamped when encoding).
pub const BOUND_PERCENTILES: (f64, f64) = (0.01, 0.99);

/// The public grid of candidate bounds: 0 and ±{1, 2, 5}·10^k for k = −2…9, sorted. It
/// depends on nothing in the data, so choosing among its points reveals only the noisy
/// counts.
pub fn bound_grid() -> Vec<f64> {
    let mut pos = Vec::new();
    for k in -2..=9 {
        for m in [1.0, 2.0, 5.0] {
            pos.push(m * 10f64.powi(k));
        }
    }
    let mut g: Vec<f64> = pos.iter().rev().map(|x| -x).collect();
    g.push(0.0);
    g.extend(pos);
    g
}

/// The cell of `x` on `grid`: 0 for x ≤ grid[0], i for grid[i-1] < x ≤ grid[i], and
/// grid.len() above the last point (the cells are the spaces between edges).
pub fn cell_of(grid: &[f64], x: f64) -> usize {
    grid.partition_point(|g| *g < x)
}

/// The exact sampler at `std`; `None` for a σ the charge's validation refuses (the
/// callers then release nothing about the rows: fail closed).
fn sampler(std: f64) -> Option<DiscreteGaussian> {
    DiscreteGaussian::new(std)
}

/// What the bounds estimator releases for one number column.
#[derive(Debug, Clone, PartialEq)]
pub struct NumberDomain {
    /// `None` when the noisy counts were too small to place a percentile: the column needs
    /// public bounds (the charge is spent either way).
    pub bounds: Option<(f64, f64)>,
    pub integer: bool,
    pub missing: bool,
    /// The estimated share of blank cells: 0 when the noisy missing count is within the
    /// noise (the column is taken as complete), else noisy missing / noisy total.
    pub blank_share: f64,
}

/// The mechanism [`estimate_number`] runs at noise `std`.
pub fn number_mechanism(std: f64) -> Mechanism {
    Mechanism::DiscreteGaussian { std }
}

/// The one noisy release behind [`estimate_number`]: every count of the public grid's
/// (cell, whole/fractional) histogram and the missing count, each plus N_ℤ(0, std²). One
/// record moves exactly one count by one: L2 sensitivity 1, [`number_mechanism`]`(std)`.
#[derive(Debug, Clone, PartialEq)]
pub struct NoisyNumberHistogram {
    /// [cell][0 = whole number, 1 = fractional], cells as [`cell_of`] on [`bound_grid`].
    pub cells: Vec<[f64; 2]>,
    pub missing: f64,
}

/// The exact (cell, whole/fractional) counts of `values` on [`bound_grid`] and the count of
/// missing cells: private, the input of [`noisy_number_histogram`] and of the data owner's
/// local diagnostic.
pub fn number_counts(values: &[Option<f64>]) -> (Vec<[u64; 2]>, u64) {
    let grid = bound_grid();
    let mut counts = vec![[0u64; 2]; grid.len() + 1];
    let mut missing = 0u64;
    for v in values {
        match v {
            Some(x) if x.is_finite() => {
                counts[cell_of(&grid, *x)][usize::from(x.fract() != 0.0)] += 1;
            }
            _ => missing += 1,
        }
    }
    (counts, missing)
}

/// The noisy histogram of `values` (`None`: missing) at noise `std`. Charge
/// [`number_mechanism`]`(std)` once before calling.
pub fn noisy_number_histogram(
    values: &[Option<f64>],
    std: f64,
    rng: &mut dyn RngCore,
) -> NoisyNumberHistogram {
    let (counts, missing) = number_counts(values);
    noisy_counts(&counts, missing, std, rng)
}

/// Every count of [`number_counts`] plus one exact discrete Gaussian draw.
pub fn noisy_counts(
    counts: &[[u64; 2]],
    missing: u64,
    std: f64,
    rng: &mut dyn RngCore,
) -> NoisyNumberHistogram {
    let Some(g) = sampler(std) else {
        return NoisyNumberHistogram {
            cells: vec![[0.0; 2]; counts.len()],
            missing: 0.0,
        };
    };
    use super::probe::{Norm, Value, noise_call};
    let flat = || -> Vec<u64> {
        counts
            .iter()
            .flat_map(|c| [c[0], c[1]])
            .chain([missing])
            .collect()
    };
    let noisy: Vec<f64> = noise_call(
        "bounds-histogram",
        (Norm::L2, 1.0),
        || number_mechanism(g.variance().sqrt()),
        || Value::Dense(flat().into_iter().map(|c| c as f64).collect()),
        || {
            flat()
                .into_iter()
                .map(|c| g.release(c, rng) as f64)
                .collect()
        },
    );
    NoisyNumberHistogram {
        cells: noisy.chunks_exact(2).map(|c| [c[0], c[1]]).collect(),
        missing: noisy.last().copied().unwrap_or(0.0),
    }
}

/// Every count of a table over a public grid (a `->` rule's left × right levels) plus one
/// exact discrete Gaussian draw: one record sits in at most one cell, so adding or
/// removing it moves one count by one, L2 sensitivity 1, charged as
/// [`number_mechanism`]`(std)` once before calling.
pub fn noisy_table(counts: &[u64], std: f64, rng: &mut dyn RngCore) -> Vec<f64> {
    let Some(g) = sampler(std) else {
        return vec![0.0; counts.len()];
    };
    use super::probe::{Norm, Value, noise_call};
    noise_call(
        "map-table",
        (Norm::L2, 1.0),
        || number_mechanism(g.variance().sqrt()),
        || Value::Dense(counts.iter().map(|c| *c as f64).collect()),
        || counts.iter().map(|c| g.release(*c, rng) as f64).collect(),
    )
}

/// Estimates a number column's bounds, integer flag and missingness (see the module doc
/// for sensitivity and accounting). `values` holds `None` for missing cells; `n` is the
/// public row count — the user's public figure when they gave one, never the file's
/// count then. Charge [`number_mechanism`]`(std)` once before calling.
pub fn estimate_number(
    values: &[Option<f64>],
    std: f64,
    n: f64,
    rng: &mut dyn RngCore,
) -> NumberDomain {
    let h = noisy_number_histogram(values, std, rng);
    number_domain(&h, std, n)
}

/// The bounds, integer flag and missingness read off a noisy histogram (post-processing:
/// it reads nothing else of the rows; `n` is the public row count).
pub fn number_domain(h: &NoisyNumberHistogram, std: f64, n: f64) -> NumberDomain {
    let grid = bound_grid();
    let cells = grid.len() + 1;
    // A cell is taken as empty unless its noisy count clears the noise by EMPTY_CELL_Z
    // deviations: most grid cells are empty, and one of their noise draws passing a lower
    // floor would place a bound at a value nobody has (ages of −100,000,000).
    let floor = EMPTY_CELL_Z * std * std::f64::consts::SQRT_2;
    let mut per_cell: Vec<f64> = h
        .cells
        .iter()
        .map(|c| c[0] + c[1])
        .map(|c| if c > floor { c } else { 0.0 })
        .collect();
    drop_isolated(&mut per_cell, floor);
    let total: f64 = per_cell.iter().sum();
    let fractional: f64 = h.cells.iter().map(|c| c[1]).sum();
    let spread = 3.0 * std * (cells as f64).sqrt();
    let present: f64 = h.cells.iter().map(|c| c[0] + c[1]).sum();
    NumberDomain {
        bounds: bounds_from_cells(&grid, &per_cell, total, 2.0 * floor),
        integer: fractional <= (0.01 * n).max(spread),
        missing: h.missing > 3.0 * std,
        blank_share: blank_share(h.missing, present, std),
    }
}

/// How many noise deviations a cell's noisy count must clear to count as holding values:
/// P(N(0,1) > 4) ≈ 3·10⁻⁵, so an empty cell passes in about 1 column in 400 (the grid has
/// 76 cells), and [`drop_isolated`] catches most of those.
pub const EMPTY_CELL_Z: f64 = 4.0;

/// Grid steps (a third of a decade each) within which another non-empty cell makes a cell
/// part of the bulk.
const ISOLATION_STEPS: usize = 3;

/// Empties a cell that no other non-empty cell sits within [`ISOLATION_STEPS`] of, unless
/// it is the fullest cell or its count is twice the floor: a lone cell just over the floor
/// is far likelier the noise of an empty cell than values (post-processing).
fn drop_isolated(per_cell: &mut [f64], floor: f64) {
    let fullest = per_cell
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(i, _)| i);
    let lone: Vec<usize> = (0..per_cell.len())
        .filter(|i| per_cell[*i] > 0.0 && Some(*i) != fullest && per_cell[*i] < 2.0 * floor)
        .filter(|i| {
            let lo = i.saturating_sub(ISOLATION_STEPS);
            let hi = (i + ISOLATION_STEPS).min(per_cell.len() - 1);
            (lo..=hi).all(|j| j == *i || per_cell[j] <= 0.0)
        })
        .collect();
    for i in lone {
        per_cell[i] = 0.0;
    }
}

/// The share of blanks read off a noisy missing count and a noisy count of the rest
/// (post-processing): 0 when the missing count is within three noise deviations of zero,
/// so that a column with no blanks is taken as complete far more often than not.
pub fn blank_share(noisy_missing: f64, noisy_present: f64, std: f64) -> f64 {
    if noisy_missing <= 3.0 * std {
        return 0.0;
    }
    (noisy_missing / (noisy_missing + noisy_present.max(0.0))).clamp(0.0, 1.0)
}

/// Grid edges around the noisy percentiles: the lower edge of the cell where the noisy
/// cumulative count passes the low percentile, the upper edge of the cell where it passes
/// the high one. `None` when the cells that cleared the floor hold no more than `least`
/// (twice the floor: one empty cell's noise reaches that about once in 10¹⁵ draws).
fn bounds_from_cells(grid: &[f64], per_cell: &[f64], total: f64, least: f64) -> Option<(f64, f64)> {
    if total <= least || total <= 0.0 {
        return None;
    }
    let (p_lo, p_hi) = BOUND_PERCENTILES;
    let cell_at = |p: f64| {
        let mut acc = 0.0;
        for (i, c) in per_cell.iter().enumerate() {
            acc += c;
            if acc >= p * total {
                return i;
            }
        }
        per_cell.len() - 1
    };
    let (lo_cell, hi_cell) = (cell_at(p_lo), cell_at(p_hi));
    // Cell i spans (grid[i-1], grid[i]]; the outer cells end at the grid's last points.
    let lower = grid[lo_cell.saturating_sub(1).min(grid.len() - 1)];
    let mut upper = grid[hi_cell.min(grid.len() - 1)];
    if upper <= lower {
        upper = grid[(grid.partition_point(|g| *g <= lower)).min(grid.len() - 1)];
    }
    (upper > lower).then_some((lower, upper))
}

/// τ such that a level held by one record passes with probability at most `delta_inf`:
/// the smallest integer k with P(Z > k) ≤ δ∞ for Z ~ N_ℤ(0, std²) at the σ² the sampler
/// uses, plus 1 (a level passes when its noisy count exceeds τ, i.e. 1 + Z > 1 + k).
pub fn category_threshold(std: f64, delta_inf: f64) -> f64 {
    let Some(g) = sampler(std) else {
        return f64::INFINITY;
    };
    // P(Z > k) falls like exp(−k²/2σ²): bisect on k over [0, 40σ + 40].
    let (mut lo, mut hi) = (0u64, (40.0 * std) as u64 + 40);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if g.upper_tail(mid) <= delta_inf {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    1.0 + lo as f64
}

/// The mechanism [`estimate_categories`] runs.
pub fn category_mechanism(std: f64, delta_inf: f64) -> Mechanism {
    Mechanism::ThresholdedDiscreteGaussian { std, delta_inf }
}

/// The levels of a text column whose noisy count passes the threshold, most frequent
/// (by noisy count) first. `counts` are the data's levels and their counts (missing cells
/// excluded). Charge [`category_mechanism`]`(std, delta_inf)` once before calling.
pub fn estimate_categories(
    counts: &[(String, u64)],
    std: f64,
    delta_inf: f64,
    rng: &mut dyn RngCore,
) -> Vec<String> {
    estimate_categories_and_blanks(counts, 0, std, delta_inf, rng).levels
}

/// What [`estimate_categories_and_blanks`] releases for one text column.
#[derive(Debug, Clone, PartialEq)]
pub struct CategoryDomain {
    /// The levels that passed the threshold, most frequent (by noisy count) first.
    pub levels: Vec<String>,
    /// The estimated share of blank cells among the released levels' rows and the blanks
    /// ([`blank_share`]); 0 for a column taken as complete.
    pub blank_share: f64,
}

/// A generator for draws whose number depends on the rows (one per key held), seeded
/// (256 bits) by one fixed-size draw from the run's stream.
pub(crate) fn keyed_draws(rng: &mut dyn RngCore) -> rand::rngs::StdRng {
    use rand::SeedableRng as _;
    let mut rng = rng;
    rand::rngs::StdRng::from_rng(&mut rng)
}

/// [`estimate_categories`] plus the column's blanks: the missing cells are one more key
/// of the same histogram. "Missing" is a public key (every column may have blanks), so its
/// noisy count is released without the threshold. One record still sits in exactly one
/// count (a level or the blanks): L2 sensitivity 1, and on neighbouring tables either the
/// thresholded part or the one public count differs, never both, so the release is
/// accounted exactly as [`category_mechanism`]`(std, delta_inf)`, charged once before
/// calling.
pub fn estimate_categories_and_blanks(
    counts: &[(String, u64)],
    missing: u64,
    std: f64,
    delta_inf: f64,
    rng: &mut dyn RngCore,
) -> CategoryDomain {
    let tau = category_threshold(std, delta_inf);
    let Some(g) = sampler(std) else {
        return CategoryDomain {
            levels: Vec::new(),
            blank_share: 0.0,
        };
    };
    use super::probe::{Norm, Value, noise_call};
    // The blanks' count travels under a key no cell can have.
    const BLANKS: &str = "\u{0}blanks";
    // One draw per key read from the rows: they come from a generator of their own, so
    // the run's stream moves by the same amount whatever keys the rows hold.
    let mut own = keyed_draws(rng);
    let rng = &mut own;
    let present = counts.iter().filter(|(_, c)| *c > 0);
    let released: Vec<(String, f64)> = noise_call(
        "category-domain",
        (Norm::L2, 1.0),
        || category_mechanism(g.variance().sqrt(), delta_inf),
        || {
            Value::Keyed(
                present
                    .clone()
                    .map(|(k, c)| (k.clone(), *c as f64))
                    .chain([(BLANKS.to_string(), missing as f64)])
                    .collect(),
            )
        },
        || {
            let mut kept: Vec<(String, f64)> = present
                .clone()
                .map(|(k, c)| (k.clone(), g.release(*c, rng) as f64))
                .filter(|(_, noisy)| *noisy > tau)
                .collect();
            kept.push((BLANKS.to_string(), g.release(missing, rng) as f64));
            kept
        },
    );
    let noisy_missing = released
        .iter()
        .find(|(k, _)| k == BLANKS)
        .map_or(0.0, |(_, c)| *c);
    let mut kept: Vec<(f64, &str)> = released
        .iter()
        .filter(|(k, _)| k != BLANKS)
        .map(|(k, c)| (*c, k.as_str()))
        .collect();
    kept.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    let present: f64 = kept.iter().map(|(c, _)| c).sum();
    CategoryDomain {
        blank_share: blank_share(noisy_missing, present, std),
        levels: kept.into_iter().map(|(_, k)| k.to_string()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn the_grid_is_public_sorted_and_symmetric() {
        let g = bound_grid();
        assert!(g.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(g.len() % 2, 1);
        assert_eq!(g[g.len() / 2], 0.0);
        assert_eq!(cell_of(&g, -1e12), 0);
        assert_eq!(cell_of(&g, 1e12), g.len());
        // A value on an edge belongs to the cell that edge closes.
        let i = g.iter().position(|x| *x == 100.0).unwrap();
        assert_eq!(cell_of(&g, 100.0), i);
        assert_eq!(cell_of(&g, 100.5), i + 1);
    }

    /// The histogram's sensitivity, checked on neighbouring tables: removing any one row
    /// changes exactly one (cell, whole/fractional) count or the missing count, by one.
    #[test]
    fn one_record_moves_one_count_by_one() {
        let g = bound_grid();
        let rows = [
            Some(3.0),
            Some(3.5),
            None,
            Some(-7.0),
            Some(1e11),
            Some(0.0),
        ];
        let hist = |v: &[Option<f64>]| {
            let mut h = std::collections::HashMap::new();
            for x in v {
                let key = match x {
                    Some(x) => (cell_of(&g, *x) as i64, x.fract() != 0.0),
                    None => (-1, false),
                };
                *h.entry(key).or_insert(0i64) += 1;
            }
            h
        };
        let full = hist(&rows);
        for drop in 0..rows.len() {
            let mut less = rows.to_vec();
            less.remove(drop);
            let h = hist(&less);
            let l1: i64 = full
                .iter()
                .map(|(k, v)| (v - h.get(k).copied().unwrap_or(0)).abs())
                .sum();
            assert_eq!(l1, 1, "removing row {drop}");
        }
    }

    #[test]
    fn bounds_bracket_the_bulk_and_ignore_one_outlier() {
        let mut rng = StdRng::seed_from_u64(1);
        let mut v: Vec<Option<f64>> = (0..20_000).map(|i| Some(17.0 + (i % 70) as f64)).collect();
        v.push(Some(1_484_705.0)); // one person's extreme value
        v.push(None);
        let d = estimate_number(&v, 5.0, v.len() as f64, &mut rng);
        let (lo, hi) = d.bounds.unwrap();
        assert!(lo <= 17.0 && lo >= 0.0, "{lo}");
        assert!((86.0..=100.0).contains(&hi), "{hi}");
        assert!(d.integer);
        assert!(!d.missing, "one missing cell is within the noise");
        let frac: Vec<Option<f64>> = (0..5_000).map(|i| Some(i as f64 / 7.0)).collect();
        assert!(!estimate_number(&frac, 5.0, frac.len() as f64, &mut rng).integer);
        assert_eq!(
            estimate_number(&[Some(1.0)], 5.0, 1.0, &mut rng).bounds,
            None
        );
    }

    /// A few thousand ages under the heavy noise of many columns estimated at a small
    /// ε: an empty cell's noise must never become a bound (the estimate once put ages at
    /// −100,000,000 and hours at −10,000,000 about once in ten columns).
    #[test]
    fn heavy_noise_never_places_a_bound_where_no_value_is() {
        let mut rng = StdRng::seed_from_u64(7);
        let v: Vec<Option<f64>> = (0..3_382).map(|i| Some(17.0 + (i % 74) as f64)).collect();
        let mut kept = 0;
        for _ in 0..300 {
            if let Some((lo, hi)) = estimate_number(&v, 121.0, v.len() as f64, &mut rng).bounds {
                kept += 1;
                assert!((0.0..=20.0).contains(&lo), "lower bound {lo}");
                assert!((50.0..=100.0).contains(&hi), "upper bound {hi}");
            }
        }
        assert!(kept > 250, "the column is kept: {kept} of 300");
    }

    #[test]
    fn a_level_held_by_one_person_never_comes_out() {
        let mut rng = StdRng::seed_from_u64(2);
        let std = 2.0;
        let tau = category_threshold(std, 1e-7);
        assert_eq!(tau.fract(), 0.0, "released counts are integers, so is τ");
        // The slow reference: sum the discrete Gaussian's pmf (at the σ² the sampler
        // uses) directly. A level held by one record passes when 1 + Z > τ: that must
        // happen with probability at most δ∞, and τ − 1 must not be enough.
        let v = crate::privacy::discrete::DiscreteGaussian::new(std)
            .unwrap()
            .variance();
        let w = |x: i64| (-((x * x) as f64) / (2.0 * v)).exp();
        let total: f64 = (-2000..=2000).map(w).sum();
        let tail = |k: i64| (k + 1..=2000).map(w).sum::<f64>() / total;
        let k = tau as i64 - 1;
        assert!(tail(k) <= 1e-7, "{}", tail(k));
        assert!(tail(k - 1) > 1e-7, "{}", tail(k - 1));
        let counts = vec![
            ("United-States".to_string(), 29_000),
            ("Mexico".to_string(), 600),
            ("Holand-Netherlands".to_string(), 1),
        ];
        for _ in 0..2_000 {
            let kept = estimate_categories(&counts, std, 1e-7, &mut rng);
            assert_eq!(kept, vec!["United-States", "Mexico"]);
        }
    }
}
