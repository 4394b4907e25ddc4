//! The forward and backward passes through a block list, one example's signal at a time
//! where DP-SGD needs it, and the activations and samplers they use.

use candle_core::{D, DType, Device, Tensor};
use rand::Rng;

use crate::nn::{NnError, Result, host};

use super::*;

pub(super) fn act_forward(a: Act, z: &Tensor) -> Result<Tensor> {
    Ok(match a {
        Act::Relu => z.relu()?,
        Act::LeakyRelu(s) => {
            // One pass, bit-identical to candle's max(z, 0) + min(z, 0)·s (five tensor
            // operations there).
            let s32 = s as f32;
            let one = |v: f32| {
                let max = if v < 0.0 { 0.0 } else { v };
                let min = if v > 0.0 { 0.0 } else { v };
                max + (min * s32 + 0.0)
            };
            match host::map(z, one)? {
                Some(y) => y,
                None => candle_nn::ops::leaky_relu(z, s)?,
            }
        }
        Act::Tanh => z.tanh()?,
        Act::Sigmoid => candle_nn::ops::sigmoid(z)?,
    })
}

pub(super) fn act_backward(a: Act, z: &Tensor, y: &Tensor, dy: &Tensor) -> Result<Tensor> {
    // One parallel pass on the CPU: the same arithmetic in the same order as the tensor
    // path below (bit-identical, tested), which took four single-threaded operations.
    // Relu and leaky Relu read the pre-activation, tanh and sigmoid the output.
    let src = match a {
        Act::Relu | Act::LeakyRelu(_) => z,
        Act::Tanh | Act::Sigmoid => y,
    };
    let one = |d: f32, v: f32| -> f32 {
        match a {
            Act::Relu => d * if v >= 0.0 { 1.0 } else { 0.0 },
            Act::LeakyRelu(s) => {
                let g = if v >= 0.0 { 1.0f32 } else { 0.0 };
                d * (g * (1.0 - s) as f32 + s as f32)
            }
            Act::Tanh => d * (v * v * -1.0 + 1.0),
            Act::Sigmoid => d * (v * (v * -1.0 + 1.0)),
        }
    };
    match host::zip_map(dy, src, one)? {
        Some(dz) => Ok(dz),
        None => act_backward_tensors(a, z, y, dy),
    }
}

/// [`act_backward`] as tensor operations: any device, and the reference for the CPU's
/// one-pass loop.
fn act_backward_tensors(a: Act, z: &Tensor, y: &Tensor, dy: &Tensor) -> Result<Tensor> {
    Ok(match a {
        Act::Relu => (dy * z.ge(0f32)?.to_dtype(DType::F32)?)?,
        Act::LeakyRelu(s) => {
            let m = z.ge(0f32)?.to_dtype(DType::F32)?.affine(1.0 - s, s)?;
            (dy * m)?
        }
        Act::Tanh => (dy * y.sqr()?.affine(-1.0, 1.0)?)?,
        Act::Sigmoid => (dy * (y * y.affine(-1.0, 1.0)?)?)?,
    })
}

/// Softmax along the last dimension of a [B, k] tensor.
pub(super) fn softmax(z: &Tensor) -> Result<Tensor> {
    Ok(candle_nn::ops::softmax_last_dim(&z.contiguous()?)?)
}

/// Logistic noise log u − log(1 − u): the difference of two Gumbel draws.
pub(super) fn logistic<R: Rng + ?Sized>(
    shape: (usize, usize),
    dev: &Device,
    rng: &mut R,
) -> Result<Tensor> {
    let v: Vec<f32> = (0..shape.0 * shape.1)
        .map(|_| {
            let u: f64 = rng.random_range(1e-12..1.0 - 1e-12);
            (u.ln() - (1.0 - u).ln()) as f32
        })
        .collect();
    Ok(Tensor::from_vec(v, shape, dev)?)
}

pub(super) fn gumbel<R: Rng + ?Sized>(
    shape: (usize, usize),
    dev: &Device,
    rng: &mut R,
) -> Result<Tensor> {
    let n = shape.0 * shape.1;
    let v: Vec<f32> = (0..n)
        .map(|_| {
            let u: f64 = rng.random_range(1e-12..1.0);
            (-(-u.ln()).ln()) as f32
        })
        .collect();
    Ok(Tensor::from_vec(v, shape, dev)?)
}

type MaybeRng<'a, 'b> = &'a mut Option<&'b mut dyn rand::RngCore>;

pub(super) fn forward_blocks(
    blocks: &[Block],
    x: &Tensor,
    train: bool,
    rng: MaybeRng<'_, '_>,
    keep: bool,
) -> Result<(Tensor, Vec<Cache>)> {
    let mut h = x.clone();
    let mut caches = Vec::with_capacity(if keep { blocks.len() } else { 0 });
    for b in blocks {
        let (y, c) = match b {
            Block::Linear(l) => {
                let mut z = h.matmul(&l.w.as_tensor().t()?)?;
                if let Some(bias) = &l.b {
                    z = z.broadcast_add(bias.as_tensor())?;
                }
                (z, keep.then(|| Cache::Linear { a: h.clone() }))
            }
            Block::Conv(conv) => {
                let (z, c) = conv.forward(&h)?;
                (z, keep.then_some(Cache::Conv(c)))
            }
            Block::Act(a) => {
                let y = act_forward(*a, &h)?;
                let c = keep.then(|| Cache::Act {
                    z: h.clone(),
                    y: y.clone(),
                });
                (y, c)
            }
            Block::LayerNorm(n) => keep_if(keep, layer_norm(n, &h)?),
            Block::BatchNorm(n) => keep_if(keep, batch_norm(n, &h, train)?),
            Block::Residual(inner) => {
                let (fy, c) = forward_blocks(inner, &h, train, rng, keep)?;
                ((&h + fy)?, keep.then_some(Cache::Residual(c)))
            }
            Block::Head(spans) => keep_if(keep, heads(spans, &h, rng)?),
            Block::Pad { before, after } => (pad(&h, *before, *after)?, keep.then_some(Cache::Pad)),
            Block::LabelMaps {
                start,
                classes,
                pixels,
            } => (
                label_maps(&h, *start, *classes, *pixels)?,
                keep.then_some(Cache::LabelMaps),
            ),
            Block::Dropout(p) => keep_if(keep, dropout(*p, &h, train, rng)?),
        };
        if let Some(c) = c {
            caches.push(c);
        }
        h = y;
    }
    Ok((h, caches))
}

/// A layer's output, with its cache where the backward pass will need it.
fn keep_if(keep: bool, (y, c): (Tensor, Cache)) -> (Tensor, Option<Cache>) {
    (y, keep.then_some(c))
}

/// Layer normalisation over each row's features.
fn layer_norm(n: &LayerNorm, h: &Tensor) -> Result<(Tensor, Cache)> {
    let mean = h.mean_keepdim(D::Minus1)?;
    let xc = h.broadcast_sub(&mean)?;
    let var = xc.sqr()?.mean_keepdim(D::Minus1)?;
    let inv_std = (var + n.eps)?.sqrt()?.recip()?;
    let xhat = xc.broadcast_mul(&inv_std)?;
    let y = xhat
        .broadcast_mul(n.gamma.as_tensor())?
        .broadcast_add(n.beta.as_tensor())?;
    Ok((y, Cache::Norm { xhat, inv_std }))
}

/// Batch normalisation: in training over the batch (updating the running statistics),
/// otherwise with the running statistics.
fn batch_norm(n: &BatchNorm, h: &Tensor, train: bool) -> Result<(Tensor, Cache)> {
    let (mean, var) = if train {
        let mean = h.mean_keepdim(0)?;
        let var = h.broadcast_sub(&mean)?.sqr()?.mean_keepdim(0)?;
        let m = n.momentum;
        n.running_mean
            .set(&((n.running_mean.as_tensor() * (1.0 - m))? + (mean.squeeze(0)? * m)?)?)?;
        n.running_var
            .set(&((n.running_var.as_tensor() * (1.0 - m))? + (var.squeeze(0)? * m)?)?)?;
        (mean, var)
    } else {
        (
            n.running_mean.as_tensor().unsqueeze(0)?,
            n.running_var.as_tensor().unsqueeze(0)?,
        )
    };
    let inv_std = (var + n.eps)?.sqrt()?.recip()?;
    let xhat = h.broadcast_sub(&mean)?.broadcast_mul(&inv_std)?;
    let y = xhat
        .broadcast_mul(n.gamma.as_tensor())?
        .broadcast_add(n.beta.as_tensor())?;
    Ok((y, Cache::Norm { xhat, inv_std }))
}

/// The output heads, span by span: the Gumbel and logistic relaxations draw their noise
/// from `rng` when there is one (training), and are their plain forms otherwise.
fn heads(spans: &[HeadSpan], h: &Tensor, rng: MaybeRng<'_, '_>) -> Result<(Tensor, Cache)> {
    let (bsz, _) = h.dims2()?;
    let spans = merged_heads(spans);
    let mut parts = Vec::with_capacity(spans.len());
    let mut taus = Vec::with_capacity(spans.len());
    for s in &spans {
        let z = h.narrow(1, s.start, s.len)?;
        let (y, tau) = match s.kind {
            HeadKind::Sigmoid => (candle_nn::ops::sigmoid(&z)?, 1.0),
            HeadKind::Softmax => (softmax(&z)?, 1.0),
            HeadKind::GumbelSoftmax { tau } => match rng.as_deref_mut() {
                Some(r) => {
                    let g = gumbel((bsz, s.len), &h.device().clone(), r)?;
                    (softmax(&((z + g)? / tau)?)?, tau)
                }
                None => (softmax(&z)?, 1.0),
            },
            HeadKind::GumbelSigmoid { tau } => match rng.as_deref_mut() {
                Some(r) => {
                    let l = logistic((bsz, s.len), &h.device().clone(), r)?;
                    (candle_nn::ops::sigmoid(&((z + l)? / tau)?)?, tau)
                }
                None => (candle_nn::ops::sigmoid(&z)?, 1.0),
            },
            HeadKind::Tanh => (z.tanh()?, 1.0),
            HeadKind::Identity => (z, 1.0),
        };
        parts.push(y);
        taus.push(tau);
    }
    let y = Tensor::cat(&parts, 1)?;
    Ok((y.clone(), Cache::Head { y, taus }))
}

/// Inverted dropout in training (each unit kept with probability 1 − p and scaled by
/// 1/(1 − p)); the identity otherwise.
fn dropout(p: f64, h: &Tensor, train: bool, rng: MaybeRng<'_, '_>) -> Result<(Tensor, Cache)> {
    match rng.as_deref_mut() {
        Some(r) if train && p > 0.0 => {
            let keep_p = 1.0 - p;
            let m: Vec<f32> = (0..h.elem_count())
                .map(|_| {
                    if r.random::<f64>() < keep_p {
                        (1.0 / keep_p) as f32
                    } else {
                        0.0
                    }
                })
                .collect();
            let mask = Tensor::from_vec(m, h.shape(), h.device())?;
            Ok(((h * &mask)?, Cache::Dropout { mask: Some(mask) }))
        }
        _ => Ok((h.clone(), Cache::Dropout { mask: None })),
    }
}

pub(super) fn backward_blocks(
    blocks: &[Block],
    caches: &[Cache],
    dy: &Tensor,
    signals: &mut Vec<Signal>,
) -> Result<Tensor> {
    if blocks.len() != caches.len() {
        return Err(NnError::Invalid(
            "backward called without a matching training forward pass".into(),
        ));
    }
    let mut d = dy.clone();
    for (b, c) in blocks.iter().zip(caches).rev() {
        d = match (b, c) {
            (Block::Linear(l), Cache::Linear { a }) => {
                signals.push(Signal::Linear {
                    a: a.clone(),
                    delta: d.clone(),
                    bias: l.b.is_some(),
                });
                d.matmul(l.w.as_tensor())?
            }
            (Block::Conv(conv), Cache::Conv(c)) => {
                let (dx, signal) = conv.backward(c, &d)?;
                signals.push(Signal::Conv(signal));
                dx
            }
            (Block::Act(a), Cache::Act { z, y }) => act_backward(*a, z, y, &d)?,
            (Block::LayerNorm(n), Cache::Norm { xhat, inv_std }) => {
                signals.push(Signal::LayerNorm {
                    xhat: xhat.clone(),
                    delta: d.clone(),
                });
                norm_backward(n.gamma.as_tensor(), xhat, inv_std, &d, D::Minus1)?
            }
            (Block::BatchNorm(n), Cache::Norm { xhat, inv_std }) => {
                signals.push(Signal::BatchNorm {
                    xhat: xhat.clone(),
                    delta: d.clone(),
                });
                norm_backward(n.gamma.as_tensor(), xhat, inv_std, &d, 0)?
            }
            (Block::Residual(inner), Cache::Residual(ic)) => {
                let df = backward_blocks(inner, ic, &d, signals)?;
                (&d + df)?
            }
            (Block::Head(spans), Cache::Head { y, taus }) => heads_backward(spans, y, taus, &d)?,
            (Block::Pad { before, after }, Cache::Pad) => {
                let d_in = d.dims2()?.1 - before - after;
                d.narrow(1, *before, d_in)?
            }
            (
                Block::LabelMaps {
                    start,
                    classes,
                    pixels,
                },
                Cache::LabelMaps,
            ) => label_maps_backward(&d, *start, *classes, *pixels)?,
            (Block::Dropout(_), Cache::Dropout { mask }) => match mask {
                Some(m) => (&d * m)?,
                None => d,
            },
            _ => {
                return Err(NnError::Invalid(
                    "forward cache does not match the network".into(),
                ));
            }
        };
    }
    Ok(d)
}

/// See [`Block::LabelMaps`]: `h` [B, pixels + classes] → [B, (1 + classes) · pixels].
pub(crate) fn label_maps(
    h: &Tensor,
    start: usize,
    classes: usize,
    pixels: usize,
) -> Result<Tensor> {
    let (b, w) = h.dims2()?;
    if w != pixels + classes || start + classes > w {
        return Err(NnError::Invalid(format!(
            "label maps of {classes} classes at {start} over {pixels} pixels need {} columns, not {w}",
            pixels + classes
        )));
    }
    let mut image = Vec::with_capacity(2);
    if start > 0 {
        image.push(h.narrow(1, 0, start)?);
    }
    if start + classes < w {
        image.push(h.narrow(1, start + classes, w - start - classes)?);
    }
    let maps = h
        .narrow(1, start, classes)?
        .unsqueeze(2)?
        .broadcast_as((b, classes, pixels))?
        .reshape((b, classes * pixels))?;
    image.push(maps);
    Ok(Tensor::cat(&image, 1)?)
}

/// The adjoint of [`label_maps`]: image signals back in place, each label value's signal
/// summed over its map.
pub(super) fn label_maps_backward(
    d: &Tensor,
    start: usize,
    classes: usize,
    pixels: usize,
) -> Result<Tensor> {
    let b = d.dims2()?.0;
    let image = d.narrow(1, 0, pixels)?;
    let label = d
        .narrow(1, pixels, classes * pixels)?
        .reshape((b, classes, pixels))?
        .sum(2)?;
    let mut parts = Vec::with_capacity(3);
    if start > 0 {
        parts.push(image.narrow(1, 0, start)?);
    }
    parts.push(label);
    if start < pixels {
        parts.push(image.narrow(1, start, pixels - start)?);
    }
    Ok(Tensor::cat(&parts, 1)?)
}

/// `h` [B, d] with `before` zero columns in front and `after` behind.
pub(crate) fn pad(h: &Tensor, before: usize, after: usize) -> Result<Tensor> {
    let b = h.dims2()?.0;
    let mut parts = Vec::with_capacity(3);
    if before > 0 {
        parts.push(Tensor::zeros((b, before), h.dtype(), h.device())?);
    }
    parts.push(h.clone());
    if after > 0 {
        parts.push(Tensor::zeros((b, after), h.dtype(), h.device())?);
    }
    Ok(Tensor::cat(&parts, 1)?)
}

/// The gradient through a normalisation whose statistics were taken along `dim` (the
/// features for layer norm, the batch for batch norm), given x̂ and 1/σ from the forward.
fn norm_backward<Dm: candle_core::shape::Dim + Copy>(
    gamma: &Tensor,
    xhat: &Tensor,
    inv_std: &Tensor,
    d: &Tensor,
    dim: Dm,
) -> Result<Tensor> {
    let dxhat = d.broadcast_mul(gamma)?;
    let m1 = dxhat.mean_keepdim(dim)?;
    let m2 = (&dxhat * xhat)?.mean_keepdim(dim)?;
    Ok(dxhat
        .broadcast_sub(&m1)?
        .sub(&xhat.broadcast_mul(&m2)?)?
        .broadcast_mul(inv_std)?)
}

/// The gradient through the output heads, span by span, from their outputs `y` (a relaxed
/// head's temperature divides its gradient).
fn heads_backward(spans: &[HeadSpan], y: &Tensor, taus: &[f64], d: &Tensor) -> Result<Tensor> {
    let spans = merged_heads(spans);
    let mut parts = Vec::with_capacity(spans.len());
    for (s, tau) in spans.iter().zip(taus) {
        let ys = y.narrow(1, s.start, s.len)?;
        let ds = d.narrow(1, s.start, s.len)?;
        let dz = match s.kind {
            HeadKind::Sigmoid | HeadKind::GumbelSigmoid { .. } => {
                (ds * (&ys * ys.affine(-1.0, 1.0)?)?)?.affine(1.0 / tau, 0.0)?
            }
            HeadKind::Softmax | HeadKind::GumbelSoftmax { .. } => {
                let dot = (&ds * &ys)?.sum_keepdim(1)?;
                (ys * ds.broadcast_sub(&dot)?)?.affine(1.0 / tau, 0.0)?
            }
            HeadKind::Tanh => (ds * ys.sqr()?.affine(-1.0, 1.0)?)?,
            HeadKind::Identity => ds,
        };
        parts.push(dz);
    }
    Ok(Tensor::cat(&parts, 1)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-pass leaky Relu and activation backward equal the tensor paths bit for
    /// bit, for every activation, with exact zeros in the pre-activation.
    #[test]
    fn one_pass_activations_are_the_tensor_path() {
        let dev = Device::Cpu;
        let n = (2, 20_000);
        let z = Tensor::randn(0f32, 1.0, n, &dev).unwrap();
        let keep = z
            .abs()
            .unwrap()
            .ge(0.1f32)
            .unwrap()
            .to_dtype(DType::F32)
            .unwrap();
        let z = (z * keep).unwrap();
        let dy = Tensor::randn(0f32, 1.0, n, &dev).unwrap();
        let same = |a: &Tensor, b: &Tensor| {
            let (a, b): (Vec<f32>, Vec<f32>) = (
                a.flatten_all().unwrap().to_vec1().unwrap(),
                b.flatten_all().unwrap().to_vec1().unwrap(),
            );
            a == b
        };
        let leaky = act_forward(Act::LeakyRelu(0.2), &z).unwrap();
        assert!(same(&leaky, &candle_nn::ops::leaky_relu(&z, 0.2).unwrap()));
        for a in [Act::Relu, Act::LeakyRelu(0.2), Act::Tanh, Act::Sigmoid] {
            let y = act_forward(a, &z).unwrap();
            let fast = act_backward(a, &z, &y, &dy).unwrap();
            let slow = act_backward_tensors(a, &z, &y, &dy).unwrap();
            assert!(same(&fast, &slow), "{a:?}");
        }
    }
}
