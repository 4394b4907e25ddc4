//! Dense tables over sets of attributes, and the index maps that move values between a
//! table and one over a subset of its attributes.
//!
//! A table over sorted attributes `[a, b, c]` is a flat `Vec` in C order (the last
//! attribute varies fastest). Projection (sum or log-sum-exp onto a subset) and expansion
//! (broadcasting a subset's table back) are one pass through a precomputed map from each
//! cell to its cell in the subset: the map is built once per pair and reused by every
//! iteration of inference, so the inner loops are a gather or a scatter.

/// Strides of a C-order table over `attrs` (last fastest).
pub fn strides(sizes: &[usize], attrs: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; attrs.len()];
    for i in (0..attrs.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * sizes[attrs[i + 1]];
    }
    s
}

/// Cells of the table over `attrs`.
pub fn cells(sizes: &[usize], attrs: &[usize]) -> usize {
    attrs.iter().map(|a| sizes[*a]).product()
}

/// For each cell of the table over `big`, the index of its cell in the table over
/// `small`; every attribute of `small` must be in `big`.
pub fn sub_index(sizes: &[usize], big: &[usize], small: &[usize]) -> Vec<u32> {
    let small_strides = strides(sizes, small);
    // The step each of big's attributes makes in small's index (0 when not in small).
    let step: Vec<usize> = big
        .iter()
        .map(|a| {
            small
                .iter()
                .position(|b| b == a)
                .map_or(0, |i| small_strides[i])
        })
        .collect();
    let dims: Vec<usize> = big.iter().map(|a| sizes[*a]).collect();
    let n = cells(sizes, big);
    let mut out = Vec::with_capacity(n);
    let mut digits = vec![0usize; big.len()];
    let mut idx = 0usize;
    for _ in 0..n {
        out.push(idx as u32);
        // Odometer: increment the last digit, carrying leftwards.
        for j in (0..big.len()).rev() {
            digits[j] += 1;
            idx += step[j];
            if digits[j] < dims[j] {
                break;
            }
            idx -= step[j] * dims[j];
            digits[j] = 0;
        }
    }
    out
}

/// The map of [`sub_index`] with the shape of its innermost attributes, so a pass moves
/// whole runs of cells rather than one cell at a time.
///
/// Cells of the big table come in runs of `run` consecutive cells (its innermost
/// attributes) that either all land on one cell of the small table (those attributes are
/// summed out) or, when `along`, land on `run` consecutive cells of it (those attributes
/// are the small table's innermost too). So a projection sums a slice or adds a slice, and
/// an expansion scales a value or a slice: loops without an index per cell, in the same
/// order, so the same sums, as the cell-by-cell scatter.
#[derive(Debug, Clone)]
pub struct Projection {
    /// The small table's cell of each run's first cell.
    bases: Vec<u32>,
    run: usize,
    along: bool,
}

impl Projection {
    /// The projection of the table over `big` onto `small` (every attribute of `small`
    /// must be in `big`; either may be in any order).
    pub fn new(sizes: &[usize], big: &[usize], small: &[usize]) -> Self {
        let small_strides = strides(sizes, small);
        let step = |a: &usize| {
            small
                .iter()
                .position(|b| b == a)
                .map_or(0, |i| small_strides[i])
        };
        let (mut run, mut along, mut inner) = (1usize, false, 0);
        if let Some(last) = big.last() {
            along = step(last) == 1;
            for a in big.iter().rev() {
                let fits = if along { step(a) == run } else { step(a) == 0 };
                if !fits {
                    break;
                }
                run *= sizes[*a];
                inner += 1;
            }
        }
        // A run's first cell has its inner digits 0, so its base is the outer
        // attributes' index map alone (a map `run` times shorter to build).
        Self {
            bases: sub_index(sizes, &big[..big.len() - inner], small),
            run,
            along,
        }
    }

    /// Each run of the big table with the small table's first cell it lands on.
    fn runs<'a>(&'a self, big: &'a [f64]) -> impl Iterator<Item = (&'a [f64], usize)> + 'a {
        big.chunks(self.run)
            .zip(self.bases.iter().map(|b| *b as usize))
    }
}

/// Sums `values` (a table over some `big`) onto the subset `p` projects onto.
pub fn project_sum(values: &[f64], p: &Projection, small_cells: usize) -> Vec<f64> {
    let mut out = vec![0.0; small_cells];
    for (chunk, base) in p.runs(values) {
        if p.along {
            for (o, v) in out[base..base + chunk.len()].iter_mut().zip(chunk) {
                *o += v;
            }
        } else {
            out[base] = chunk.iter().fold(out[base], |acc, v| acc + v);
        }
    }
    out
}

/// log Σ exp of `values` (log-space) onto the subset `p` projects onto.
pub fn project_lse(values: &[f64], p: &Projection, small_cells: usize) -> Vec<f64> {
    let mut max = vec![f64::NEG_INFINITY; small_cells];
    for (chunk, base) in p.runs(values) {
        if p.along {
            for (m, v) in max[base..base + chunk.len()].iter_mut().zip(chunk) {
                *m = m.max(*v);
            }
        } else {
            max[base] = chunk.iter().fold(max[base], |m, v| m.max(*v));
        }
    }
    let mut sum = vec![0.0; small_cells];
    for (chunk, base) in p.runs(values) {
        if p.along {
            let sums = sum[base..base + chunk.len()].iter_mut();
            for ((s, v), m) in sums.zip(chunk).zip(&max[base..]) {
                if m.is_finite() {
                    *s += (v - m).exp();
                }
            }
        } else if max[base].is_finite() {
            let m = max[base];
            sum[base] = chunk.iter().fold(sum[base], |s, v| s + (v - m).exp());
        }
    }
    max.iter()
        .zip(&sum)
        .map(|(m, s)| if m.is_finite() { m + s.ln() } else { *m })
        .collect()
}

/// `big[i] += scale · small[its cell]`: broadcasts a subset's table into a table.
pub fn add_expanded(big: &mut [f64], small: &[f64], p: &Projection, scale: f64) {
    for (chunk, base) in big.chunks_mut(p.run).zip(&p.bases) {
        let base = *base as usize;
        if p.along {
            for (b, s) in chunk.iter_mut().zip(&small[base..]) {
                *b += scale * s;
            }
        } else {
            let add = scale * small[base];
            for b in chunk.iter_mut() {
                *b += add;
            }
        }
    }
}

/// `big[i] *= small[its cell]`: scales a table by a subset's table.
pub fn mul_expanded(big: &mut [f64], small: &[f64], p: &Projection) {
    for (chunk, base) in big.chunks_mut(p.run).zip(&p.bases) {
        let base = *base as usize;
        if p.along {
            for (b, s) in chunk.iter_mut().zip(&small[base..]) {
                *b *= s;
            }
        } else {
            let by = small[base];
            for b in chunk.iter_mut() {
                *b *= by;
            }
        }
    }
}

/// Rows indexed per pass of [`cell_indices`]: small enough that the chunk's indices stay
/// in the first-level cache while each column adds its part.
const CHUNK: usize = 2048;

/// Each row's cell in the table over `attrs`, for the rows `start..start + out.len()`:
/// built column by column (each column read in order, the inner loop a multiply-add the
/// compiler vectorises) rather than row by row across columns.
///
/// The arithmetic wraps rather than checks (a checked multiply-add does not vectorise,
/// and this loop is most of a round of AIM's estimates): it cannot wrap, since a level is
/// below its size and so a row's index below the table's cells, which fit in `u32` as
/// every index map of this module assumes (the marginal methods' tables are bounded far
/// below that by their cell limits).
fn cell_indices(
    data: &[Vec<u32>],
    sizes: &[usize],
    attrs: &[usize],
    start: usize,
    out: &mut [u32],
) {
    debug_assert!(cells(sizes, attrs) <= u32::MAX as usize);
    out.fill(0);
    for (a, s) in attrs.iter().zip(strides(sizes, attrs)) {
        let col = &data[*a][start..start + out.len()];
        let s = s as u32;
        for (o, v) in out.iter_mut().zip(col) {
            *o = o.wrapping_add(v.wrapping_mul(s));
        }
    }
}

/// The counts of the rows' marginal over `attrs` (`data`: levels column by column).
pub fn count(data: &[Vec<u32>], sizes: &[usize], attrs: &[usize]) -> Vec<f64> {
    let n = data.first().map_or(0, Vec::len);
    let mut out = vec![0u64; cells(sizes, attrs)];
    let mut idx = vec![0u32; CHUNK.min(n)];
    for start in (0..n).step_by(CHUNK) {
        let idx = &mut idx[..CHUNK.min(n - start)];
        cell_indices(data, sizes, attrs, start, idx);
        for i in idx.iter() {
            out[*i as usize] += 1;
        }
    }
    out.into_iter().map(|c| c as f64).collect()
}

/// [`count`] with row `r` counted `weights[r]` times (groups of equal rows).
pub fn count_weighted(
    data: &[Vec<u32>],
    sizes: &[usize],
    attrs: &[usize],
    weights: &[f64],
) -> Vec<f64> {
    let mut out = vec![0.0; cells(sizes, attrs)];
    let mut idx = vec![0u32; CHUNK.min(weights.len())];
    for start in (0..weights.len()).step_by(CHUNK) {
        let idx = &mut idx[..CHUNK.min(weights.len() - start)];
        cell_indices(data, sizes, attrs, start, idx);
        for (i, w) in idx.iter().zip(&weights[start..]) {
            out[*i as usize] += w;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The obviously-correct reference: decode every big cell into digits and re-encode
    /// the subset's digits.
    fn reference(sizes: &[usize], big: &[usize], small: &[usize]) -> Vec<u32> {
        let n = cells(sizes, big);
        let bs = strides(sizes, big);
        let ss = strides(sizes, small);
        (0..n)
            .map(|i| {
                let mut j = 0;
                for (k, a) in big.iter().enumerate() {
                    let d = (i / bs[k]) % sizes[*a];
                    if let Some(p) = small.iter().position(|b| b == a) {
                        j += d * ss[p];
                    }
                }
                j as u32
            })
            .collect()
    }

    #[test]
    fn index_maps_match_the_digit_by_digit_reference() {
        let sizes = [3, 2, 4, 5];
        for (big, small) in [
            (vec![0, 1, 2, 3], vec![1, 3]),
            (vec![0, 2, 3], vec![0]),
            (vec![1, 2], vec![]),
            (vec![0, 1, 3], vec![0, 1, 3]),
        ] {
            assert_eq!(
                sub_index(&sizes, &big, &small),
                reference(&sizes, &big, &small)
            );
        }
    }

    #[test]
    fn projections_sum_and_log_sum() {
        let sizes = [2, 3];
        let v: Vec<f64> = (0..6).map(f64::from).collect();
        let m = Projection::new(&sizes, &[0, 1], &[1]);
        assert_eq!(project_sum(&v, &m, 3), vec![3.0, 5.0, 7.0]);
        let l = project_lse(&v.iter().map(|x| x.ln()).collect::<Vec<_>>(), &m, 3);
        for (a, b) in l.iter().zip([3.0f64, 5.0, 7.0]) {
            assert!((a - b.ln()).abs() < 1e-12);
        }
        let mut big = vec![0.0; 6];
        add_expanded(&mut big, &[1.0, 2.0, 3.0], &m, 2.0);
        assert_eq!(big, vec![2.0, 4.0, 6.0, 2.0, 4.0, 6.0]);
        let data = vec![vec![0, 1, 1], vec![2, 0, 2]];
        assert_eq!(count(&data, &sizes, &[0, 1]), vec![0., 0., 1., 1., 0., 1.]);
    }

    /// Run-wise passes give bit for bit what the plain cell-by-cell scatter and gather
    /// over [`sub_index`]'s map give, for subsets inner, outer, in the middle, empty,
    /// whole, and out of order (where the runs are single cells).
    #[test]
    fn run_wise_passes_match_the_cell_by_cell_ones() {
        let sizes = [3, 2, 4, 5, 2];
        let cases: [(&[usize], &[usize]); 9] = [
            (&[0, 1, 2, 3], &[1, 3]),
            (&[0, 1, 2, 3], &[2, 3]),
            (&[0, 1, 2, 3], &[0, 1]),
            (&[0, 2, 3, 4], &[2]),
            (&[1, 2], &[]),
            (&[0, 1, 3], &[0, 1, 3]),
            (&[0, 1, 3], &[3, 0]),
            (&[0, 2, 4], &[4, 2]),
            (&[], &[]),
        ];
        for (big, small) in cases {
            let map = sub_index(&sizes, big, small);
            let p = Projection::new(&sizes, big, small);
            let (nb, ns) = (cells(&sizes, big), cells(&sizes, small));
            let v: Vec<f64> = (0..nb)
                .map(|i| ((i * 37 % 11) as f64).sin() * 3.0)
                .collect();
            let mut sum = vec![0.0; ns];
            for (x, i) in v.iter().zip(&map) {
                sum[*i as usize] += x;
            }
            assert_eq!(project_sum(&v, &p, ns), sum, "{big:?} onto {small:?}");
            let lse = project_lse(&v, &p, ns);
            for (j, l) in lse.iter().enumerate() {
                let want: f64 = v
                    .iter()
                    .zip(&map)
                    .filter(|(_, i)| **i as usize == j)
                    .map(|(x, _)| x.exp())
                    .sum::<f64>()
                    .ln();
                assert!((l - want).abs() < 1e-12, "{big:?} onto {small:?}");
            }
            let small_t: Vec<f64> = (0..ns).map(|i| i as f64 + 0.5).collect();
            let mut want = v.clone();
            for (b, i) in want.iter_mut().zip(&map) {
                *b += -1.5 * small_t[*i as usize];
            }
            let mut got = v.clone();
            add_expanded(&mut got, &small_t, &p, -1.5);
            assert_eq!(got, want, "{big:?} onto {small:?}");
            let mut want = v.clone();
            for (b, i) in want.iter_mut().zip(&map) {
                *b *= small_t[*i as usize];
            }
            let mut got = v.clone();
            mul_expanded(&mut got, &small_t, &p);
            assert_eq!(got, want, "{big:?} onto {small:?}");
        }
    }

    /// Column-by-column counting over chunks gives the row-by-row counts, across chunk
    /// boundaries and with weights.
    #[test]
    fn counts_match_row_by_row_counting() {
        let sizes = [3, 5, 2];
        let n = 2 * CHUNK + 17;
        let data: Vec<Vec<u32>> = sizes
            .iter()
            .enumerate()
            .map(|(a, s)| (0..n).map(|r| ((r * (a + 3) + r / 7) % s) as u32).collect())
            .collect();
        let weights: Vec<f64> = (0..n).map(|r| (r % 4) as f64 * 0.5).collect();
        for attrs in [vec![0, 1, 2], vec![2, 0], vec![1], vec![]] {
            let st = strides(&sizes, &attrs);
            let mut want = vec![0.0; cells(&sizes, &attrs)];
            let mut want_w = want.clone();
            for r in 0..n {
                let i: usize = attrs
                    .iter()
                    .zip(&st)
                    .map(|(a, s)| data[*a][r] as usize * s)
                    .sum();
                want[i] += 1.0;
                want_w[i] += weights[r];
            }
            assert_eq!(count(&data, &sizes, &attrs), want, "{attrs:?}");
            assert_eq!(
                count_weighted(&data, &sizes, &attrs, &weights),
                want_w,
                "{attrs:?}"
            );
        }
    }
}
