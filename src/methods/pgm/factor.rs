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

/// Sums `values` (a table over some `big`) onto the subset `map` points into.
pub fn project_sum(values: &[f64], map: &[u32], small_cells: usize) -> Vec<f64> {
    let mut out = vec![0.0; small_cells];
    for (v, i) in values.iter().zip(map) {
        out[*i as usize] += v;
    }
    out
}

/// log Σ exp of `values` (log-space) onto the subset `map` points into.
pub fn project_lse(values: &[f64], map: &[u32], small_cells: usize) -> Vec<f64> {
    let mut max = vec![f64::NEG_INFINITY; small_cells];
    for (v, i) in values.iter().zip(map) {
        let m = &mut max[*i as usize];
        if *v > *m {
            *m = *v;
        }
    }
    let mut sum = vec![0.0; small_cells];
    for (v, i) in values.iter().zip(map) {
        let i = *i as usize;
        if max[i].is_finite() {
            sum[i] += (v - max[i]).exp();
        }
    }
    max.iter()
        .zip(&sum)
        .map(|(m, s)| if m.is_finite() { m + s.ln() } else { *m })
        .collect()
}

/// `big[i] += scale · small[map[i]]`: broadcasts a subset's table into a table.
pub fn add_expanded(big: &mut [f64], small: &[f64], map: &[u32], scale: f64) {
    for (b, i) in big.iter_mut().zip(map) {
        *b += scale * small[*i as usize];
    }
}

/// log Σ exp of a whole table.
pub fn logsumexp(values: &[f64]) -> f64 {
    let m = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return m;
    }
    m + values.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
}

/// The counts of the rows' marginal over `attrs` (`data`: levels column by column).
pub fn count(data: &[Vec<u32>], sizes: &[usize], attrs: &[usize]) -> Vec<f64> {
    let st = strides(sizes, attrs);
    let n = data.first().map_or(0, Vec::len);
    let mut out = vec![0.0; cells(sizes, attrs)];
    for r in 0..n {
        let mut i = 0usize;
        for (a, s) in attrs.iter().zip(&st) {
            i += data[*a][r] as usize * s;
        }
        out[i] += 1.0;
    }
    out
}

/// [`count`] with row `r` counted `weights[r]` times (groups of equal rows).
pub fn count_weighted(
    data: &[Vec<u32>],
    sizes: &[usize],
    attrs: &[usize],
    weights: &[f64],
) -> Vec<f64> {
    let st = strides(sizes, attrs);
    let mut out = vec![0.0; cells(sizes, attrs)];
    for (r, w) in weights.iter().enumerate() {
        let mut i = 0usize;
        for (a, s) in attrs.iter().zip(&st) {
            i += data[*a][r] as usize * s;
        }
        out[i] += w;
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
        let m = sub_index(&sizes, &[0, 1], &[1]);
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
}
