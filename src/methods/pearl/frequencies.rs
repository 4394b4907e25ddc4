//! The run's frequencies, and a generator step's share of them: public choices drawn from
//! the run's CSPRNG, independent of the rows (no privacy cost).

use candle_core::Tensor;

use super::releases::Released;
use crate::methods::embedding::{self, Frequencies, LabelSpan, SquareFilters};
use crate::methods::image_nets::ImageLayout;
use crate::methods::{MethodError, Result, TrainSetup};

use super::EmbedFit;

/// A step's share of the frequencies (`step_features` = m of k, drawn afresh from the
/// run's CSPRNG): those frequencies, the release's columns for them, and the weights
/// scaled by k/m, so the step's distance is an unbiased estimate of the whole one (the
/// class-proportion term, unweighted, stays whole). None when every frequency is read.
pub(super) fn step_subset(
    m: usize,
    omega: &Frequencies,
    r: &Released,
    w: &Tensor,
    s: &mut TrainSetup<'_>,
) -> Result<Option<(Frequencies, Released, Tensor)>> {
    let k = omega.count();
    if m == 0 || m >= k {
        return Ok(None);
    }
    let picked: Vec<u32> = rand::seq::index::sample(s.noise.rng(), k, m)
        .into_iter()
        .map(|j| j as u32)
        .collect();
    subset_of(&picked, omega, r, w).map(Some)
}

/// [`step_subset`] for the frequencies `picked` (distinct).
pub(super) fn subset_of(
    picked: &[u32],
    omega: &Frequencies,
    r: &Released,
    w: &Tensor,
) -> Result<(Frequencies, Released, Tensor)> {
    let (k, m) = (omega.count(), picked.len());
    let both: Vec<u32> = picked
        .iter()
        .copied()
        .chain(picked.iter().map(|j| j + k as u32))
        .collect();
    let dev = w.device();
    let idx = Tensor::from_vec(picked.to_vec(), m, dev)?;
    let idx2 = Tensor::from_vec(both, 2 * m, dev)?;
    let sub = omega.subset(&idx)?;
    let r_sub = Released {
        target: r.target.index_select(&idx2, 1)?,
        proportions: r.proportions.clone(),
        label: r.label,
        conditioning: r.conditioning.clone(),
    };
    let w_sub = (w.index_select(&idx2, 1)? * (k as f64 / m as f64))?;
    Ok((sub, r_sub, w_sub))
}

/// The run's frequencies: `scales` over the whole row, and with `patch` > 0 local ones on
/// squares of the image: `patch_share` of the `features` at random places, or with
/// `patch_filters` > 0 that many filters at every place, weighted `patch_share` of the
/// kernel (all public settings, drawn from the run's CSPRNG). `dense`: every frequency as a
/// column of one matrix (what PEARL's critic and `step_features` read), else the local ones
/// held by place (the same features for a thirtieth of their arithmetic).
pub(super) fn frequencies(
    f: &EmbedFit,
    width: usize,
    label: Option<LabelSpan>,
    scales: &[f64],
    dense: bool,
    s: &mut TrainSetup<'_>,
) -> Result<Frequencies> {
    let whole_row = |k: usize, s: &mut TrainSetup<'_>| {
        embedding::mixed_frequencies(width, k, scales, s.noise.rng(), s.device)
    };
    if f.patch == 0 {
        return Frequencies::whole_row(whole_row(f.features, s)?);
    }
    if !(0.0..=1.0).contains(&f.patch_share) {
        return Err(MethodError::Plan(format!(
            "patch_share must be between 0 and 1, got {}",
            f.patch_share
        )));
    }
    let local = ((f.features as f64 * f.patch_share).round() as usize).min(f.features);
    if local == 0 {
        return Frequencies::whole_row(whole_row(f.features, s)?);
    }
    let layout = ImageLayout::of_span(width, label.map(|l| (l.start, l.width())))?;
    let square = (f.patch, f.patch_bandwidth);
    // The local frequencies are drawn first, then the whole row's (the order the measured
    // presets' frequencies came in).
    if f.patch_filters > 0 {
        let sq = SquareFilters::draw(
            width,
            &layout,
            f.patch_filters,
            square,
            s.noise.rng(),
            s.device,
        )?;
        let rest = (local < f.features)
            .then(|| whole_row(f.features - local, s))
            .transpose()?;
        return Frequencies::with_squares(rest, sq, f.patch_share);
    }
    let placed =
        embedding::PlacedFrequencies::draw(width, &layout, local, square, s.noise.rng(), s.device)?;
    let g = (local < f.features)
        .then(|| whole_row(f.features - local, s))
        .transpose()?;
    // The critic and a step's draw of frequencies read every frequency's entries: for them
    // the local ones become the dense columns they stand for (the same features, more
    // arithmetic).
    if !dense {
        return Frequencies::with_placed(g, placed);
    }
    let l = placed.dense()?;
    Frequencies::whole_row(match g {
        Some(g) => Tensor::cat(&[&g, &l], 1)?,
        None => l,
    })
}
