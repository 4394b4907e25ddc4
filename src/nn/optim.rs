//! Optimizers with PyTorch's update rules (the papers' settings are PyTorch's): SGD with
//! momentum, Adam (L2 decay) / AdamW (decoupled decay), RMSProp. They only ever see the
//! already-noised gradient, so their choice does not affect privacy (post-processing).
//!
//! Gradients and state are detached first: candle records the operation graph of any
//! tensor derived from a `Var`, and optimizer state built from tracked gradients would
//! chain every step's buffers to the previous step's — memory growing without bound.

use candle_core::{Tensor, Var};

use super::{NnError, Result};

/// Updates parameters from gradients given in the same order.
pub trait Optimizer: Send {
    fn step(&mut self, params: &[Var], grads: &[Tensor]) -> Result<()>;
    fn learning_rate(&self) -> f64;
    fn set_learning_rate(&mut self, lr: f64);
}

fn check(params: &[Var], grads: &[Tensor]) -> Result<()> {
    if params.len() != grads.len() {
        return Err(NnError::Invalid(format!(
            "{} parameters but {} gradients",
            params.len(),
            grads.len()
        )));
    }
    Ok(())
}

/// SGD with optional momentum: v ← μv + g; θ ← θ − lr·v.
#[derive(Debug, Clone)]
pub struct Sgd {
    pub lr: f64,
    pub momentum: f64,
    velocity: Vec<Option<Tensor>>,
}

impl Sgd {
    pub fn new(lr: f64, momentum: f64) -> Self {
        Self {
            lr,
            momentum,
            velocity: Vec::new(),
        }
    }
}

impl Optimizer for Sgd {
    fn step(&mut self, params: &[Var], grads: &[Tensor]) -> Result<()> {
        check(params, grads)?;
        self.velocity.resize(params.len(), None);
        for ((p, g), v) in params.iter().zip(grads).zip(self.velocity.iter_mut()) {
            let g = &g.detach();
            let d = if self.momentum > 0.0 {
                let nv = match v.take() {
                    None => g.clone(),
                    Some(old) => ((old * self.momentum)? + g)?,
                };
                *v = Some(nv.clone());
                nv
            } else {
                g.clone()
            };
            p.set(&(p.as_tensor().detach() - (d * self.lr)?)?)?;
        }
        Ok(())
    }

    fn learning_rate(&self) -> f64 {
        self.lr
    }

    fn set_learning_rate(&mut self, lr: f64) {
        self.lr = lr;
    }
}

/// Adam with bias correction. `weight_decay` is L2 (added to the gradient) unless
/// `decoupled`, which gives AdamW (θ ← θ(1 − lr·λ) before the Adam update).
#[derive(Debug, Clone)]
pub struct Adam {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
    pub decoupled: bool,
    t: i32,
    m: Vec<Option<Tensor>>,
    v: Vec<Option<Tensor>>,
}

impl Adam {
    /// Adam with PyTorch's defaults β = (0.9, 0.999), ε = 1e-8, no decay.
    pub fn new(lr: f64) -> Self {
        Self {
            lr,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
            decoupled: false,
            t: 0,
            m: Vec::new(),
            v: Vec::new(),
        }
    }

    /// AdamW with decoupled weight decay `wd`.
    pub fn adamw(lr: f64, wd: f64) -> Self {
        Self {
            weight_decay: wd,
            decoupled: true,
            ..Self::new(lr)
        }
    }
}

impl Optimizer for Adam {
    fn step(&mut self, params: &[Var], grads: &[Tensor]) -> Result<()> {
        check(params, grads)?;
        self.t += 1;
        self.m.resize(params.len(), None);
        self.v.resize(params.len(), None);
        let bc1 = 1.0 - self.beta1.powi(self.t);
        let bc2 = 1.0 - self.beta2.powi(self.t);
        for (i, (p, g)) in params.iter().zip(grads).enumerate() {
            let mut theta = p.as_tensor().detach();
            let mut g = g.detach();
            if self.weight_decay > 0.0 {
                if self.decoupled {
                    theta = (theta * (1.0 - self.lr * self.weight_decay))?;
                } else {
                    g = (g + (p.as_tensor().detach() * self.weight_decay)?)?;
                }
            }
            let m = match self.m[i].take() {
                None => (&g * (1.0 - self.beta1))?,
                Some(m) => ((m * self.beta1)? + (&g * (1.0 - self.beta1))?)?,
            };
            let v = match self.v[i].take() {
                None => (g.sqr()? * (1.0 - self.beta2))?,
                Some(v) => ((v * self.beta2)? + (g.sqr()? * (1.0 - self.beta2))?)?,
            };
            let mhat = (&m / bc1)?;
            let vhat = (&v / bc2)?;
            let upd = (mhat / (vhat.sqrt()? + self.eps)?)?;
            p.set(&(theta - (upd * self.lr)?)?)?;
            self.m[i] = Some(m);
            self.v[i] = Some(v);
        }
        Ok(())
    }

    fn learning_rate(&self) -> f64 {
        self.lr
    }

    fn set_learning_rate(&mut self, lr: f64) {
        self.lr = lr;
    }
}

/// RMSProp: s ← αs + (1 − α)g²; θ ← θ − lr·g/(√s + ε). PyTorch defaults α = 0.99, ε = 1e-8.
#[derive(Debug, Clone)]
pub struct RmsProp {
    pub lr: f64,
    pub alpha: f64,
    pub eps: f64,
    sq: Vec<Option<Tensor>>,
}

impl RmsProp {
    pub fn new(lr: f64) -> Self {
        Self {
            lr,
            alpha: 0.99,
            eps: 1e-8,
            sq: Vec::new(),
        }
    }
}

impl Optimizer for RmsProp {
    fn step(&mut self, params: &[Var], grads: &[Tensor]) -> Result<()> {
        check(params, grads)?;
        self.sq.resize(params.len(), None);
        for (i, (p, g)) in params.iter().zip(grads).enumerate() {
            let g = &g.detach();
            let s = match self.sq[i].take() {
                None => (g.sqr()? * (1.0 - self.alpha))?,
                Some(s) => ((s * self.alpha)? + (g.sqr()? * (1.0 - self.alpha))?)?,
            };
            let upd = (g / (s.sqrt()? + self.eps)?)?;
            p.set(&(p.as_tensor().detach() - (upd * self.lr)?)?)?;
            self.sq[i] = Some(s);
        }
        Ok(())
    }

    fn learning_rate(&self) -> f64 {
        self.lr
    }

    fn set_learning_rate(&mut self, lr: f64) {
        self.lr = lr;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    fn var(v: &[f32]) -> Var {
        Var::from_tensor(&Tensor::from_slice(v, v.len(), &Device::Cpu).unwrap()).unwrap()
    }

    fn vals(v: &Var) -> Vec<f32> {
        v.as_tensor().to_vec1::<f32>().unwrap()
    }

    fn t(v: &[f32]) -> Tensor {
        Tensor::from_slice(v, v.len(), &Device::Cpu).unwrap()
    }

    fn close(a: &[f32], b: &[f64]) {
        for (x, y) in a.iter().zip(b) {
            assert!((f64::from(*x) - y).abs() < 1e-6, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn sgd_momentum_by_hand() {
        let p = var(&[1.0, -2.0]);
        let mut o = Sgd::new(0.1, 0.9);
        o.step(std::slice::from_ref(&p), &[t(&[0.5, 1.0])]).unwrap();
        close(&vals(&p), &[0.95, -2.1]); // v = g
        o.step(std::slice::from_ref(&p), &[t(&[0.5, 1.0])]).unwrap();
        // v = 0.9·g + g = 1.9 g
        close(&vals(&p), &[0.95 - 0.1 * 0.95, -2.1 - 0.1 * 1.9]);
    }

    #[test]
    fn adam_by_hand() {
        let p = var(&[1.0]);
        let mut o = Adam::new(0.01);
        let g = 0.3f64;
        o.step(std::slice::from_ref(&p), &[t(&[g as f32])]).unwrap();
        // First step: m̂ = g, v̂ = g², update = lr·g/(|g| + ε) ≈ lr.
        close(&vals(&p), &[1.0 - 0.01 * g / (g.abs() + 1e-8)]);
        let g2 = -0.1f64;
        o.step(std::slice::from_ref(&p), &[t(&[g2 as f32])])
            .unwrap();
        let m = 0.9 * (0.1 * g) + 0.1 * g2;
        let v = 0.999 * (0.001 * g * g) + 0.001 * g2 * g2;
        let mhat = m / (1.0 - 0.81);
        let vhat = v / (1.0 - 0.999f64.powi(2));
        let expect = 1.0 - 0.01 * g / (g.abs() + 1e-8) - 0.01 * mhat / (vhat.sqrt() + 1e-8);
        close(&vals(&p), &[expect]);
    }

    #[test]
    fn adamw_decays_the_weights_first() {
        let p = var(&[2.0]);
        let mut o = Adam::adamw(0.1, 0.5);
        o.step(std::slice::from_ref(&p), &[t(&[0.0])]).unwrap();
        // Zero gradient: only the decay acts. θ = 2·(1 − 0.05) = 1.9.
        close(&vals(&p), &[1.9]);
    }

    #[test]
    fn rmsprop_by_hand() {
        let p = var(&[1.0]);
        let mut o = RmsProp::new(0.005);
        o.step(std::slice::from_ref(&p), &[t(&[2.0])]).unwrap();
        let s = 0.01 * 4.0f64;
        let e1 = 1.0 - 0.005 * 2.0 / (s.sqrt() + 1e-8);
        close(&vals(&p), &[e1]);
        o.step(std::slice::from_ref(&p), &[t(&[-1.0])]).unwrap();
        let s2 = 0.99 * s + 0.01;
        close(&vals(&p), &[e1 + 0.005 / (s2.sqrt() + 1e-8)]);
    }
}
