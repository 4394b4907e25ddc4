//! Logistic regression and a one-hidden-layer MLP on candle (CPU), the same library that
//! trains the synthesizers, used here without privacy. No classic-ML crate offers an MLP,
//! and smartcore's multinomial logistic regression is slow on many classes.

use candle_core::{D, DType, Device, Tensor};
use candle_nn::{Module, Optimizer, VarBuilder, VarMap};

use super::xy::Xy;

pub(crate) fn err(e: candle_core::Error) -> String {
    e.to_string()
}

/// Softmax regression (`hidden` = 0) or a ReLU MLP with `hidden` units, trained with AdamW
/// (weight decay 1e-4 ≈ scikit-learn's mild L2); returns test probabilities, `k` per row.
pub fn fit_proba(
    train: &Xy,
    test_x: &[f64],
    k: usize,
    hidden: usize,
    seed: u64,
) -> Result<Vec<f64>, String> {
    fit(train, k, hidden, seed)?.proba(test_x)
}

/// A trained network.
pub struct Net {
    layers: Vec<candle_nn::Linear>,
    p: usize,
}

impl Net {
    fn forward(&self, t: &Tensor, upto: usize) -> candle_core::Result<Tensor> {
        let mut h = t.clone();
        for (i, l) in self.layers.iter().enumerate().take(upto) {
            h = l.forward(&h)?;
            if i + 1 < self.layers.len() {
                h = h.relu()?;
            }
        }
        Ok(h)
    }

    fn input(&self, x: &[f64]) -> Result<Tensor, String> {
        Tensor::from_iter(x.iter().map(|&v| v as f32), &Device::Cpu)
            .and_then(|t| t.reshape((x.len() / self.p, self.p)))
            .map_err(err)
    }

    /// Class probabilities, `k` per row.
    pub fn proba(&self, x: &[f64]) -> Result<Vec<f64>, String> {
        let probs = self
            .forward(&self.input(x)?, self.layers.len())
            .and_then(|l| candle_nn::ops::softmax(&l, D::Minus1))
            .and_then(|t| t.flatten_all())
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(err)?;
        Ok(probs.into_iter().map(f64::from).collect())
    }

    /// The hidden layer's activations (an MLP's features), row-major.
    pub fn hidden(&self, x: &[f64]) -> Result<Vec<f64>, String> {
        let h = self
            .forward(&self.input(x)?, 1)
            .and_then(|t| t.relu())
            .and_then(|t| t.flatten_all())
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(err)?;
        Ok(h.into_iter().map(f64::from).collect())
    }
}

/// Trains the network (see [`fit_proba`]).
pub fn fit(train: &Xy, k: usize, hidden: usize, seed: u64) -> Result<Net, String> {
    let dev = Device::Cpu;
    let p = train.p;
    let x = Tensor::from_iter(train.x.iter().map(|&v| v as f32), &dev)
        .and_then(|t| t.reshape((train.n, p)))
        .map_err(err)?;
    let y = Tensor::from_iter(train.y.iter().copied(), &dev).map_err(err)?;
    let vm = VarMap::new();
    let vb = VarBuilder::from_varmap(&vm, DType::F32, &dev);
    let layers: Vec<candle_nn::Linear> = if hidden == 0 {
        vec![candle_nn::linear(p, k, vb.pp("out")).map_err(err)?]
    } else {
        vec![
            candle_nn::linear(p, hidden, vb.pp("h")).map_err(err)?,
            candle_nn::linear(hidden, k, vb.pp("out")).map_err(err)?,
        ]
    };
    reseed(&vm, seed)?;
    let net = Net { layers, p };
    let forward = |t: &Tensor| net.forward(t, net.layers.len());
    let lr = if hidden == 0 { 0.05 } else { 0.002 };
    let mut opt = candle_nn::AdamW::new(
        vm.all_vars(),
        candle_nn::ParamsAdamW {
            lr,
            weight_decay: 1e-4,
            ..Default::default()
        },
    )
    .map_err(err)?;
    let batch = if hidden == 0 { train.n } else { 256 };
    let steps = if hidden == 0 {
        300
    } else {
        (train.n / batch * 15).clamp(500, 3000)
    };
    let order = super::xy::shuffled(train.n, seed);
    let mut at = 0;
    for _ in 0..steps {
        let (xb, yb) = if batch >= train.n {
            (x.clone(), y.clone())
        } else {
            if at + batch > train.n {
                at = 0;
            }
            let idx: Vec<u32> = order[at..at + batch].iter().map(|&i| i as u32).collect();
            at += batch;
            let it = Tensor::new(idx.as_slice(), &dev).map_err(err)?;
            (
                x.index_select(&it, 0).map_err(err)?,
                y.index_select(&it, 0).map_err(err)?,
            )
        };
        let logits = forward(&xb).map_err(err)?;
        let loss = candle_nn::loss::cross_entropy(&logits, &yb).map_err(err)?;
        opt.backward_step(&loss).map_err(err)?;
    }
    Ok(net)
}

/// Re-initialises every weight from our own seeded generator: U(±1/√fan_in), biases 0.
/// candle's CPU seed is global, so models trained in parallel would otherwise draw
/// interleaved (and so irreproducible) initial weights.
pub(crate) fn reseed(vm: &VarMap, seed: u64) -> Result<(), String> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5EED);
    let data = vm
        .data()
        .lock()
        .map_err(|_| "weights lock poisoned".to_string())?;
    let mut names: Vec<&String> = data.keys().collect();
    names.sort();
    for name in names {
        let var = &data[name];
        let dims = var.dims().to_vec();
        // [out, in] for a linear layer, [out, in, k, k] for a convolution.
        let fan_in = dims.iter().skip(1).product::<usize>().max(1) as f64;
        let bound = if name.ends_with("bias") {
            0.0
        } else {
            1.0 / fan_in.sqrt()
        };
        let n: usize = dims.iter().product();
        let vals: Vec<f32> = (0..n)
            .map(|_| (rng.random_range(-1.0..1.0) * bound) as f32)
            .collect();
        let t = Tensor::from_vec(vals, dims.as_slice(), &Device::Cpu).map_err(err)?;
        var.set(&t).map_err(err)?;
    }
    Ok(())
}
