//! The books a linked run is charged to: the pair's (keyed by both tables' content) and
//! each table's own. The unit (a parent with all its children) bounds every parent row
//! and every child row, so the run's whole charge is a charge on each table's people: a
//! pair never opens a budget apart from its tables', and a second child table on the same
//! parents, or the child table trained alone afterwards, is charged to the same people.

use std::path::Path;

use sha2::{Digest as _, Sha256};

use super::{LinkedConfig, Split};
use crate::job::{Event, JobError};
use crate::privacy::Budget;
use crate::privacy::ledger::{DEFAULT_BUDGET, Ledger};

/// The three books a linked run is charged to: the pair's, and each table's (the unit
/// bounds every parent row and every child row, so each table's people are in it).
pub struct Books {
    pub pair: String,
    pub parent: String,
    pub child: String,
    /// The byte keys of the pair, the parent file and the child file, in the order of
    /// [`Self::keys`]: each is recorded as an alias of its content key, so a book kept
    /// under an earlier digest version of the same files moves to the new key instead of
    /// a fresh budget opening ([`Ledger::adopt_key`]).
    pub bytes: [String; 3],
}

impl Books {
    pub(super) fn keys(&self) -> [&str; 3] {
        [&self.pair, &self.parent, &self.child]
    }

    /// Records each byte key as an alias of its content key (moving a book kept under an
    /// older key of the same files).
    pub fn adopt(&self, ledger: &mut Ledger) -> Result<(), JobError> {
        for (bytes, content) in self.bytes.iter().zip(self.keys()) {
            ledger.adopt_key(bytes, content)?;
        }
        Ok(())
    }

    /// Each book's name in words, in the order of [`Self::keys`].
    pub(super) fn names(cfg: &LinkedConfig) -> [String; 3] {
        [
            "this pair's book".into(),
            format!("the parent table's book ({})", cfg.parent.data.display()),
            format!("the child table's book ({})", cfg.child.display()),
        ]
    }
}

/// Reserves the whole plan before any row feeds a mechanism, on the pair's book and on
/// each table's, in one transaction: every book must have room, or nothing is charged.
pub(super) fn reserve(
    ledger_path: &Path,
    books: &Books,
    split: &Split,
    cfg: &LinkedConfig,
    send: &(dyn Fn(Event) + Sync),
) -> Result<(Ledger, Vec<i64>), JobError> {
    let mut ledger = Ledger::open(ledger_path)?;
    books.adopt(&mut ledger)?;
    let mut fresh = Vec::new();
    for k in books.keys() {
        fresh.push(ledger.budget(k)?.1);
    }
    let p = &cfg.parent;
    let desc = format!(
        "{} ({}) linked by '{}', K = {}, ε={} δ={}",
        p.method, p.preset, cfg.link.key, cfg.link.max_children, p.epsilon, p.delta
    );
    let first = Budget {
        epsilon: DEFAULT_BUDGET.epsilon,
        delta: p.delta,
    };
    let names = Books::names(cfg);
    let ids = ledger
        .reserve_joint(&books.keys(), &split.charges(), &desc, first)
        .map_err(|(at, e)| match e {
            crate::privacy::ledger::LedgerError::Insufficient { .. } => JobError::OverBudget(
                format!("{}: {e} (a linked run is charged to the pair's book and to both tables', and must fit each)", names[at]),
            ),
            e => e.into(),
        })?;
    for id in &ids {
        ledger.mark_touched(*id)?;
    }
    for ((k, name), fresh) in books.keys().into_iter().zip(&names).zip(fresh) {
        if fresh {
            let (b, _) = ledger.budget(k)?;
            send(Event::Notice(format!(
                "{name} had no total budget: the default ε = {} at δ = {} now applies to every run on it (the Train tab's \"Set total…\" or `dpsynth budget set` changes it)",
                b.epsilon, b.delta
            )));
        }
    }
    Ok((ledger, ids))
}

/// A non-private run spends nothing, but every book shows its tables were read without
/// protection.
pub(super) fn record_exposure(
    ledger_path: &Path,
    books: &Books,
    cfg: &LinkedConfig,
) -> Result<(), JobError> {
    let desc = format!(
        "{} linked by '{}' ε=∞: NOT private",
        cfg.parent.method, cfg.link.key
    );
    let mut ledger = Ledger::open(ledger_path)?;
    books.adopt(&mut ledger)?;
    for k in books.keys() {
        ledger.record_exposure(k, &desc)?;
    }
    Ok(())
}

/// The standing of the pair's book and both tables' with this run added, in words (the
/// window's cost preview): for each, its total, what was spent, and what is left after the
/// run; and the refusal, naming the book, when one has no room.
pub fn standing(
    parent_key: &str,
    child_key: &str,
    split: &Split,
    ledger_path: &Path,
) -> Result<String, JobError> {
    let pair = content_key(parent_key, child_key);
    let ledger = Ledger::open(ledger_path)?;
    let mut lines = Vec::new();
    let mut refused = Vec::new();
    for (name, key) in [
        ("this pair's budget", pair.as_str()),
        ("the parent table's", parent_key),
        ("the child table's", child_key),
    ] {
        let (budget, _) = ledger.budget(key)?;
        let spent = ledger.spent(key)?.epsilon;
        let after = ledger.epsilon_after(key, &split.charges())?.epsilon;
        lines.push(format!(
            "{name}: total ε {:.3} · spent {spent:.3} · left after this run {:.3} (at δ = {})",
            budget.epsilon,
            budget.epsilon - after,
            budget.delta
        ));
        if after > budget.epsilon {
            refused.push(name);
        }
    }
    let mut s = lines.join("\n");
    if !refused.is_empty() {
        s.push_str(&format!(
            "\nthe ledger will refuse this run: {} has no room for it (a linked run is charged to all three). Lower ε, or raise that total with `dpsynth budget set`",
            refused.join(" and ")
        ));
    }
    Ok(s)
}

/// The pair's byte key: both files' byte keys (the fast path that recognises the same two
/// files under a new digest version).
pub fn pair_byte_key(parent: &str, child: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"dpsynth-linked-bytes/1\0");
    h.update(parent.as_bytes());
    h.update(b"\0");
    h.update(child.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The ledger key of the pair: both tables' content keys, so the same rows in any format
/// or order share one budget, and a change to either table is a new dataset.
pub fn content_key(parent: &str, child: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"dpsynth-linked/1\0");
    h.update(parent.as_bytes());
    h.update(b"\0");
    h.update(child.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::{Charge, Mechanism};

    /// A pair booked under the content key an earlier digest version gave it keeps its
    /// spend when the same two files come back under a new one.
    #[test]
    fn a_pairs_book_follows_its_files_to_a_new_digest_version() {
        let dir = tempfile::tempdir().unwrap();
        let mut l = Ledger::open(&dir.path().join("l.sqlite3")).unwrap();
        let bytes = pair_byte_key("parent-bytes", "child-bytes");
        let old = content_key("parent-v1", "child-v1");
        l.adopt_key(&bytes, &old).unwrap();
        let plan = [Charge {
            mechanism: Mechanism::Zcdp { rho: 0.01 },
            count: 1,
        }];
        let id = l.reserve(&old, &plan, "the pair, earlier").unwrap();
        l.settle(id, &plan).unwrap();
        let books = Books {
            pair: content_key("parent-v2", "child-v2"),
            parent: "parent-v2".into(),
            child: "child-v2".into(),
            bytes: [bytes, "parent-bytes".into(), "child-bytes".into()],
        };
        assert_eq!(l.spent(&books.pair).unwrap().epsilon, 0.0);
        books.adopt(&mut l).unwrap();
        let moved = l.spent(&books.pair).unwrap().epsilon;
        assert!(moved > 0.0, "the pair's spend was left under its old key");
    }
}
