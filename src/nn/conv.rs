//! Convolution and transposed convolution as "gather patches, then one matrix product".
//!
//! Why this shape: DP-SGD needs, per layer, the inputs A and output signals Δ of a matrix
//! product (see [`super::layers`]). A convolution over a flat [B, C·H·W] input is exactly
//! that once each output position's receptive field is gathered into a row (im2col): the
//! patches `cols` [B, L, C·k·k] (L output positions) times Wᵀ [C·k·k, C_out]. Forward,
//! backward, per-example norms and the clipped sum then stay matrix products, and no
//! per-example gradient is needed unless it is the cheaper way to a norm.
//!
//! One gather map serves both kinds: a transposed convolution with stride s is a
//! stride-1 convolution over the input with s − 1 zeros inserted between pixels and
//! k − 1 − p zeros around it. Those zeros are not stored: the map points them at one
//! extra zero column appended to the input. Backward is the map's adjoint (a scatter-add,
//! `index_add`), so both kinds share one backward pass. The weights of a transposed
//! convolution are kept in this convolution form; the reference test converts them to
//! candle's `conv_transpose2d` layout (flipped, channels swapped) to check the geometry
//! independently.
//!
//! Per-example gradient norms, chosen per layer by cost:
//! - direct: G_i = Δ_iᵀ A_i [C_out, C·k·k] for each example, then ‖G_i‖²: about
//!   L·C_out·C·k·k multiply-adds per example;
//! - ghost (Li et al. 2022; Bu et al. 2023, mixed ghost clipping): ‖Δ_iᵀA_i‖² =
//!   ⟨A_iA_iᵀ, Δ_iΔ_iᵀ⟩, two L×L Gram matrices: about L²·(C_out + C·k·k).
//!
//! Early layers (many positions, few channels) favour the direct path; deep ones the
//! ghost path.

use candle_core::{DType, Device, Tensor, Var};
use rand::Rng;

use super::{NnError, Result};

/// The geometry of a convolution over one example's [C, H, W] image, flattened
/// channel-major; outputs are flattened the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConvShape {
    pub cin: usize,
    pub h: usize,
    pub w: usize,
    pub cout: usize,
    pub k: usize,
    pub stride: usize,
    pub pad: usize,
    /// A transposed convolution (upsampling by `stride`): output side (h − 1)·stride −
    /// 2·pad + k.
    pub transposed: bool,
}

impl ConvShape {
    /// Output height and width, or a message when the geometry is impossible.
    pub fn out_hw(&self) -> Result<(usize, usize)> {
        let bad = |m: &str| NnError::Invalid(format!("convolution {self:?}: {m}"));
        if self.cin == 0 || self.cout == 0 || self.h == 0 || self.w == 0 || self.k == 0 {
            return Err(bad("every size must be positive"));
        }
        if self.stride == 0 {
            return Err(bad("the stride must be positive"));
        }
        let side = |n: usize| -> Result<usize> {
            if self.transposed {
                if self.pad > self.k - 1 {
                    return Err(bad("the padding must be smaller than the kernel"));
                }
                ((n - 1) * self.stride + self.k)
                    .checked_sub(2 * self.pad)
                    .filter(|s| *s > 0)
                    .ok_or_else(|| bad("the output would be empty"))
            } else {
                (n + 2 * self.pad)
                    .checked_sub(self.k)
                    .map(|s| s / self.stride + 1)
                    .ok_or_else(|| bad("the kernel is larger than the padded input"))
            }
        };
        Ok((side(self.h)?, side(self.w)?))
    }

    pub fn in_dim(&self) -> usize {
        self.cin * self.h * self.w
    }

    /// Values per example out: C_out·H_out·W_out.
    pub fn out_dim(&self) -> Result<usize> {
        let (oh, ow) = self.out_hw()?;
        Ok(self.cout * oh * ow)
    }

    /// One patch: C·k·k.
    pub fn patch(&self) -> usize {
        self.cin * self.k * self.k
    }

    /// For output position l and patch entry j (channel, ky, kx), the input value it
    /// reads, as an index into the input with one zero column appended (index in_dim()
    /// reads zero). Row-major [L, C·k·k].
    fn gather_map(&self) -> Result<Vec<u32>> {
        let (oh, ow) = self.out_hw()?;
        let zero = u32::try_from(self.in_dim())
            .map_err(|_| NnError::Invalid("the convolution's input is too large".into()))?;
        let (k, s) = (self.k as i64, self.stride as i64);
        // Position along one axis of the input read by output o and kernel tap t.
        let read = |o: usize, t: usize, n: usize| -> Option<usize> {
            let (o, t, n) = (o as i64, t as i64, n as i64);
            if self.transposed {
                // Stride-1 convolution over the input dilated by s, padded by k − 1 − p.
                let v = o + t - (k - 1 - self.pad as i64);
                (v >= 0 && v % s == 0 && v / s < n).then(|| (v / s) as usize)
            } else {
                let v = o * s + t - self.pad as i64;
                (v >= 0 && v < n).then_some(v as usize)
            }
        };
        let mut map = Vec::with_capacity(oh * ow * self.patch());
        for oy in 0..oh {
            for ox in 0..ow {
                for c in 0..self.cin {
                    for ky in 0..self.k {
                        for kx in 0..self.k {
                            map.push(match (read(oy, ky, self.h), read(ox, kx, self.w)) {
                                (Some(y), Some(x)) => ((c * self.h + y) * self.w + x) as u32,
                                _ => zero,
                            });
                        }
                    }
                }
            }
        }
        Ok(map)
    }

    /// True when the ghost norm (two L×L Gram matrices) costs less than forming each
    /// example's gradient.
    pub fn ghost_is_cheaper(&self) -> bool {
        let Ok((oh, ow)) = self.out_hw() else {
            return false;
        };
        let l = oh * ow;
        l * (self.cout + self.patch()) < self.cout * self.patch()
    }
}

/// A convolution layer: weights [C_out, C·k·k] (patch order channel, ky, kx), bias
/// [C_out], and its gather map.
#[derive(Debug, Clone)]
pub struct Conv2d {
    pub w: Var,
    pub b: Option<Var>,
    pub shape: ConvShape,
    map: Tensor,
}

impl Conv2d {
    /// He-uniform-like initialisation, PyTorch's default: U(±1/√fan_in) with fan_in =
    /// C·k·k (for a transposed convolution, the taps that reach one output on average).
    pub fn new<R: Rng + ?Sized>(
        shape: ConvShape,
        bias: bool,
        dev: &Device,
        rng: &mut R,
    ) -> Result<Self> {
        let fan_in = if shape.transposed {
            (shape.patch() / (shape.stride * shape.stride)).max(1)
        } else {
            shape.patch()
        };
        let bound = 1.0 / (fan_in as f64).sqrt();
        let mut draw = |n: usize| -> Vec<f32> {
            (0..n)
                .map(|_| rng.random_range(-bound..=bound) as f32)
                .collect()
        };
        let w = Tensor::from_vec(
            draw(shape.cout * shape.patch()),
            (shape.cout, shape.patch()),
            dev,
        )?;
        let b = if bias {
            Some(Tensor::from_vec(draw(shape.cout), shape.cout, dev)?)
        } else {
            None
        };
        Self::from_weights(shape, w, b)
    }

    /// A layer from existing weights (a model file), checking their shapes.
    pub fn from_weights(shape: ConvShape, w: Tensor, b: Option<Tensor>) -> Result<Self> {
        if w.dims() != [shape.cout, shape.patch()] {
            return Err(NnError::Invalid(format!(
                "convolution weight has shape {:?} but {shape:?} needs [{}, {}]",
                w.dims(),
                shape.cout,
                shape.patch()
            )));
        }
        if let Some(b) = &b {
            if b.dims() != [shape.cout] {
                return Err(NnError::Invalid(format!(
                    "convolution bias has shape {:?} but needs [{}]",
                    b.dims(),
                    shape.cout
                )));
            }
        }
        let map = shape.gather_map()?;
        let n = map.len();
        let map = Tensor::from_vec(map, n, w.device())?;
        Ok(Self {
            w: Var::from_tensor(&w)?,
            b: b.map(|b| Var::from_tensor(&b)).transpose()?,
            shape,
            map,
        })
    }

    /// The patches of a batch: [B, L, C·k·k].
    pub fn patches(&self, x: &Tensor) -> Result<Tensor> {
        let (bsz, d) = x.dims2()?;
        if d != self.shape.in_dim() {
            return Err(NnError::Invalid(format!(
                "a convolution over {}×{}×{} values got {d} values per example",
                self.shape.cin, self.shape.h, self.shape.w
            )));
        }
        let padded = Tensor::cat(&[x, &Tensor::zeros((bsz, 1), x.dtype(), x.device())?], 1)?;
        let cols = padded.index_select(&self.map, 1)?;
        Ok(cols.reshape((bsz, (), self.shape.patch()))?)
    }

    /// Forward from patches: [B, C_out·H_out·W_out], channel-major.
    pub fn apply(&self, cols: &Tensor) -> Result<Tensor> {
        let (bsz, l, p) = cols.dims3()?;
        let mut z = cols
            .reshape((bsz * l, p))?
            .matmul(&self.w.as_tensor().t()?)?;
        if let Some(b) = &self.b {
            z = z.broadcast_add(b.as_tensor())?;
        }
        Ok(z.reshape((bsz, l, self.shape.cout))?
            .transpose(1, 2)?
            .contiguous()?
            .reshape((bsz, self.shape.cout * l))?)
    }

    /// The output signal [B, C_out·L] as per-position rows [B, L, C_out].
    pub fn positions(&self, dy: &Tensor) -> Result<Tensor> {
        let (bsz, _) = dy.dims2()?;
        Ok(dy
            .reshape((bsz, self.shape.cout, ()))?
            .transpose(1, 2)?
            .contiguous()?)
    }

    /// ∂L/∂x from the per-position signal [B, L, C_out]: the patches' gradient scattered
    /// back (the adjoint of the gather), without the zero column.
    pub fn input_grad(&self, delta: &Tensor) -> Result<Tensor> {
        let (bsz, l, cout) = delta.dims3()?;
        let dcols = delta
            .reshape((bsz * l, cout))?
            .matmul(self.w.as_tensor())?
            .reshape((bsz, l * self.shape.patch()))?;
        let d = self.shape.in_dim();
        let acc = Tensor::zeros((bsz, d + 1), DType::F32, delta.device())?;
        Ok(acc.index_add(&self.map, &dcols, 1)?.narrow(1, 0, d)?)
    }
}

/// Σ_i of the weight and bias gradients, each example's signal scaled by `c` [B] when
/// given (the clipped sum) — one matrix product either way.
pub fn summed(a: &Tensor, delta: &Tensor, bias: bool, c: Option<&Tensor>) -> Result<Vec<Tensor>> {
    let (bsz, l, cout) = delta.dims3()?;
    let p = a.dims3()?.2;
    let delta = match c {
        Some(c) => delta.broadcast_mul(&c.reshape((bsz, 1, 1))?)?,
        None => delta.clone(),
    };
    let flat = delta.reshape((bsz * l, cout))?;
    let mut out = vec![flat.t()?.matmul(&a.reshape((bsz * l, p))?)?];
    if bias {
        out.push(flat.sum(0)?);
    }
    Ok(out)
}

/// Each example's squared gradient norm over the layer's weights and bias, [B], by the
/// cheaper of the direct and the ghost path.
pub fn sq_norms(a: &Tensor, delta: &Tensor, bias: bool, ghost: bool) -> Result<Tensor> {
    let w = if ghost {
        let ga = a.matmul(&a.t()?)?;
        let gd = delta.matmul(&delta.t()?)?;
        (ga * gd)?.sum((1, 2))?
    } else {
        delta.t()?.matmul(a)?.sqr()?.sum((1, 2))?
    };
    Ok(if bias {
        (w + delta.sum(1)?.sqr()?.sum(1)?)?
    } else {
        w
    })
}

/// A DCGAN-style critic for 28×28 one-channel images: 4×4 stride-2 convolutions with
/// `channels` (28 → 14 → 7 …), leaky ReLU(0.2), then one linear layer to `out` scores.
/// No normalisation: batch norm mixes examples, which DP-SGD forbids.
pub fn dcgan_critic<R: Rng + ?Sized>(
    channels: &[usize],
    out: usize,
    dev: &Device,
    rng: &mut R,
) -> Result<Vec<super::layers::Block>> {
    use super::layers::{Act, Block, Linear};
    let (mut cin, mut side) = (1, 28);
    let mut blocks = Vec::new();
    for &c in channels {
        let s = ConvShape {
            cin,
            h: side,
            w: side,
            cout: c,
            k: 4,
            stride: 2,
            pad: 1,
            transposed: false,
        };
        side = s.out_hw()?.0;
        cin = c;
        blocks.push(Block::Conv(Conv2d::new(s, true, dev, rng)?));
        blocks.push(Block::Act(Act::LeakyRelu(0.2)));
    }
    blocks.push(Block::Linear(Linear::new(
        cin * side * side,
        out,
        true,
        dev,
        rng,
    )?));
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn shape(transposed: bool) -> ConvShape {
        ConvShape {
            cin: 2,
            h: 5,
            w: 4,
            cout: 3,
            k: 3,
            stride: 2,
            pad: 1,
            transposed,
        }
    }

    fn random(shape: (usize, usize), seed: u64) -> Tensor {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let v: Vec<f32> = (0..shape.0 * shape.1)
            .map(|_| rng.random_range(-1.0..1.0))
            .collect();
        Tensor::from_vec(v, shape, &Device::Cpu).unwrap()
    }

    /// The gather-and-multiply forward equals candle's own convolutions (the transposed
    /// one with the kernel flipped and its channels swapped), as the reference computes.
    #[test]
    fn both_kinds_match_candles_convolutions() {
        for transposed in [false, true] {
            let s = shape(transposed);
            let mut rng = rand::rngs::StdRng::seed_from_u64(4);
            let conv = Conv2d::new(s, true, &Device::Cpu, &mut rng).unwrap();
            let x = random((3, s.in_dim()), 5);
            let got = conv.apply(&conv.patches(&x).unwrap()).unwrap();
            let want = super::super::reference::conv(&conv, &x).unwrap();
            assert_eq!(got.dims(), want.dims(), "transposed {transposed}");
            assert_eq!(got.dims()[1], s.out_dim().unwrap());
            let err: f32 = (got - want)
                .unwrap()
                .abs()
                .unwrap()
                .max_all()
                .unwrap()
                .to_scalar()
                .unwrap();
            assert!(err < 1e-5, "transposed {transposed}: {err}");
        }
    }

    #[test]
    fn impossible_geometry_is_an_error() {
        let mut s = shape(false);
        s.k = 9;
        assert!(s.out_hw().is_err());
        let mut s = shape(true);
        s.pad = 3;
        assert!(s.out_hw().is_err());
        assert_eq!(shape(true).out_hw().unwrap(), (9, 7));
        assert_eq!(shape(false).out_hw().unwrap(), (3, 2));
    }
}
