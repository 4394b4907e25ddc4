//! How a linked run's (ε, δ) is split between the parent and the child table.
//!
//! Both methods spend zCDP, which composes by adding ρ. The whole run gets the ρ whose
//! conversion at δ is the user's ε; the parents get `share` of it and the children the
//! rest. A parent's row is one unit, so the parent run spends its share as it is. A unit's
//! children are up to K rows of the child table, and a row-level ρ-zCDP run is K²ρ-zCDP
//! for groups of K rows (Bun & Steinke 2016, Prop. 1.9): the child run is planned at its
//! share divided by K², which is the same as noise K times larger on every count and
//! every score. The unit-level total is then the parent's ρ plus K² times the child's:
//! the whole ρ, and so the user's (ε, δ).
//!
//! A small share, [`COUNT_SHARE`], first releases the two record counts with noise
//! ([`crate::privacy::record_count`]): the methods scale their models to counts that are
//! DP outputs, so a neighbour with one more unit moves nothing but the counts' noise.

use crate::privacy::compose::compose;
use crate::privacy::mechanism::{Charge, Mechanism};

/// The default share of ρ for the parent table: the parent model learns the parents'
/// columns and their number of children, the child model every child column given the
/// parent's, at noise K times larger, so it gets the larger share.
pub const DEFAULT_PARENT_SHARE: f64 = 0.4;

/// The share of ρ spent on the two noisy record counts (half each): at ε = 1 and K = 5 on
/// 5,000 parents, σ ≈ 45 parents and 225 children, under 2 % of either count.
pub const COUNT_SHARE: f64 = 0.02;

/// ρ for each part: what each run is planned with, and what the unit-level ledger holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split {
    /// ρ of the whole run at the unit level.
    pub rho: f64,
    /// ρ of each noisy record count (unit level: the child count's sensitivity is K).
    pub count_rho: f64,
    /// The parent run's ρ (one row is one unit).
    pub parent_rho: f64,
    /// The child run's row-level ρ: `(1 − share)·ρ / K²`.
    pub child_rho: f64,
    pub k: usize,
}

fn charge(rho: f64) -> Charge {
    Charge {
        mechanism: Mechanism::Zcdp { rho },
        count: 1,
    }
}

/// ε of a ρ-zCDP release at δ, by the accountant the ledger uses.
pub fn epsilon_of(rho: f64, delta: f64) -> f64 {
    compose(
        &[charge(rho)],
        &crate::privacy::rdp::product_orders(),
        delta,
    )
    .epsilon
}

/// The largest ρ whose ε at δ is at most `epsilon` (bisection; ε grows with ρ).
pub fn rho_of(epsilon: f64, delta: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while epsilon_of(hi, delta) < epsilon && hi < 1e9 {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if epsilon_of(mid, delta) <= epsilon {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The ε of `rho` at δ, lowered by as many ulps as it takes for the largest ρ within it
/// ([`rho_of`], what a run plans) to be no more than `rho`: the bisection's last bits
/// could otherwise let a part run plan a hair more than the pair charged for it.
fn epsilon_within(rho: f64, delta: f64) -> f64 {
    let mut e = epsilon_of(rho, delta);
    for _ in 0..64 {
        if rho_of(e, delta) <= rho {
            break;
        }
        e = e.next_down();
    }
    e
}

impl Split {
    pub fn new(epsilon: f64, delta: f64, share: f64, k: usize) -> Result<Self, String> {
        if !(share > 0.0 && share < 1.0) {
            return Err(format!(
                "the parent table's share of the budget must lie strictly between 0 and 1, not {share}"
            ));
        }
        let parts = |rho: f64| {
            let k2 = (k.max(1) as f64).powi(2);
            let rest = (1.0 - COUNT_SHARE) * rho;
            Self {
                rho,
                count_rho: COUNT_SHARE * rho / 2.0,
                parent_rho: share * rest,
                child_rho: (1.0 - share) * rest / k2,
                k,
            }
        };
        // The four parts' sum can round a few ulps past ρ: lowered until the ledger's own
        // composition of them fits the user's ε, so a total equal to ε takes the pair.
        let mut s = parts(rho_of(epsilon, delta));
        for _ in 0..256 {
            let whole = compose(&s.charges(), &crate::privacy::rdp::product_orders(), delta);
            if whole.epsilon <= epsilon {
                break;
            }
            s = parts(s.rho.next_down());
        }
        Ok(s)
    }

    /// The child run's cost at the unit level.
    pub fn child_unit_rho(&self) -> f64 {
        self.child_rho * (self.k as f64).powi(2)
    }

    /// What the dataset's ledger is charged: both parts, each at the unit level.
    pub fn charges(&self) -> Vec<Charge> {
        vec![
            charge(self.count_rho),
            charge(self.count_rho),
            charge(self.parent_rho),
            charge(self.child_unit_rho()),
        ]
    }

    /// The ε each run is given, so its own plan lands on its ρ (a run plans the largest ρ
    /// within its ε, so never more than asked).
    pub fn run_epsilons(&self, delta: f64) -> (f64, f64) {
        (
            epsilon_within(self.parent_rho, delta),
            epsilon_within(self.child_rho, delta),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_add_up_to_the_user_s_epsilon() {
        let s = Split::new(1.0, 1e-6, 0.4, 5).unwrap();
        let whole = compose(&s.charges(), &crate::privacy::rdp::product_orders(), 1e-6).epsilon;
        assert!(whole <= 1.0 + 1e-9 && whole > 0.999, "{whole}");
        assert!((s.child_rho * 25.0 - 0.6 * 0.98 * s.rho).abs() < 1e-12);
        assert!((2.0 * s.count_rho + s.parent_rho + s.child_unit_rho() - s.rho).abs() < 1e-12);
        let (p, c) = s.run_epsilons(1e-6);
        assert!(rho_of(p, 1e-6) <= s.parent_rho * (1.0 + 1e-9));
        assert!(rho_of(c, 1e-6) <= s.child_rho * (1.0 + 1e-9));
        assert!(Split::new(1.0, 1e-6, 1.0, 5).is_err());
    }
}

#[cfg(test)]
mod boundary {
    use super::*;
    use crate::privacy::ledger::Ledger;

    /// To the last bit: the pair's charges fit a book whose total is the user's ε (never
    /// a rounding over it), a total one ulp under their own ε refuses them, and the child
    /// run, given its ε, plans no more than the row-level ρ the pair charged for it at K.
    #[test]
    fn a_pair_fits_the_users_epsilon_and_its_child_run_never_plans_more_than_charged() {
        let dir = tempfile::tempdir().unwrap();
        let mut l = Ledger::open(&dir.path().join("l.sqlite3")).unwrap();
        let delta = 1e-6;
        let mut n = 0;
        for k in [1usize, 5, 12] {
            for epsilon in [0.3, 1.0, 4.0] {
                n += 1;
                let s = Split::new(epsilon, delta, 0.4, k).unwrap();
                let plan = s.charges();
                let mut at = |total: f64| {
                    let key = format!("pair{n}-{total}");
                    l.set_budget(
                        &key,
                        crate::privacy::Budget {
                            epsilon: total,
                            delta,
                        },
                    )
                    .unwrap();
                    l.reserve(&key, &plan, "pair")
                };
                at(epsilon).unwrap_or_else(|e| panic!("K = {k}, ε = {epsilon}: {e}"));
                let own = compose(&plan, &crate::privacy::rdp::product_orders(), delta).epsilon;
                assert!(
                    at(own.next_down()).is_err(),
                    "K = {k}, ε = {epsilon}: fitted one ulp under {own}"
                );
                let (pe, ce) = s.run_epsilons(delta);
                assert!(rho_of(pe, delta) <= s.parent_rho, "K = {k}, ε = {epsilon}");
                assert!(
                    rho_of(ce, delta) * (k as f64).powi(2) <= s.child_unit_rho(),
                    "K = {k}, ε = {epsilon}: the child run plans {} at the unit level, charged {}",
                    rho_of(ce, delta) * (k as f64).powi(2),
                    s.child_unit_rho()
                );
            }
        }
    }
}
