//! The GAN phase DP-GAN and DP-auto-GAN share (and PATE-GAN will): a critic trained by
//! DP-SGD on the private rows against a generator (optionally followed by a frozen,
//! DP-trained decoder), per-epoch checkpoints, progress reports and the release builder.
//!
//! Accounting: each critic step makes exactly one subsampled-Gaussian charge (q, σ) through
//! [`crate::nn::dpsgd::private_gradient`], before it reads a row; the critic's gradient on
//! generated rows, the generator's step and every checkpoint are post-processing of the
//! already-private critic.

use candle_core::Tensor;
use rand_distr::{Distribution, StandardNormal};

use super::method::Common;
use super::released::Conditioning;
use super::statement::{Accounting, release};
use super::{Checkpoint, Flow, MethodError, Progress, Result, TrainSetup, step_grads};
use crate::nn::dpsgd::{DpSgdConfig, NoiseSource};
use crate::nn::layers::{Block, HeadKind, Net, loss_grad, summed_grads};
use crate::nn::optim::{Adam, Optimizer, RmsProp};

/// The adversarial loss of the GAN phase.
///
/// `Wasserstein` is the papers' WGAN with weight clipping. Under DP-SGD it fails in a way
/// the papers do not report: weights clipped to ±0.01 make per-example gradients orders of
/// magnitude smaller than the clip norm C, so the added noise (scale σC) drowns them, and
/// RMSProp turns the noise into full-size steps: the critic becomes a random function and
/// the generator collapses (measured on ADULT at ε = 1: 1.6 % of rows with income >50K
/// against 24 %). `Logistic` is the non-saturating GAN (Goodfellow et al. 2014): the critic
/// is a classifier with logit output, trained with Adam (β₁ = 0.5); it needs no Lipschitz
/// constraint, so its gradients stay at the scale the clip norm is set for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GanLoss {
    #[default]
    Logistic,
    Wasserstein,
}

/// softplus(x) = log(1 + eˣ), computed stably as max(x, 0) + log(1 + e^−|x|).
pub(crate) fn softplus(x: &Tensor) -> candle_core::Result<Tensor> {
    x.relu()? + (x.abs()?.neg()?.exp()? + 1.0)?.log()?
}

impl GanLoss {
    /// Critic loss on its outputs for real rows, per row.
    fn real(self, y: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Self::Wasserstein => y.neg()?.sum(1),
            Self::Logistic => softplus(&y.neg()?)?.sum(1),
        }
    }
    /// Critic loss on its outputs for generated rows, per row.
    fn fake(self, y: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Self::Wasserstein => y.sum(1),
            Self::Logistic => softplus(y)?.sum(1),
        }
    }
    /// Generator loss on the critic's outputs for generated rows, per row (the
    /// non-saturating form for the logistic loss).
    fn generator(self, y: &Tensor) -> candle_core::Result<Tensor> {
        self.real(y)
    }
}

/// The GAN phase's schedule, which DP-GAN's and DP-auto-GAN's settings both name (the
/// latter with `gan_` prefixes, which are its `--set` keys and so stay).
#[derive(Clone, Copy, Debug)]
pub(crate) struct GanSchedule {
    pub loss: GanLoss,
    pub latent_dim: usize,
    pub batch: usize,
    pub critic_steps: u64,
    pub n_critic: u64,
    pub lr: f64,
    pub clip: f64,
    pub weight_clip: f64,
}

/// The GAN phase shared by DP-GAN and DP-auto-GAN.
pub(crate) struct GanLoop {
    pub schedule: GanSchedule,
    /// For checkpoint headers: the method's id, preset and configuration.
    pub method: &'static str,
    pub preset: String,
    pub config: serde_json::Value,
    pub phase: &'static str,
    pub sigma: f64,
    pub private: bool,
    /// A class-conditional generator: its input is the latent vector and a one-hot class
    /// drawn from these (public) proportions, and its rows' label span is set to that
    /// class before the critic sees them.
    pub conditioning: Option<Conditioning>,
    /// `Some`: the critic reads the generator's codes (⊕ class), not the decoder's rows;
    /// the setup's data are then the real rows' codes (DP-auto-GAN's code critic),
    /// `conditioning` places the class after the code, and this is the conditioning of
    /// the released rows (generator, then decoder), for snapshots' headers.
    pub code_critic: Option<Conditioning>,
}

impl GanLoop {
    /// `method`'s GAN phase at noise multiplier `sigma`, its checkpoints headed by
    /// `common`'s preset and the method's whole `config`; a class-conditional run sets
    /// `conditioning` (and a code critic `code_critic`) after.
    pub fn new(
        method: &'static str,
        common: &Common,
        config: serde_json::Value,
        schedule: GanSchedule,
        sigma: f64,
    ) -> Self {
        Self {
            schedule,
            method,
            preset: common.preset.clone(),
            config,
            phase: "gan",
            sigma,
            private: common.private,
            conditioning: None,
            code_critic: None,
        }
    }
}

/// The generator's input for `b` rows, with the mask and fill that set a conditional
/// generator's rows to their drawn classes (see [`GanLoop::conditioning`]).
fn generator_input(
    s: &mut TrainSetup<'_>,
    cfg: &GanLoop,
    b: usize,
) -> Result<(Tensor, Option<(Tensor, Tensor)>)> {
    let z = latent(s.noise, b, cfg.schedule.latent_dim, s.device)?;
    let Some(c) = &cfg.conditioning else {
        return Ok((z, None));
    };
    let classes = c.draw(b, s.noise.rng());
    let width = s.data.dims2()?.1;
    let fix = c.fix(&classes, width, s.device)?;
    Ok((c.input(&z, &classes)?, Some(fix)))
}

/// A code critic's generated codes with zeros appended for the label span that `fix`
/// fills (the rows as wide as the mask); other rows as they are.
fn widen(y: &Tensor, fix: &Option<(Tensor, Tensor)>) -> candle_core::Result<Tensor> {
    let Some((mask, _)) = fix else {
        return Ok(y.clone());
    };
    let (b, w) = y.dims2()?;
    let full = mask.dims().last().copied().unwrap_or(w);
    if full <= w {
        return Ok(y.clone());
    }
    let pad = Tensor::zeros((b, full - w), y.dtype(), y.device())?;
    Tensor::cat(&[y, &pad], 1)
}

/// The networks of a GAN phase and their optimizers.
struct Nets<'n> {
    critic: &'n Net,
    generator: &'n Net,
    decoder: Option<&'n Net>,
    /// The critic reads codes: the decoder is for release only.
    codes: bool,
    opt_d: Box<dyn Optimizer>,
    opt_g: Box<dyn Optimizer>,
}

impl Nets<'_> {
    /// Generated rows: generator, then the frozen decoder when there is one.
    fn fake(
        &self,
        z: &Tensor,
        fix: &Option<(Tensor, Tensor)>,
        rng: &mut dyn rand::RngCore,
    ) -> Result<Tensor> {
        let h = self.generator.forward(z, Some(&mut *rng))?;
        let y = match self.decoder {
            Some(d) if !self.codes => d.forward(&h, Some(rng))?,
            _ => h,
        };
        Ok(super::released::with_label(&widen(&y, fix)?, fix)?)
    }

    /// The generator and decoder as one network: what a checkpoint or release holds.
    fn released_generator(&self) -> Net {
        sampling_heads(match self.decoder {
            Some(d) => Net::new(
                self.generator
                    .blocks
                    .iter()
                    .cloned()
                    .chain(d.blocks.iter().cloned())
                    .collect(),
                &self.generator.device,
            ),
            None => self.generator.clone(),
        })
    }
}

/// The optimizers the loss calls for: RMSProp for WGAN (as the papers), Adam (β₁ = 0.5)
/// for the logistic loss.
fn optimizers(cfg: &GanLoop) -> (Box<dyn Optimizer>, Box<dyn Optimizer>) {
    match cfg.schedule.loss {
        GanLoss::Wasserstein => (
            Box::new(RmsProp::new(cfg.schedule.lr)),
            Box::new(RmsProp::new(cfg.schedule.lr)),
        ),
        GanLoss::Logistic => {
            let adam = |lr| {
                let mut a = Adam::new(lr);
                a.beta1 = 0.5;
                a
            };
            (
                Box::new(adam(cfg.schedule.lr)),
                Box::new(adam(cfg.schedule.lr)),
            )
        }
    }
}

/// Trains `critic` (DP-SGD on the private rows) against `generator` (optionally followed
/// by a frozen `decoder`), charging one subsampled-Gaussian step per critic step.
pub(crate) fn gan_loop(
    s: &mut TrainSetup<'_>,
    cfg: &GanLoop,
    critic: &Net,
    generator: &Net,
    decoder: Option<&Net>,
) -> Result<()> {
    let n = s.records;
    critic.check_dp_compatible()?;
    let (opt_d, opt_g) = optimizers(cfg);
    let mut nets = Nets {
        critic,
        generator,
        decoder,
        codes: cfg.code_critic.is_some(),
        opt_d,
        opt_g,
    };
    let steps_per_epoch = n.div_ceil(cfg.schedule.batch.max(1)).max(1) as u64;
    let dp = DpSgdConfig {
        clip: cfg.schedule.clip,
        noise_multiplier: cfg.sigma,
        sample_rate: (cfg.schedule.batch as f64 / n as f64).min(1.0),
        n_records: n,
    };
    let mut g_loss = f64::NAN;
    for step in 0..cfg.schedule.critic_steps {
        let Some(d_fake) = critic_step(s, cfg, &mut nets, &dp)? else {
            break;
        };
        if (step + 1) % cfg.schedule.n_critic == 0 {
            g_loss = generator_step(s, cfg, &mut nets)?;
        }
        let epoch_end = (step + 1) % steps_per_epoch == 0;
        let extra = s
            .snapshots
            .is_some_and(|sn| sn.due(step + 1, cfg.schedule.critic_steps));
        if s.checkpoint.is_some() && (epoch_end || extra) {
            let at = ((step + 1) / steps_per_epoch, step + 1);
            checkpoint(s, cfg, &nets, at, epoch_end)?;
        }
        if (step + 1) % 50 == 0 || step + 1 == cfg.schedule.critic_steps {
            let losses = vec![
                ("generator".into(), g_loss),
                ("critic_on_generated".into(), d_fake),
            ];
            let p = Progress::at(
                s,
                cfg.private,
                cfg.phase,
                (step + 1, cfg.schedule.critic_steps),
                losses,
            );
            if (s.observer)(p) == Flow::Stop {
                break;
            }
        }
    }
    Ok(())
}

/// One critic step: the private gradient on real rows (charged first; `None` when the
/// budget is spent) plus the public gradient on generated rows. Returns the critic's loss
/// on the generated rows.
fn critic_step(
    s: &mut TrainSetup<'_>,
    cfg: &GanLoop,
    nets: &mut Nets<'_>,
    dp: &DpSgdConfig,
) -> Result<Option<f64>> {
    let loss = cfg.schedule.loss;
    let critic = nets.critic;
    let Some(real_grads) = step_grads(s, critic, dp, cfg.private, |y, _| loss.real(y))? else {
        return Ok(None);
    };
    let b = cfg.schedule.batch;
    let (z, fix) = generator_input(s, cfg, b)?;
    let fake = nets.fake(&z, &fix, s.noise.rng())?.detach();
    let (yf, caches) = critic.forward_train(&fake, None)?;
    let (df, dyf) = loss_grad(&yf, |y| loss.fake(y))?;
    let (_, sig_f) = critic.backward(&caches, &dyf)?;
    let grads: Vec<Tensor> = real_grads
        .iter()
        .zip(&summed_grads(&sig_f)?)
        .map(|(r, f)| r + (f / b as f64)?)
        .collect::<candle_core::Result<_>>()?;
    nets.opt_d.step(&critic.params(), &grads)?;
    if cfg.schedule.loss == GanLoss::Wasserstein {
        let w = cfg.schedule.weight_clip as f32;
        for p in &critic.params() {
            p.set(&p.as_tensor().clamp(-w, w)?)?;
        }
    }
    Ok(Some(df / b as f64))
}

/// One generator step through the critic (and the frozen decoder): post-processing of
/// the private critic. Returns the generator's loss.
fn generator_step(s: &mut TrainSetup<'_>, cfg: &GanLoop, nets: &mut Nets<'_>) -> Result<f64> {
    let b = cfg.schedule.batch;
    let (z, fix) = generator_input(s, cfg, b)?;
    let (h, g_caches) = nets.generator.forward_train(&z, Some(s.noise.rng()))?;
    let h_width = h.dims2()?.1;
    let (fake, d_caches) = match nets.decoder {
        Some(d) if !nets.codes => {
            let (f, c) = d.forward_train(&h, Some(s.noise.rng()))?;
            (f, Some(c))
        }
        _ => (h, None),
    };
    let fake = super::released::with_label(&widen(&fake, &fix)?, &fix)?;
    let (yc, c_caches) = nets.critic.forward_train(&fake, None)?;
    let (gl, dyc) = loss_grad(&yc, |y| cfg.schedule.loss.generator(y))?;
    let (dfake, _) = nets.critic.backward(&c_caches, &dyc)?;
    // The label span was set, not generated: it passes no signal back.
    let dfake = match &fix {
        Some((mask, _)) => dfake.broadcast_mul(mask)?,
        None => dfake,
    };
    let dh = match (nets.decoder, d_caches) {
        (Some(d), Some(c)) => d.backward(&c, &dfake)?.0,
        // A code critic's label columns were appended: the generator made the rest.
        _ => dfake.narrow(1, 0, h_width)?,
    };
    let (_, g_sig) = nets.generator.backward(&g_caches, &dh)?;
    let gg = crate::nn::layers::mean_grads(&g_sig, b)?;
    nets.opt_g.step(&nets.generator.params(), &gg)?;
    Ok(gl / b as f64)
}

/// Hands the end-of-epoch snapshot (generator as released so far, critic) to the sink.
fn checkpoint(
    s: &mut TrainSetup<'_>,
    cfg: &GanLoop,
    nets: &Nets<'_>,
    (epoch, step): (u64, u64),
    epoch_end: bool,
) -> Result<()> {
    let mut model = release(
        s,
        Accounting::Plan,
        cfg.private,
        cfg.method,
        &cfg.preset,
        cfg.schedule.latent_dim,
        nets.released_generator().snapshot()?,
        cfg.config.clone(),
    )?;
    model.header.conditioning = cfg.code_critic.clone().or_else(|| cfg.conditioning.clone());
    let ck = Checkpoint {
        epoch,
        step,
        generator: model,
        critic: Some(nets.critic.snapshot()?),
        // The logistic critic outputs a logit; a WGAN critic's score is read the same way.
        critic_scale: 1.0,
        epoch_end,
    };
    match s.checkpoint.as_mut() {
        Some(sink) => sink(ck).map_err(MethodError::Model),
        None => Ok(()),
    }
}

/// `n` latent vectors of width `d`, standard normal.
pub(crate) fn latent(
    noise: &mut NoiseSource,
    n: usize,
    d: usize,
    dev: &candle_core::Device,
) -> Result<Tensor> {
    let v: Vec<f32> = (0..n * d)
        .map(|_| StandardNormal.sample(noise.rng()))
        .collect();
    Ok(Tensor::from_vec(v, (n, d), dev)?)
}

/// The released generator samples categories with a plain softmax (Gumbel noise is a
/// training device only).
pub(crate) fn sampling_heads(mut net: Net) -> Net {
    fn walk(bs: &mut [Block]) {
        for blk in bs.iter_mut() {
            match blk {
                Block::Head(spans) => {
                    for sp in spans.iter_mut() {
                        match sp.kind {
                            HeadKind::GumbelSoftmax { .. } => sp.kind = HeadKind::Softmax,
                            HeadKind::GumbelSigmoid { .. } => sp.kind = HeadKind::Sigmoid,
                            _ => {}
                        }
                    }
                }
                Block::Residual(inner) => walk(inner),
                _ => {}
            }
        }
    }
    walk(&mut net.blocks);
    net
}
