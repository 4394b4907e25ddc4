//! Brief overview: the synthesizers, one file per method, behind one [`Synthesizer`] trait.
//!
//! A method receives the encoded private rows, a run [`Accountant`] that it must charge
//! *before* each access, a noise source and an observer; it returns a
//! [`released::ReleasedModel`] holding only post-processing-safe parts (DESIGN.md §2).
//!
//! - [`dp_gan`]: the DP-GAN baseline (WGAN, critic trained by DP-SGD).
//! - [`dp_auto_gan`]: DP-auto-GAN, both phases DP-trained and composed by RDP.
//! - [`mst`], [`aim`]: marginal-based synthesis — noisy low-order marginals and a
//!   graphical model fitted to them ([`pgm`], Private-PGM), sampled ancestrally.
//! - [`post_gan_boosting`]: private post-GAN boosting and rejection sampling over any GAN
//!   method's snapshots (a wrapper, not a method of its own).
//! - [`released`]: the `.dpsynth` model file: safetensors weights + a JSON header with the
//!   schema, the privacy statement and the run configuration.
//!
//! Layering: uses `nn`, `data` and `privacy`; never `job`, `gui` or `cli`.

pub mod aim;
pub(crate) mod counts;
pub mod dp_auto_gan;
pub mod dp_gan;
pub mod dp_merf;
pub mod embedding;
pub mod gan_phase;
pub mod image_nets;
pub mod labeller;
pub mod marginal;
pub mod method;
pub mod mst;
pub(crate) mod noise_floor;
pub(crate) mod one_to_one;
pub mod pate_gan;
pub mod pearl;
pub mod pgm;
pub mod post_gan_boosting;
pub mod registry;
pub mod released;
pub(crate) mod statement;
pub(crate) mod structural;

use candle_core::{Device, Tensor};

use crate::data::encode::{Encoding, SpanKind};
use crate::nn::dpsgd::NoiseSource;
use crate::nn::layers::{HeadKind, HeadSpan};
use crate::privacy::{Accountant, Budget, Charge, Mechanism};

/// Errors of a method, worded for a person.
#[derive(Debug, thiserror::Error)]
pub enum MethodError {
    #[error(transparent)]
    Nn(#[from] crate::nn::NnError),
    #[error("tensor error: {0}")]
    Candle(#[from] candle_core::Error),
    #[error(transparent)]
    Data(#[from] crate::data::DataError),
    /// The budget cannot pay for the plan (or the data cannot carry it).
    #[error("{0}")]
    Plan(String),
    /// Unknown method, preset or setting, or a setting of the wrong type.
    #[error("{0}")]
    Usage(String),
    /// A method the design promises that this version lacks.
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Model(String),
}

pub type Result<T> = std::result::Result<T, MethodError>;

/// What a method reports while it trains. Only post-processing-safe figures: losses on
/// generated data, ε spent — never a statistic of the private rows.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Progress {
    pub phase: String,
    pub step: u64,
    pub total: u64,
    /// (name, value) pairs, e.g. the generator loss.
    pub losses: Vec<(String, f64)>,
    pub epsilon_spent: f64,
    /// The charges made so far (what the job turns into the dataset ledger's ε).
    pub charges: Vec<Charge>,
    /// What this step just did, for a person watching (a marginal method: the marginal it
    /// measured — a DP output). The window lists them as they come.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Progress {
    /// A report at `step` of `total` in `phase`, with ε and the charges read off the run's
    /// accountant (ε = ∞ and no charges for a non-private run).
    pub(crate) fn at(
        s: &TrainSetup<'_>,
        private: bool,
        phase: &str,
        (step, total): (u64, u64),
        losses: Vec<(String, f64)>,
    ) -> Self {
        Self {
            phase: phase.into(),
            step,
            total,
            losses,
            epsilon_spent: if private {
                s.accountant.spent_upper()
            } else {
                f64::INFINITY
            },
            charges: if private {
                s.accountant.history().to_vec()
            } else {
                Vec::new()
            },
            note: None,
        }
    }
}

/// Whether training should go on (the observer's answer to each report).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// The privacy statement of everything `accountant` has charged, by the tighter
/// accountant: a release restated after the job charged the rest of its plan.
pub fn restate(
    accountant: &crate::privacy::Accountant,
    private: bool,
    schema: &crate::data::schema::Schema,
    not_for_release: bool,
) -> released::PrivacyStatement {
    statement::statement(
        accountant,
        statement::Accounting::Best,
        private,
        schema,
        not_for_release,
    )
}

/// A run's plan: what it will charge, so the cost can be shown and reserved up front.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Plan {
    pub charges: Vec<Charge>,
    /// ε the plan spends at the budget's δ, by the tighter accountant ([`Plan::accountant`]).
    pub epsilon: f64,
    /// "pld" or "rdp": which accountant gave [`Plan::epsilon`] ("none" when not private).
    pub accountant: &'static str,
    pub summary: String,
}

/// A DP-SGD noise multiplier above this makes a run's output noise (see
/// [`Plan::noise_warning`]).
pub const NOISE_MULTIPLIER_WARNING: f64 = 10.0;

impl Plan {
    /// A warning, before any budget is spent, when the plan's noise is so large that the
    /// result will be noise. The rule: a DP-SGD noise multiplier σ above
    /// [`NOISE_MULTIPLIER_WARNING`]. Published DP-SGD models train at σ ≈ 0.5–5 (Abadi et
    /// al. 2016; Opacus's examples), and σ is the noise added to each step's clipped sum
    /// in units of the most one row can move it; at σ ≈ 80 (1,000 Adult rows at ε = 1) a
    /// GAN's synthetic rows collapsed onto one value per column in our runs. σ grows as ε
    /// or the number of rows shrinks, and with more training steps.
    pub fn noise_warning(&self) -> Option<String> {
        let sigma = self
            .charges
            .iter()
            .filter_map(|c| match c.mechanism {
                Mechanism::SubsampledGaussian { sigma, .. } => Some(sigma),
                _ => None,
            })
            .fold(0.0f64, f64::max);
        (sigma > NOISE_MULTIPLIER_WARNING).then(|| {
            format!(
                "Expect noise, not data: this run needs a noise multiplier σ = {sigma:.0} (DP-SGD learns at σ ≈ 0.5–5; above {NOISE_MULTIPLIER_WARNING:.0} results are usually noise). Raise ε, train on more rows, pick a preset with fewer steps, or use a method without DP-SGD (MST or AIM for tables, DP-MERF)."
            )
        })
    }
}

/// Everything a method needs to train.
pub struct TrainSetup<'a> {
    /// The plan the job reserved in the ledger: training uses its noise multipliers as
    /// they are (σ is calibrated once, in [`Synthesizer::plan`]).
    pub plan: &'a Plan,
    /// Encoded private rows [N, width] on the training device; empty ([0, width]) when the
    /// run streams them (`parts`).
    pub data: &'a Tensor,
    /// The rows read in parts from the file, for a streamed run of a counting method
    /// ([`MethodInfo::streams`](registry::MethodInfo)); `None`: they are all in `data`.
    pub parts: Option<&'a crate::data::stream::EncodedScan>,
    /// N as the plan used it: the public number of records the user gave, else the rows'
    /// count (treated as public). Sampling rates, epochs and means are computed from it.
    pub records: usize,
    pub encoding: &'a Encoding,
    pub accountant: &'a mut Accountant,
    pub noise: &'a mut NoiseSource,
    pub device: &'a Device,
    pub observer: &'a mut dyn FnMut(Progress) -> Flow,
    /// Receives a snapshot at the end of every epoch of a GAN phase (`None`: none taken).
    pub checkpoint: Option<&'a mut dyn FnMut(Checkpoint) -> std::result::Result<(), String>>,
    /// Extra snapshots between epochs (post-GAN boosting asks for its generators here);
    /// `None`: epoch ends only.
    pub snapshots: Option<Snapshots>,
}

impl TrainSetup<'_> {
    /// The same run (plan, ledger, noise, observer, snapshots) over other rows, held whole:
    /// DP-auto-GAN's code critic trains on the rows' codes.
    pub fn over<'b>(&'b mut self, data: &'b Tensor) -> TrainSetup<'b> {
        TrainSetup {
            plan: self.plan,
            data,
            parts: None,
            records: self.records,
            encoding: self.encoding,
            accountant: &mut *self.accountant,
            noise: &mut *self.noise,
            device: self.device,
            observer: &mut *self.observer,
            checkpoint: match self.checkpoint.as_mut() {
                Some(f) => Some(&mut **f),
                None => None,
            },
            snapshots: self.snapshots,
        }
    }
}

/// Snapshots a GAN phase takes besides its epoch ends: `count` of them, evenly spaced over
/// the last `span` (a fraction) of the phase's steps, the last on its final step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Snapshots {
    pub count: usize,
    pub span: f64,
}

impl Snapshots {
    /// Whether 1-based `step` of a phase of `total` steps is one of them.
    pub fn due(&self, step: u64, total: u64) -> bool {
        if self.count == 0 || step > total {
            return false;
        }
        let every = ((total as f64 * self.span.clamp(0.0, 1.0)) / self.count as f64)
            .floor()
            .max(1.0) as u64;
        let back = total - step;
        back % every == 0 && back / every < self.count as u64
    }
}

/// The state of a run at the end of an epoch (⌈N / batch⌉ critic steps of a GAN; a tenth
/// of the steps of a one-shot method): what private post-GAN boosting chooses among, and
/// what the window previews while training.
///
/// Both networks are outputs of DP-SGD, so keeping them is post-processing; the critic
/// still never goes into a released model file (DESIGN.md §2), only into the run's own
/// checkpoint folder.
pub struct Checkpoint {
    pub epoch: u64,
    pub step: u64,
    /// The generator as released at this point; its statement gives the ε spent so far.
    pub generator: released::ReleasedModel,
    /// The critic network, for methods that train one (PEARL's critic is a weighting of
    /// its frequencies, and the one-shot methods have none).
    pub critic: Option<crate::nn::layers::Net>,
    /// The critic's output y reads as the probability "real" σ(`critic_scale`·y): 1 for a
    /// logit, 2 for PATE-GAN's student trained on tanh(y) ∈ [−1, 1] (σ(2y) = (1+tanh y)/2).
    pub critic_scale: f64,
    /// False for an extra snapshot between epochs ([`Snapshots`]): the job keeps epoch
    /// ends only.
    pub epoch_end: bool,
}

/// A synthetic-data method.
pub trait Synthesizer {
    /// The stable CLI name, e.g. `dp-gan`.
    fn id(&self) -> &'static str;
    /// The charges a run on `n_records` rows will make within `budget` (or why it cannot).
    /// The charges the run will make, calibrated so that `prior` (charges the job makes
    /// first, e.g. DP domain estimation) and the plan together fit `budget`. The returned
    /// charges are the method's own; [`Plan::epsilon`] is the figure of `prior` + them.
    fn plan(&self, n_records: usize, budget: Budget, prior: &[Charge]) -> Result<Plan>;
    /// Trains and returns the released model.
    fn train(&mut self, setup: TrainSetup<'_>) -> Result<released::ReleasedModel>;
    /// What a run on `n` rows of encoded width `width` will build and do, from the
    /// settings alone (no rows are read): the job's resource estimate reads it.
    fn footprint(&self, n: usize, width: usize) -> Footprint;
    /// [`Self::footprint`] when the table's column count is known too: a method whose work
    /// grows with the columns rather than the encoded width (AIM) reads it.
    fn footprint_for(&self, n: usize, columns: usize, width: usize) -> Footprint {
        let _ = columns;
        self.footprint(n, width)
    }
    /// Why post-GAN boosting cannot combine this method's checkpoints, if it cannot:
    /// asked before anything is planned or charged, so a refusal costs nothing.
    fn boosting_refused(&self) -> Option<String> {
        None
    }
    /// Why these settings need labelled images, if they do: asked before anything is
    /// planned or charged, so running them on a table is refused at no cost.
    fn needs_images(&self) -> Option<String> {
        None
    }
}

/// The size of a run, from its settings and the data's shape: what the memory and time
/// estimate ([`crate::job::resources`]) is computed from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Footprint {
    /// Trainable parameters of every network the run holds at once.
    pub params: u64,
    /// Work of the whole run in parameter-row passes: Σ over steps of batch × the
    /// parameters the step runs through (a forward and a backward pass each).
    pub passes: u64,
    /// The largest batch a step holds, in rows.
    pub batch: u64,
    /// Optimizer steps of every network (each has a fixed cost besides its arithmetic).
    pub steps: u64,
    /// The widest layer a step's batch passes through (activations are batch × this).
    pub widest: u64,
    /// Values held besides the encoded data and the networks (random features, a boosted
    /// sample set, snapshots).
    pub extra_values: u64,
    /// Random-feature evaluations (a row at one frequency: a cosine and a sine, and their
    /// derivatives in a training step), which cost the same whatever the row's width.
    pub feature_evals: u64,
    /// Multiply-adds of the random features' projections (row · frequency · inputs): one
    /// large matrix product, far faster per unit than a small network's passes.
    pub feature_macs: u64,
}

/// Random features of one row: evaluations and projection multiply-adds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FeatureCost {
    pub evals: u64,
    pub macs: u64,
}

impl Footprint {
    /// A method that embeds the rows once through random features (`per_row` each) and
    /// then trains a generator of `generator` = (parameters, per-row work, widest layer)
    /// against the embedding for `steps` steps of `batch` rows, each step embedding its
    /// batch forward and backward: DP-MERF and PEARL. `extra_values` are the frequency
    /// matrices and what else the run holds.
    pub fn embedding_method(
        n: usize,
        (params, work, widest): (u64, u64, u64),
        per_row: FeatureCost,
        (steps, optimizer_steps, batch): (u64, u64, usize),
        extra_values: u64,
    ) -> Self {
        let batch = batch as u64;
        // A generator step embeds its batch forward and backward: twice the release's work.
        let rows = (n as u64).saturating_add(Self::phase(steps, batch, 2));
        Footprint {
            params,
            passes: Self::phase(steps, batch, work),
            batch,
            steps: optimizer_steps,
            widest: widest.max(per_row.evals),
            extra_values,
            feature_evals: rows.saturating_mul(per_row.evals),
            feature_macs: rows.saturating_mul(per_row.macs),
        }
    }

    /// A training phase of `steps` steps of `batch` rows through `params` parameters.
    pub fn phase(steps: u64, batch: u64, params: u64) -> u64 {
        steps.saturating_mul(batch).saturating_mul(params)
    }
}

/// The widest hidden layer a width-derived size may reach. Hidden widths given as fractions
/// of the encoded width d (the papers' 2d/3, d/3, (d + c)/2) grow the networks as d²: a
/// 20,000-wide table would need billions of weights. Capped, the networks grow linearly
/// in d (input and output layers only). Adult (d ≈ 100) and MNIST (d = 794) stay below
/// the cap, so their presets are unchanged.
pub const MAX_DERIVED_HIDDEN: usize = 1024;

/// A hidden width derived from the encoded width: `fraction · width`, at least 1, at most
/// [`MAX_DERIVED_HIDDEN`].
pub fn derived_hidden(width: usize, fraction: f64) -> usize {
    ((width as f64 * fraction).round() as usize).clamp(1, MAX_DERIVED_HIDDEN)
}

/// Trainable parameters of a fully connected stack with biases over `dims`.
pub fn mlp_params(dims: &[usize]) -> u64 {
    dims.windows(2)
        .map(|w| (w[0] as u64) * (w[1] as u64) + w[1] as u64)
        .sum()
}

/// Output heads matching the encoding's spans: sigmoid for continuous columns;
/// Gumbel-sigmoid for binary and missing-indicator columns and Gumbel-softmax per
/// categorical span (plain sigmoid / softmax probabilities when sampling, which decoding
/// then draws from).
pub fn heads_for(encoding: &Encoding, tau: f64) -> Vec<HeadSpan> {
    encoding
        .spans
        .iter()
        .map(|s| HeadSpan {
            start: s.start,
            len: s.len,
            kind: match s.kind {
                // A point-mass block is a softmax over its points and "elsewhere".
                SpanKind::Categorical | SpanKind::PointMass => HeadKind::GumbelSoftmax { tau },
                SpanKind::Binary | SpanKind::MissingIndicator => HeadKind::GumbelSigmoid { tau },
                SpanKind::Continuous => HeadKind::Sigmoid,
            },
        })
        .collect()
}

/// The noise multiplier of the `i`-th subsampled-Gaussian charge of `plan` (0 for a
/// non-private plan, which has none).
pub(crate) fn planned_sigma(plan: &Plan, i: usize) -> Result<f64> {
    if plan.charges.is_empty() {
        return Ok(0.0);
    }
    plan.charges
        .iter()
        .filter_map(|c| match c.mechanism {
            Mechanism::SubsampledGaussian { sigma, .. } => Some(sigma),
            _ => None,
        })
        .nth(i)
        .ok_or_else(|| {
            MethodError::Plan(format!("the reserved plan has no DP-SGD phase {}", i + 1))
        })
}

/// The smallest noise multiplier σ for which `prior` followed by the charges `make(σ)`
/// fit `budget` by the tighter of RDP and PLD: σ, the charges `make(σ)`, and the figure of
/// the whole. `rdp_hint` is a starting point (the RDP calibration without the prior; the
/// search widens from it). `what` names the phase in an error.
pub(crate) fn calibrated(
    prior: &[Charge],
    make: impl Fn(f64) -> Vec<Charge>,
    budget: Budget,
    rdp_hint: f64,
    what: &str,
) -> Result<(f64, Vec<Charge>, crate::privacy::compose::Composed)> {
    use crate::privacy::{calibrate::sigma_for_plan, compose::compose, rdp::product_orders};
    let orders = product_orders();
    let whole = |s: f64| -> Vec<Charge> { prior.iter().copied().chain(make(s)).collect() };
    let sigma = sigma_for_plan(
        &whole,
        budget.epsilon,
        budget.delta,
        &orders,
        rdp_hint,
        1e-3,
    )
    .map_err(|e| MethodError::Plan(format!("{what}: {e}")))?;
    let c = compose(&whole(sigma), &orders, budget.delta);
    Ok((sigma, make(sigma), c))
}

/// The checks every plan starts with; `Some(plan)` for a non-private reference run.
pub(crate) fn plan_preamble(n: usize, private: bool, budget: Budget) -> Result<Option<Plan>> {
    if n < 2 {
        return Err(MethodError::Plan("the data has fewer than two rows".into()));
    }
    if !private {
        return Ok(Some(Plan {
            charges: vec![],
            epsilon: f64::INFINITY,
            accountant: "none",
            summary: "non-private reference (ε = ∞): no guarantee".into(),
        }));
    }
    budget.validate().map_err(MethodError::Usage)?;
    Ok(None)
}

/// One step's gradient of `loss` over private rows, for any network: with `private`, a
/// DP-SGD gradient (charged to the accountant first; `None`, touching no row, when the
/// budget is spent); otherwise the plain mean gradient over a uniform batch of
/// `dp.expected_batch()` rows (the non-private reference).
pub(crate) fn step_grads<F>(
    s: &mut TrainSetup<'_>,
    net: &crate::nn::layers::Net,
    dp: &crate::nn::dpsgd::DpSgdConfig,
    private: bool,
    loss: F,
) -> Result<Option<Vec<Tensor>>>
where
    F: Fn(&Tensor, &Tensor) -> candle_core::Result<Tensor>,
{
    use crate::nn::dpsgd::{gather_rows, private_gradient};
    use crate::nn::layers::loss_grad;
    let n = s.data.dims2()?.0;
    if private {
        let step = private_gradient(net, s.data, None, dp, s.noise, s.accountant, |y, x, _| {
            loss(y, x)
        })?;
        return Ok(step.map(|(grads, _)| grads));
    }
    let b = (dp.expected_batch().round() as usize).max(1);
    let idx: Vec<u32> = {
        use rand::Rng as _;
        (0..b)
            .map(|_| s.noise.rng().random_range(0..n as u32))
            .collect()
    };
    let x = gather_rows(s.data, &idx)?;
    let (y, caches) = net.forward_train(&x, None)?;
    let (_, dy) = loss_grad(&y, |y| loss(y, &x))?;
    let (_, signals) = net.backward(&caches, &dy)?;
    Ok(Some(crate::nn::layers::mean_grads(&signals, b)?))
}
