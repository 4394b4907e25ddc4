//! The slow, obviously-correct DP-SGD gradient: one forward and one autograd backward pass
//! per example, explicit per-example gradients, joint clipping, then the sum. Written
//! with candle's autograd and plain tensor ops only, independently of the hand-written
//! backward pass in [`super::layers`], so the tests can hold the fast path to it.

use candle_core::{D, Tensor};

use super::dpsgd::LossFn;
use super::layers::{Act, Block, HeadKind, Net};
use super::{NnError, Result};

/// The largest elementwise difference between two tensors of one shape: how the tests
/// hold a fast path to its reference. Test-only, so it may panic.
#[cfg(test)]
pub(crate) fn max_gap(a: &Tensor, b: &Tensor) -> f32 {
    (a - b)
        .and_then(|d| d.abs())
        .and_then(|d| d.max_all())
        .and_then(|d| d.to_scalar::<f32>())
        .expect("tensors of one shape and dtype f32")
}

fn act(a: Act, z: &Tensor) -> candle_core::Result<Tensor> {
    match a {
        Act::Relu => z.relu(),
        Act::LeakyRelu(s) => z.maximum(&(z * s)?),
        Act::Tanh => z.tanh(),
        Act::Sigmoid => (z.neg()?.exp()? + 1.0)?.recip(),
    }
}

/// A convolution through candle's own `conv2d` / `conv_transpose2d` (whose kernel
/// [C_in, C_out, k, k] is the transposed layer's weight reshaped), independent of the
/// layer's gather map.
pub(crate) fn conv(c: &super::conv::Conv2d, h: &Tensor) -> Result<Tensor> {
    let s = c.shape;
    let bsz = h.dims()[0];
    let img = h.reshape((bsz, s.cin, s.h, s.w))?;
    let y = if s.transposed {
        let k = c.w.as_tensor().reshape((s.cin, s.cout, s.k, s.k))?;
        img.conv_transpose2d(&k, s.pad, 0, s.stride, 1)?
    } else {
        let k = c.w.as_tensor().reshape((s.cout, s.cin, s.k, s.k))?;
        img.conv2d(&k, s.pad, s.stride, 1, 1)?
    };
    let y = match &c.b {
        Some(b) => y.broadcast_add(&b.as_tensor().reshape((1, s.cout, 1, 1))?)?,
        None => y,
    };
    Ok(y.flatten_from(1)?)
}

fn softmax_rows(z: &Tensor) -> candle_core::Result<Tensor> {
    let e = z.exp()?;
    e.broadcast_div(&e.sum_keepdim(1)?)
}

fn forward(blocks: &[Block], x: &Tensor) -> Result<Tensor> {
    let mut h = x.clone();
    for b in blocks {
        h = match b {
            Block::Linear(l) => {
                let z = h.matmul(&l.w.as_tensor().t()?)?;
                match &l.b {
                    Some(b) => z.broadcast_add(b.as_tensor())?,
                    None => z,
                }
            }
            Block::Conv(c) => conv(c, &h)?,
            Block::Act(a) => act(*a, &h)?,
            Block::LayerNorm(n) => {
                let xc = h.broadcast_sub(&h.mean_keepdim(D::Minus1)?)?;
                let var = xc.sqr()?.mean_keepdim(D::Minus1)?;
                let xhat = xc.broadcast_div(&(var + n.eps)?.sqrt()?)?;
                xhat.broadcast_mul(n.gamma.as_tensor())?
                    .broadcast_add(n.beta.as_tensor())?
            }
            Block::BatchNorm(_) => {
                return Err(NnError::Invalid(
                    "batch norm has no per-example gradients".into(),
                ));
            }
            Block::Residual(inner) => (&h + forward(inner, &h)?)?,
            // The reference is deterministic: dropout is compared at p = 0 only.
            Block::Dropout(_) => h,
            Block::Pad { before, after } => {
                let b = h.dims()[0];
                let mut parts = Vec::new();
                if *before > 0 {
                    parts.push(Tensor::zeros((b, *before), h.dtype(), h.device())?);
                }
                parts.push(h.clone());
                if *after > 0 {
                    parts.push(Tensor::zeros((b, *after), h.dtype(), h.device())?);
                }
                Tensor::cat(&parts, 1)?
            }
            Block::LabelMaps {
                start,
                classes,
                pixels,
            } => super::layers::label_maps(&h, *start, *classes, *pixels)?,
            Block::Head(spans) => {
                let mut parts = Vec::new();
                for s in spans {
                    let z = h.narrow(1, s.start, s.len)?;
                    parts.push(match s.kind {
                        HeadKind::Sigmoid | HeadKind::GumbelSigmoid { .. } => {
                            act(Act::Sigmoid, &z)?
                        }
                        HeadKind::Softmax | HeadKind::GumbelSoftmax { .. } => softmax_rows(&z)?,
                        HeadKind::Tanh => z.tanh()?,
                        HeadKind::Identity => z,
                    });
                }
                Tensor::cat(&parts, 1)?
            }
        };
    }
    Ok(h)
}

/// Per-example gradients (one autograd pass each): `out[i][k]` is example i's gradient of
/// parameter k (in [`Net::params`] order).
pub fn per_example_grads<F: LossFn>(net: &Net, x: &Tensor, loss: F) -> Result<Vec<Vec<Tensor>>> {
    let params = net.params();
    let n = x.dims()[0];
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let xi = x.narrow(0, i, 1)?;
        let y = forward(&net.blocks, &xi)?;
        let l = loss(&y, &xi, None)?.sum_all()?;
        let g = l.backward()?;
        let mut gi = Vec::with_capacity(params.len());
        for p in &params {
            gi.push(match g.get(p.as_tensor()) {
                Some(t) => t.clone(),
                None => p.as_tensor().zeros_like()?,
            });
        }
        out.push(gi);
    }
    Ok(out)
}

/// Per-example gradient norms and the clipped sum Σ_i min(1, C/‖g_i‖)·g_i, the slow way.
pub fn clipped_sum<F: LossFn>(
    net: &Net,
    x: &Tensor,
    clip: f64,
    loss: F,
) -> Result<(Vec<f64>, Vec<Tensor>)> {
    let grads = per_example_grads(net, x, loss)?;
    let mut sum: Vec<Tensor> = net
        .params()
        .iter()
        .map(|p| p.as_tensor().zeros_like())
        .collect::<candle_core::Result<_>>()?;
    let mut norms = Vec::with_capacity(grads.len());
    for gi in grads {
        let mut sq = 0f64;
        for g in &gi {
            sq += f64::from(g.sqr()?.sum_all()?.to_scalar::<f32>()?);
        }
        let norm = sq.sqrt();
        norms.push(norm);
        let c = (clip / (norm + 1e-12)).min(1.0);
        for (s, g) in sum.iter_mut().zip(&gi) {
            *s = (&*s + (g * c)?)?;
        }
    }
    Ok((norms, sum))
}
