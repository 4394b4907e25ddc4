//! Convolution and transposed convolution as "gather, then one matrix product".
//!
//! Why this shape: DP-SGD needs, per layer, the inputs A and output signals Δ of a matrix
//! product (see [`super::layers`]). A convolution over a flat [B, C·H·W] input is exactly
//! that once each output position's receptive field is gathered into a row (im2col): the
//! patches A [B, L, C·k·k] (L output positions) times Wᵀ [C·k·k, C_out]. Forward,
//! backward, per-example norms and the clipped sum then stay matrix products, and no
//! per-example gradient is formed unless it is the cheaper way to a norm.
//!
//! A transposed convolution is the adjoint of a convolution over its *output* grid, so it
//! uses that convolution's gather map the other way round: each input pixel's channel
//! vector times W [C_in, C_out·k·k] gives its k×k footprint in the output, and the
//! footprints are scattered (summed) into place. Its A is then the input itself, one row
//! per input pixel [B, H·W, C_in], and its Δ is the output signal gathered by the same
//! map [B, H·W, C_out·k·k]. (Dilating the input with zeros and running a plain
//! convolution would gather four times as many patch entries, three in four of them zero:
//! measured 10× slower.) W reshaped to [C_in, C_out, k, k] is exactly candle's
//! `conv_transpose2d` kernel, which the reference uses.
//!
//! Per-example gradient norms, chosen per layer by cost:
//! - direct: G_i = Δ_iᵀ A_i for each example, then ‖G_i‖²: about L·p_A·p_Δ multiply-adds
//!   per example;
//! - ghost (Li et al. 2022; Bu et al. 2023, mixed ghost clipping): ‖Δ_iᵀA_i‖² =
//!   ⟨A_iA_iᵀ, Δ_iΔ_iᵀ⟩, two L×L Gram matrices: about L²·(p_A + p_Δ).
//!
//! Early layers (many positions, few channels) favour the direct path; deep ones the
//! ghost path. The gathers and scatters themselves, on the CPU and on other devices, are
//! in [`super::gather`].

use candle_core::{Device, Tensor, Var};
use rand::Rng;

use super::gather::Gather;
use super::host::swap_last_two;
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

    /// The weight matrix: [C_out, C_in·k·k] for a convolution, [C_in, C_out·k·k] for a
    /// transposed one.
    pub fn weight_dims(&self) -> [usize; 2] {
        if self.transposed {
            [self.cin, self.cout * self.k * self.k]
        } else {
            [self.cout, self.cin * self.k * self.k]
        }
    }

    /// The convolution whose gather map this layer uses: itself, or for a transposed
    /// convolution the one over its output grid (whose output grid is this one's input).
    pub(super) fn gathering(&self) -> Result<ConvShape> {
        if !self.transposed {
            return Ok(*self);
        }
        let (oh, ow) = self.out_hw()?;
        let g = ConvShape {
            cin: self.cout,
            h: oh,
            w: ow,
            cout: self.cin,
            transposed: false,
            ..*self
        };
        if g.out_hw()? != (self.h, self.w) {
            return Err(NnError::Invalid(format!(
                "convolution {self:?}: the geometry has no exact adjoint"
            )));
        }
        Ok(g)
    }

    /// For output position l and patch entry j (channel, ky, kx), the input value it
    /// reads, or `in_dim()` for padding. Row-major [L, C·k·k]. Regular convolutions only.
    pub(super) fn gather_map(&self) -> Result<Vec<u32>> {
        let (oh, ow) = self.out_hw()?;
        let pad = u32::try_from(self.in_dim())
            .map_err(|_| NnError::Invalid("the convolution's input is too large".into()))?;
        let read = |o: usize, t: usize, n: usize| -> Option<usize> {
            (o * self.stride + t)
                .checked_sub(self.pad)
                .filter(|v| *v < n)
        };
        let mut map = Vec::with_capacity(oh * ow * self.cin * self.k * self.k);
        for oy in 0..oh {
            for ox in 0..ow {
                for c in 0..self.cin {
                    for ky in 0..self.k {
                        for kx in 0..self.k {
                            map.push(match (read(oy, ky, self.h), read(ox, kx, self.w)) {
                                (Some(y), Some(x)) => ((c * self.h + y) * self.w + x) as u32,
                                _ => pad,
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
        let (Ok(g), Ok((oh, ow))) = (self.gathering(), self.out_hw()) else {
            return false;
        };
        let (l, pa, pd) = if self.transposed {
            (self.h * self.w, self.cin, g.cin * g.k * g.k)
        } else {
            (oh * ow, self.cin * self.k * self.k, self.cout)
        };
        l * (pa + pd) < pa * pd
    }
}

/// A convolution layer: weights as [`ConvShape::weight_dims`] (patch order channel, ky,
/// kx), a bias per output channel, and its gather map.
#[derive(Debug, Clone)]
pub struct Conv2d {
    pub w: Var,
    pub b: Option<Var>,
    pub shape: ConvShape,
    gather: Gather,
    /// The gathering convolution's positions and patch width.
    positions: usize,
    patch: usize,
}

/// What the backward pass needs from the forward pass: the patches (convolution) or the
/// input rows (transposed convolution), [B, L, p_A].
#[derive(Debug)]
pub struct ConvCache {
    pub a: Tensor,
}

/// A convolution's per-example signals: A [B, L, p_A], Δ [B, L, p_Δ] and each example's
/// bias gradient [B, C_out]; the weight gradient is Σ_l Δᵀ A (convolution) or Σ_l Aᵀ Δ
/// (transposed convolution).
#[derive(Debug, Clone)]
pub struct ConvSignal {
    pub a: Tensor,
    pub delta: Tensor,
    pub bias: Option<Tensor>,
    pub transposed: bool,
    /// The ghost norm is the cheaper path for this layer.
    pub ghost: bool,
}

impl Conv2d {
    /// PyTorch's default initialisation: U(±1/√fan_in), fan_in = the weight matrix's
    /// second dimension.
    pub fn new<R: Rng + ?Sized>(
        shape: ConvShape,
        bias: bool,
        dev: &Device,
        rng: &mut R,
    ) -> Result<Self> {
        let [rows, cols] = shape.weight_dims();
        let bound = 1.0 / (cols.max(1) as f64).sqrt();
        let mut draw = |n: usize| -> Vec<f32> {
            (0..n)
                .map(|_| rng.random_range(-bound..=bound) as f32)
                .collect()
        };
        let w = Tensor::from_vec(draw(rows * cols), (rows, cols), dev)?;
        let b = if bias {
            Some(Tensor::from_vec(draw(shape.cout), shape.cout, dev)?)
        } else {
            None
        };
        Self::from_weights(shape, w, b)
    }

    /// A layer from existing weights (a model file), checking their shapes.
    pub fn from_weights(shape: ConvShape, w: Tensor, b: Option<Tensor>) -> Result<Self> {
        if w.dims() != shape.weight_dims() {
            return Err(NnError::Invalid(format!(
                "convolution weight has shape {:?} but {shape:?} needs {:?}",
                w.dims(),
                shape.weight_dims()
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
        let g = shape.gathering()?;
        let (oh, ow) = g.out_hw()?;
        let gather = Gather::new(g.gather_map()?, g.in_dim(), w.device())?;
        Ok(Self {
            w: Var::from_tensor(&w)?,
            b: b.map(|b| Var::from_tensor(&b)).transpose()?,
            shape,
            gather,
            positions: oh * ow,
            patch: g.cin * g.k * g.k,
        })
    }

    /// Forward pass: [B, C_out·H_out·W_out], channel-major, and what backward needs.
    pub fn forward(&self, x: &Tensor) -> Result<(Tensor, ConvCache)> {
        let (bsz, d) = x.dims2()?;
        let s = self.shape;
        if d != s.in_dim() {
            return Err(NnError::Invalid(format!(
                "a convolution over {}×{}×{} values got {d} values per example",
                s.cin, s.h, s.w
            )));
        }
        let w = self.w.as_tensor();
        let (y, a) = if s.transposed {
            // Input pixels as rows, times W, footprints scattered into the output.
            let a = swap_last_two(&x.reshape((bsz, s.cin, s.h * s.w))?)?;
            let rows = a.reshape((bsz * s.h * s.w, s.cin))?.matmul(w)?;
            let y = self.gather.scatter(&rows.reshape((bsz, ()))?)?;
            let y = match &self.b {
                Some(b) => y
                    .reshape((bsz, s.cout, ()))?
                    .broadcast_add(&b.as_tensor().reshape((1, s.cout, 1))?)?
                    .reshape((bsz, ()))?,
                None => y,
            };
            (y, a)
        } else {
            let a = self
                .gather
                .gather(x)?
                .reshape((bsz, self.positions, self.patch))?;
            let mut z = a
                .reshape((bsz * self.positions, self.patch))?
                .matmul(&w.t()?)?;
            if let Some(b) = &self.b {
                z = z.broadcast_add(b.as_tensor())?;
            }
            let y =
                swap_last_two(&z.reshape((bsz, self.positions, s.cout))?)?.reshape((bsz, ()))?;
            (y, a)
        };
        Ok((y, ConvCache { a }))
    }

    /// Backward pass from ∂L/∂y [B, C_out·H_out·W_out]: ∂L/∂x and the layer's signals.
    pub fn backward(&self, cache: &ConvCache, dy: &Tensor) -> Result<(Tensor, ConvSignal)> {
        let bsz = dy.dims2()?.0;
        let s = self.shape;
        let w = self.w.as_tensor();
        let per_channel = dy.reshape((bsz, s.cout, ()))?;
        let bias = match &self.b {
            Some(_) => Some(per_channel.sum(2)?),
            None => None,
        };
        let (dx, delta) = if s.transposed {
            // The output signal gathered back onto the input pixels' footprints.
            let delta = self
                .gather
                .gather(dy)?
                .reshape((bsz, s.h * s.w, self.patch))?;
            let rows = delta
                .reshape((bsz * s.h * s.w, self.patch))?
                .matmul(&w.t()?)?
                .reshape((bsz, s.h * s.w, s.cin))?;
            let dx = swap_last_two(&rows)?.reshape((bsz, ()))?;
            (dx, delta)
        } else {
            let delta = swap_last_two(&per_channel)?;
            let dcols = delta
                .reshape((bsz * self.positions, s.cout))?
                .matmul(w)?
                .reshape((bsz, ()))?;
            (self.gather.scatter(&dcols)?, delta)
        };
        Ok((
            dx,
            ConvSignal {
                a: cache.a.clone(),
                delta,
                bias,
                transposed: s.transposed,
                ghost: s.ghost_is_cheaper(),
            },
        ))
    }
}

impl ConvSignal {
    /// Σ_i of the weight and bias gradients, each example's signal scaled by `c` [B]
    /// when given (the clipped sum): one matrix product either way.
    pub fn summed(&self, c: Option<&Tensor>) -> Result<Vec<Tensor>> {
        let (bsz, l, pd) = self.delta.dims3()?;
        let pa = self.a.dims3()?.2;
        let (delta, bias) = match c {
            Some(c) => (
                self.delta.broadcast_mul(&c.reshape((bsz, 1, 1))?)?,
                match &self.bias {
                    Some(b) => Some(b.broadcast_mul(&c.reshape((bsz, 1))?)?),
                    None => None,
                },
            ),
            None => (self.delta.clone(), self.bias.clone()),
        };
        let d = delta.reshape((bsz * l, pd))?;
        let a = self.a.reshape((bsz * l, pa))?;
        let mut out = vec![if self.transposed {
            a.t()?.matmul(&d)?
        } else {
            d.t()?.matmul(&a)?
        }];
        if let Some(b) = bias {
            out.push(b.sum(0)?);
        }
        Ok(out)
    }

    /// Each example's squared gradient norm over the layer's weights and bias, [B].
    pub fn sq_norms(&self) -> Result<Tensor> {
        self.sq_norms_by(self.ghost)
    }

    /// [`Self::sq_norms`] by a chosen path (the tests compare both).
    pub fn sq_norms_by(&self, ghost: bool) -> Result<Tensor> {
        let (a, d) = (&self.a, &self.delta);
        let w = if ghost {
            (a.matmul(&a.t()?)? * d.matmul(&d.t()?)?)?.sum((1, 2))?
        } else {
            d.t()?.matmul(a)?.sqr()?.sum((1, 2))?
        };
        Ok(match &self.bias {
            Some(b) => (w + b.sqr()?.sum(1)?)?,
            None => w,
        })
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use rand::SeedableRng;

    /// A small odd geometry (stride 2, padding 1) shared with `nn::gather`'s tests.
    pub(in crate::nn) fn shape(transposed: bool) -> ConvShape {
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

    pub(in crate::nn) fn random(shape: (usize, usize), seed: u64) -> Tensor {
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
            let (got, _) = conv.forward(&x).unwrap();
            let want = super::super::reference::conv(&conv, &x).unwrap();
            assert_eq!(got.dims(), want.dims(), "transposed {transposed}");
            assert_eq!(got.dims()[1], s.out_dim().unwrap());
            let err = super::super::reference::max_gap(&got, &want);
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
