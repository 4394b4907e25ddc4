//! The run's reservation in the dataset's ledger: made before the rows feed any
//! mechanism, settled to what was charged whatever happens, so a killed run stays spent.

use std::path::Path;
use std::sync::OnceLock;

use crate::job::{DatasetBudget, JobError, RunConfig};
use crate::methods::Progress;
use crate::privacy::accountant::PLAN_MARKS;
use crate::privacy::compose::{compose, covered_by, plan_prefix};
use crate::privacy::convert::to_epsilon;
use crate::privacy::ledger::{DEFAULT_BUDGET, Ledger};
use crate::privacy::{Accountant, Budget, Charge, charges_curve};

use super::input::*;

/// The dataset's ledger entry for this run: the reservation, and what the ledger held
/// before it (for the live [`DatasetBudget`]).
pub(super) struct Reservation {
    pub(super) ledger: Ledger,
    pub(super) key: String,
    /// This reservation created the dataset's record with the default total.
    pub(super) created_default: bool,
    /// The dataset's δ before this run set it to the run's (nothing had been spent).
    pub(super) adopted_from: Option<f64>,
    pub(super) id: i64,
    pub(super) plan: Vec<Charge>,
    pub(super) before: Vec<f64>,
    pub(super) before_charges: Option<Vec<Charge>>,
    pub(super) budget: Budget,
    /// Per plan mark ([`PLAN_MARKS`]): (the run alone, the dataset with it), by the
    /// tighter accountant at the ledger's δ. Filled when the run first reaches a mark.
    pub(super) marks: Vec<OnceLock<(f64, f64)>>,
    /// What the ledger held before this run, in ε: fixed for the run, and its PLD figure
    /// costs a composition over every earlier charge, so it is worked out once rather
    /// than at every progress report (it was 3 % of a training's CPU on a ledger with one
    /// earlier run).
    before_eps: OnceLock<f64>,
}

impl Reservation {
    /// Reserves the plan's charges before training reads a row.
    pub(super) fn make(
        cfg: &RunConfig,
        ledger_path: &Path,
        keys: &Keys,
        charges: &[Charge],
    ) -> Result<Self, JobError> {
        let mut ledger = open_ledger(ledger_path, keys)?;
        let key = keys.content.clone();
        let before = ledger.spent_curve(&key)?;
        let before_charges = ledger.spent_charges(&key)?;
        let (was, created_default) = ledger.budget(&key)?;
        let rule = crate::job::cost::DeltaRule::of(&ledger, &key, cfg.delta)?;
        if let Some(why) = rule.refusal(cfg.delta) {
            return Err(JobError::Usage(why));
        }
        let adopted_from = match rule {
            crate::job::cost::DeltaRule::Adopt { was: old } => {
                let b = Budget {
                    epsilon: was.epsilon,
                    delta: cfg.delta,
                };
                ledger.set_budget(&key, b)?;
                Some(old)
            }
            _ => None,
        };
        let desc = format!(
            "{} ({}) ε={} δ={}",
            cfg.method, cfg.preset, cfg.epsilon, cfg.delta
        );
        // A dataset's first run sets its δ: then its figures and the run's agree.
        let first = Budget {
            epsilon: DEFAULT_BUDGET.epsilon,
            delta: cfg.delta,
        };
        let id = ledger.reserve_or_open(&key, charges, &desc, first)?;
        let (budget, _) = ledger.budget(&key)?;
        Ok(Self {
            ledger,
            key,
            created_default,
            adopted_from,
            id,
            plan: charges.to_vec(),
            before,
            before_charges,
            budget,
            marks: PLAN_MARKS.iter().map(|_| OnceLock::new()).collect(),
            before_eps: OnceLock::new(),
        })
    }

    /// The dataset's standing with `progress`'s charges added, at the ledger's δ: the
    /// smaller of RDP and the PLD figure of the plan mark that covers the charges (both
    /// upper bounds), as the run's own accountant does.
    pub(super) fn standing(&self, progress: &Progress) -> DatasetBudget {
        let orders = self.ledger.orders();
        let delta = self.budget.delta;
        let run = charges_curve(&progress.charges, orders);
        let with: Vec<f64> = self.before.iter().zip(&run).map(|(a, b)| a + b).collect();
        let eps = |c: &[f64]| to_epsilon(orders, c, delta).epsilon;
        let (mut run_eps, mut used) = (eps(&run), eps(&with));
        let mark = PLAN_MARKS.iter().enumerate().find_map(|(i, f)| {
            let p = plan_prefix(&self.plan, *f);
            covered_by(&progress.charges, &p).then_some((i, p))
        });
        if let Some((i, prefix)) = mark {
            let (alone, together) = *self.marks[i].get_or_init(|| {
                let alone = compose(&prefix, orders, delta).epsilon;
                let together = match &self.before_charges {
                    Some(b) => {
                        let all: Vec<Charge> = b.iter().chain(&prefix).copied().collect();
                        compose(&all, orders, delta).epsilon
                    }
                    None => f64::INFINITY,
                };
                (alone, together)
            });
            run_eps = run_eps.min(alone);
            used = used.min(together);
        }
        let before = *self.before_eps.get_or_init(|| match &self.before_charges {
            Some(b) => compose(b, orders, delta).epsilon.min(eps(&self.before)),
            None => eps(&self.before),
        });
        DatasetBudget {
            used,
            before,
            total: self.budget.epsilon,
            delta,
            run: run_eps,
        }
    }

    /// Settles to what the accountant actually charged.
    pub(super) fn settle(mut self, accountant: &Accountant) -> Result<(), JobError> {
        Ok(self.ledger.settle(self.id, accountant.history())?)
    }
}
