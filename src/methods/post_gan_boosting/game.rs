//! The boosting game itself, free of any GAN: payoffs, the rounds of the game with the
//! private selection of a critic, the discriminator-rejection weights, and the critic's
//! scores of generated rows.

use candle_core::Tensor;
use rand::Rng;

use crate::data::encode::{Encoding, SpanKind};
use crate::methods::Result;
use crate::nn::layers::Net;
use crate::privacy::exponential::select;

/// How the distinguisher picks a critic each round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Selector {
    /// The exponential mechanism at ε₀ with payoff sensitivity 1/`records` (monotone).
    Exponential { epsilon0: f64, records: usize },
    /// The exact argmax: the non-private variant.
    BestResponse,
}

impl Selector {
    /// Each round's ε, where the rounds are private.
    pub fn epsilon0(self) -> Option<f64> {
        match self {
            Self::Exponential { epsilon0, .. } => Some(epsilon0),
            Self::BestResponse => None,
        }
    }
}

/// What the game returns.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// φ̄: the average of φ¹ … φᵀ over B.
    pub phi_bar: Vec<f64>,
    /// How often each critic was picked.
    pub picks: Vec<u64>,
    /// D̄(b): the mixture critic (the picked critics, averaged) on each row of B.
    pub d_bar: Vec<f64>,
    /// U(φ̄, D̄) without the private part: 1 − Σ_b φ̄(b)·D̄(b).
    pub final_payoff: f64,
}

/// The payoffs U(φ, D_j) = `real[j]` + 1 − Σ_b φ(b)·`fake[j][b]`.
pub fn payoffs(real: &[f64], fake: &[Vec<f64>], phi: &[f64]) -> Vec<f64> {
    real.iter()
        .zip(fake)
        .map(|(r, f)| r + 1.0 - f.iter().zip(phi).map(|(d, p)| d * p).sum::<f64>())
        .collect()
}

/// T rounds of the post-GAN game: `fake[j][b]` = D_j(b) ∈ [0, 1], `real[j]` = the mean of
/// D_j over the private rows (the only private input, read through `selector`).
pub fn play(
    fake: &[Vec<f64>],
    real: &[f64],
    rounds: u64,
    eta: f64,
    selector: Selector,
    rng: &mut (impl Rng + ?Sized),
) -> Outcome {
    let nb = fake.first().map_or(0, Vec::len);
    let mut log_w = vec![0f64; nb];
    let mut phi = vec![1.0 / nb.max(1) as f64; nb];
    let mut phi_bar = vec![0f64; nb];
    let mut picks = vec![0u64; fake.len()];
    for _ in 0..rounds {
        for (a, p) in phi_bar.iter_mut().zip(&phi) {
            *a += p;
        }
        let u = payoffs(real, fake, &phi);
        let j = match selector {
            Selector::Exponential { epsilon0, records } => {
                select(&u, epsilon0, 1.0 / records.max(1) as f64, true, rng)
            }
            Selector::BestResponse => u
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map_or(0, |(i, _)| i),
        };
        picks[j] += 1;
        for (l, d) in log_w.iter_mut().zip(&fake[j]) {
            *l += eta * d;
        }
        let m = log_w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = log_w.iter().map(|l| (l - m).exp()).sum();
        for (p, l) in phi.iter_mut().zip(&log_w) {
            *p = (l - m).exp() / z;
        }
    }
    let t = rounds.max(1) as f64;
    for a in &mut phi_bar {
        *a /= t;
    }
    let mut d_bar = vec![0f64; nb];
    for (f, c) in fake.iter().zip(&picks) {
        if *c > 0 {
            let w = *c as f64 / t;
            for (d, x) in d_bar.iter_mut().zip(f) {
                *d += w * x;
            }
        }
    }
    let final_payoff = 1.0 - phi_bar.iter().zip(&d_bar).map(|(p, d)| p * d).sum::<f64>();
    Outcome {
        phi_bar,
        picks,
        d_bar,
        final_payoff,
    }
}

/// Discriminator rejection sampling (Azadi et al. 2019) on the finite set B with proposal
/// φ̄: a row is accepted with probability σ(F(b) − γ), F(b) = d(b) − d* − log(1 −
/// exp(d(b) − d* − 10⁻⁶)), d = logit D̄, d* = max d, γ = the `percentile` of F under φ̄.
/// Drawing from φ̄ and keeping accepted rows is the same as drawing from φ̄·acceptance
/// (normalised), which is what this returns. Post-processing of D̄.
pub fn drs_weights(phi_bar: &[f64], d_bar: &[f64], percentile: f64) -> Vec<f64> {
    let logit = |d: f64| {
        let d = d.clamp(1e-7, 1.0 - 1e-7);
        (d / (1.0 - d)).ln()
    };
    let d: Vec<f64> = d_bar.iter().map(|x| logit(*x)).collect();
    let d_max = d.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let f: Vec<f64> = d
        .iter()
        .map(|x| {
            let e = x - d_max - 1e-6;
            x - d_max - (-e.exp()).ln_1p()
        })
        .collect();
    let gamma = weighted_percentile(&f, phi_bar, percentile);
    let w: Vec<f64> = f
        .iter()
        .zip(phi_bar)
        .map(|(fi, p)| p / (1.0 + (-(fi - gamma)).exp()))
        .collect();
    let z: f64 = w.iter().sum();
    if z > 0.0 && z.is_finite() {
        w.into_iter().map(|x| x / z).collect()
    } else {
        phi_bar.to_vec()
    }
}

/// The effective number of rows of a weighting, 1 / Σ w² (normalised): how many distinct
/// rows the mixture really draws on.
pub fn effective_rows(w: &[f64]) -> f64 {
    let z: f64 = w.iter().sum();
    if z <= 0.0 {
        return 0.0;
    }
    1.0 / w.iter().map(|x| (x / z) * (x / z)).sum::<f64>()
}

/// `w` tempered to at least `floor` effective rows: w^β normalised, with the largest β in
/// [0, 1] that reaches the floor (β = 1, `w` itself, when it already does; β = 0 is
/// uniform over the rows with weight).
pub fn tempered(w: &[f64], floor: f64) -> Vec<f64> {
    let power = |b: f64| -> Vec<f64> {
        let v: Vec<f64> = w
            .iter()
            .map(|x| if *x > 0.0 { x.powf(b) } else { 0.0 })
            .collect();
        let z: f64 = v.iter().sum();
        v.into_iter().map(|x| x / z).collect()
    };
    if effective_rows(w) >= floor {
        return power(1.0);
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..40 {
        let mid = 0.5 * (lo + hi);
        if effective_rows(&power(mid)) >= floor {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    power(lo)
}

/// The `q`-quantile of `x` under the weights `w`.
pub(super) fn weighted_percentile(x: &[f64], w: &[f64], q: f64) -> f64 {
    let mut idx: Vec<usize> = (0..x.len()).collect();
    idx.sort_by(|a, b| x[*a].total_cmp(&x[*b]));
    let total: f64 = w.iter().sum();
    let mut acc = 0.0;
    for i in &idx {
        acc += w[*i];
        if acc >= q * total {
            return x[*i];
        }
    }
    idx.last().map_or(0.0, |i| x[*i])
}

/// Generator output made concrete, as a record is: a category drawn from each categorical
/// span's probabilities (one-hot), each binary or missing indicator drawn as 0/1,
/// continuous values kept (clamped to [0, 1]). Decoding such a row reproduces it.
pub fn concrete(enc: &Encoding, raw: &[f32], rng: &mut (impl Rng + ?Sized)) -> Vec<f32> {
    let w = enc.width;
    let mut out = raw.to_vec();
    for row in out.chunks_mut(w.max(1)) {
        for sp in &enc.spans {
            let v = &mut row[sp.start..sp.start + sp.len];
            match sp.kind {
                SpanKind::Continuous => {
                    for x in v.iter_mut() {
                        *x = if x.is_finite() {
                            x.clamp(0.0, 1.0)
                        } else {
                            0.5
                        };
                    }
                }
                SpanKind::Binary | SpanKind::MissingIndicator => {
                    for x in v.iter_mut() {
                        let p = if x.is_finite() {
                            x.clamp(0.0, 1.0)
                        } else {
                            0.5
                        };
                        *x = f32::from(rng.random::<f32>() < p);
                    }
                }
                SpanKind::Categorical | SpanKind::PointMass if v.is_empty() => {}
                SpanKind::Categorical | SpanKind::PointMass => {
                    let total: f32 = v.iter().filter(|x| x.is_finite()).map(|x| x.max(0.0)).sum();
                    let pick = if total > 0.0 {
                        let mut u = rng.random::<f32>() * total;
                        let mut k = v.len() - 1;
                        for (i, x) in v.iter().enumerate() {
                            let p = if x.is_finite() { x.max(0.0) } else { 0.0 };
                            if u < p {
                                k = i;
                                break;
                            }
                            u -= p;
                        }
                        k
                    } else {
                        rng.random_range(0..v.len())
                    };
                    for (i, x) in v.iter_mut().enumerate() {
                        *x = f32::from(i == pick);
                    }
                }
            }
        }
    }
    out
}

/// σ(`scale`·critic(x)) for every row of `rows`, in chunks; a non-finite score reads 1/2.
pub fn scores(critic: &Net, scale: f64, rows: &Tensor) -> Result<Vec<f64>> {
    let n = rows.dims2()?.0;
    let mut out = Vec::with_capacity(n);
    let chunk = 8192;
    let mut at = 0;
    while at < n {
        let m = chunk.min(n - at);
        let y = critic.forward(&rows.narrow(0, at, m)?, None)?;
        let y = y
            .flatten_all()?
            .to_dtype(candle_core::DType::F64)?
            .to_vec1::<f64>()?;
        out.extend(y.into_iter().map(|v| {
            let p = 1.0 / (1.0 + (-scale * v).exp());
            if p.is_finite() { p } else { 0.5 }
        }));
        at += m;
    }
    Ok(out)
}

/// The private part of every payoff: Σ over **all** private rows of σ(s·D(x)), divided by
/// the public record count N (sensitivity 1/N under adding or removing a record).
pub fn real_mean(critic: &Net, scale: f64, data: &Tensor, records: usize) -> Result<f64> {
    Ok(scores(critic, scale, data)?.iter().sum::<f64>() / records.max(1) as f64)
}
