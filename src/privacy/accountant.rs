//! A run's accountant: its budget, what it has charged, and what is left.
//!
//! The history is kept run-length encoded (`Charge { mechanism, count }`); ε is derived
//! from the summed RDP curve, never stored. Charging the same mechanism again (every
//! DP-SGD step) reuses the cached curve, so a charge costs one vector add.
//!
//! A run that reserved a plan ([`Accountant::for_plan`]) was checked once, whole, by the
//! tighter of RDP and PLD ([`super::compose`]); each charge then only has to stay inside
//! the plan (composition only grows, so a covered history spends at most what the plan
//! does), and anything beyond the plan is refused. Without a plan, each charge is checked
//! by RDP, which costs microseconds.

use serde::{Deserialize, Serialize};

use std::cell::OnceCell;

use super::compose::{Composed, compose, covered_by, plan_prefix, zcdp_pool};
use super::convert::{EpsilonAt, to_delta, to_epsilon};
use super::mechanism::{Charge, Mechanism, charges_curve};
use super::rdp::product_orders;

/// The fractions of a reserved plan at which the live ε is read by PLD: the gauge is then
/// exact at each mark and, between marks, the smaller of RDP and the next mark's PLD
/// figure (both upper bounds on what was spent).
pub const PLAN_MARKS: [f64; 10] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];

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

/// Why a charge was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AccountantError {
    #[error(
        "this charge would spend ε={would:.4} of the budget ε={budget} at δ={delta}; it was refused"
    )]
    OverBudget { would: f64, budget: f64, delta: f64 },
    #[error(
        "this charge goes beyond the plan the run reserved ({0}); it was refused before touching data"
    )]
    OutsidePlan(String),
    #[error("invalid mechanism: {0}")]
    Invalid(String),
}

/// A plan checked whole against the budget, and the PLD figures of its prefixes.
#[derive(Debug, Clone)]
struct Reserved {
    plan: Vec<Charge>,
    whole: Composed,
    marks: Vec<OnceCell<f64>>,
}

/// Tracks one run's spending against its budget.
#[derive(Debug, Clone)]
pub struct Accountant {
    budget: Budget,
    orders: Vec<f64>,
    history: Vec<Charge>,
    total: Vec<f64>,
    cache: Option<(Mechanism, Vec<f64>)>,
    reserved: Option<Reserved>,
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
            reserved: None,
        }
    }

    /// An accountant for a run that will spend at most `plan`, which must fit the budget by
    /// the tighter accountant ([`compose`]). Charges inside the plan are accepted without
    /// further checks; charges beyond it are refused.
    pub fn for_plan(budget: Budget, plan: &[Charge]) -> Result<Self, AccountantError> {
        let mut a = Self::new(budget);
        for c in plan {
            c.mechanism.validate().map_err(AccountantError::Invalid)?;
        }
        let whole = compose(plan, &a.orders, budget.delta);
        if whole.epsilon > budget.epsilon {
            return Err(AccountantError::OverBudget {
                would: whole.epsilon,
                budget: budget.epsilon,
                delta: budget.delta,
            });
        }
        a.reserved = Some(Reserved {
            plan: plan.to_vec(),
            whole,
            marks: PLAN_MARKS.iter().map(|_| OnceCell::new()).collect(),
        });
        Ok(a)
    }

    /// The reserved plan's whole figure, when there is one.
    pub fn plan_epsilon(&self) -> Option<Composed> {
        self.reserved.as_ref().map(|r| r.whole)
    }

    /// The reserved plan's charges, when there is one.
    pub fn plan(&self) -> Option<&[Charge]> {
        self.reserved.as_ref().map(|r| r.plan.as_slice())
    }

    /// The smallest plan prefix at a [`PLAN_MARKS`] fraction that covers the history: its
    /// index and charges (`None` without a plan).
    pub fn covering_mark(&self) -> Option<(usize, Vec<Charge>)> {
        let r = self.reserved.as_ref()?;
        PLAN_MARKS.iter().enumerate().find_map(|(i, f)| {
            let p = plan_prefix(&r.plan, *f);
            covered_by(&self.history, &p).then_some((i, p))
        })
    }

    /// An upper bound on ε spent, cheap enough for every progress report: RDP of the
    /// history, or — when a plan is reserved — the PLD figure of the covering plan prefix
    /// if smaller (computed once per mark). Exact PLD needs [`Self::spent_best`].
    pub fn spent_upper(&self) -> f64 {
        let rdp = self.spent().epsilon;
        let Some(r) = &self.reserved else {
            return rdp;
        };
        let Some((i, prefix)) = self.covering_mark() else {
            return rdp;
        };
        let mark =
            *r.marks[i].get_or_init(|| compose(&prefix, &self.orders, self.budget.delta).epsilon);
        rdp.min(mark)
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
        super::compose::pld_epsilon(&self.history, self.budget.delta)
    }

    /// The tighter of the RDP and PLD figures (both are valid upper bounds), with the
    /// accountant that gave it. Costs up to a second: for releases, not every step.
    pub fn spent_best(&self) -> (f64, &'static str) {
        let c = compose(&self.history, &self.orders, self.budget.delta);
        (c.epsilon, c.by.name())
    }

    /// ε left (never negative), by the cheap upper bound [`Self::spent_upper`].
    pub fn remaining(&self) -> f64 {
        (self.budget.epsilon - self.spent_upper()).max(0.0)
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

    /// Charges whatever of the reserved plan was not charged yet, so that the history is
    /// the whole plan; returns the charges added (none without a plan or when it was all
    /// spent).
    ///
    /// Why: a run that stops before its plan ends — a cancel chosen while watching its
    /// progress, a phase skipped — stopped at a point that depends on its outputs. The
    /// (ε, δ) of the steps it ran is a *filter* figure for a prefix fixed in advance; for a
    /// prefix chosen adaptively it needs a privacy odometer, which (ε, δ)-DP does not
    /// compose into for free. Charging the rest reports the plan's figure, fixed before any
    /// row was read, which is sound whatever made the run stop (DESIGN.md invariant 6; AIM
    /// does the same with its zCDP pool). Zcdp charges are one pool: what is left of ρ is
    /// charged as one Zcdp charge.
    pub fn charge_rest_of_plan(&mut self) -> Result<Vec<Charge>, AccountantError> {
        let Some(r) = &self.reserved else {
            return Ok(Vec::new());
        };
        let mut rest: Vec<Charge> = Vec::new();
        let whole_pool = zcdp_pool(&r.plan);
        let pool = whole_pool - zcdp_pool(&self.history);
        for p in &r.plan {
            if matches!(p.mechanism, Mechanism::Zcdp { .. }) {
                continue;
            }
            let planned: u64 = r
                .plan
                .iter()
                .filter(|c| c.mechanism == p.mechanism)
                .map(|c| c.count)
                .sum();
            let used: u64 = self
                .history
                .iter()
                .filter(|c| c.mechanism == p.mechanism)
                .map(|c| c.count)
                .sum::<u64>()
                + rest
                    .iter()
                    .filter(|c| c.mechanism == p.mechanism)
                    .map(|c| c.count)
                    .sum::<u64>();
            if planned > used {
                rest.push(Charge {
                    mechanism: p.mechanism,
                    count: planned - used,
                });
            }
        }
        // A pool left over by less than rounding is spent.
        if pool > whole_pool * 1e-12 {
            rest.push(Charge {
                mechanism: Mechanism::Zcdp { rho: pool },
                count: 1,
            });
        }
        for c in &rest {
            self.charge(c.mechanism, c.count)?;
        }
        Ok(rest)
    }

    /// Charges `count` uses of `mechanism`, or refuses (charging nothing) when that would
    /// exceed the budget or go beyond a reserved plan. Call it *before* the mechanism
    /// touches data.
    pub fn charge(&mut self, mechanism: Mechanism, count: u64) -> Result<(), AccountantError> {
        mechanism.validate().map_err(AccountantError::Invalid)?;
        let c = self.curve(&mechanism);
        let sum: Vec<f64> = self
            .total
            .iter()
            .zip(&c)
            .map(|(a, b)| a + b * count as f64)
            .collect();
        if let Some(r) = &self.reserved {
            let mut next = self.history.clone();
            next.push(Charge { mechanism, count });
            if !covered_by(&next, &r.plan) {
                return Err(AccountantError::OutsidePlan(mechanism.describe()));
            }
        } else {
            let e = to_epsilon(&self.orders, &sum, self.budget.delta);
            if e.epsilon > self.budget.epsilon {
                return Err(AccountantError::OverBudget {
                    would: e.epsilon,
                    budget: self.budget.epsilon,
                    delta: self.budget.delta,
                });
            }
        }
        self.total = sum;
        match self.history.last_mut() {
            Some(last) if last.mechanism == mechanism => last.count += count,
            _ => self.history.push(Charge { mechanism, count }),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charging_the_rest_of_a_plan_reports_the_plans_figure() {
        let budget = Budget {
            epsilon: 2.0,
            delta: 1e-5,
        };
        let sg = Mechanism::SubsampledGaussian {
            q: 0.01,
            sigma: 1.0,
        };
        let g = Mechanism::Gaussian {
            sensitivity: 1.0,
            std: 5.0,
        };
        let plan = [
            Charge {
                mechanism: g,
                count: 1,
            },
            Charge {
                mechanism: sg,
                count: 300,
            },
            Charge {
                mechanism: Mechanism::Zcdp { rho: 0.01 },
                count: 1,
            },
        ];
        let mut a = Accountant::for_plan(budget, &plan).unwrap();
        let whole = a.plan_epsilon().unwrap().epsilon;
        // Stopped a third of the way: the Gaussian, 100 steps, a part of the pool.
        a.charge(g, 1).unwrap();
        a.charge(sg, 100).unwrap();
        a.charge(Mechanism::Zcdp { rho: 0.004 }, 1).unwrap();
        assert!(a.spent_best().0 < whole);
        let rest = a.charge_rest_of_plan().unwrap();
        assert_eq!(rest.len(), 2, "{rest:?}");
        assert_eq!(rest[0].count, 200);
        assert!(
            matches!(rest[1].mechanism, Mechanism::Zcdp { rho } if (rho - 0.006).abs() < 1e-12)
        );
        let now = a.spent_best().0;
        assert!((now - whole).abs() < 1e-6 * whole, "{now} vs {whole}");
        // Nothing is left to charge, and a second call adds nothing.
        assert!(a.charge_rest_of_plan().unwrap().is_empty());
        // Without a plan there is no rest.
        assert!(
            Accountant::new(budget)
                .charge_rest_of_plan()
                .unwrap()
                .is_empty()
        );
    }

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
    fn a_reserved_plan_is_spent_by_pld_and_nothing_beyond_it_is_accepted() {
        let budget = Budget {
            epsilon: 1.0,
            delta: 1e-5,
        };
        let o = product_orders();
        let make = |sigma| {
            vec![Charge {
                mechanism: Mechanism::SubsampledGaussian { q: 0.02, sigma },
                count: 400,
            }]
        };
        let rdp_sigma =
            crate::privacy::calibrate::sigma_for(0.02, 400, 1.0, 1e-5, &o, &[], 1e-6).unwrap();
        let sigma = crate::privacy::calibrate::sigma_for_plan(make, 1.0, 1e-5, &o, rdp_sigma, 1e-3)
            .unwrap();
        let plan = make(sigma);
        let m = plan[0].mechanism;
        // Without the plan, RDP refuses the last steps of it…
        let mut plain = Accountant::new(budget);
        assert!((0..400).any(|_| plain.charge(m, 1).is_err()));
        // …with it, every planned step is accepted and the gauge never passes the budget.
        let mut acc = Accountant::for_plan(budget, &plan).unwrap();
        let mut last = 0.0;
        for _ in 0..400 {
            acc.charge(m, 1).unwrap();
            let up = acc.spent_upper();
            assert!(up >= last && up <= 1.0, "{up}");
            last = up;
        }
        assert!(acc.spent().epsilon > 1.0, "RDP alone would overspend");
        let (best, by) = acc.spent_best();
        assert_eq!(by, "pld");
        assert!(
            (best - last).abs() < 1e-9,
            "at the last mark the gauge is exact"
        );
        assert!(matches!(
            acc.charge(m, 1),
            Err(AccountantError::OutsidePlan(_))
        ));
        assert!(Accountant::for_plan(budget, &make(sigma * 0.9)).is_err());
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
        // RDP, or PLD for the Gaussian part plus RDP for the rest when that is smaller.
        let (best, by) = acc.spent_best();
        assert!(by == "rdp" || by == "pld+rdp", "{by}");
        assert!(best <= acc.spent().epsilon + 1e-12);
    }
}
