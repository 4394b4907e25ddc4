//! DP-SGD: Poisson sampling, per-example clipping without per-example gradients, and
//! Gaussian noise from a cryptographically secure generator.
//!
//! Mechanism and accounting: each step includes every record independently with
//! probability q (true Poisson sampling, so the batch size varies), clips each example's
//! gradient over *all* trained parameters jointly to L2 norm C (so adding or removing one
//! record moves the clipped sum by at most C: L2 sensitivity C), adds N(0, σ²C²) to every
//! coordinate of the sum, and divides by the expected batch size qN (a public constant, so
//! the division is post-processing). One step is therefore one use of
//! [`Mechanism::SubsampledGaussian`]` { q, sigma }`, charged to the accountant *before*
//! the step reads any record.

use candle_core::{Tensor, Var};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, StandardNormal};

use super::layers::{Net, Signal};
use super::optim::Optimizer;
use super::{NnError, Result};
use crate::privacy::{Accountant, Mechanism};

/// Settings of a DP-SGD run.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DpSgdConfig {
    /// Clipping norm C.
    pub clip: f64,
    /// Noise multiplier σ (noise std = σ·C).
    pub noise_multiplier: f64,
    /// Poisson sampling rate q = expected batch / N.
    pub sample_rate: f64,
    /// Number of private records N.
    pub n_records: usize,
}

impl DpSgdConfig {
    pub fn expected_batch(&self) -> f64 {
        self.sample_rate * self.n_records as f64
    }

    pub fn mechanism(&self) -> Mechanism {
        Mechanism::SubsampledGaussian {
            q: self.sample_rate,
            sigma: self.noise_multiplier,
        }
    }

    pub fn validate(&self) -> Result<()> {
        if !(self.clip.is_finite() && self.clip > 0.0) {
            return Err(NnError::Invalid(format!(
                "clipping norm must be positive, got {}",
                self.clip
            )));
        }
        if !(self.noise_multiplier.is_finite() && self.noise_multiplier >= 0.0) {
            return Err(NnError::Invalid(format!(
                "noise multiplier must be ≥ 0, got {}",
                self.noise_multiplier
            )));
        }
        if !(self.sample_rate > 0.0 && self.sample_rate <= 1.0) || self.n_records == 0 {
            return Err(NnError::Invalid(format!(
                "sampling rate must be in (0, 1] and the data non-empty, got q={} N={}",
                self.sample_rate, self.n_records
            )));
        }
        Ok(())
    }
}

/// The randomness of a run: sampling and noise.
pub struct NoiseSource {
    rng: StdRng,
    /// Poisson batches' own stream, seeded from `rng` once: see [`Self::poisson_batch`].
    batches: StdRng,
    /// True when the user fixed the seed: the run is reproducible and **not for release**.
    pub seeded_by_user: bool,
}

impl NoiseSource {
    /// A CSPRNG (ChaCha12) seeded from the operating system.
    pub fn from_os() -> Self {
        Self::with(StdRng::from_os_rng(), false)
    }

    fn with(mut rng: StdRng, seeded_by_user: bool) -> Self {
        let batches = StdRng::from_rng(&mut rng);
        Self {
            rng,
            batches,
            seeded_by_user,
        }
    }

    /// A reproducible generator for teaching and tests; marks the run not-for-release.
    pub fn from_seed(seed: u64) -> Self {
        Self::with(StdRng::seed_from_u64(seed), true)
    }

    pub fn rng(&mut self) -> &mut StdRng {
        &mut self.rng
    }

    /// Poisson sampling: each of `n` records independently with probability `q`.
    ///
    /// Drawn by skipping: the gaps between included records of an i.i.d. Bernoulli(q)
    /// sequence are i.i.d. Geometric(q), so ⌊ln U / ln(1 − q)⌋ records are skipped before
    /// each included one. Same distribution, qN draws instead of N.
    ///
    /// The skips come from a generator seeded (256 bits) by one draw per batch from a
    /// stream of the batches' own, so neither stream moves by an amount that depends on
    /// `n`: on a table with one record more, every later batch and every noise draw is
    /// the same, which the neighbour harness's coupling relies on.
    pub fn poisson_batch(&mut self, n: usize, q: f64) -> Vec<u32> {
        use rand::Rng as _;
        if q >= 1.0 {
            return (0..n as u32).collect();
        }
        if q <= 0.0 {
            return Vec::new();
        }
        let mut rng = StdRng::from_rng(&mut self.batches);
        if let Some(map) = crate::privacy::probe::rows(n) {
            // The harness's coupling: each record keeps its coin wherever it sits.
            let coins =
                crate::privacy::probe::draws_by_record(&map, &mut rng, |r| r.random::<f64>() < q);
            return (0..n as u32).filter(|j| coins[*j as usize]).collect();
        }
        let log1mq = (-q).ln_1p();
        let mut out = Vec::with_capacity((q * n as f64 * 1.2) as usize + 8);
        let mut i: f64 = -1.0;
        loop {
            // U in (0, 1]: ln U ≤ 0, never −∞.
            let u: f64 = 1.0 - rng.random::<f64>();
            i += 1.0 + (u.ln() / log1mq).floor();
            if i >= n as f64 {
                return out;
            }
            out.push(i as u32);
        }
    }

    /// `t` plus i.i.d. N(0, std²), the noise drawn and added in f64 (a one-shot release:
    /// an f32 normal sampler is coarse in its tails and the sum would round twice), the
    /// result in `t`'s dtype. `probe` names the release and its L2 sensitivity for the
    /// neighbour harness ([`crate::privacy::probe`]).
    pub fn plus_gaussian_f64(
        &mut self,
        t: &Tensor,
        std: f64,
        probe: (&'static str, f64),
    ) -> Result<Tensor> {
        let mechanism = Mechanism::Gaussian {
            sensitivity: probe.1,
            std,
        };
        self.release_each(t, (probe.0, probe.1, mechanism), |x, rng| {
            let z: f64 = StandardNormal.sample(rng);
            x + std * z
        })
    }

    /// Integer counts (a tensor of whole numbers) plus exact discrete Gaussian noise
    /// N_ℤ(0, std²) each ([`crate::privacy::discrete::DiscreteGaussian`]), in `counts`'
    /// dtype. Errors for a σ outside the sampler's range (the plan's charge refuses such a
    /// σ before any row is read). `probe` as for [`Self::plus_gaussian_f64`].
    pub fn plus_discrete_gaussian(
        &mut self,
        counts: &Tensor,
        std: f64,
        probe: (&'static str, f64),
    ) -> Result<Tensor> {
        let g = crate::privacy::discrete::DiscreteGaussian::new(std).ok_or_else(|| {
            candle_core::Error::Msg(format!("discrete Gaussian noise σ = {std} is out of range"))
        })?;
        // Integer counts moved by one per record: the unit shift the discrete
        // Gaussian's accounting assumes; any other shift, the continuous bound.
        let mechanism = match probe.1 {
            1.0 => Mechanism::DiscreteGaussian {
                std: g.variance().sqrt(),
            },
            d => Mechanism::Gaussian {
                sensitivity: d,
                std: g.variance().sqrt(),
            },
        };
        self.release_each(counts, (probe.0, probe.1, mechanism), |c, rng| {
            g.release(c.round().max(0.0) as u64, rng) as f64
        })
    }

    /// `t`'s values, each through `noisy` in f64, as one noise call the neighbour harness
    /// sees (`probe`: the release's name and L2 sensitivity); the result in `t`'s dtype.
    fn release_each(
        &mut self,
        t: &Tensor,
        probe: (&'static str, f64, Mechanism),
        mut noisy: impl FnMut(f64, &mut StdRng) -> f64,
    ) -> Result<Tensor> {
        use crate::privacy::probe::{Norm, Value, noise_call};
        let exact: Vec<f64> = t
            .to_dtype(candle_core::DType::F64)?
            .flatten_all()?
            .to_vec1::<f64>()?;
        let rng = &mut self.rng;
        let v = noise_call(
            probe.0,
            (Norm::L2, probe.1),
            || probe.2,
            || Value::Dense(exact.clone()),
            || exact.iter().map(|x| noisy(*x, rng)).collect::<Vec<f64>>(),
        );
        Ok(Tensor::from_vec(v, t.shape(), t.device())?.to_dtype(t.dtype())?)
    }

    /// A tensor of i.i.d. N(0, std²) values shaped like `like`.
    pub fn gaussian_like(&mut self, like: &Tensor, std: f64) -> Result<Tensor> {
        let n = like.elem_count();
        let std = std as f32;
        let v: Vec<f32> = (0..n)
            .map(|_| {
                let z: f32 = StandardNormal.sample(&mut self.rng);
                z * std
            })
            .collect();
        Ok(Tensor::from_vec(v, like.shape(), like.device())?)
    }
}

/// The step's noise as one call the neighbour harness sees ([`crate::privacy::probe`]):
/// the clipped sums of every parameter, one vector of L2 sensitivity `sensitivity` (one
/// record's clipped gradient, scaled), with the same draws as the plain path.
fn probed_step(
    sums: Vec<Tensor>,
    (std, sensitivity, q): (f64, f64, f64),
    noise: &mut NoiseSource,
) -> Result<Vec<Tensor>> {
    use crate::privacy::probe::{Norm, Value, noise_call};
    let flat = |ts: &[Tensor]| -> Result<Vec<f64>> {
        let mut v = Vec::new();
        for t in ts {
            v.extend(
                t.to_dtype(candle_core::DType::F64)?
                    .flatten_all()?
                    .to_vec1::<f64>()?,
            );
        }
        Ok(v)
    };
    let query = flat(&sums)?;
    let mut drawn = Vec::with_capacity(sums.len());
    for s in &sums {
        let z = noise.gaussian_like(s, std)?;
        drawn.push((s + z)?);
    }
    let drawn = flat(&drawn)?;
    let released = noise_call(
        "dpsgd-step",
        (Norm::L2, sensitivity),
        || Mechanism::SubsampledGaussian {
            q,
            sigma: std / sensitivity,
        },
        || Value::Dense(query),
        || drawn,
    );
    let mut out = Vec::with_capacity(sums.len());
    let mut at = 0;
    for s in &sums {
        let n = s.elem_count();
        let part = released
            .get(at..at + n)
            .ok_or_else(|| NnError::Invalid("a replayed gradient has another length".into()))?;
        out.push(Tensor::from_vec(part.to_vec(), s.shape(), s.device())?.to_dtype(s.dtype())?);
        at += n;
    }
    Ok(out)
}

/// Per-example squared gradient norms over all parameters, from the signals alone:
/// ‖g_i‖² = Σ_linear ‖δ_i‖²(‖a_i‖² + [bias]) + Σ_layernorm (‖δ_i ⊙ x̂_i‖² + ‖δ_i‖²).
pub fn per_example_sq_norms(signals: &[Signal]) -> Result<Tensor> {
    let mut total: Option<Tensor> = None;
    for s in signals {
        let t = match s {
            Signal::Linear { a, delta, bias } => {
                let an = a.sqr()?.sum(1)?;
                let an = if *bias { (an + 1.0)? } else { an };
                (delta.sqr()?.sum(1)? * an)?
            }
            Signal::Conv(c) => c.sq_norms()?,
            Signal::LayerNorm { xhat, delta } => {
                ((delta * xhat)?.sqr()?.sum(1)? + delta.sqr()?.sum(1)?)?
            }
            Signal::BatchNorm { .. } => {
                return Err(NnError::Invalid(
                    "batch norm has no per-example gradients".into(),
                ));
            }
        };
        total = Some(match total {
            None => t,
            Some(acc) => (acc + t)?,
        });
    }
    total.ok_or_else(|| NnError::Invalid("the network has no trainable parameters".into()))
}

/// Σ_i c_i g_i for per-example factors `c` [B], without forming any g_i: Δᵀdiag(c)A.
pub fn clipped_sums(signals: &[Signal], c: &Tensor) -> Result<Vec<Tensor>> {
    let c = c.unsqueeze(1)?;
    let mut out = Vec::with_capacity(signals.len() * 2);
    for s in signals {
        match s {
            Signal::Linear { a, delta, bias } => {
                let dc = delta.broadcast_mul(&c)?;
                out.push(dc.t()?.matmul(a)?);
                if *bias {
                    out.push(dc.sum(0)?);
                }
            }
            Signal::Conv(s) => out.extend(s.summed(Some(&c.squeeze(1)?))?),
            Signal::LayerNorm { xhat, delta } => {
                let dc = delta.broadcast_mul(&c)?;
                out.push((&dc * xhat)?.sum(0)?);
                out.push(dc.sum(0)?);
            }
            Signal::BatchNorm { .. } => {
                return Err(NnError::Invalid(
                    "batch norm has no per-example gradients".into(),
                ));
            }
        }
    }
    Ok(out)
}

/// Clip factors min(1, C/‖g_i‖), computed in f64 and rounded down by a relative 1e-6 so
/// that the f32 factor times the norm never exceeds C. A non-finite norm gets factor 0
/// (the example adds nothing; the finiteness check after the step then names the fault).
pub fn clip_factors(sq_norms: &Tensor, clip: f64) -> Result<Tensor> {
    let sq: Vec<f32> = sq_norms.to_vec1()?;
    let c: Vec<f32> = sq
        .iter()
        .map(|&s| {
            let n = f64::from(s).sqrt();
            if !n.is_finite() {
                0.0
            } else if n <= clip {
                1.0
            } else {
                (clip / n * (1.0 - 1e-6)) as f32
            }
        })
        .collect();
    Ok(Tensor::from_vec(c, sq.len(), sq_norms.device())?)
}

/// What one step did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepReport {
    /// Realised Poisson batch size.
    pub batch: usize,
    /// Σ loss over the batch (a diagnostic on private data: never released).
    pub loss_sum: f64,
    /// Share of examples whose gradient was clipped.
    pub clipped_share: f64,
}

/// The private gradient of a batch: clipped sum + N(0, σ²C²), divided by qN. `signals`
/// may be empty (an empty Poisson batch still releases pure noise).
pub fn private_grads(
    net: &Net,
    signals: &[Signal],
    cfg: &DpSgdConfig,
    noise: &mut NoiseSource,
) -> Result<(Vec<Tensor>, f64)> {
    let params = net.params();
    // The 1/(qN) normalisation is folded into the clip factors and the noise scale, so
    // each parameter costs one addition after the clipped sum.
    let scale = 1.0 / cfg.expected_batch();
    let (sums, clipped_share) = if signals.is_empty() {
        (
            params
                .iter()
                .map(|p| p.as_tensor().zeros_like())
                .collect::<candle_core::Result<Vec<_>>>()?,
            0.0,
        )
    } else {
        let sq = per_example_sq_norms(signals)?;
        let c = clip_factors(&sq, cfg.clip)?;
        let cv: Vec<f32> = c.to_vec1()?;
        let clipped = cv.iter().filter(|v| **v < 1.0).count();
        let c = (c * scale)?;
        (
            clipped_sums(signals, &c)?,
            clipped as f64 / cv.len().max(1) as f64,
        )
    };
    if sums.len() != params.len() {
        return Err(NnError::Invalid(
            "gradient and parameter lists differ".into(),
        ));
    }
    let std = cfg.noise_multiplier * cfg.clip * scale;
    let noisy = if crate::privacy::probe::active() {
        probed_step(sums, (std, cfg.clip * scale, cfg.sample_rate), noise)?
    } else {
        let mut v = Vec::with_capacity(sums.len());
        for s in sums {
            let z = noise.gaussian_like(&s, std)?;
            v.push((s + z)?);
        }
        v
    };
    let mut out = Vec::with_capacity(noisy.len());
    for g in noisy {
        // Checked before any update: a NaN or ∞ would otherwise end in a NaN model.
        let total = g
            .sum_all()?
            .to_dtype(candle_core::DType::F64)?
            .to_scalar::<f64>()?;
        if !total.is_finite() {
            return Err(NnError::Invalid(
                "a gradient is not a finite number (training diverged): nothing was updated; lower the learning rate or the clipping norm".into(),
            ));
        }
        out.push(g);
    }
    Ok((out, clipped_share))
}

/// Rows `idx` of `data`.
pub fn gather_rows(data: &Tensor, idx: &[u32]) -> Result<Tensor> {
    let ids = Tensor::from_slice(idx, idx.len(), data.device())?;
    Ok(data.index_select(&ids, 0)?)
}

/// A per-example loss: `(output y, input x, target t)` → losses [B] (or their sum).
pub trait LossFn: Fn(&Tensor, &Tensor, Option<&Tensor>) -> candle_core::Result<Tensor> {}
impl<F: Fn(&Tensor, &Tensor, Option<&Tensor>) -> candle_core::Result<Tensor>> LossFn for F {}

/// The one DP-SGD step every caller runs (the methods, `bench dpsgd`, the tests): charge
/// the accountant → draw a Poisson batch → forward → per-example loss → backward → clip
/// jointly to C and add N(0, σ²C²) → divide by qN. Returns the noisy gradients, one per
/// parameter of `net`, or `Ok(None)` — touching no record — when the charge would exceed
/// the budget.
///
/// Sensitivity and accounting: adding or removing one record changes the clipped sum by at
/// most C in L2 (each example is clipped over all parameters jointly), so the step is one
/// use of `SubsampledGaussian { q, σ }`, charged before the batch is drawn. The forward pass
/// is the network's deterministic one (Gumbel heads as plain softmax/sigmoid, no dropout):
/// the clipping bound does not depend on it, and runs stay comparable across callers.
#[allow(clippy::too_many_arguments)]
pub fn private_gradient<F: LossFn>(
    net: &Net,
    data: &Tensor,
    targets: Option<&Tensor>,
    cfg: &DpSgdConfig,
    noise: &mut NoiseSource,
    accountant: &mut Accountant,
    loss: F,
) -> Result<Option<(Vec<Tensor>, StepReport)>> {
    cfg.validate()?;
    if accountant.charge(cfg.mechanism(), 1).is_err() {
        return Ok(None);
    }
    // Every row present is a candidate; `n_records` (which may be a public N the user
    // gave) only sets the normalisation, as the accountant's q does.
    let (rows, _) = data.dims2()?;
    let idx = noise.poisson_batch(rows, cfg.sample_rate);
    let (signals, loss_sum) = if idx.is_empty() {
        (Vec::new(), 0.0)
    } else {
        let x = gather_rows(data, &idx)?;
        let t = targets.map(|t| gather_rows(t, &idx)).transpose()?;
        let (y, caches) = net.forward_train(&x, None)?;
        let (l, dy) = super::layers::loss_grad(&y, |y| loss(y, &x, t.as_ref()))?;
        let (_, signals) = net.backward(&caches, &dy)?;
        (signals, l)
    };
    let (grads, clipped_share) = private_grads(net, &signals, cfg, noise)?;
    Ok(Some((
        grads,
        StepReport {
            batch: idx.len(),
            loss_sum,
            clipped_share,
        },
    )))
}

/// [`private_gradient`] followed by the optimizer's step.
#[allow(clippy::too_many_arguments)]
pub fn dp_step<F: LossFn>(
    net: &Net,
    opt: &mut dyn Optimizer,
    data: &Tensor,
    targets: Option<&Tensor>,
    cfg: &DpSgdConfig,
    noise: &mut NoiseSource,
    accountant: &mut Accountant,
    loss: F,
) -> Result<Option<StepReport>> {
    let Some((grads, report)) = private_gradient(net, data, targets, cfg, noise, accountant, loss)?
    else {
        return Ok(None);
    };
    opt.step(&net.params(), &grads)?;
    Ok(Some(report))
}

/// One plain (non-private) step on a fixed batch: the same network code, the summed
/// gradient divided by the batch size.
pub fn plain_step<F: LossFn>(
    net: &Net,
    opt: &mut dyn Optimizer,
    x: &Tensor,
    t: Option<&Tensor>,
    loss: F,
) -> Result<f64> {
    let (y, caches) = net.forward_train(x, None)?;
    let (l, dy) = super::layers::loss_grad(&y, |y| loss(y, x, t))?;
    let (_, signals) = net.backward(&caches, &dy)?;
    let grads = super::layers::mean_grads(&signals, x.dims()[0])?;
    opt.step(&net.params(), &grads)?;
    Ok(l)
}

/// Writes `values` into the variables (used by optimizers and checkpoint loading).
pub fn set_all(params: &[Var], values: &[Tensor]) -> Result<()> {
    for (p, v) in params.iter().zip(values) {
        p.set(v)?;
    }
    Ok(())
}
