//! The 25-Gaussians toy of the post-GAN boosting paper: the share of high-quality samples,
//! the modes covered, and a scatter picture.
//!
//! The data: 1,000 draws from each of 25 isotropic 2-D Gaussians with means on the grid
//! {−4, −2, 0, 2, 4}² and standard deviation 0.05 (`shared/data/gaussians25_pgb`). A
//! sample is of high quality when it lies within r = √(0.0025 · 9.21034) of a mode (the
//! χ²₂ 99 % radius). The paper's score caps each mode's count at its share of the real
//! data (1/25 of the synthetic rows), so a collapsed generator cannot score by piling
//! samples on a few modes: Q = Σᵢ min(Nₛ/25, Nₛⁱ) / Nₛ (Neunhoeffer et al. 2021,
//! appendix B).

use std::path::Path;

use serde::Serialize;

/// The paper's radius around each mode.
pub fn radius() -> f64 {
    (0.0025f64 * 9.21034).sqrt()
}

/// The 25 mode centres.
pub fn centres() -> Vec<(f64, f64)> {
    let g = [-4.0, -2.0, 0.0, 2.0, 4.0];
    g.iter()
        .flat_map(|x| g.iter().map(move |y| (*x, *y)))
        .collect()
}

/// The scores of one synthetic sample.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ModeScore {
    pub rows: usize,
    /// The paper's capped quality score Q.
    pub quality: f64,
    /// The share of samples within r of some mode, without the cap.
    pub uncapped: f64,
    /// Modes holding at least 5 % of their expected count (Nₛ/25) of high-quality samples.
    pub modes_covered: usize,
    /// High-quality samples per mode, in [`centres`] order.
    pub per_mode: Vec<usize>,
}

/// Scores `points` against the 25 modes.
pub fn score(points: &[(f64, f64)]) -> ModeScore {
    let r2 = radius() * radius();
    let c = centres();
    let mut per_mode = vec![0usize; c.len()];
    for (x, y) in points {
        if let Some(i) = c
            .iter()
            .position(|(cx, cy)| (x - cx).powi(2) + (y - cy).powi(2) <= r2)
        {
            per_mode[i] += 1;
        }
    }
    let n = points.len().max(1) as f64;
    let cap = n / c.len() as f64;
    let capped: f64 = per_mode.iter().map(|k| (*k as f64).min(cap)).sum();
    ModeScore {
        rows: points.len(),
        quality: capped / n,
        uncapped: per_mode.iter().sum::<usize>() as f64 / n,
        modes_covered: per_mode.iter().filter(|k| **k as f64 >= 0.05 * cap).count(),
        per_mode,
    }
}

/// Writes a 480 × 480 scatter of `points` over [−5, 5]² (dark dots, denser is darker) with
/// the modes' circles in red.
pub fn scatter_png(points: &[(f64, f64)], path: &Path) -> Result<(), String> {
    const S: usize = 480;
    let to_px = |v: f64| ((v + 5.0) / 10.0 * (S as f64 - 1.0)).round();
    let mut hits = vec![0u32; S * S];
    for (x, y) in points {
        let (px, py) = (to_px(*x), to_px(-*y));
        if (0.0..S as f64).contains(&px) && (0.0..S as f64).contains(&py) {
            hits[py as usize * S + px as usize] += 1;
        }
    }
    let mut rgb = vec![255u8; S * S * 3];
    for (i, h) in hits.iter().enumerate() {
        if *h > 0 {
            let shade = (200.0 - 40.0 * (*h as f64).ln_1p()).clamp(0.0, 200.0) as u8;
            rgb[i * 3..i * 3 + 3].copy_from_slice(&[shade, shade, shade.saturating_add(40)]);
        }
    }
    let rpx = radius() / 10.0 * (S as f64 - 1.0);
    for (cx, cy) in centres() {
        for k in 0..90 {
            let a = k as f64 / 90.0 * std::f64::consts::TAU;
            let (px, py) = (to_px(cx) + rpx * a.cos(), to_px(-cy) + rpx * a.sin());
            if (0.0..S as f64).contains(&px) && (0.0..S as f64).contains(&py) {
                let i = py as usize * S + px as usize;
                rgb[i * 3..i * 3 + 3].copy_from_slice(&[220, 30, 30]);
            }
        }
    }
    crate::util::atomic::write_atomic_with(path, |out| {
        let mut enc = png::Encoder::new(out, S as u32, S as u32);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut wr = enc.write_header().map_err(std::io::Error::other)?;
        wr.write_image_data(&rgb).map_err(std::io::Error::other)?;
        wr.finish().map_err(std::io::Error::other)
    })
    .map_err(|e| format!("writing {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_layout_scores_high_and_a_collapse_is_capped() {
        // Every mode's centre, 40 times: all high quality, all modes covered.
        let all: Vec<(f64, f64)> = centres().into_iter().cycle().take(1000).collect();
        let s = score(&all);
        assert!(
            (s.quality - 1.0).abs() < 1e-12 && s.modes_covered == 25,
            "{s:?}"
        );
        // Everything on one mode: uncapped 1, capped 1/25.
        let one = vec![(2.0, -2.0); 1000];
        let s = score(&one);
        assert!((s.uncapped - 1.0).abs() < 1e-12);
        assert!(
            (s.quality - 0.04).abs() < 1e-12 && s.modes_covered == 1,
            "{s:?}"
        );
        // Between modes: nothing counts.
        assert_eq!(score(&[(1.0, 1.0)]).quality, 0.0);
    }
}
