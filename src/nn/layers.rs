//! Network blocks with an explicit forward cache and a hand-written backward pass.
//!
//! Why hand-written: candle's autograd keeps only the gradients of `Var`s and always
//! forms every weight gradient, while DP-SGD needs the per-example signals Δ at each
//! layer instead. Walking the (small, fixed) block list backwards gives Δ and A for free,
//! and the private and non-private steps then differ only in how they reduce them — which
//! is what keeps a private step close to the cost of a plain one. The autograd path is
//! kept as the reference the tests compare against ([`super::reference`]).

use candle_core::{D, DType, Device, Tensor, Var};
use rand::Rng;

use super::conv::{Conv2d, ConvCache, ConvSignal};
use super::{NnError, Result};

/// An elementwise activation.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Act {
    Relu,
    LeakyRelu(f64),
    Tanh,
    Sigmoid,
}

/// What an output head does to one span of columns.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeadKind {
    /// Values in (0, 1): binary, continuous and missing-indicator columns.
    Sigmoid,
    /// A distribution over a categorical column's one-hot span.
    Softmax,
    /// A differentiable sample of a category (Jang et al. 2017) at temperature `tau`;
    /// falls back to the plain softmax when no randomness is supplied.
    GumbelSoftmax { tau: f64 },
    /// A differentiable sample of a 0/1 value (the binary concrete relaxation,
    /// Maddison et al. 2017): sigmoid((z + logistic noise) / tau). Without randomness it is
    /// the plain sigmoid, the probability that sampling then draws from — so training and
    /// release see the same distribution. (A plain sigmoid head lets a GAN generator emit
    /// fractional "binaries" and then saturate to one value; measured on ADULT: 1.8 % of
    /// rows with income >50K against 24 % in the data.)
    GumbelSigmoid { tau: f64 },
    /// Values in (−1, 1) (PEARL's numerical columns).
    Tanh,
    /// Passed through unchanged.
    Identity,
}

/// One span of an output head.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HeadSpan {
    pub start: usize,
    pub len: usize,
    pub kind: HeadKind,
}

/// A fully connected layer: y = x Wᵀ + b.
#[derive(Debug, Clone)]
pub struct Linear {
    pub w: Var,
    pub b: Option<Var>,
}

/// Layer normalisation over features (per example: DP-safe), with affine parameters.
#[derive(Debug, Clone)]
pub struct LayerNorm {
    pub gamma: Var,
    pub beta: Var,
    pub eps: f64,
}

/// Batch normalisation (mixes examples: **never** allowed in a DP-trained network).
#[derive(Debug, Clone)]
pub struct BatchNorm {
    pub gamma: Var,
    pub beta: Var,
    pub eps: f64,
    pub momentum: f64,
    pub running_mean: Var,
    pub running_var: Var,
}

/// One block of a network.
#[derive(Debug, Clone)]
pub enum Block {
    Linear(Linear),
    /// A convolution or transposed convolution over a flat channel-major image.
    Conv(Conv2d),
    Act(Act),
    LayerNorm(LayerNorm),
    BatchNorm(BatchNorm),
    /// y = x + f(x).
    Residual(Vec<Block>),
    /// Per-span output activations.
    Head(Vec<HeadSpan>),
    /// Surrounds each row with zeros: `before` in front, `after` behind. Places a
    /// convolutional generator's pixels among columns it does not produce (an image
    /// table's label, which the conditioning overwrites).
    Pad {
        before: usize,
        after: usize,
    },
    /// A conditional critic's input: an image row with a one-hot label span of `classes`
    /// values at `start` becomes `1 + classes` channels of `pixels` values, the image
    /// followed by each label value repeated over the image (the conditional DCGAN's label
    /// maps). A fixed linear map: no parameters, per example.
    LabelMaps {
        start: usize,
        classes: usize,
        pixels: usize,
    },
    /// Zeroes each value with probability `p` while training (scaling the rest by
    /// 1/(1−p)); per example, so DP-compatible. Identity at inference.
    Dropout(f64),
}

/// What the backward pass needs from the forward pass, per block.
#[derive(Debug)]
pub enum Cache {
    Linear { a: Tensor },
    Conv(ConvCache),
    Act { z: Tensor, y: Tensor },
    Norm { xhat: Tensor, inv_std: Tensor },
    Residual(Vec<Cache>),
    Head { y: Tensor, taus: Vec<f64> },
    Dropout { mask: Option<Tensor> },
    Pad,
    LabelMaps,
}

/// Per-example signals of one parameterised block, for gradients and their norms.
#[derive(Debug, Clone)]
pub enum Signal {
    /// Inputs `a` [B, in] and output signals `delta` [B, out] of a linear layer.
    Linear {
        a: Tensor,
        delta: Tensor,
        bias: bool,
    },
    /// A convolution's A and Δ (see [`super::conv`]).
    Conv(ConvSignal),
    /// Normalised inputs and output signals of a layer norm.
    LayerNorm { xhat: Tensor, delta: Tensor },
    /// Batch norm: its gradient is not per example (only for non-private training).
    BatchNorm { xhat: Tensor, delta: Tensor },
}

/// A feed-forward network: a list of blocks.
#[derive(Debug, Clone)]
pub struct Net {
    pub blocks: Vec<Block>,
    pub device: Device,
}

fn uniform_var<R: Rng + ?Sized>(
    shape: (usize, usize),
    bound: f64,
    dev: &Device,
    rng: &mut R,
) -> Result<Var> {
    let n = shape.0 * shape.1;
    let v: Vec<f32> = (0..n)
        .map(|_| rng.random_range(-bound..=bound) as f32)
        .collect();
    Ok(Var::from_tensor(&Tensor::from_vec(v, shape, dev)?)?)
}

fn vec_var(v: Vec<f32>, dev: &Device) -> Result<Var> {
    let n = v.len();
    Ok(Var::from_tensor(&Tensor::from_vec(v, n, dev)?)?)
}

impl Linear {
    /// PyTorch's default initialisation: U(±1/√in) for weights and bias.
    pub fn new<R: Rng + ?Sized>(
        inp: usize,
        out: usize,
        bias: bool,
        dev: &Device,
        rng: &mut R,
    ) -> Result<Self> {
        let bound = 1.0 / (inp.max(1) as f64).sqrt();
        let w = uniform_var((out, inp), bound, dev, rng)?;
        let b = if bias {
            let v: Vec<f32> = (0..out)
                .map(|_| rng.random_range(-bound..=bound) as f32)
                .collect();
            Some(vec_var(v, dev)?)
        } else {
            None
        };
        Ok(Self { w, b })
    }

    pub fn in_dim(&self) -> usize {
        self.w.dims()[1]
    }

    pub fn out_dim(&self) -> usize {
        self.w.dims()[0]
    }
}

impl LayerNorm {
    pub fn new(dim: usize, dev: &Device) -> Result<Self> {
        Ok(Self {
            gamma: vec_var(vec![1.0; dim], dev)?,
            beta: vec_var(vec![0.0; dim], dev)?,
            eps: 1e-5,
        })
    }
}

impl BatchNorm {
    pub fn new(dim: usize, dev: &Device) -> Result<Self> {
        Ok(Self {
            gamma: vec_var(vec![1.0; dim], dev)?,
            beta: vec_var(vec![0.0; dim], dev)?,
            eps: 1e-5,
            momentum: 0.1,
            running_mean: vec_var(vec![0.0; dim], dev)?,
            running_var: vec_var(vec![1.0; dim], dev)?,
        })
    }
}

/// Builds an MLP `dims[0] → dims[1] → … → dims[n]` with `act` between layers (not after
/// the last one).
pub fn mlp<R: Rng + ?Sized>(
    dims: &[usize],
    act: Act,
    dev: &Device,
    rng: &mut R,
) -> Result<Vec<Block>> {
    let mut blocks = Vec::new();
    for (i, w) in dims.windows(2).enumerate() {
        blocks.push(Block::Linear(Linear::new(w[0], w[1], true, dev, rng)?));
        if i + 2 < dims.len() {
            blocks.push(Block::Act(act));
        }
    }
    Ok(blocks)
}

fn act_forward(a: Act, z: &Tensor) -> Result<Tensor> {
    Ok(match a {
        Act::Relu => z.relu()?,
        Act::LeakyRelu(s) => candle_nn::ops::leaky_relu(z, s)?,
        Act::Tanh => z.tanh()?,
        Act::Sigmoid => candle_nn::ops::sigmoid(z)?,
    })
}

fn act_backward(a: Act, z: &Tensor, y: &Tensor, dy: &Tensor) -> Result<Tensor> {
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
fn softmax(z: &Tensor) -> Result<Tensor> {
    Ok(candle_nn::ops::softmax_last_dim(&z.contiguous()?)?)
}

/// Logistic noise log u − log(1 − u): the difference of two Gumbel draws.
fn logistic<R: Rng + ?Sized>(shape: (usize, usize), dev: &Device, rng: &mut R) -> Result<Tensor> {
    let v: Vec<f32> = (0..shape.0 * shape.1)
        .map(|_| {
            let u: f64 = rng.random_range(1e-12..1.0 - 1e-12);
            (u.ln() - (1.0 - u).ln()) as f32
        })
        .collect();
    Ok(Tensor::from_vec(v, shape, dev)?)
}

fn gumbel<R: Rng + ?Sized>(shape: (usize, usize), dev: &Device, rng: &mut R) -> Result<Tensor> {
    let n = shape.0 * shape.1;
    let v: Vec<f32> = (0..n)
        .map(|_| {
            let u: f64 = rng.random_range(1e-12..1.0);
            (-(-u.ln()).ln()) as f32
        })
        .collect();
    Ok(Tensor::from_vec(v, shape, dev)?)
}

impl Net {
    pub fn new(blocks: Vec<Block>, device: &Device) -> Self {
        Self {
            blocks,
            device: device.clone(),
        }
    }

    /// Refuses networks whose per-example gradients are undefined (batch norm), so a
    /// DP-trained network can never contain one.
    pub fn check_dp_compatible(&self) -> Result<()> {
        fn walk(bs: &[Block]) -> bool {
            bs.iter().any(|b| match b {
                Block::BatchNorm(_) => true,
                Block::Residual(inner) => walk(inner),
                _ => false,
            })
        }
        if walk(&self.blocks) {
            return Err(NnError::Invalid(
                "this network contains batch normalisation, which mixes examples within a batch; it cannot be trained with DP-SGD (use layer norm)".into(),
            ));
        }
        Ok(())
    }

    /// Trainable parameters in a fixed order (the order of [`Self::grads`]).
    pub fn params(&self) -> Vec<Var> {
        fn walk(bs: &[Block], out: &mut Vec<Var>) {
            for b in bs {
                match b {
                    Block::Linear(l) => {
                        out.push(l.w.clone());
                        if let Some(b) = &l.b {
                            out.push(b.clone());
                        }
                    }
                    Block::Conv(c) => {
                        out.push(c.w.clone());
                        if let Some(b) = &c.b {
                            out.push(b.clone());
                        }
                    }
                    Block::LayerNorm(n) => {
                        out.push(n.gamma.clone());
                        out.push(n.beta.clone());
                    }
                    Block::BatchNorm(n) => {
                        out.push(n.gamma.clone());
                        out.push(n.beta.clone());
                    }
                    Block::Residual(inner) => walk(inner, out),
                    Block::Act(_)
                    | Block::Head(_)
                    | Block::Dropout(_)
                    | Block::Pad { .. }
                    | Block::LabelMaps { .. } => {}
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.blocks, &mut out);
        out
    }

    pub fn param_count(&self) -> usize {
        self.params().iter().map(|v| v.elem_count()).sum()
    }

    /// Forward pass for inference (no cache; batch norm uses its running statistics;
    /// Gumbel heads use `rng` when given).
    pub fn forward(&self, x: &Tensor, rng: Option<&mut dyn rand::RngCore>) -> Result<Tensor> {
        let mut rng = rng;
        let (y, _) = forward_blocks(&self.blocks, x, false, &mut rng, false)?;
        Ok(y)
    }

    /// Forward pass for training, keeping what [`Self::backward`] needs.
    pub fn forward_train(
        &self,
        x: &Tensor,
        rng: Option<&mut dyn rand::RngCore>,
    ) -> Result<(Tensor, Vec<Cache>)> {
        let mut rng = rng;
        forward_blocks(&self.blocks, x, true, &mut rng, true)
    }

    /// Backward pass from `dy` (row i = ∂L_i/∂y_i for a summed loss). Returns ∂L/∂x and
    /// the per-block signals in parameter order.
    pub fn backward(&self, caches: &[Cache], dy: &Tensor) -> Result<(Tensor, Vec<Signal>)> {
        let mut signals = Vec::new();
        let dx = backward_blocks(&self.blocks, caches, dy, &mut signals)?;
        signals.reverse();
        Ok((dx, signals))
    }
}

type MaybeRng<'a, 'b> = &'a mut Option<&'b mut dyn rand::RngCore>;

fn forward_blocks(
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
            Block::LayerNorm(n) => {
                let mean = h.mean_keepdim(D::Minus1)?;
                let xc = h.broadcast_sub(&mean)?;
                let var = xc.sqr()?.mean_keepdim(D::Minus1)?;
                let inv_std = (var + n.eps)?.sqrt()?.recip()?;
                let xhat = xc.broadcast_mul(&inv_std)?;
                let y = xhat
                    .broadcast_mul(n.gamma.as_tensor())?
                    .broadcast_add(n.beta.as_tensor())?;
                (y, keep.then(|| Cache::Norm { xhat, inv_std }))
            }
            Block::BatchNorm(n) => {
                let (mean, var) = if train {
                    let mean = h.mean_keepdim(0)?;
                    let var = h.broadcast_sub(&mean)?.sqr()?.mean_keepdim(0)?;
                    let m = n.momentum;
                    n.running_mean.set(
                        &((n.running_mean.as_tensor() * (1.0 - m))? + (mean.squeeze(0)? * m)?)?,
                    )?;
                    n.running_var.set(
                        &((n.running_var.as_tensor() * (1.0 - m))? + (var.squeeze(0)? * m)?)?,
                    )?;
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
                (y, keep.then(|| Cache::Norm { xhat, inv_std }))
            }
            Block::Residual(inner) => {
                let (fy, c) = forward_blocks(inner, &h, train, rng, keep)?;
                ((&h + fy)?, keep.then_some(Cache::Residual(c)))
            }
            Block::Head(spans) => {
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
                let c = keep.then(|| Cache::Head { y: y.clone(), taus });
                (y, c)
            }
            Block::Pad { before, after } => (pad(&h, *before, *after)?, keep.then_some(Cache::Pad)),
            Block::LabelMaps {
                start,
                classes,
                pixels,
            } => (
                label_maps(&h, *start, *classes, *pixels)?,
                keep.then_some(Cache::LabelMaps),
            ),
            Block::Dropout(p) => match rng.as_deref_mut() {
                Some(r) if train && *p > 0.0 => {
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
                    (
                        (&h * &mask)?,
                        keep.then_some(Cache::Dropout { mask: Some(mask) }),
                    )
                }
                _ => (h.clone(), keep.then_some(Cache::Dropout { mask: None })),
            },
        };
        if let Some(c) = c {
            caches.push(c);
        }
        h = y;
    }
    Ok((h, caches))
}

fn backward_blocks(
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
                let dxhat = d.broadcast_mul(n.gamma.as_tensor())?;
                let m1 = dxhat.mean_keepdim(D::Minus1)?;
                let m2 = (&dxhat * xhat)?.mean_keepdim(D::Minus1)?;
                dxhat
                    .broadcast_sub(&m1)?
                    .sub(&xhat.broadcast_mul(&m2)?)?
                    .broadcast_mul(inv_std)?
            }
            (Block::BatchNorm(n), Cache::Norm { xhat, inv_std }) => {
                signals.push(Signal::BatchNorm {
                    xhat: xhat.clone(),
                    delta: d.clone(),
                });
                let dxhat = d.broadcast_mul(n.gamma.as_tensor())?;
                let m1 = dxhat.mean_keepdim(0)?;
                let m2 = (&dxhat * xhat)?.mean_keepdim(0)?;
                dxhat
                    .broadcast_sub(&m1)?
                    .sub(&xhat.broadcast_mul(&m2)?)?
                    .broadcast_mul(inv_std)?
            }
            (Block::Residual(inner), Cache::Residual(ic)) => {
                let df = backward_blocks(inner, ic, &d, signals)?;
                (&d + df)?
            }
            (Block::Head(spans), Cache::Head { y, taus }) => {
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
                Tensor::cat(&parts, 1)?
            }
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
fn label_maps_backward(d: &Tensor, start: usize, classes: usize, pixels: usize) -> Result<Tensor> {
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

/// The heads as computed: adjacent spans of one element-wise kind (sigmoid, Gumbel-sigmoid
/// at one τ, tanh, identity) merged into one, which is exact — each column is its own
/// function — and turns an image's 784 one-pixel heads into one tensor operation instead
/// of 784 (per-span operations dominated wide steps). Softmax spans stay separate.
pub fn merged_heads(spans: &[HeadSpan]) -> Vec<HeadSpan> {
    let mut out: Vec<HeadSpan> = Vec::with_capacity(spans.len());
    for s in spans {
        let elementwise = !matches!(s.kind, HeadKind::Softmax | HeadKind::GumbelSoftmax { .. });
        if let Some(last) = out.last_mut() {
            if elementwise && last.kind == s.kind && last.start + last.len == s.start {
                last.len += s.len;
                continue;
            }
        }
        out.push(s.clone());
    }
    out
}

/// The mean (non-private) gradient over a batch of `n` rows: [`summed_grads`] / n.
pub fn mean_grads(signals: &[Signal], n: usize) -> Result<Vec<Tensor>> {
    let n = n.max(1) as f64;
    summed_grads(signals)?
        .into_iter()
        .map(|g| (g / n).map_err(Into::into))
        .collect()
}

/// The summed (non-private) gradient of every parameter, in [`Net::params`] order.
pub fn summed_grads(signals: &[Signal]) -> Result<Vec<Tensor>> {
    let mut out = Vec::with_capacity(signals.len() * 2);
    for s in signals {
        match s {
            Signal::Linear { a, delta, bias } => {
                out.push(delta.t()?.matmul(a)?);
                if *bias {
                    out.push(delta.sum(0)?);
                }
            }
            Signal::Conv(c) => out.extend(c.summed(None)?),
            Signal::LayerNorm { xhat, delta } | Signal::BatchNorm { xhat, delta } => {
                out.push((delta * xhat)?.sum(0)?);
                out.push(delta.sum(0)?);
            }
        }
    }
    Ok(out)
}

/// ∂(Σ_i loss_i)/∂y for any loss written with candle ops (`loss` returns the per-example
/// losses or their sum). Returns (Σ loss, ∂/∂y).
pub fn loss_grad<F>(y: &Tensor, loss: F) -> Result<(f64, Tensor)>
where
    F: Fn(&Tensor) -> candle_core::Result<Tensor>,
{
    let v = Var::from_tensor(&y.detach())?;
    let l = loss(v.as_tensor())?.sum_all()?;
    let grads = l.backward()?;
    let g = match grads.get(v.as_tensor()) {
        Some(g) => g.clone(),
        None => y.zeros_like()?,
    };
    Ok((f64::from(l.to_scalar::<f32>()?), g))
}

/// Numerically stable binary cross-entropy on probabilities, per element, summed per row:
/// Σ_j −[y log p + (1−y) log(1−p)] with p clamped away from 0 and 1.
pub fn bce_rows(p: &Tensor, target: &Tensor) -> candle_core::Result<Tensor> {
    let p = p.clamp(1e-7f32, 1.0 - 1e-7f32)?;
    let l = ((target * p.log()?)? + (target.affine(-1.0, 1.0)? * p.affine(-1.0, 1.0)?.log()?)?)?;
    l.neg()?.sum(1)
}
