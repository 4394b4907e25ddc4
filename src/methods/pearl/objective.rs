//! The generator's objective: the distance between the released embedding and the
//! generated rows' embedding, its gradient by hand, and the critic that reweights the
//! frequencies (all post-processing of the releases).

use candle_core::Tensor;

use crate::methods::Result;
use crate::methods::embedding::{Frequencies, LabelSpan, features};
use crate::methods::released::with_label;
use crate::nn::layers::loss_grad;

use super::releases::*;

/// The generated rows' joint embedding [C, 2k] and class shares [1, C].
pub(super) fn generated(
    y: &Tensor,
    omega: &Frequencies,
    label: Option<LabelSpan>,
) -> candle_core::Result<(Tensor, Option<Tensor>)> {
    let b = y.dims()[0] as f64;
    let phi = features(y, omega)?;
    match label {
        Some(l) => {
            let m = l.membership(y)?;
            Ok(((m.t()?.matmul(&phi)? / b)?, Some(m.mean_keepdim(0)?)))
        }
        None => Ok((phi.mean_keepdim(0)?, None)),
    }
}

/// The generator's loss: Σ_j w_j Σ_c |Φ̃_c(t_j) − Φ̂_c(t_j)|² (w from the critic, k·p so a
/// uniform critic gives the plain squared distance), plus the class-proportion gap.
/// `unbiased` scales each class's ‖Φ̂_c‖² term by n_c/(n_c − 1) (see [`pair_scale`]).
pub(super) fn distance(
    y: &Tensor,
    omega: &Frequencies,
    r: &Released,
    w: &Tensor,
    unbiased: bool,
) -> candle_core::Result<Tensor> {
    let (emb, shares) = generated(y, omega, r.label)?;
    let mut cf = (r.target.clone() - &emb)?
        .sqr()?
        .broadcast_mul(w)?
        .sum_all()?;
    if unbiased {
        let a = pair_scale(y, r)?;
        let extra = (emb.sqr()?.broadcast_mul(w)?.broadcast_mul(&(a - 1.0)?))?.sum_all()?;
        cf = (cf + extra)?;
    }
    match (shares, &r.proportions) {
        (Some(g), Some(p)) => cf + (p - g)?.sqr()?.sum_all()?,
        _ => Ok(cf),
    }
}

/// n_c/(n_c − 1) per class of the batch, as a [C, 1] column (1 where a class has fewer
/// than two rows). The batch's ‖Φ̂_c‖² = b⁻² Σ_{i,j∈c} φᵢ·φⱼ holds n_c diagonal terms
/// φᵢ·φᵢ = 1 that carry no gradient, so only the n_c(n_c − 1) pairs move the generator,
/// and their expectation is n_c(n_c − 1)/b² · ‖μ_c‖², short of (n_c/b)² ‖μ_c‖² by a factor
/// (1 − 1/n_c). Matching the released n_c/b · μ_c with that shortfall drives ‖μ_c‖ up by
/// 1/(1 − 1/n_c): the generator pays for less varied rows (a class with 40 rows in a batch
/// aims 2.5 % too concentrated). Scaling the quadratic term back makes the loss the
/// U-statistic, an unbiased estimate of the distance to the released embedding.
pub(super) fn pair_scale(y: &Tensor, r: &Released) -> candle_core::Result<Tensor> {
    let n = match r.label {
        Some(l) => l.membership(y)?.sum(0)?,
        None => Tensor::full(y.dims()[0] as f32, 1, y.device())?,
    };
    let pairs = (n.clone() - 1.0)?.clamp(1f32, f32::MAX)?;
    (n / pairs)?.unsqueeze(1)
}

/// [`distance`] of `y` (its label span set by `fix`) and its gradient with respect to `y`,
/// by hand. Candle's backward of the product `y · ω` also forms the gradient of the
/// constant frequencies — as much arithmetic as the product itself and a fresh [width, k]
/// matrix every step, all thrown away; [`Frequencies::project_back`] forms only the rows'. The label columns carry no gradient (`fix` sets
/// them), so membership is a constant; without `fix` but with a label the memberships are
/// the generator's soft class outputs and the autograd path keeps their gradient.
pub(super) fn distance_grad(
    y: &Tensor,
    fix: &Option<(Tensor, Tensor)>,
    omega: &Frequencies,
    r: &Released,
    w: &Tensor,
    unbiased: bool,
) -> Result<(f64, Tensor)> {
    if r.label.is_some() && fix.is_none() {
        return Ok(loss_grad(y, |y| {
            distance(&with_label(y, fix)?, omega, r, w, unbiased)
        })?);
    }
    let yl = with_label(&y.detach(), fix)?;
    let b = yl.dims()[0] as f64;
    let k = omega.count();
    let proj = omega.project(&yl)?;
    let (cos, sin) = (proj.cos()?, proj.sin()?);
    let phi = omega.weigh_pairs(&Tensor::cat(&[&cos, &sin], 1)?)?;
    let membership = r.label.map(|l| l.membership(&yl)).transpose()?;
    let emb = match &membership {
        Some(m) => (m.t()?.matmul(&phi)? / b)?,
        None => phi.mean_keepdim(0)?,
    };
    let gap = (r.target.clone() - &emb)?;
    let mut loss = gap.sqr()?.broadcast_mul(w)?.sum_all()?.to_scalar::<f32>()? as f64;
    if let (Some(m), Some(p)) = (&membership, &r.proportions) {
        loss += (p - m.mean_keepdim(0)?)?
            .sqr()?
            .sum_all()?
            .to_scalar::<f32>()? as f64;
    }
    // ∂L/∂emb = −2 w ⊙ gap; each row's share of it is its class's row, over b. The
    // unbiased loss adds (a − 1) w ⊙ emb² per class, so its gap is t − a ⊙ emb.
    let pull = if unbiased {
        let a = pair_scale(&yl, r)?;
        loss += (emb.sqr()?.broadcast_mul(w)?.broadcast_mul(&(&a - 1.0)?))?
            .sum_all()?
            .to_scalar::<f32>()? as f64;
        (r.target.clone() - emb.broadcast_mul(&a)?)?
    } else {
        gap
    };
    let d_emb = (pull.broadcast_mul(w)? * (-2.0 / b))?;
    let d_phi = match &membership {
        Some(m) => m.matmul(&d_emb)?,
        None => d_emb.broadcast_as(phi.shape())?.contiguous()?,
    };
    let d_cos = d_phi.narrow(1, 0, k)?;
    let d_sin = d_phi.narrow(1, k, k)?;
    let d_proj = omega.weigh(&((cos * d_sin)? - (sin * d_cos)?)?)?;
    let d_yl = omega.project_back(&d_proj)?;
    let dy = match fix {
        Some((mask, _)) => d_yl.broadcast_mul(mask)?,
        None => d_yl,
    };
    Ok((loss, dy))
}

/// |Φ̃(t_j) − Φ̂(t_j)|² per frequency j, summed over classes: what the critic weighs.
pub(super) fn per_frequency(y: &Tensor, omega: &Frequencies, r: &Released) -> Result<Vec<f64>> {
    let (emb, _) = generated(&y.detach(), omega, r.label)?;
    let d: Vec<f32> = (r.target.clone() - emb)?.sqr()?.sum(0)?.to_vec1()?;
    let k = d.len() / 2;
    Ok((0..k).map(|j| (d[j] + d[k + j]) as f64).collect())
}

/// PEARL's critic: per-dimension log length scales s_k = ln(ℓ'_k / ℓ), re-weighting the
/// fixed frequencies by N(0, diag(ℓ'⁻²)) / N(0, ℓ⁻²I), self-normalised (the softmax of
/// the log ratio), so the weights stay a distribution whatever the critic does.
pub(super) struct Critic {
    /// t_kj² ℓ² / 2 for dimension k and frequency j, [width][k].
    half_t2: Vec<Vec<f64>>,
    pub(super) s: Vec<f64>,
    /// Adam moments.
    pub(super) m: Vec<f64>,
    pub(super) v: Vec<f64>,
    pub(super) steps: i32,
    /// The current weights p_j.
    pub(super) p: Vec<f64>,
}

impl Critic {
    /// Frequencies with squares never meet a critic (`PearlConfig::check` refuses them): its
    /// weights stay uniform over them.
    pub(super) fn new(omega: &Frequencies, ell: f64) -> Result<Self> {
        let t: Vec<Vec<f32>> = match omega.matrix() {
            Some(m) => m.to_vec2()?,
            None => Vec::new(),
        };
        let half_t2: Vec<Vec<f64>> = t
            .iter()
            .map(|row| {
                row.iter()
                    .map(|v| (*v as f64).powi(2) * ell * ell / 2.0)
                    .collect()
            })
            .collect();
        let (width, k) = (t.len(), omega.count());
        Ok(Self {
            half_t2,
            s: vec![0.0; width],
            m: vec![0.0; width],
            v: vec![0.0; width],
            steps: 0,
            p: vec![1.0 / k.max(1) as f64; k],
        })
    }

    /// p_j ∝ exp(Σ_k t_kj² ℓ²/2 · (1 − e^{2 s_k})).
    pub(super) fn reweigh(&mut self) {
        let k = self.p.len();
        let mut logw = vec![0.0; k];
        for (row, s) in self.half_t2.iter().zip(&self.s) {
            let a = 1.0 - (2.0 * s).exp();
            if a == 0.0 {
                continue;
            }
            for (l, t) in logw.iter_mut().zip(row) {
                *l += t * a;
            }
        }
        let max = logw.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = logw.iter().map(|l| (l - max).exp()).collect();
        let z: f64 = e.iter().sum();
        self.p = e.iter().map(|x| x / z).collect();
    }

    /// k·p as a [1, 2k] tensor (cos and sin parts of a frequency share its weight).
    pub(super) fn weights_tensor(&self, dev: &candle_core::Device) -> Result<Tensor> {
        let k = self.p.len() as f64;
        let w: Vec<f32> = self
            .p
            .iter()
            .chain(&self.p)
            .map(|p| (p * k) as f32)
            .collect();
        let len = w.len();
        Ok(Tensor::from_vec(w, (1, len), dev)?)
    }

    /// One Adam step up Σ_j p_j D_j in s: ∂/∂s_k = Σ_j p_j (D_j − D̄)(−t_kj² ℓ² e^{2 s_k}).
    pub(super) fn ascend(&mut self, d: &[f64], lr: f64) {
        let mean: f64 = self.p.iter().zip(d).map(|(p, d)| p * d).sum();
        self.steps += 1;
        let (b1, b2) = (0.9f64, 0.999f64);
        for (k, row) in self.half_t2.iter().enumerate() {
            let e = (2.0 * self.s[k]).exp();
            let g: f64 = row
                .iter()
                .zip(self.p.iter().zip(d))
                .map(|(t, (p, dj))| p * (dj - mean) * (-2.0 * t * e))
                .sum();
            self.m[k] = b1 * self.m[k] + (1.0 - b1) * g;
            self.v[k] = b2 * self.v[k] + (1.0 - b2) * g * g;
            let mh = self.m[k] / (1.0 - b1.powi(self.steps));
            let vh = self.v[k] / (1.0 - b2.powi(self.steps));
            // Ascent, kept within a factor e³ of the released scale.
            self.s[k] = (self.s[k] + lr * mh / (vh.sqrt() + 1e-12)).clamp(-3.0, 3.0);
        }
        self.reweigh();
    }
}
