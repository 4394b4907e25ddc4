//! The teachers: k discriminators on k disjoint parts of the private rows, and their noisy
//! vote (the only thing that leaves them; see the module doc of [`super`] for the
//! partition's and the vote's privacy).

use candle_core::{D, Tensor, Var};
use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, StandardNormal};

use crate::methods::Result;
use crate::methods::gan_phase::softplus;
use crate::nn::dpsgd::gather_rows;
use crate::nn::optim::{Adam, Optimizer};

use super::config::*;

/// Assigns each of `rows` rows to one of `k` teachers by an independent uniform draw:
/// the teachers' index sets, disjoint and covering every row (see the module doc for why
/// independent draws, not an equal split).
pub fn partition(rows: usize, k: usize, rng: &mut StdRng) -> Vec<Vec<u32>> {
    let k = k.max(1);
    let mut parts = vec![Vec::with_capacity(rows / k + 1); k];
    if let Some(map) = crate::privacy::probe::rows(rows) {
        // The neighbour harness's coupling: each record keeps its teacher wherever it sits.
        let teacher = crate::privacy::probe::draws_by_record(&map, rng, |r| r.random_range(0..k));
        for (r, t) in teacher.into_iter().enumerate() {
            parts[t].push(r as u32);
        }
        return parts;
    }
    for r in 0..rows {
        parts[rng.random_range(0..k)].push(r as u32);
    }
    parts
}

/// The k teachers as one batched network: per teacher a logistic regression, or one
/// hidden layer (ReLU) then a logit. Teacher i only ever reads rows of `parts[i]`.
pub struct Teachers {
    parts: Vec<Vec<u32>>,
    rngs: Vec<StdRng>,
    /// [k, d, h] and [k, 1, h] (h = 1 and no second layer for logistic teachers).
    w1: Var,
    b1: Var,
    second: Option<(Var, Var)>,
    opt: Adam,
    batch: usize,
    soft_range: f64,
    /// Rows each teacher read in its last update (tests assert disjointness on them).
    pub last_read: Vec<Vec<u32>>,
}

impl Teachers {
    pub fn new(
        c: &PateGanConfig,
        width: usize,
        parts: Vec<Vec<u32>>,
        dev: &candle_core::Device,
        rng: &mut StdRng,
    ) -> Result<Self> {
        let k = parts.len();
        let h1 = if c.teacher_hidden == 0 {
            1
        } else {
            c.teacher_hidden
        };
        let mut normal = |shape: (usize, usize, usize), scale: f64| -> Result<Var> {
            let n = shape.0 * shape.1 * shape.2;
            let v: Vec<f32> = (0..n)
                .map(|_| {
                    let z: f32 = StandardNormal.sample(rng);
                    z * scale as f32
                })
                .collect();
            Ok(Var::from_tensor(&Tensor::from_vec(v, shape, dev)?)?)
        };
        let w1 = normal((k, width, h1), (1.0 / width.max(1) as f64).sqrt())?;
        let b1 = Var::from_tensor(&Tensor::zeros((k, 1, h1), candle_core::DType::F32, dev)?)?;
        let second = if c.teacher_hidden == 0 {
            None
        } else {
            let w2 = normal((k, h1, 1), (1.0 / h1 as f64).sqrt())?;
            let b2 = Var::from_tensor(&Tensor::zeros((k, 1, 1), candle_core::DType::F32, dev)?)?;
            Some((w2, b2))
        };
        let rngs = (0..k).map(|_| StdRng::from_rng(&mut *rng)).collect();
        let mut opt = Adam::adamw(c.teacher_lr, c.teacher_decay);
        opt.beta1 = 0.5;
        Ok(Self {
            parts,
            rngs,
            w1,
            b1,
            second,
            opt,
            batch: c.teacher_batch.max(1),
            soft_range: c.soft_range,
            last_read: Vec::new(),
        })
    }

    pub fn count(&self) -> usize {
        self.parts.len()
    }

    fn params(&self) -> Vec<Var> {
        let mut p = vec![self.w1.clone(), self.b1.clone()];
        if let Some((w2, b2)) = &self.second {
            p.extend([w2.clone(), b2.clone()]);
        }
        p
    }

    /// Logits [k, b] of every teacher on its own inputs `x` [k, b, d].
    fn logits_own(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let h = x
            .matmul(self.w1.as_tensor())?
            .broadcast_add(self.b1.as_tensor())?;
        self.head(h)
    }

    /// Logits [k, m] of every teacher on the same inputs `x` [m, d]: one matmul against
    /// the teachers' first layers side by side, never k copies of `x`.
    fn logits_shared(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let (k, d, h) = self.w1.as_tensor().dims3()?;
        let m = x.dims2()?.0;
        let w = self
            .w1
            .as_tensor()
            .transpose(0, 1)?
            .contiguous()?
            .reshape((d, k * h))?;
        let hid = x
            .matmul(&w)?
            .reshape((m, k, h))?
            .transpose(0, 1)?
            .contiguous()?
            .broadcast_add(self.b1.as_tensor())?;
        self.head(hid)
    }

    /// The second layer (or none) on first-layer outputs [k, ·, h] → logits [k, ·].
    fn head(&self, h: Tensor) -> candle_core::Result<Tensor> {
        let out = match &self.second {
            None => h,
            Some((w2, b2)) => h
                .relu()?
                .matmul(w2.as_tensor())?
                .broadcast_add(b2.as_tensor())?,
        };
        out.squeeze(D::Minus1)
    }

    /// One update of every teacher: its own rows (drawn with its own generator) as real,
    /// `fake` [m, d] as generated; the logistic loss, summed over teachers so that each
    /// teacher's gradient is its own.
    pub fn step(&mut self, data: &Tensor, fake: &Tensor) -> Result<()> {
        let k = self.count();
        let d = fake.dims2()?.1;
        let b = self.batch;
        let mut idx = Vec::with_capacity(k * b);
        let mut has_rows = Vec::with_capacity(k);
        self.last_read = vec![Vec::new(); k];
        for (i, (part, rng)) in self.parts.iter().zip(self.rngs.iter_mut()).enumerate() {
            has_rows.push(if part.is_empty() { 0f32 } else { 1f32 });
            for _ in 0..b {
                if part.is_empty() {
                    break;
                }
                let r = part[rng.random_range(0..part.len())];
                idx.push(r);
                self.last_read[i].push(r);
            }
        }
        let dev = data.device();
        // A teacher with no rows (possible, if unlikely, under independent draws) gets a
        // zero batch with zero weight: it never reads another teacher's rows.
        let gathered = gather_rows(data, &idx)?;
        let zero = Tensor::zeros((1, d), gathered.dtype(), dev)?;
        let pool = Tensor::cat(&[&gathered, &zero], 0)?;
        let mut pos = Vec::with_capacity(k * b);
        let mut next = 0u32;
        for part in &self.parts {
            for _ in 0..b {
                if part.is_empty() {
                    pos.push(idx.len() as u32);
                } else {
                    pos.push(next);
                    next += 1;
                }
            }
        }
        let real = pool
            .index_select(&Tensor::from_vec(pos, k * b, dev)?, 0)?
            .reshape((k, b, d))?;
        let mask = Tensor::from_vec(has_rows, (k, 1), dev)?;
        let lr = softplus(&self.logits_own(&real)?.neg()?)?
            .broadcast_mul(&mask)?
            .mean(1)?;
        let lf = softplus(&self.logits_shared(fake)?)?.mean(1)?;
        let loss = (lr + lf)?.sum_all()?;
        let grads = loss.backward()?;
        let params = self.params();
        let g: Vec<Tensor> = params
            .iter()
            .map(|p| {
                grads
                    .get(p.as_tensor())
                    .cloned()
                    .map_or_else(|| p.as_tensor().zeros_like(), Ok)
            })
            .collect::<candle_core::Result<_>>()?;
        self.opt.step(&params, &g)?;
        Ok(())
    }

    /// For each row of `x` [m, d], how many teachers call it real (logit > 0), or with
    /// `soft` the sum of their probabilities of "real".
    pub fn votes(&self, x: &Tensor, soft: bool) -> Result<Vec<f64>> {
        let logits = self.logits_shared(x)?.detach();
        let real = if soft && self.soft_range > 0.0 {
            logits
                .affine(0.5 / self.soft_range, 0.5)?
                .clamp(0f32, 1f32)?
        } else if soft {
            candle_nn::ops::sigmoid(&logits)?
        } else {
            logits.gt(0.0)?.to_dtype(candle_core::DType::F32)?
        };
        Ok(real
            .sum(0)?
            .to_vec1::<f32>()?
            .into_iter()
            .map(f64::from)
            .collect())
    }
}

/// `m` encoded rows drawn from the schema alone: a uniform category per categorical
/// span, a fair coin per binary or missing-indicator column, a uniform value per
/// continuous one.
pub fn anchor_rows(
    encoding: &crate::data::encode::Encoding,
    m: usize,
    rng: &mut impl Rng,
    dev: &candle_core::Device,
) -> Result<Tensor> {
    use crate::data::encode::SpanKind;
    let width = encoding.width;
    let mut v = vec![0f32; m * width];
    for row in v.chunks_mut(width.max(1)) {
        for sp in &encoding.spans {
            match sp.kind {
                SpanKind::Categorical | SpanKind::PointMass if sp.len > 0 => {
                    row[sp.start + rng.random_range(0..sp.len)] = 1.0;
                }
                SpanKind::Binary | SpanKind::MissingIndicator => {
                    row[sp.start] = f32::from(u8::from(rng.random_bool(0.5)));
                }
                SpanKind::Continuous => row[sp.start] = rng.random::<f32>(),
                SpanKind::Categorical | SpanKind::PointMass => {}
            }
        }
    }
    Ok(Tensor::from_vec(v, (m, width), dev)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::Synthesizer as _;
    use crate::methods::method::MethodConfig as _;
    use crate::methods::pate_gan::PateGan;
    use crate::privacy::Budget;
    use candle_core::Device;

    #[test]
    fn teachers_read_only_their_own_disjoint_rows() {
        let mut rng = StdRng::seed_from_u64(7);
        let parts = partition(1_000, 12, &mut rng);
        let mut all: Vec<u32> = parts.iter().flatten().copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..1_000).collect::<Vec<u32>>(), "a cover, no repeats");
        let dev = Device::Cpu;
        let data = Tensor::rand(0f32, 1f32, (1_000, 6), &dev).unwrap();
        let c = PateGanConfig::preset("tiny").unwrap();
        let mut t = Teachers::new(&c, 6, parts.clone(), &dev, &mut rng).unwrap();
        let fake = Tensor::rand(0f32, 1f32, (32, 6), &dev).unwrap();
        for _ in 0..5 {
            t.step(&data, &fake).unwrap();
            for (i, read) in t.last_read.iter().enumerate() {
                assert!(!read.is_empty());
                assert!(read.iter().all(|r| parts[i].contains(r)), "teacher {i}");
                for (j, other) in t.last_read.iter().enumerate() {
                    if i != j {
                        assert!(read.iter().all(|r| !other.contains(r)));
                    }
                }
            }
        }
        let v = t.votes(&fake, false).unwrap();
        assert_eq!(v.len(), 32);
        assert!(v.iter().all(|&n| n <= 12.0 && n.fract() == 0.0));
        let soft = t.votes(&fake, true).unwrap();
        assert!(soft.iter().all(|&p| (0.0..=12.0).contains(&p)));
    }

    #[test]
    fn teachers_learn_to_tell_real_from_generated() {
        // Real rows near 0.8, generated near 0.2: after training, most teachers agree.
        let dev = Device::Cpu;
        let mut rng = StdRng::seed_from_u64(3);
        let real = (Tensor::rand(0f32, 0.2f32, (2_000, 4), &dev).unwrap() + 0.7).unwrap();
        let fake = (Tensor::rand(0f32, 0.2f32, (64, 4), &dev).unwrap() + 0.1).unwrap();
        let mut c = PateGanConfig::preset("tiny").unwrap();
        c.teacher_lr = 0.05;
        for hidden in [0, 8] {
            c.teacher_hidden = hidden;
            let parts = partition(2_000, 20, &mut rng);
            let mut t = Teachers::new(&c, 4, parts, &dev, &mut rng).unwrap();
            for _ in 0..200 {
                t.step(&real, &fake).unwrap();
            }
            let on_fake = t.votes(&fake, false).unwrap();
            let on_real = t.votes(&real.narrow(0, 0, 64).unwrap(), false).unwrap();
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            assert!(mean(&on_fake) < 2.0, "hidden {hidden}: {on_fake:?}");
            assert!(mean(&on_real) > 18.0, "hidden {hidden}: {on_real:?}");
        }
    }

    #[test]
    fn the_plan_charges_one_query_per_label_within_the_budget() {
        let budget = Budget {
            epsilon: 1.0,
            delta: 1e-5,
        };
        for preset in ["quick", "paper"] {
            let c = PateGanConfig::preset(preset).unwrap();
            let p = PateGan { config: c.clone() }
                .plan(30_000, budget, &[])
                .unwrap();
            assert_eq!(p.charges.len(), 1);
            assert_eq!(p.charges[0].count, c.queries());
            assert!(p.epsilon <= 1.0 + 1e-9 && p.epsilon > 0.98, "{}", p.epsilon);
        }
    }
}
