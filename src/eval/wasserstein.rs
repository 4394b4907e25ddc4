//! The 2-way PCA projection and the Wasserstein scores (seed paper eq. 3–4), on the PCA
//! plane and on the whole encoded data.

use rand::SeedableRng;
use rand::seq::index::sample;
use rayon::prelude::*;

use crate::data::encode::SpanKind;

use super::frame::Frame;
use super::pca::Pca;
use super::results::*;
use super::transport;

/// The largest squared distance between two encoded rows: 2 per one-hot block (two
/// different categories), 1 per other column.
pub(crate) fn max_sq_distance(f: &Frame) -> f64 {
    f.encoding
        .spans
        .iter()
        .map(|s| {
            if matches!(s.kind, SpanKind::Categorical | SpanKind::PointMass) && s.len > 1 {
                2.0
            } else {
                s.len as f64
            }
        })
        .sum()
}

pub(crate) fn w1_protocol(
    real: &[Vec<f64>],
    syn: &[Vec<f64>],
    repeats: usize,
    seed: u64,
) -> (f64, f64, usize) {
    let k = 100.min(real.len()).min(syn.len());
    let w: Vec<f64> = (0..repeats)
        .into_par_iter()
        .filter_map(|i| {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed.wrapping_add(i as u64));
            let a: Vec<Vec<f64>> = sample(&mut rng, real.len(), k)
                .iter()
                .map(|j| real[j].clone())
                .collect();
            let b: Vec<Vec<f64>> = sample(&mut rng, syn.len(), k)
                .iter()
                .map(|j| syn[j].clone())
                .collect();
            transport::wasserstein_exact(&a, &b, 1)
        })
        .collect();
    let n = w.len().max(1) as f64;
    let mean = w.iter().sum::<f64>() / n;
    let std = (w.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
    (mean, std, k)
}

pub(crate) fn pca_and_wasserstein(
    f: &Frame,
    opts: &Options,
) -> Result<(PcaReport, WassersteinScore), String> {
    let d = f.encoding.width;
    let real = Frame::rows(&f.train);
    let syn = Frame::rows(&f.synthetic);
    let flat: Vec<f64> = real.iter().flatten().copied().collect();
    let pca = Pca::fit(&flat, real.len(), d, 2)?;
    let proj =
        |rows: &[Vec<f64>]| -> Vec<Vec<f64>> { rows.par_iter().map(|r| pca.project(r)).collect() };
    let (rp, sp) = (proj(&real), proj(&syn));
    let d2 = max_sq_distance(f);
    let v: f64 = pca.explained_variance_ratio.iter().sum();
    let (m, s, k) = w1_protocol(&rp, &sp, opts.wasserstein_repeats, opts.seed);
    let pca_w = WassersteinScore {
        score: 1.0 - m / (v.sqrt() * d2),
        w1_mean: m,
        w1_std: s,
        points_per_side: k,
        repeats: opts.wasserstein_repeats,
        max_sq_distance: d2,
    };
    let (m, s, k) = w1_protocol(&real, &syn, opts.wasserstein_repeats, opts.seed + 7);
    let whole = WassersteinScore {
        score: 1.0 - m / d2,
        w1_mean: m,
        w1_std: s,
        points_per_side: k,
        repeats: opts.wasserstein_repeats,
        max_sq_distance: d2,
    };
    let pick = |pts: &[Vec<f64>], seed: u64| -> Vec<[f64; 2]> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        sample(&mut rng, pts.len(), 2000.min(pts.len()))
            .iter()
            .map(|i| [pts[i][0], pts[i].get(1).copied().unwrap_or(0.0)])
            .collect()
    };
    Ok((
        PcaReport {
            explained_variance_ratio: pca.explained_variance_ratio.clone(),
            real_points: pick(&rp, opts.seed),
            synthetic_points: pick(&sp, opts.seed + 1),
            wasserstein: pca_w,
        },
        whole,
    ))
}
