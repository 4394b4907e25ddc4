//! [`super::objective::distance_grad`] for the common case — labels fixed to the drawn
//! classes (or no label), on the CPU — in two passes over the batch's projections instead
//! of a dozen tensor operations over [B, 2k] intermediates.
//!
//! Why: in `mnist-local-long` a generator step's feature side (cosines, sines, their
//! weights, the class means, the gap and its way back to each projection) made about a
//! third of the step, most of it moving [200, 20,000] tensors through memory one operation
//! at a time and evaluating sine and cosine with separate library calls. Here each
//! projection is read once, its sine and cosine come from one shared range reduction, and
//! each gradient entry is written once. Post-processing of the releases like the path it
//! replaces; a test holds the two side by side on random batches.

use candle_core::{Device, Tensor};
use rayon::prelude::*;

use crate::methods::Result;
use crate::methods::embedding::Frequencies;
use crate::methods::released::with_label;
use crate::nn::host::{on_values, with_avx2};

use super::releases::Released;

/// sin x and cos x for |x| up to a few thousand, within 1e-6 (f32): one Cody–Waite
/// reduction by π/2 shared by both, then Cephes' single-precision polynomials on
/// [−π/4, π/4]. Branch-free, so a loop over it vectorizes.
#[inline(always)]
pub(super) fn sincos(x: f32) -> (f32, f32) {
    const TWO_OVER_PI: f32 = std::f32::consts::FRAC_2_PI;
    // π/2 in three parts, each exact in f32 times a small integer.
    const P1: f32 = 1.570_312_5;
    const P2: f32 = 4.837_513e-4;
    const P3: f32 = 7.549_79e-8;
    // Round to nearest by the float trick (|x| ≪ 2²²): `round()` is a library call that
    // keeps the loop from vectorizing.
    const SHIFT: f32 = 12_582_912.0; // 1.5 · 2²³
    let n = (x * TWO_OVER_PI + SHIFT) - SHIFT;
    let r = ((x - n * P1) - n * P2) - n * P3;
    let z = r * r;
    let s = r + r * z * (-1.666_665_5e-1 + z * (8.332_161e-3 + z * -1.951_529_6e-4));
    let c = 1.0 - 0.5 * z + z * z * (4.166_664_6e-2 + z * (-1.388_731_6e-3 + z * 2.443_315_7e-5));
    let q = (n as i32) & 3;
    let (sin, cos) = if q & 1 == 0 { (s, c) } else { (c, s) };
    let sin = if q & 2 == 0 { sin } else { -sin };
    let cos = if (q + 1) & 2 == 0 { cos } else { -cos };
    (sin, cos)
}

/// Each row's class when `membership` [B, C] is one-hot (labels fixed to drawn classes);
/// None when some row is not (soft class outputs keep the tensor path).
fn classes_of(membership: &Tensor) -> Result<Option<Vec<usize>>> {
    let rows: Vec<Vec<f32>> = membership.to_vec2()?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let ones = r.iter().filter(|v| **v == 1.0).count();
        let zeros = r.iter().filter(|v| **v == 0.0).count();
        match r.iter().position(|v| *v == 1.0) {
            Some(c) if ones == 1 && zeros + 1 == r.len() => out.push(c),
            _ => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// The loss and its gradient with respect to `y`, as `distance_grad` computes them, or
/// None when this path does not apply (another device, labels not fixed to classes).
pub(super) fn distance_grad_fused(
    y: &Tensor,
    fix: &Option<(Tensor, Tensor)>,
    omega: &Frequencies,
    r: &Released,
    w: &Tensor,
    unbiased: bool,
) -> Result<Option<(f64, Tensor)>> {
    if !matches!(y.device(), Device::Cpu) || (r.label.is_some() && fix.is_none()) {
        return Ok(None);
    }
    let yl = with_label(&y.detach(), fix)?;
    let classes = match r.label {
        Some(l) => match classes_of(&l.membership(&yl)?)? {
            Some(c) => c,
            None => return Ok(None),
        },
        None => vec![0; yl.dims()[0]],
    };
    let k = omega.count();
    let proj = omega.project(&yl)?;
    let a = omega.pair_weights()?;
    let wv: Vec<f32> = w.flatten_all()?.to_vec1()?;
    let target: Vec<Vec<f32>> = r.target.to_vec2()?;
    let proportions: Option<Vec<f32>> = match &r.proportions {
        Some(p) => Some(p.flatten_all()?.to_vec1()?),
        None => None,
    };
    let pass = |proj: &[f32]| {
        let g = Gap::new(proj, &classes, (k, target.len()), &a);
        let (loss, pull) = g.loss_and_pull(&target, &wv, proportions.as_deref(), unbiased);
        (loss, g.back(proj, &pull, &wv, &a))
    };
    // The projections read where they lie (a copy of [B, k] saved every step).
    let (loss, d_proj) = on_values(&proj, pass)?;
    let d_proj = Tensor::from_vec(d_proj, (classes.len(), k), y.device())?;
    let d_yl = omega.project_back(&d_proj)?;
    let dy = match fix {
        Some((mask, _)) => d_yl.broadcast_mul(mask)?,
        None => d_yl,
    };
    Ok(Some((loss, dy)))
}

/// A batch's class embeddings and what each class holds.
struct Gap<'a> {
    /// Φ̂ [C][2k]: the class sums of a_j (cos, sin) over the batch, over b.
    emb: Vec<Vec<f32>>,
    counts: Vec<usize>,
    classes: &'a [usize],
    k: usize,
}

impl<'a> Gap<'a> {
    fn new(proj: &[f32], classes: &'a [usize], (k, c): (usize, usize), a: &[f32]) -> Self {
        let b = classes.len() as f32;
        let mut counts = vec![0usize; c];
        for &cl in classes {
            counts[cl] += 1;
        }
        // Parallel over frequencies: each chunk of j owns its columns of every class.
        let chunk = 256;
        let cols: Vec<Vec<[f32; 2]>> = (0..k)
            .into_par_iter()
            .step_by(chunk)
            .map(|j0| {
                with_avx2(
                    #[inline(always)]
                    || {
                        let j1 = (j0 + chunk).min(k);
                        let mut acc = vec![[0f32; 2]; c * (j1 - j0)];
                        for (i, &cl) in classes.iter().enumerate() {
                            let row = &proj[i * k + j0..i * k + j1];
                            let out = &mut acc[cl * (j1 - j0)..(cl + 1) * (j1 - j0)];
                            for (o, p) in out.iter_mut().zip(row) {
                                let (s, co) = sincos(*p);
                                o[0] += co;
                                o[1] += s;
                            }
                        }
                        acc
                    },
                )
            })
            .collect();
        let mut emb = vec![vec![0f32; 2 * k]; c];
        for (chunk_no, acc) in cols.iter().enumerate() {
            let j0 = chunk_no * chunk;
            let len = acc.len() / c;
            for (cl, e) in emb.iter_mut().enumerate() {
                for t in 0..len {
                    let [co, s] = acc[cl * len + t];
                    e[j0 + t] = a[j0 + t] * co / b;
                    e[k + j0 + t] = a[j0 + t] * s / b;
                }
            }
        }
        Self {
            emb,
            counts,
            classes,
            k,
        }
    }

    /// The loss and each class's pull (target − scale ⊙ Φ̂, the scale n_c/(n_c − 1) with
    /// the unbiased distance, else 1), as `distance_grad` forms them.
    fn loss_and_pull(
        &self,
        target: &[Vec<f32>],
        w: &[f32],
        proportions: Option<&[f32]>,
        unbiased: bool,
    ) -> (f64, Vec<Vec<f32>>) {
        let b = self.classes.len() as f64;
        let mut loss = 0f64;
        let mut pull = Vec::with_capacity(self.emb.len());
        for (cl, (e, t)) in self.emb.iter().zip(target).enumerate() {
            let n = self.counts[cl] as f32;
            let scale = if unbiased {
                n / (n - 1.0).max(1.0)
            } else {
                1.0
            };
            let mut p = Vec::with_capacity(e.len());
            for ((ej, tj), wj) in e.iter().zip(t).zip(w) {
                let gap = (tj - ej) as f64;
                loss += (*wj as f64) * gap * gap;
                if unbiased {
                    loss += (*wj as f64) * (*ej as f64).powi(2) * (scale as f64 - 1.0);
                }
                p.push(tj - scale * ej);
            }
            pull.push(p);
        }
        if let Some(pr) = proportions {
            for (cl, pc) in pr.iter().enumerate() {
                loss += (*pc as f64 - self.counts[cl] as f64 / b).powi(2);
            }
        }
        (loss, pull)
    }

    /// ∂L/∂proj [B, k]: with d = −2/b · w ⊙ pull of the row's class,
    /// a_j (cos · d_sin − sin · d_cos).
    fn back(&self, proj: &[f32], pull: &[Vec<f32>], w: &[f32], a: &[f32]) -> Vec<f32> {
        let (k, b) = (self.k, self.classes.len() as f32);
        let d: Vec<Vec<f32>> = pull
            .iter()
            .map(|p| p.iter().zip(w).map(|(p, w)| -2.0 / b * w * p).collect())
            .collect();
        let mut out = vec![0f32; proj.len()];
        out.par_chunks_mut(k)
            .zip(proj.par_chunks(k))
            .zip(self.classes.par_iter())
            .for_each(|((o, row), cl)| {
                with_avx2(
                    #[inline(always)]
                    || {
                        let (dc, ds) = d[*cl].split_at(k);
                        let (a, dc, ds) = (&a[..k], &dc[..k], &ds[..k]);
                        for j in 0..k {
                            let (s, c) = sincos(row[j]);
                            o[j] = a[j] * (c * ds[j] - s * dc[j]);
                        }
                    },
                )
            });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::embedding::{self, LabelSpan};
    use crate::methods::pearl::objective::distance_grad;
    use crate::nn::reference::max_gap as gap;
    use rand::{Rng, SeedableRng};

    /// The shared reduction holds over the range projections take (and far beyond).
    #[test]
    fn sincos_matches_the_library() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let mut worst = 0f32;
        for i in 0..200_000 {
            let x: f32 = if i < 100 {
                (i as f32 - 50.0) * std::f32::consts::FRAC_PI_4
            } else {
                rng.random_range(-300.0..300.0)
            };
            let (s, c) = sincos(x);
            let (ws, wc) = ((x as f64).sin(), (x as f64).cos());
            worst = worst.max((s as f64 - ws).abs() as f32);
            worst = worst.max((c as f64 - wc).abs() as f32);
        }
        assert!(worst < 1e-6, "worst error {worst}");
    }

    /// The fused pass gives the tensor path's loss and gradient: with and without a label,
    /// biased and unbiased, with released proportions, a non-uniform critic weight, and
    /// frequencies with local squares held by place.
    #[test]
    fn the_fused_pass_is_the_tensor_path() {
        let dev = Device::Cpu;
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let (side, classes, batch) = (6, 3, 40);
        let width = side * side + classes;
        let layout =
            crate::methods::image_nets::ImageLayout::of_span(width, Some((0, classes))).unwrap();
        for (labelled, unbiased) in [(true, true), (true, false), (false, true)] {
            let placed =
                embedding::PlacedFrequencies::draw(width, &layout, 30, (3, 1.2), &mut rng, &dev)
                    .unwrap();
            let row = embedding::frequencies(width, 25, 2.0, &mut rng, &dev).unwrap();
            let omega = Frequencies::with_placed(Some(row), placed).unwrap();
            let k = omega.count();
            let label = labelled.then_some(LabelSpan {
                start: 0,
                classes,
                binary: false,
            });
            let c = if labelled { classes } else { 1 };
            let r = Released {
                target: (Tensor::rand(-0.1f32, 0.1, (c, 2 * k), &dev).unwrap()),
                proportions: labelled.then(|| Tensor::new(&[[0.3f32, 0.5, 0.2]], &dev).unwrap()),
                label,
                conditioning: None,
            };
            let y = Tensor::rand(0f32, 1f32, (batch, width), &dev).unwrap();
            let drawn: Vec<usize> = (0..batch).map(|i| i % classes).collect();
            let fix = labelled.then(|| {
                let mut mask = vec![1f32; width];
                mask[..classes].iter_mut().for_each(|m| *m = 0.0);
                let mut fill = vec![0f32; batch * width];
                for (i, cl) in drawn.iter().enumerate() {
                    fill[i * width + cl] = 1.0;
                }
                (
                    Tensor::from_vec(mask, (1, width), &dev).unwrap(),
                    Tensor::from_vec(fill, (batch, width), &dev).unwrap(),
                )
            });
            let w = Tensor::rand(0.5f32, 1.5, (1, 2 * k), &dev).unwrap();
            let (l0, g0) = distance_grad(&y, &fix, &omega, &r, &w, unbiased).unwrap();
            let (l1, g1) = distance_grad_fused(&y, &fix, &omega, &r, &w, unbiased)
                .unwrap()
                .expect("the fused path applies");
            assert!((l0 - l1).abs() < 1e-5 * l0.abs().max(1.0), "{l0} vs {l1}");
            let scale = g0
                .abs()
                .unwrap()
                .max_all()
                .unwrap()
                .to_scalar::<f32>()
                .unwrap();
            assert!(
                gap(&g0, &g1) < 1e-4 * scale.max(1e-3),
                "labelled {labelled}"
            );
        }
    }
}
