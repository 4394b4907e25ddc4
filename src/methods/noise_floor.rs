//! Noise that lands in empty cells must not become mass: the "noise floor" of MST's and
//! AIM's one-way measurements.
//!
//! A number column with a wide public bound (hours in 0–8,760) has most of its bins empty.
//! Each empty bin's noisy count is pure noise; the fit cannot make it negative, so the
//! positive half of that noise becomes rows, and a small table's synthetic hours spread
//! evenly to the bound (a fifth of the rows over 4,000 hours where the real file has
//! none). The same holds for the blank slot of a column that may be blank but has no
//! blanks: noise alone writes empty cells nobody has.
//!
//! So, once every column's counts are measured (and again before the last fit, from every
//! table measured that holds the column), two cuts are made, each on noisy counts alone
//! (post-processing: no charge, and nothing read off the rows):
//! - **tails**: the ordered bins of a number column more than one bin below the lowest,
//!   and above the highest, bin whose noisy count clears the floor are closed, when the
//!   tail's bins together hold no more than noise; bins between them stay open whatever
//!   their count (an interior bin's noise only blurs the shape, while a
//!   tail's noise invents a range the data do not reach). Point masses are levels of their
//!   own and never closed.
//! - **blanks**: a blank slot whose noisy count does not clear the floor is closed.
//!
//! The floor is `z·σ` with `z` the standard normal quantile at `1 − 0.05/m` for `m`
//! cells (one for a blank slot): among `m` truly empty cells, the chance that the noise
//! alone lifts any of them over it is at most 5 %. A column's bins are searched in blocks
//! of 1, 2, 4, … bins ([`reach`]), so a small table whose every bin sits under the noise
//! still finds where its rows lie. A real tail thinner than the floor is closed too; that
//! is the price of not inventing one, and it shrinks with ε.

use crate::data::schema::{Kind, Schema};

use super::pgm::domain::{Coding, Domain};
use super::pgm::estimate::{Estimate, Measurement, Zeros};
use super::pgm::factor::{cells, strides};

/// The fewest bins a tail must have to be closed: a short tail's rows cannot be told
/// from its noise (two ages of a survey's 31, two dozen rows each, under σ = 17.7), and
/// noise spread over a few bins invents little.
const MIN_TAIL: usize = 6;

/// The chance, across one column's truly empty cells, that noise alone clears the floor.
pub(crate) const FLOOR_CHANCE: f64 = 0.05;

/// Which levels of an attribute the floor may close: ordered bins (closed from the ends
/// in), or one blank slot.
enum Closable {
    Bins(usize),
    Blank(usize),
}

/// The standard normal quantile at `p` (0 < p < 1), by bisection on `erfc`.
fn normal_quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0f64, 40.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        let below = 0.5 * libm::erfc(-mid / std::f64::consts::SQRT_2);
        if below < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The floor for one column of `m` closable cells measured with noise of std `sigma`.
pub(crate) fn floor(sigma: f64, m: usize) -> f64 {
    sigma * normal_quantile(1.0 - FLOOR_CHANCE / m.max(1) as f64)
}

/// The first and last bin of the range the data reach, by the noisy counts `y` of one
/// column's ordered bins (noise std `sigma` each): the outermost blocks of `b` adjacent
/// bins whose noisy sum clears the floor, for the smallest width b = 1, 2, 4, … at which
/// any block does, and one more block beyond each. A block's sum has noise σ·√b and b bins' rows, so a small table whose
/// single bins all sit under the noise still finds its range in wider blocks. The chance
/// is split over every width tried and every block of it, so across the whole search the
/// noise alone clears an empty block with probability at most [`FLOOR_CHANCE`]. `None`
/// when no block of any width clears (nothing is closed).
fn reach(y: &[f64], sigma: f64) -> Option<(usize, usize)> {
    let n = y.len();
    let widths: Vec<usize> = std::iter::successors(Some(1usize), |b| Some(b * 2))
        .take_while(|b| *b <= n)
        .collect();
    for &b in &widths {
        let blocks = n.div_ceil(b);
        let threshold = floor(sigma * (b as f64).sqrt(), blocks * widths.len());
        let clears: Vec<usize> = (0..blocks)
            .filter(|k| y[k * b..((k + 1) * b).min(n)].iter().sum::<f64>() >= threshold)
            .collect();
        if let (Some(&lo), Some(&hi)) = (clears.first(), clears.last()) {
            // One block beyond each end stays open: rows thin out beside where the counts
            // clear the noise (the edge of a wage's range), while noise alone fills far tails.
            let first = lo.saturating_sub(1) * b;
            let last = ((hi + 2) * b).min(n) - 1;
            return Some((first, last));
        }
    }
    None
}

/// The bins of one column's ordered noisy counts `y` the floor closes: those beyond
/// [`reach`] on either side, when that tail's bins together hold no more than noise (rows
/// spread thinly over many bins — ages 30–60, two dozen a year, each under the noise —
/// keep their whole range).
fn closed_tails(y: &[f64], sigma: f64) -> Vec<bool> {
    let n = y.len();
    let mut closed = vec![false; n];
    let Some((lo, hi)) = reach(y, sigma) else {
        return closed;
    };
    let empty = |bins: std::ops::Range<usize>| {
        let len = bins.len() as f64;
        bins.len() >= MIN_TAIL && y[bins].iter().sum::<f64>() < floor(sigma * len.sqrt(), 2)
    };
    if lo > 0 && empty(0..lo) {
        closed[..lo].iter_mut().for_each(|c| *c = true);
    }
    if hi + 1 < n && empty(hi + 1..n) {
        closed[hi + 1..].iter_mut().for_each(|c| *c = true);
    }
    closed
}

fn closable(schema: &Schema, domain: &Domain, a: usize) -> Option<Closable> {
    let attr = &domain.attributes[a];
    match &attr.coding {
        Coding::Bins { points, .. } => {
            let n = attr.size - points.as_ref().map_or(0, |p| p.scaled.len());
            (n >= 2).then_some(Closable::Bins(n))
        }
        Coding::Integers { .. } => (attr.size >= 2).then_some(Closable::Bins(attr.size)),
        Coding::Flag { .. } if attr.name.ends_with(" (missing)") => Some(Closable::Blank(1)),
        Coding::OneHot { .. } => {
            let spec = schema.column(&attr.name)?;
            (spec.kind == Kind::Categorical && spec.missing && attr.size >= 2)
                .then(|| Closable::Blank(attr.size - 1))
        }
        Coding::Flag { .. } => None,
    }
}

/// A column's noisy one-way counts from every measurement that holds it: each table summed
/// down to the column (its noise std σ·√(cells per level)), the sums of independent
/// measurements combined by inverse variance. `(counts, their noise std)`, or `None` when
/// no noisy measurement holds it.
fn one_way(sizes: &[usize], measured: &[Measurement], a: usize) -> Option<(Vec<f64>, f64)> {
    let size = sizes[a];
    let (mut acc, mut weights) = (vec![0.0; size], 0.0);
    for m in measured {
        let Some(pos) = m.attrs.iter().position(|x| *x == a) else {
            continue;
        };
        let n = cells(sizes, &m.attrs);
        if !(m.sigma > 0.0) || m.noisy.len() != n || size == 0 {
            continue;
        }
        let stride = strides(sizes, &m.attrs)[pos];
        let mut y = vec![0.0; size];
        for (i, v) in m.noisy.iter().enumerate() {
            y[(i / stride) % size] += v;
        }
        let w = 1.0 / (m.sigma * m.sigma * (n / size) as f64);
        acc.iter_mut().zip(&y).for_each(|(s, v)| *s += w * v);
        weights += w;
    }
    (weights > 0.0).then(|| {
        let y = acc.iter().map(|x| x / weights).collect();
        (y, (1.0 / weights).sqrt())
    })
}

/// The cells the floor closes, one table of zeros per column it closes any of, from every
/// noisy measurement in `measured` (each column's counts: [`one_way`]).
pub(crate) fn zeros(schema: &Schema, domain: &Domain, measured: &[Measurement]) -> Vec<Zeros> {
    let sizes = domain.sizes();
    let mut out = Vec::new();
    for a in 0..sizes.len() {
        let Some(kind) = closable(schema, domain, a) else {
            continue;
        };
        let Some((y, sigma)) = one_way(&sizes, measured, a) else {
            continue;
        };
        let mut forbidden = vec![false; sizes[a]];
        match kind {
            Closable::Bins(n) => {
                let closed = closed_tails(&y[..n], sigma);
                forbidden[..n].copy_from_slice(&closed);
            }
            Closable::Blank(k) => forbidden[k] = y[k] < floor(sigma, 1),
        }
        if forbidden.iter().any(|f| *f) {
            out.push(Zeros {
                attrs: vec![a],
                forbidden,
            });
        }
    }
    out
}

/// Adds the floor's zeros to `est`'s own (the rules' and an earlier floor's), keeping
/// all: a cell closed while the model was fitted has no potential worth reopening (opened
/// again after the fit, such cells took every row of a column in one bin). A column this
/// floor would close entirely together with the zeros already there (two floors' ranges
/// read from different noise need not overlap) keeps the earlier zeros alone. Returns how
/// many columns it closed cells of.
pub(crate) fn apply(est: &mut Estimate, floor: Vec<Zeros>) -> usize {
    let mut all = est.zeros().to_vec();
    let mut n = 0;
    for z in floor {
        let mut closed = z.forbidden.clone();
        for old in all.iter().filter(|o| o.attrs == z.attrs) {
            closed
                .iter_mut()
                .zip(&old.forbidden)
                .for_each(|(c, o)| *c |= *o);
        }
        if closed.iter().all(|c| *c) {
            continue;
        }
        all.push(z);
        n += 1;
    }
    if n > 0 {
        est.set_zeros(all);
    }
    n
}

/// `est` with the rules' zeros (`rules`) only: the floors' taken off, the last resort when
/// zeros from several sources together left a node with no mass. Refit after.
pub(crate) fn lift(est: &mut Estimate, rules: &[Zeros]) {
    est.set_zeros(rules.to_vec());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::encode::Encoding;

    fn schema() -> Schema {
        serde_json::from_str(
            r#"{"columns":[
            {"name":"hours","kind":"continuous","missing":true,"domain":{"bounds":{"lower":0,"upper":8760}}},
            {"name":"group","kind":"categorical","missing":true,"domain":{"categories":["a","b"]}}]}"#,
        )
        .unwrap()
    }

    /// Rows spread thinly over every level (a survey's ages: 753 rows over 31 years, each
    /// under the noise alone, σ = 17.7) keep their range in all but a few tables of 1,000;
    /// a wide bound's empty far tail is closed in all but a few, and the rows beside it
    /// kept. Seeded: the counts are fixed, the bounds set above them.
    #[test]
    fn thin_rows_keep_their_range_and_an_empty_far_tail_is_closed() {
        use rand::SeedableRng;
        use rand_distr::{Distribution, Normal};
        let g = Normal::new(0.0, 17.7).unwrap();
        let (mut ages_cut, mut ages_rows_cut, mut tail_open, mut hours_cut) = (0, 0usize, 0, 0);
        for seed in 0..1000 {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let ages: Vec<f64> = (0..31).map(|_| 24.0 + g.sample(&mut rng)).collect();
            let c = closed_tails(&ages, 17.7);
            ages_cut += usize::from(c.iter().any(|c| *c));
            ages_rows_cut += c.iter().filter(|c| **c).count();
            let hours: Vec<f64> = (0..32)
                .map(|k| if (2..7).contains(&k) { 80.0 } else { 0.0 } + g.sample(&mut rng))
                .collect();
            let closed = closed_tails(&hours, 17.7);
            tail_open += usize::from(!closed[20..].iter().all(|c| *c));
            hours_cut += usize::from(closed[2..7].iter().any(|c| *c));
        }
        // Measured at this commit: 21 (151 levels), 23 and 13 of 1,000.
        let msg = format!(
            "ages cut in {ages_cut} of 1000 ({ages_rows_cut} levels), far tail left open in {tail_open}, hours' rows cut in {hours_cut}"
        );
        assert!(
            ages_cut <= 40 && tail_open <= 50 && hours_cut <= 30,
            "{msg}"
        );
    }

    #[test]
    fn the_quantile_is_the_normal_one() {
        assert!((normal_quantile(0.975) - 1.959964).abs() < 1e-5);
        assert!((floor(1.0, 1) - 1.644854).abs() < 1e-5);
        // Twenty cells: each at 1 − 0.05/20.
        assert!((floor(2.0, 20) - 2.0 * 2.807034).abs() < 1e-4);
    }

    #[test]
    fn a_range_under_the_noise_bin_by_bin_is_found_in_wider_blocks() {
        // Forty bins, σ = 10: rows spread 20 a bin over bins 8–23, none of them alone
        // clears the floor (about 35), blocks of four do; the noise elsewhere is ±9.
        let y: Vec<f64> = (0..40)
            .map(|k| {
                if (8..24).contains(&k) {
                    20.0
                } else if k % 2 == 0 {
                    9.0
                } else {
                    -9.0
                }
            })
            .collect();
        let (lo, hi) = reach(&y, 10.0).unwrap();
        assert_eq!(
            (lo, hi),
            (4, 27),
            "blocks of four found 8–23, one more each side"
        );
        assert!(
            reach(&vec![4.0; 40], 10.0).is_none(),
            "noise only: nothing found"
        );
    }

    #[test]
    fn empty_tails_and_blank_slots_close_and_the_middle_stays_open() {
        let s = schema();
        let enc = Encoding::new(&s).unwrap();
        let domain = Domain::of_encoding(&enc, 20).unwrap();
        let names: Vec<&str> = domain.attributes.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["hours", "hours (missing)", "group"]);
        let sigma = 5.0;
        // Bins 2, 3 and 5 hold rows; bin 4 is an empty middle; the rest is noise: the
        // long upper tail closes, the one bin below stays (too short to tell from noise).
        let hours = Measurement {
            attrs: vec![0],
            noisy: vec![
                4.0, -3.0, 300.0, 120.0, 6.0, 90.0, 9.0, -1.0, 12.0, 3.0, 2.0, -4.0, 5.0, 0.0,
                -6.0, 7.0, 1.0, -2.0, 3.0, 4.0,
            ],
            sigma,
        };
        let blank = Measurement {
            attrs: vec![1],
            noisy: vec![700.0, 6.0],
            sigma,
        };
        let group = Measurement {
            attrs: vec![2],
            noisy: vec![400.0, 300.0, 30.0],
            sigma,
        };
        let z = zeros(&s, &domain, &[hours, blank, group]);
        assert_eq!(z.len(), 2, "{z:?}");
        let closed: Vec<usize> = (0..20).filter(|&k| z[0].forbidden[k]).collect();
        assert_eq!(closed, (7..20).collect::<Vec<_>>());
        assert_eq!(z[1].attrs, [1]);
        assert_eq!(z[1].forbidden, [false, true]);
        // 30 blanks of "group" clear 1.64·σ: kept.
    }

    #[test]
    fn a_column_s_counts_come_from_every_table_that_holds_it() {
        let sizes = [3usize, 2];
        let one = Measurement {
            attrs: vec![0],
            noisy: vec![10.0, 20.0, 30.0],
            sigma: 2.0,
        };
        // The pair table sums to 12, 18, 30 over column 0, with twice the cells per level.
        let two = Measurement {
            attrs: vec![0, 1],
            noisy: vec![5.0, 7.0, 9.0, 9.0, 15.0, 15.0],
            sigma: 2.0f64.sqrt(),
        };
        let (y, sigma) = one_way(&sizes, &[one, two], 0).unwrap();
        // Equal variances (4 and 2·2): the plain mean, with half the variance.
        for (a, b) in y.iter().zip([11.0, 19.0, 30.0]) {
            assert!((a - b).abs() < 1e-9, "{y:?}");
        }
        assert!((sigma - 2.0f64.sqrt()).abs() < 1e-12);
        assert!(one_way(&sizes, &[], 1).is_none());
    }

    #[test]
    fn nothing_closes_when_no_bin_clears_the_floor_or_without_noise() {
        let s = schema();
        let enc = Encoding::new(&s).unwrap();
        let domain = Domain::of_encoding(&enc, 10).unwrap();
        let flat = Measurement {
            attrs: vec![0],
            noisy: vec![3.0; 10],
            sigma: 5.0,
        };
        assert!(zeros(&s, &domain, &[flat.clone()]).is_empty());
        let exact = Measurement { sigma: 0.0, ..flat };
        assert!(zeros(&s, &domain, &[exact]).is_empty());
    }
}
