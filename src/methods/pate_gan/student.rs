//! The student and the generator: the rows the teachers label, the student's targets and
//! steps, the generator's step against the student, and the replay pool of labelled rows.

use candle_core::Tensor;
use rand::Rng;

use crate::methods::gan_phase::{latent, softplus};
use crate::methods::{Result, TrainSetup};
use crate::nn::dpsgd::{gather_rows, plain_step};
use crate::nn::layers::{Net, loss_grad, mean_grads};
use crate::nn::optim::{Adam, Optimizer};

use super::config::*;
use super::teachers::*;

/// The rows to be labelled next: `labels_per_step` rows, generated ones and a share of
/// public-domain anchors ([`anchor_rows`]); none of them is a private row.
pub(super) fn queries(
    generator: &Net,
    c: &PateGanConfig,
    s: &mut TrainSetup<'_>,
) -> Result<Tensor> {
    let m = c.labels_per_step;
    let anchors = ((m as f64 * c.anchor_share.clamp(0.0, 1.0)).round() as usize).min(m);
    let mut parts = Vec::new();
    if anchors < m {
        let z = latent(s.noise, m - anchors, c.latent_dim, s.device)?;
        parts.push(generator.forward(&z, Some(s.noise.rng()))?.detach());
    }
    if anchors > 0 {
        parts.push(anchor_rows(s.encoding, anchors, s.noise.rng(), s.device)?);
    }
    Ok(Tensor::cat(&parts, 0)?)
}

/// The student's targets [m, 1]: 0/1 labels (the noisy argmax) or noisy margins in
/// (ñ_real − ñ_fake)/k.
pub(super) fn targets(
    noisy: &[(f64, f64)],
    k: usize,
    target: StudentTarget,
    dev: &candle_core::Device,
) -> Result<Tensor> {
    let v: Vec<f32> = noisy
        .iter()
        .map(|&(f, r)| match target {
            StudentTarget::Label => f32::from(u8::from(r > f)),
            StudentTarget::Margin => ((r - f) / k as f64) as f32,
        })
        .collect();
    Ok(Tensor::from_vec(v, (noisy.len(), 1), dev)?)
}

/// The student's loss per row, from its logit `y` and the target `t`.
pub(super) fn student_loss(
    y: &Tensor,
    t: &Tensor,
    target: StudentTarget,
) -> candle_core::Result<Tensor> {
    match target {
        StudentTarget::Label => {
            let pos = (softplus(&y.neg()?)? * t)?;
            let neg = (softplus(y)? * t.affine(-1.0, 1.0)?)?;
            (pos + neg)?.sum(1)
        }
        StudentTarget::Margin => (y.tanh()? - t)?.sqr()?.sum(1),
    }
}

pub(super) fn student_step(
    student: &Net,
    opt: &mut Adam,
    x: &Tensor,
    t: &Tensor,
    target: StudentTarget,
) -> Result<()> {
    plain_step(student, opt, x, None, |y, _, _| student_loss(y, t, target))?;
    Ok(())
}

/// One generator step against the student (non-saturating: −log σ(S(G(z)))): the student
/// is a function of noisy votes only, so this is post-processing.
pub(super) fn generator_step(
    generator: &Net,
    student: &Net,
    opt: &mut Adam,
    c: &PateGanConfig,
    s: &mut TrainSetup<'_>,
) -> Result<f64> {
    let b = c.batch.max(1);
    let z = latent(s.noise, b, c.latent_dim, s.device)?;
    let (fake, g_caches) = generator.forward_train(&z, Some(s.noise.rng()))?;
    let (y, s_caches) = student.forward_train(&fake, None)?;
    let (l, dy) = loss_grad(&y, |y| softplus(&y.neg()?)?.sum(1))?;
    let (dfake, _) = student.backward(&s_caches, &dy)?;
    let (_, sig) = generator.backward(&g_caches, &dfake)?;
    opt.step(&generator.params(), &mean_grads(&sig, b)?)?;
    Ok(l / b as f64)
}

/// Labelled generated rows kept for replay (the most recent `capacity`).
pub(super) struct LabelPool {
    capacity: usize,
    x: Option<Tensor>,
    t: Option<Tensor>,
}

impl LabelPool {
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            x: None,
            t: None,
        }
    }

    pub(super) fn push(&mut self, x: &Tensor, t: &Tensor) -> Result<()> {
        if self.capacity == 0 {
            return Ok(());
        }
        let keep = |old: Option<&Tensor>, new: &Tensor| -> Result<Tensor> {
            let all = match old {
                Some(o) => Tensor::cat(&[o, new], 0)?,
                None => new.clone(),
            };
            let n = all.dims2()?.0;
            Ok(if n > self.capacity {
                all.narrow(0, n - self.capacity, self.capacity)?
            } else {
                all
            })
        };
        self.x = Some(keep(self.x.as_ref(), x)?);
        self.t = Some(keep(self.t.as_ref(), t)?);
        Ok(())
    }

    /// The new labelled rows, then `m` rows replayed from the pool (which holds the new
    /// ones too by then), as one student batch.
    pub(super) fn batch(
        &mut self,
        x: Tensor,
        t: Tensor,
        m: usize,
        rng: &mut impl Rng,
    ) -> Result<(Tensor, Tensor)> {
        self.push(&x, &t)?;
        Ok(match self.sample(m, rng)? {
            Some((px, pt)) => (Tensor::cat(&[&x, &px], 0)?, Tensor::cat(&[&t, &pt], 0)?),
            None => (x, t),
        })
    }

    /// `m` rows drawn from the pool with replacement (`None` when m = 0 or it is empty).
    pub(super) fn sample(&self, m: usize, rng: &mut impl Rng) -> Result<Option<(Tensor, Tensor)>> {
        let (Some(x), Some(t)) = (&self.x, &self.t) else {
            return Ok(None);
        };
        let n = x.dims2()?.0;
        if m == 0 || n == 0 {
            return Ok(None);
        }
        let idx: Vec<u32> = (0..m).map(|_| rng.random_range(0..n as u32)).collect();
        Ok(Some((gather_rows(x, &idx)?, gather_rows(t, &idx)?)))
    }
}

/// Running statistics of the noisy counts since the last report (post-processing only).
#[derive(Default)]
pub(super) struct VoteStats {
    margin: f64,
    real: f64,
    n: f64,
}

impl VoteStats {
    pub(super) fn add(&mut self, noisy: &[(f64, f64)], k: usize) {
        for &(f, r) in noisy {
            self.margin += (r - f) / k as f64;
            self.real += f64::from(u8::from(r > f));
            self.n += 1.0;
        }
    }
    /// Mean (ñ_real − ñ_fake) / k over the period's queries: −1 when the teachers call
    /// every generated row fake, +1 when they call every one real. A single query's margin
    /// can be mostly noise at small ε; the mean over thousands of queries is not.
    pub(super) fn margin(&self) -> f64 {
        self.margin / self.n.max(1.0)
    }
    pub(super) fn real_share(&self) -> f64 {
        self.real / self.n.max(1.0)
    }
}
