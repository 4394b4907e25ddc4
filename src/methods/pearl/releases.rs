//! The private releases PEARL trains on (the bandwidth, the class counts, the embedding),
//! each charged before it is made, and what the training loop gets from them.

use candle_core::{DType, Tensor};

use crate::methods::embedding::{self, LabelSpan};
use crate::methods::gan_phase::{latent, sampling_heads};
use crate::methods::labeller::{Labeller, Private};
use crate::methods::released::Conditioning;
use crate::methods::statement::{Accounting, release};
use crate::methods::{Flow, MethodError, Plan, Progress, Result, TrainSetup};
use crate::nn::layers::Net;
use crate::privacy::Mechanism;

use super::config::*;

/// What the releases give the training loop: all DP outputs (or public facts).
pub(super) struct Released {
    /// S̃ / N, [C, 2k].
    pub(super) target: Tensor,
    /// Released class proportions [1, C], when there is a label.
    pub(super) proportions: Option<Tensor>,
    pub(super) label: Option<LabelSpan>,
    /// With a label, the generator is class-conditional, classes drawn from the released
    /// proportions (uniform when none were released).
    pub(super) conditioning: Option<Conditioning>,
}

impl Released {
    /// The generator's input for a batch: latent ⊕ one-hot class, and the classes drawn.
    pub(super) fn input(
        &self,
        s: &mut TrainSetup<'_>,
        c: &PearlConfig,
    ) -> Result<(Tensor, Vec<usize>)> {
        let z = latent(s.noise, c.fit.batch, c.fit.latent_dim, s.device)?;
        let Some(cond) = &self.conditioning else {
            return Ok((z, Vec::new()));
        };
        let classes = cond.draw(c.fit.batch, s.noise.rng());
        Ok((cond.input(&z, &classes)?, classes))
    }

    /// (mask, fill) that set a batch's label span to its drawn classes: y·mask + fill. The
    /// label columns then carry no gradient, and the rows embed as their class.
    pub(super) fn label_fix(
        &self,
        classes: &[usize],
        width: usize,
        dev: &candle_core::Device,
    ) -> Result<Option<(Tensor, Tensor)>> {
        let Some(cond) = &self.conditioning else {
            return Ok(None);
        };
        Ok(Some(cond.fix(classes, width, dev)?))
    }
}

/// The half-cosine schedule: `lr` at step 0, falling to zero at the last step.
pub(super) fn cosine_lr(lr: f64, step: u64, steps: u64) -> f64 {
    let t = step as f64 / steps.max(1) as f64;
    lr * 0.5 * (1.0 + (std::f64::consts::PI * t).cos())
}

/// The generator as it would be released now, to the run's checkpoint sink (free: the
/// releases are all made before training starts).
pub(super) fn snapshot(
    s: &mut TrainSetup<'_>,
    (id, c): (&str, &PearlConfig),
    generator: &Net,
    r: &Released,
    (epoch, step): (u64, u64),
) -> Result<()> {
    if s.checkpoint.is_none() {
        return Ok(());
    }
    let mut model = release(
        s,
        Accounting::Best,
        c.common.private,
        id,
        &c.common.preset,
        c.fit.latent_dim,
        sampling_heads(generator.snapshot()?),
        serde_json::to_value(c).unwrap_or_default(),
    )?;
    model.header.conditioning = r.conditioning.clone();
    let ck = crate::methods::Checkpoint {
        epoch,
        step,
        generator: model,
        critic: None,
        critic_scale: 1.0,
        epoch_end: true,
    };
    match s.checkpoint.as_mut() {
        Some(sink) => sink(ck).map_err(MethodError::Model),
        None => Ok(()),
    }
}

/// The conditioning of a labelled run: the label's span and the released proportions
/// (uniform, a public default, when no counts were released).
pub(super) fn conditioning(
    label: Option<LabelSpan>,
    proportions: Option<&Tensor>,
) -> Result<Option<Conditioning>> {
    let Some(l) = label else { return Ok(None) };
    let proportions: Vec<f64> = match proportions {
        Some(p) => p
            .flatten_all()?
            .to_vec1::<f32>()?
            .into_iter()
            .map(f64::from)
            .collect(),
        None => vec![1.0 / l.classes as f64; l.classes],
    };
    Ok(Some(Conditioning {
        start: l.start,
        classes: l.classes,
        binary: l.binary,
        proportions,
    }))
}

/// The noise std of each planned release, in order (none for a non-private run).
pub(super) fn planned_stds(c: &PearlConfig, plan: &Plan) -> Result<Vec<f64>> {
    if !c.common.private {
        return Ok(Vec::new());
    }
    let stds: Vec<f64> = plan
        .charges
        .iter()
        .filter_map(|ch| match ch.mechanism {
            Mechanism::Gaussian { std, .. } | Mechanism::DiscreteGaussian { std } => Some(std),
            _ => None,
        })
        .collect();
    if stds.len() != c.releases(1.0)?.len() {
        return Err(MethodError::Plan(
            "the reserved plan does not match PEARL's releases".into(),
        ));
    }
    Ok(stds)
}

/// Charges one Gaussian release of `sensitivity` (nothing when not private).
pub(super) fn charge(
    s: &mut TrainSetup<'_>,
    sensitivity: f64,
    std: f64,
    private: bool,
) -> Result<()> {
    if !private {
        return Ok(());
    }
    s.accountant
        .charge(Mechanism::Gaussian { sensitivity, std }, 1)
        .map_err(|e| MethodError::Plan(format!("a PEARL release does not fit its plan: {e}")))
}

/// ℓ: given, released privately (release 1), or the public rule.
pub(super) fn bandwidth(
    c: &PearlConfig,
    s: &mut TrainSetup<'_>,
    std: Option<f64>,
    n: f64,
) -> Result<f64> {
    if c.fit.bandwidth > 0.0 {
        return Ok(c.fit.bandwidth);
    }
    let Some(std) = std else {
        return Ok(embedding::public_bandwidth(s.encoding));
    };
    charge(s, embedding::MOMENTS_SENSITIVITY, std, c.common.private)?;
    let bound = embedding::norm_bound(s.encoding);
    let m = embedding::distance_moments(s.data, bound)?;
    let noisy =
        s.noise
            .plus_gaussian_f64(&m, std, ("pearl-moments", embedding::MOMENTS_SENSITIVITY))?;
    Ok(embedding::rms_distance(
        &noisy.to_dtype(DType::F64)?.to_vec1()?,
        bound,
        n,
    ))
}

/// Release 2: the class counts, as proportions [1, C] (post-processing: clamped, summed to 1).
pub(super) fn noisy_proportions(
    s: &mut TrainSetup<'_>,
    label: LabelSpan,
    std: f64,
    private: bool,
) -> Result<Tensor> {
    if private {
        s.accountant
            .charge(Mechanism::DiscreteGaussian { std }, 1)
            .map_err(|e| {
                MethodError::Plan(format!("a PEARL release does not fit its plan: {e}"))
            })?;
    }
    let counts = embedding::class_counts(s.data, label)?;
    let noisy = if private {
        s.noise
            .plus_discrete_gaussian(&counts, std, ("class-counts", 1.0))?
    } else {
        counts
    };
    let noisy: Vec<f32> = noisy.to_dtype(DType::F32)?.to_vec1()?;
    let clamped: Vec<f32> = noisy.iter().map(|v| v.max(0.0)).collect();
    let total: f32 = clamped.iter().sum();
    let props: Vec<f32> = if total > 0.0 {
        clamped.iter().map(|v| v / total).collect()
    } else {
        vec![1.0 / label.classes as f32; label.classes]
    };
    Ok(Tensor::from_vec(props, (1, label.classes), s.device)?)
}

/// Release 3: S̃ / N, the noisy per-class embedding [C, 2k].
pub(super) fn noisy_embedding(
    s: &mut TrainSetup<'_>,
    omega: &embedding::Frequencies,
    label: Option<LabelSpan>,
    (std, private, n): (f64, bool, f64),
    on: embedding::EmbedDevice,
) -> Result<Tensor> {
    charge(s, embedding::SUM_SENSITIVITY, std, private)?;
    let (sum, _) = embedding::class_sums_on(s.data, omega, label, on)?;
    // The noise is added to the exact f64 sums; only the noisy release is rounded to f32.
    let noisy = s
        .noise
        .plus_gaussian_f64(&sum, std, ("embedding", embedding::SUM_SENSITIVITY))?;
    Ok((noisy / n)?.to_dtype(DType::F32)?)
}

/// The labeller (see [`crate::methods::labeller`]): DP-SGD steps at the plan's σ, each
/// charged before its batch is drawn; plain steps in a non-private run.
pub(super) fn train_labeller(
    s: &mut TrainSetup<'_>,
    c: &PearlConfig,
    label: LabelSpan,
) -> Result<Labeller> {
    let sigma = s.plan.charges.iter().find_map(|ch| match ch.mechanism {
        Mechanism::SubsampledGaussian { sigma, .. } => Some(sigma),
        _ => None,
    });
    if c.common.private && sigma.is_none() {
        return Err(MethodError::Plan(
            "the reserved plan has no labeller steps".into(),
        ));
    }
    let private = c.common.private;
    let total = c.fit.labeller.labeller_steps;
    let observer = &mut *s.observer;
    let p = Private {
        noise: &mut *s.noise,
        accountant: &mut *s.accountant,
        sigma: sigma.filter(|_| private),
        records: s.records,
    };
    Labeller::train(s.data, label, &c.fit.labeller, p, |step, loss, acc| {
        let progress = Progress {
            phase: "labeller".into(),
            step,
            total,
            losses: vec![("cross-entropy".into(), loss)],
            epsilon_spent: if private {
                acc.spent_upper()
            } else {
                f64::INFINITY
            },
            charges: if private {
                acc.history().to_vec()
            } else {
                Vec::new()
            },
            note: None,
        };
        observer(progress) != Flow::Stop
    })
}
