//! A run's accountant: its budget, what it has charged, and what is left.
//!
//! The history is kept run-length encoded (`Charge { mechanism, count }`); ε is derived
//! from the summed RDP curve, never stored. Charging the same mechanism again (every
//! DP-SGD step) reuses the cached curve, so a charge costs one vector add.

use serde::{Deserialize, Serialize};

use super::convert::{EpsilonAt, to_delta, to_epsilon};
use super::mechanism::Mechanism;
use super::rdp::product_orders;

/// A privacy budget: (ε, δ).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    pub epsilon: f64,
    pub delta: f64,
}

impl Budget {
    pub fn validate(&self) -> Result<(), String> {
        if !(self.epsilon > 0.0) || self.epsilon.is_nan() {
            return Err(format!("ε must be positive, got {}", self.epsilon));
        }
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return Err(format!("δ must be in (0, 1), got {}", self.delta));
        }
        Ok(())
    }
}

/// `count` uses of a mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Charge {
    pub mechanism: Mechanism,
    pub count: u64,
}

/// The summed RDP curve of `charges` on `orders` (what a ledger stores for a plan or a
/// history).
pub fn charges_curve(charges: &[Charge], orders: &[f64]) -> Vec<f64> {
    let mut sum = vec![0.0; orders.len()];
    for ch in charges {
        for (s, r) in sum.iter_mut().zip(ch.mechanism.rdp(orders)) {
            *s += r * ch.count as f64;
        }
    }
    sum
}

/// Why a charge was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AccountantError {
    #[error(
        "this charge would spend ε={would:.4} of the budget ε={budget} at δ={delta}; it was refused"
    )]
    OverBudget { would: f64, budget: f64, delta: f64 },
    #[error("invalid mechanism: {0}")]
    Invalid(String),
}

/// Tracks one run's spending against its budget.
#[derive(Debug, Clone)]
pub struct Accountant {
    budget: Budget,
    orders: Vec<f64>,
    history: Vec<Charge>,
    total: Vec<f64>,
    cache: Option<(Mechanism, Vec<f64>)>,
}

impl Accountant {
    /// A fresh accountant on dpsynth's order grid.
    pub fn new(budget: Budget) -> Self {
        Self::with_orders(budget, product_orders())
    }

    pub fn with_orders(budget: Budget, orders: Vec<f64>) -> Self {
        let n = orders.len();
        Self {
            budget,
            orders,
            history: Vec::new(),
            total: vec![0.0; n],
            cache: None,
        }
    }

    pub fn budget(&self) -> Budget {
        self.budget
    }

    pub fn orders(&self) -> &[f64] {
        &self.orders
    }

    /// The summed RDP curve so far.
    pub fn rdp(&self) -> &[f64] {
        &self.total
    }

    pub fn history(&self) -> &[Charge] {
        &self.history
    }

    fn curve(&mut self, m: &Mechanism) -> Vec<f64> {
        if let Some((cm, c)) = &self.cache {
            if cm == m {
                return c.clone();
            }
        }
        let c = m.rdp(&self.orders);
        self.cache = Some((*m, c.clone()));
        c
    }

    /// The RDP curve of a plan (several charges) on this accountant's grid.
    pub fn plan_curve(&self, plan: &[Charge]) -> Vec<f64> {
        charges_curve(plan, &self.orders)
    }

    /// ε spent so far at the budget's δ.
    pub fn spent(&self) -> EpsilonAt {
        to_epsilon(&self.orders, &self.total, self.budget.delta)
    }

    /// ε spent by the PLD accountant, when every charge so far is a Gaussian-type
    /// mechanism it models (Poisson-subsampled or plain Gaussian); `None` otherwise.
    /// Costs milliseconds to seconds: query it for reports, not every step.
    pub fn spent_pld(&self) -> Option<f64> {
        use super::pld::{DEFAULT_INTERVAL, Pld};
        let mut total: Option<Pld> = None;
        for ch in &self.history {
            let (q, sigma) = match ch.mechanism {
                Mechanism::SubsampledGaussian { q, sigma } => (q, sigma),
                Mechanism::Gaussian { sensitivity, std } if sensitivity > 0.0 => {
                    (1.0, std / sensitivity)
                }
                Mechanism::Gaussian { .. } => continue,
                _ => return None,
            };
            if q <= 0.0 || ch.count == 0 {
                continue;
            }
            let p = Pld::subsampled_gaussian(q.min(1.0), sigma, DEFAULT_INTERVAL)
                .self_compose(ch.count);
            total = Some(match total {
                None => p,
                Some(t) => t.compose(&p),
            });
        }
        Some(total.map_or(0.0, |t| t.epsilon(self.budget.delta)))
    }

    /// The tighter of the RDP and PLD figures (both are valid upper bounds), with the
    /// accountant that gave it.
    pub fn spent_best(&self) -> (f64, &'static str) {
        let rdp = self.spent().epsilon;
        match self.spent_pld() {
            Some(p) if p < rdp => (p, "pld"),
            _ => (rdp, "rdp"),
        }
    }

    /// ε left (never negative).
    pub fn remaining(&self) -> f64 {
        (self.budget.epsilon - self.spent().epsilon).max(0.0)
    }

    /// δ at which the spending so far gives the budget's ε.
    pub fn delta_at_budget(&self) -> f64 {
        to_delta(&self.orders, &self.total, self.budget.epsilon).0
    }

    /// ε after adding `plan` to what was spent.
    pub fn epsilon_after(&mut self, plan: &[Charge]) -> f64 {
        let p = self.plan_curve(plan);
        let sum: Vec<f64> = self.total.iter().zip(&p).map(|(a, b)| a + b).collect();
        to_epsilon(&self.orders, &sum, self.budget.delta).epsilon
    }

    /// Whether `plan` fits in what is left.
    pub fn can_afford(&mut self, plan: &[Charge]) -> bool {
        self.epsilon_after(plan) <= self.budget.epsilon
    }

    /// Charges `count` uses of `mechanism`, or refuses (charging nothing) when that would
    /// exceed the budget. Call it *before* the mechanism touches data.
    pub fn charge(
        &mut self,
        mechanism: Mechanism,
        count: u64,
    ) -> Result<EpsilonAt, AccountantError> {
        mechanism.validate().map_err(AccountantError::Invalid)?;
        let c = self.curve(&mechanism);
        let sum: Vec<f64> = self
            .total
            .iter()
            .zip(&c)
            .map(|(a, b)| a + b * count as f64)
            .collect();
        let e = to_epsilon(&self.orders, &sum, self.budget.delta);
        if e.epsilon > self.budget.epsilon {
            return Err(AccountantError::OverBudget {
                would: e.epsilon,
                budget: self.budget.epsilon,
                delta: self.budget.delta,
            });
        }
        self.total = sum;
        match self.history.last_mut() {
            Some(last) if last.mechanism == mechanism => last.count += count,
            _ => self.history.push(Charge { mechanism, count }),
        }
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_accumulate_and_refuse_past_the_budget() {
        let mut acc = Accountant::new(Budget {
            epsilon: 1.0,
            delta: 1e-5,
        });
        let m = Mechanism::SubsampledGaussian {
            q: 0.01,
            sigma: 1.1,
        };
        let mut last = 0.0;
        let mut n = 0;
        while acc.charge(m, 10).is_ok() {
            let s = acc.spent().epsilon;
            assert!(s >= last);
            last = s;
            n += 1;
        }
        assert!(n > 0);
        assert!(acc.spent().epsilon <= 1.0);
        assert_eq!(acc.history().len(), 1);
        assert_eq!(acc.history()[0].count, 10 * n);
        assert!(!acc.can_afford(&[Charge {
            mechanism: m,
            count: 10
        }]));
        // PLD is tighter than RDP for this history, and both are reported.
        let pld = acc.spent_pld().unwrap();
        assert!(pld < acc.spent().epsilon);
        assert_eq!(acc.spent_best().1, "pld");
    }

    #[test]
    fn heterogeneous_histories_compose_in_both_accountants() {
        let mut acc = Accountant::new(Budget {
            epsilon: 50.0,
            delta: 1e-5,
        });
        acc.charge(
            Mechanism::SubsampledGaussian {
                q: 0.002,
                sigma: 1.0,
            },
            2000,
        )
        .unwrap();
        acc.charge(
            Mechanism::SubsampledGaussian {
                q: 0.004,
                sigma: 1.5,
            },
            3000,
        )
        .unwrap();
        acc.charge(
            Mechanism::Gaussian {
                sensitivity: 0.1,
                std: 1.0,
            },
            1,
        )
        .unwrap();
        let rdp = acc.spent().epsilon;
        let pld = acc.spent_pld().unwrap();
        assert!(pld <= rdp && pld > 0.5 * rdp, "pld {pld} rdp {rdp}");
        acc.charge(Mechanism::Exponential { epsilon: 0.01 }, 5)
            .unwrap();
        assert_eq!(
            acc.spent_pld(),
            None,
            "PLD does not model the exponential mechanism"
        );
        assert_eq!(acc.spent_best().1, "rdp");
    }
}
