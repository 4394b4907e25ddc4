//! `dpsynth bench dpsgd`: the cost of privacy per training step.
//!
//! For each network, the private step (Poisson batch, per-example norms, clipping, noise)
//! and the non-private step (a batch of the expected size, summed gradient) run the same
//! forward/backward code and the same optimizer; the median of many timed steps after a
//! warm-up is reported. The slow reference (one autograd pass per example) is timed for
//! the ADULT critic to show what the ghost-norm path saves.

use std::time::Instant;

use candle_core::{Device, Tensor};
use rand::{Rng, SeedableRng};

use super::Result;
use super::dpsgd::{DpSgdConfig, NoiseSource, gather_rows, private_gradient};
use super::layers::{Act, Block, HeadKind, HeadSpan, Net, bce_rows, loss_grad, mlp};
use super::optim::{Adam, Optimizer, RmsProp};
use super::reference;

/// One benchmarked network.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NetworkTiming {
    pub name: String,
    pub batch: usize,
    pub params: usize,
    pub private_step_s: f64,
    pub nonprivate_step_s: f64,
    pub ratio: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference_step_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup_vs_reference: Option<f64>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

type Loss = fn(&Tensor, &Tensor, Option<&Tensor>) -> candle_core::Result<Tensor>;

fn critic_loss(y: &Tensor, _x: &Tensor, _t: Option<&Tensor>) -> candle_core::Result<Tensor> {
    y.neg()?.sum(1)
}

fn ae_loss(y: &Tensor, x: &Tensor, _t: Option<&Tensor>) -> candle_core::Result<Tensor> {
    bce_rows(y, x)
}

struct Case {
    name: &'static str,
    net: Net,
    n: usize,
    batch: usize,
    loss: Loss,
    reference: bool,
    rmsprop: bool,
}

fn time_case(c: &Case, steps: usize, warmup: usize, dev: &Device) -> Result<NetworkTiming> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let d = match &c.net.blocks[0] {
        Block::Linear(l) => l.in_dim(),
        Block::Conv(c) => c.shape.in_dim(),
        _ => 1,
    };
    let v: Vec<f32> = (0..c.n * d).map(|_| rng.random::<f32>()).collect();
    let data = Tensor::from_vec(v, (c.n, d), dev)?;
    let cfg = DpSgdConfig {
        clip: 1.0,
        noise_multiplier: 1.1,
        sample_rate: c.batch as f64 / c.n as f64,
        n_records: c.n,
    };
    let mut noise = NoiseSource::from_seed(2);
    // The product's step charges an accountant; the benchmark pays that too, against a
    // budget it cannot exhaust.
    let mut accountant = crate::privacy::Accountant::new(crate::privacy::Budget {
        epsilon: f64::MAX,
        delta: 0.5,
    });
    let (mut opt, mut plain_opt) = (optimizer(c.rmsprop), optimizer(c.rmsprop));
    let loss = c.loss;
    let params = c.net.params();
    // Private and plain steps alternate, so both see the same machine conditions (a
    // shared VM's neighbours, the allocator's state, the CPU's clock).
    let mut private = Vec::new();
    let mut plain = Vec::new();
    // A GPU runs its queue after the call returns: each timed part ends by waiting for the
    // device, or a step's time would land in whichever later call first waits.
    for i in 0..steps + warmup {
        dev.synchronize()?;
        let t0 = Instant::now();
        let Some((g, _)) =
            private_gradient(&c.net, &data, None, &cfg, &mut noise, &mut accountant, loss)?
        else {
            return Err(super::NnError::Invalid(
                "the benchmark's budget ran out".into(),
            ));
        };
        opt.step(&params, &g)?;
        dev.synchronize()?;
        let t1 = Instant::now();
        let idx: Vec<u32> = (0..c.batch)
            .map(|_| rng.random_range(0..c.n as u32))
            .collect();
        let x = gather_rows(&data, &idx)?;
        let (y, caches) = c.net.forward_train(&x, None)?;
        let (_, dy) = loss_grad(&y, |y| loss(y, &x, None))?;
        let (_, signals) = c.net.backward(&caches, &dy)?;
        let g = crate::nn::layers::mean_grads(&signals, c.batch)?;
        plain_opt.step(&params, &g)?;
        dev.synchronize()?;
        if i >= warmup {
            private.push((t1 - t0).as_secs_f64());
            plain.push(t1.elapsed().as_secs_f64());
        }
    }
    let (p, np) = (median(private), median(plain));
    let (reference_step_s, speedup) = if c.reference {
        let m = time_reference(c, &data, &cfg, &mut noise, opt.as_mut(), dev)?;
        (Some(m), Some(m / p))
    } else {
        (None, None)
    };
    Ok(NetworkTiming {
        name: c.name.to_string(),
        batch: c.batch,
        params: c.net.param_count(),
        private_step_s: p,
        nonprivate_step_s: np,
        ratio: p / np,
        reference_step_s,
        speedup_vs_reference: speedup,
    })
}

/// The optimizer a case trains with, at the benchmark's rate.
fn optimizer(rmsprop: bool) -> Box<dyn Optimizer> {
    if rmsprop {
        Box::new(RmsProp::new(0.005))
    } else {
        Box::new(Adam::new(0.005))
    }
}

/// The median of five steps of the obviously-correct reference DP-SGD (a loop of
/// one-example gradients), for the speedup.
fn time_reference(
    c: &Case,
    data: &Tensor,
    cfg: &DpSgdConfig,
    noise: &mut NoiseSource,
    opt: &mut dyn Optimizer,
    dev: &Device,
) -> Result<f64> {
    let params = c.net.params();
    let mut r = Vec::new();
    for _ in 0..5 {
        let t0 = Instant::now();
        let idx = noise.poisson_batch(c.n, cfg.sample_rate);
        let x = gather_rows(data, &idx)?;
        let (_, sums) = reference::clipped_sum(&c.net, &x, cfg.clip, c.loss)?;
        let mut g = Vec::with_capacity(sums.len());
        for s in sums {
            let z = noise.gaussian_like(&s, cfg.noise_multiplier * cfg.clip)?;
            g.push(((s + z)? / cfg.expected_batch())?);
        }
        opt.step(&params, &g)?;
        dev.synchronize()?;
        r.push(t0.elapsed().as_secs_f64());
    }
    Ok(median(r))
}

/// Runs the benchmarked networks (three dense, one convolutional); `steps` timed steps each after a warm-up.
pub fn run(steps: usize, dev: &Device) -> Result<Vec<NetworkTiming>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let lrelu = Act::LeakyRelu(0.2);
    let critic = Net::new(mlp(&[106, 70, 35, 1], lrelu, dev, &mut rng)?, dev);
    let mut ae = mlp(&[106, 60, 15], lrelu, dev, &mut rng)?;
    ae.push(Block::Act(lrelu));
    ae.extend(mlp(&[15, 60, 106], lrelu, dev, &mut rng)?);
    ae.push(Block::Head(vec![HeadSpan {
        start: 0,
        len: 106,
        kind: HeadKind::Sigmoid,
    }]));
    let ae = Net::new(ae, dev);
    let mnist = Net::new(mlp(&[784, 256, 1], lrelu, dev, &mut rng)?, dev);
    let conv_critic = Net::new(
        super::dcgan::dcgan_critic((1, 28), &[32, 64], 1, dev, &mut rng)?,
        dev,
    );
    let cases = [
        Case {
            name: "adult_critic_106-70-35-1_b128",
            net: critic,
            n: 32_561,
            batch: 128,
            loss: critic_loss,
            reference: true,
            rmsprop: true,
        },
        Case {
            name: "adult_autoencoder_106-60-15-60-106_b64",
            net: ae,
            n: 32_561,
            batch: 64,
            loss: ae_loss,
            reference: false,
            rmsprop: false,
        },
        Case {
            name: "mnist_critic_784-256-1_b256",
            net: mnist,
            n: 60_000,
            batch: 256,
            loss: critic_loss,
            reference: false,
            rmsprop: true,
        },
        Case {
            name: "mnist_dcgan_critic_c32k4s2-c64k4s2-1_b256",
            net: conv_critic,
            n: 60_000,
            batch: 256,
            loss: critic_loss,
            reference: false,
            rmsprop: true,
        },
    ];
    cases
        .iter()
        .map(|c| time_case(c, steps, steps / 5 + 5, dev))
        .collect()
}
