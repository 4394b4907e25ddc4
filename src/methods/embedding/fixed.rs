//! Sums over the private rows in exact integer arithmetic, so that the sensitivity a
//! release states holds for the numbers the computer adds, not only for real numbers.
//!
//! Summed in f32 (as these sums once were), one added row moved a sum of 100,000 rows by
//! its feature vector plus the rounding of every later addition: the neighbours differed
//! by more than the stated 1, and class counts stopped at 2²⁴. Here each row's
//! contribution is rounded toward zero onto a grid of [`ONE`]⁻¹, checked in integers to
//! have at most the stated norm (shrunk further when floating-point cos/sin or a bad
//! value put it over), and summed exactly in integers. Neighbours then differ by exactly
//! one row's grid vector, whose norm is at most the bound by an integer check. The only
//! rounding left is the final scaling to f64 (relative 2⁻⁵² of a sum of fewer than 2³¹
//! rows), which [`ROUNDING_MARGIN`] covers with room to spare.

/// The grid: a value v is held as ⌊v · ONE⌋ toward zero. 2¹⁵ keeps a cosine-sine pair's
/// squared norm (≤ 2³⁰) and a GPU chunk's sum of at most [`MAX_CHUNK_ROWS`] of them inside
/// 32-bit integers, which is all WGSL has; the grid's resolution (3·10⁻⁵ of a unit
/// feature) is far below any release's noise.
pub const ONE: i64 = 1 << 15;

/// Rows one GPU invocation may sum in an i32 without overflow: |Σ| ≤ 2¹⁴ · 2¹⁵ < 2³¹.
pub const MAX_CHUNK_ROWS: usize = 1 << 14;

/// Relative margin added to every embedding release's sensitivity: it covers the f64
/// scaling of the exact integer sums (at most 2⁻⁵² relative per value, for fewer than
/// 2³¹ rows and 10⁵ frequencies: below 10⁻⁸ in norm) and the f32 rounding of the public
/// weights a_j (Σ a_j² ≤ 1 + 2.5·10⁻⁷, checked by [`check_weights`]).
pub const ROUNDING_MARGIN: f64 = 1e-6;

/// One cosine and one sine on the grid, with (c² + s²) ≤ ONE² checked in integers.
/// NaN counts as 0 and anything else is clamped to [−1, 1] first. Mirrored by `shaders/embedding.wgsl` (`unit_pair`), so
/// both devices release the same statistic.
pub fn unit_pair(c: f32, s: f32) -> (i64, i64) {
    let q = |v: f32| -> i64 {
        if v.is_nan() {
            0
        } else {
            ((v.clamp(-1.0, 1.0) as f64) * ONE as f64).trunc() as i64
        }
    };
    let (mut a, mut b) = (q(c), q(s));
    let over = |a: i64, b: i64| a * a + b * b > ONE * ONE;
    if over(a, b) {
        // The rare pair pushed over the unit circle by rounding: scaled back, then
        // stepped toward zero until the integer check passes.
        let r = ((a * a + b * b) as f64).sqrt();
        a = (a as f64 * ONE as f64 / r).trunc() as i64;
        b = (b as f64 * ONE as f64 / r).trunc() as i64;
        while over(a, b) {
            if a.abs() >= b.abs() {
                a -= a.signum();
            } else {
                b -= b.signum();
            }
        }
    }
    (a, b)
}

/// `v` on the grid (toward zero) with squared norm at most `bound_sq` · ONE², checked in
/// integers: the row is shrunk (clipped) when it is longer. Non-finite values count as 0.
pub fn within_norm(v: &[f64], bound_sq: f64, out: &mut [i64]) {
    for (o, x) in out.iter_mut().zip(v) {
        *o = if x.is_finite() {
            (x * ONE as f64)
                .trunc()
                .clamp(-(i64::MAX as f64) / 4.0, i64::MAX as f64 / 4.0) as i64
        } else {
            0
        };
    }
    let limit = (bound_sq * (ONE * ONE) as f64).floor() as i128;
    let norm_sq = |o: &[i64]| o.iter().map(|&q| (q as i128) * (q as i128)).sum::<i128>();
    let mut n = norm_sq(out);
    while n > limit {
        // Clip: scale to the bound, rounding toward zero; repeat in the rare case the
        // float scale left it a hair over (each pass shortens every non-zero entry).
        let scale = ((limit as f64) / (n as f64)).sqrt() * (1.0 - 1e-12);
        for o in out.iter_mut() {
            let shrunk = (*o as f64 * scale).trunc() as i64;
            *o = if shrunk.abs() < o.abs() {
                shrunk
            } else {
                *o - o.signum()
            };
        }
        n = norm_sq(out);
    }
}

/// The f32 weights a_j are public; their squares must sum to 1 within f32 rounding, or
/// the stated sensitivity (1 + [`ROUNDING_MARGIN`]) would not hold.
pub fn check_weights(weights: &[f32]) -> Result<(), String> {
    let total: f64 = weights.iter().map(|&w| (w as f64) * (w as f64)).sum();
    if total <= 1.0 + 2.5e-7 {
        Ok(())
    } else {
        Err(format!(
            "the embedding's weights have squared norm {total}, above 1: its stated sensitivity would not hold"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_is_on_the_grid_and_inside_the_unit_circle() {
        for (c, s) in [
            (1.0f32, 0.0f32),
            (0.70710677, 0.70710677),
            (0.7072, 0.7072),
            (1.0, 1.0),
            (-1.0, -1.0),
            (f32::NAN, 0.5),
            (f32::INFINITY, -0.3),
        ] {
            let (a, b) = unit_pair(c, s);
            assert!(a * a + b * b <= ONE * ONE, "{c} {s} → {a} {b}");
        }
        // An honest pair moves by less than one grid step per coordinate.
        let (a, b) = unit_pair(0.6, 0.8);
        assert!((a - (0.6 * ONE as f64) as i64).abs() <= 1);
        assert!((b - (0.8 * ONE as f64) as i64).abs() <= 1);
        assert_eq!(unit_pair(f32::NAN, 0.5).0, 0);
    }

    #[test]
    fn a_row_is_clipped_to_its_bound_in_integers() {
        let mut out = vec![0i64; 4];
        within_norm(&[1.0, 1.0, 1.0, 1.0], 2.0, &mut out);
        let n: i128 = out.iter().map(|&q| (q as i128).pow(2)).sum();
        assert!(n <= 2 * (ONE as i128).pow(2), "{out:?}");
        assert!(
            n > 2 * (ONE as i128).pow(2) * 99 / 100,
            "clipped, not zeroed: {out:?}"
        );
        within_norm(&[0.5, f64::NAN, -0.25, f64::INFINITY], 2.0, &mut out);
        assert_eq!(out, vec![ONE / 2, 0, -ONE / 4, 0]);
    }

    #[test]
    fn weights_over_the_unit_norm_are_refused() {
        assert!(check_weights(&[0.6, 0.8]).is_ok());
        assert!(check_weights(&[(0.5f64).sqrt() as f32; 2]).is_ok());
        assert!(check_weights(&[0.6, 0.81]).is_err());
    }
}
