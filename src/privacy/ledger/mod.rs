//! The per-dataset privacy budget book on disk. It never loses a charge.
//!
//! Storage is SQLite in WAL mode with `synchronous=FULL`: a committed transaction survives
//! a crash or power cut. A run **reserves** its whole planned RDP curve before touching
//! data, in one `BEGIN IMMEDIATE` transaction that takes the write lock and re-checks the
//! remaining budget, so two processes cannot overspend together. When the run ends it
//! **settles** to the curve it actually used. A crash between the two leaves the
//! reservation counted in full — the safe direction.
//!
//! Charges (mechanism and count) and their RDP curves, not (ε, δ) pairs, are stored:
//! composition is not additive, so the total of many runs is far smaller than the sum of
//! their ε's. The dataset's figure is the tighter of RDP (curves summed order by order)
//! and PLD (every stored charge composed, [`super::compose`]); entries written before
//! charges were stored (no `planned_charges`) make the whole dataset fall back to RDP.
//!
//! Datasets are keyed by a digest of their *content* (computed by the data layer: cells
//! normalised, rows as a multiset), so a re-saved, re-ordered or re-encoded file keeps its
//! budget. The SHA-256 of the file's bytes is kept as a fast path ([`Ledger::alias`]):
//! a file seen before needs no parsing. Books written when the byte hash was the key are
//! moved to the content key the first time the file is seen ([`Ledger::adopt_key`]).
//! (The schema is deliberately not part of the key: editing a bound must not open a
//! fresh budget for the same people's records.)

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior, params};
use serde::Serialize;

use super::accountant::Budget;
use super::compose::Composed;
use super::mechanism::{Charge, charges_curve};
use super::rdp::product_orders;

mod book;
mod owner;
mod records;
mod tables;
#[cfg(test)]
mod tests;

use book::{Book, budget_of, charges_json, curve_json, read_entries};
use tables::{create_tables, now, release_untouched_stale, stale_reservations};
pub use tables::{dataset_key, dataset_key_any};

/// Budget applied when a dataset is first charged without one set.
pub const DEFAULT_BUDGET: Budget = Budget {
    epsilon: 3.0,
    delta: 1e-5,
};

/// Ledger errors, worded for a person.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("the budget ledger at {path} could not be used: {source}")]
    Db {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error(
        "the budget ledger at {path} is damaged ({detail}); it was not modified — restore it from a backup"
    )]
    Damaged { path: String, detail: String },
    #[error(
        "this run needs ε≈{needed:.4} but the dataset has ε={remaining:.4} left of its total ε={total} (δ={delta}); it was refused before touching data. Lower the run's ε, or raise the dataset's total with `dpsynth budget set`"
    )]
    Insufficient {
        needed: f64,
        remaining: f64,
        total: f64,
        delta: f64,
    },
    #[error("reservation {0} does not exist or was already settled")]
    NotReserved(i64),
    #[error("{0}")]
    Invalid(String),
}

/// One entry of the book.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub id: i64,
    pub state: String,
    pub description: String,
    pub created: String,
    /// ε of this entry alone at the dataset's δ.
    pub epsilon: f64,
    /// Reserved by a process that has ended (a killed run): `dpsynth budget settle`
    /// settles it honestly.
    pub interrupted: bool,
}

/// A dataset's standing.
#[derive(Debug, Clone, Serialize)]
pub struct Standing {
    pub dataset: String,
    pub budget: Budget,
    pub budget_is_default: bool,
    /// ε of everything settled or reserved at the budget's δ, by the tighter accountant.
    pub spent: f64,
    /// "pld" or "rdp": which accountant gave `spent`.
    pub accountant: &'static str,
    pub remaining: f64,
    pub reserved_entries: usize,
    pub entries: Vec<Entry>,
}

/// An open ledger.
pub struct Ledger {
    conn: Connection,
    path: PathBuf,
    orders: Vec<f64>,
}

impl Ledger {
    /// Opens (creating if needed) the ledger at `path`.
    pub fn open(path: &Path) -> Result<Self, LedgerError> {
        let p = path.display().to_string();
        let db = |source| LedgerError::Db {
            path: p.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir).map_err(|e| {
                    LedgerError::Invalid(format!("cannot create {}: {e}", dir.display()))
                })?;
            }
        }
        let conn = Connection::open(path).map_err(db)?;
        conn.busy_timeout(Duration::from_secs(30)).map_err(db)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(db)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(db)?;
        let ok: String = conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(db)?;
        if ok != "ok" {
            return Err(LedgerError::Damaged {
                path: p,
                detail: ok,
            });
        }
        create_tables(&conn).map_err(db)?;
        // The order grid is fixed per ledger: stored curves are only comparable on it.
        let grid = serde_json::to_string(&product_orders()).unwrap_or_default();
        conn.execute(
            "INSERT OR IGNORE INTO meta(key, value) VALUES ('orders', ?1)",
            params![grid],
        )
        .map_err(db)?;
        let stored: String = conn
            .query_row("SELECT value FROM meta WHERE key = 'orders'", [], |r| {
                r.get(0)
            })
            .map_err(db)?;
        let orders: Vec<f64> = serde_json::from_str(&stored).map_err(|e| LedgerError::Damaged {
            path: p.clone(),
            detail: format!("order grid unreadable: {e}"),
        })?;
        Ok(Self {
            conn,
            path: path.to_path_buf(),
            orders,
        })
    }

    /// The order grid every stored curve uses.
    pub fn orders(&self) -> &[f64] {
        &self.orders
    }

    fn db(&self) -> impl Fn(rusqlite::Error) -> LedgerError + '_ {
        move |source| LedgerError::Db {
            path: self.path.display().to_string(),
            source,
        }
    }

    /// Sets a dataset's total budget (creating its record), and logs the change. Raising δ
    /// once anything is spent is refused: the spent ε is read at the budget's δ, so a
    /// larger δ would shrink what was already spent.
    pub fn set_budget(&mut self, dataset: &str, budget: Budget) -> Result<(), LedgerError> {
        budget.validate().map_err(LedgerError::Invalid)?;
        let path = self.path.display().to_string();
        let db = |source| LedgerError::Db {
            path: path.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db)?;
        let (old, is_default) = budget_of(&tx, dataset).map_err(db)?;
        let entries: i64 = tx
            .query_row(
                "SELECT COUNT(*) FROM entry WHERE dataset_id = ?1",
                params![dataset],
                |r| r.get(0),
            )
            .map_err(db)?;
        if entries > 0 && budget.delta > old.delta {
            return Err(LedgerError::Invalid(format!(
                "δ cannot be raised from {} to {} once runs have spent budget on this dataset: the ε already spent would shrink. Keep δ ≤ {}",
                old.delta, budget.delta, old.delta
            )));
        }
        tx.execute(
            "INSERT INTO dataset(id, budget_epsilon, budget_delta, created) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(id) DO UPDATE SET budget_epsilon = ?2, budget_delta = ?3",
            params![dataset, budget.epsilon, budget.delta, now()],
        )
        .map_err(db)?;
        tx.execute(
            "INSERT INTO budget_change(dataset_id, epsilon, delta, was_epsilon, was_delta, was_default, created) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![dataset, budget.epsilon, budget.delta, old.epsilon, old.delta, is_default, now()],
        )
        .map_err(db)?;
        tx.commit().map_err(db)?;
        Ok(())
    }

    /// Whether any run has reserved or spent from the dataset (its δ is then fixed).
    pub fn has_entries(&self, dataset: &str) -> Result<bool, LedgerError> {
        let n: i64 = self
            .conn
            .query_row(
                "SELECT COUNT(*) FROM entry WHERE dataset_id = ?1",
                params![dataset],
                |r| r.get(0),
            )
            .map_err(self.db())?;
        Ok(n > 0)
    }

    /// The dataset's budget, and whether it is the default (never set).
    pub fn budget(&self, dataset: &str) -> Result<(Budget, bool), LedgerError> {
        budget_of(&self.conn, dataset).map_err(self.db())
    }

    /// Reserves `plan` for a run, atomically re-checking that the dataset's composition
    /// with it fits the budget. Returns the reservation's id.
    pub fn reserve(
        &mut self,
        dataset: &str,
        plan: &[Charge],
        description: &str,
    ) -> Result<i64, LedgerError> {
        self.reserve_or_open(dataset, plan, description, DEFAULT_BUDGET)
    }

    /// [`Self::reserve`], creating the dataset's record with `first` when it has none (a
    /// run passes its own δ, so the dataset's figures and the run's are read at one δ).
    pub fn reserve_or_open(
        &mut self,
        dataset: &str,
        plan: &[Charge],
        description: &str,
        first: Budget,
    ) -> Result<i64, LedgerError> {
        self.reserve_joint(&[dataset], plan, description, first)
            .map(|ids| ids[0])
            .map_err(|(_, e)| e)
    }

    /// Reserves `plan` on every book in `datasets` in one transaction: each must fit its
    /// own budget, or none is charged. A release whose unit bounds the rows of several
    /// books (a linked pair: its parents' table, its children's table, and the pair) is
    /// charged to each, so the same people never get a second budget through another
    /// book. Returns one reservation id per book, in order; a refusal names the book's
    /// index with its error.
    pub fn reserve_joint(
        &mut self,
        datasets: &[&str],
        plan: &[Charge],
        description: &str,
        first: Budget,
    ) -> Result<Vec<i64>, (usize, LedgerError)> {
        first.validate().map_err(|e| (0, LedgerError::Invalid(e)))?;
        for c in plan {
            c.mechanism
                .validate()
                .map_err(|e| (0, LedgerError::Invalid(e)))?;
        }
        let planned = charges_curve(plan, &self.orders);
        let path = self.path.display().to_string();
        let db = |source| LedgerError::Db {
            path: path.clone(),
            source,
        };
        let orders = self.orders.clone();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| (0, db(e)))?;
        let mut ids = Vec::with_capacity(datasets.len());
        for (i, dataset) in datasets.iter().enumerate() {
            let entry = (curve_json(&planned), charges_json(plan), description);
            let id = reserve_in(&tx, (dataset, &orders), plan, entry, (first, &db))
                .map_err(|e| (i, e))?;
            ids.push(id);
        }
        tx.commit().map_err(|e| (0, db(e)))?;
        Ok(ids)
    }

    /// Records that the run holding reservation `id` is about to read the private rows for
    /// a mechanism: from then on, were it killed, its reservation stays spent in full.
    /// (Before this mark nothing derived from the rows exists, so a killed run's
    /// reservation may be released: [`Self::settle_stale`], and each new reservation.)
    pub fn mark_touched(&mut self, id: i64) -> Result<(), LedgerError> {
        let n = self
            .conn
            .execute(
                "UPDATE entry SET touched = 1 WHERE id = ?1 AND state = 'reserved'",
                params![id],
            )
            .map_err(self.db())?;
        if n == 0 {
            return Err(LedgerError::NotReserved(id));
        }
        Ok(())
    }

    /// Settles the dataset's reservations whose process has ended (a killed run): one
    /// that never read the data is released (it spent nothing); any other — or one whose
    /// record predates the touched mark — is settled to its whole plan, since it may have
    /// read the data. Returns (entry, released) for each.
    pub fn settle_stale(&mut self, dataset: &str) -> Result<Vec<(i64, bool)>, LedgerError> {
        let path = self.path.display().to_string();
        let db = |source| LedgerError::Db {
            path: path.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db)?;
        let n = self.orders.len();
        let mut out: Vec<(i64, bool)> = release_untouched_stale(&tx, dataset, n)
            .map_err(db)?
            .into_iter()
            .map(|id| (id, true))
            .collect();
        let stale: Vec<i64> = stale_reservations(&tx, dataset)
            .map_err(db)?
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        for id in stale {
            tx.execute(
                "UPDATE entry SET state = 'settled', spent_rdp = planned_rdp, spent_charges = planned_charges, settled = ?2, description = description || ' — interrupted; counted in full (it may have read the data)' WHERE id = ?1 AND state = 'reserved'",
                params![id, now()],
            )
            .map_err(db)?;
            out.push((id, false));
        }
        tx.commit().map_err(db)?;
        out.sort();
        Ok(out)
    }

    /// Settles a reservation to the charges the run actually made.
    pub fn settle(&mut self, id: i64, spent: &[Charge]) -> Result<(), LedgerError> {
        for c in spent {
            c.mechanism.validate().map_err(LedgerError::Invalid)?;
        }
        let curve = charges_curve(spent, &self.orders);
        let path = self.path.display().to_string();
        let db = |source| LedgerError::Db {
            path: path.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db)?;
        let reserved: Option<i64> = tx
            .query_row(
                "SELECT id FROM entry WHERE id = ?1 AND state = 'reserved'",
                params![id],
                |r| r.get(0),
            )
            .optional()
            .map_err(db)?;
        if reserved.is_none() {
            return Err(LedgerError::NotReserved(id));
        }
        // A run never spends more than its plan (its accountant refuses charges outside
        // it), so what it actually charged is what stays counted.
        tx.execute(
            "UPDATE entry SET state = 'settled', spent_rdp = ?2, spent_charges = ?3, settled = ?4 WHERE id = ?1 AND state = 'reserved'",
            params![id, curve_json(&curve), charges_json(spent), now()],
        )
        .map_err(db)?;
        tx.commit().map_err(db)?;
        Ok(())
    }

    /// The dataset's composition if it also reserved `plan` (at the dataset's δ).
    pub fn epsilon_after(&self, dataset: &str, plan: &[Charge]) -> Result<Composed, LedgerError> {
        let (budget, _) = self.budget(dataset)?;
        let book = Book::read(&self.conn, dataset, &self.orders).map_err(self.db())?;
        Ok(book
            .with(plan, &self.orders)
            .compose(&self.orders, budget.delta))
    }

    /// Every charge settled or reserved on the dataset, or `None` when an entry predates
    /// stored charges (then only its RDP curve, [`Self::spent_curve`], is known).
    pub fn spent_charges(&self, dataset: &str) -> Result<Option<Vec<Charge>>, LedgerError> {
        let book = Book::read(&self.conn, dataset, &self.orders).map_err(self.db())?;
        Ok(book.charges)
    }

    /// The RDP curve spent (settled + reserved) on the ledger's orders.
    pub fn spent_curve(&self, dataset: &str) -> Result<Vec<f64>, LedgerError> {
        let book = Book::read(&self.conn, dataset, &self.orders).map_err(self.db())?;
        Ok(book.curve)
    }

    /// ε spent (settled + reserved) at the dataset's δ, by the tighter accountant.
    pub fn spent(&self, dataset: &str) -> Result<Composed, LedgerError> {
        let (budget, _) = self.budget(dataset)?;
        let book = Book::read(&self.conn, dataset, &self.orders).map_err(self.db())?;
        Ok(book.compose(&self.orders, budget.delta))
    }

    /// Everything known about a dataset's budget.
    pub fn standing(&self, dataset: &str) -> Result<Standing, LedgerError> {
        let (budget, is_default) = self.budget(dataset)?;
        let n = self.orders.len();
        let rows = read_entries(&self.conn, dataset, n).map_err(self.db())?;
        let mut all = Book::default();
        let mut entries = Vec::new();
        // Entries with the same charges have the same ε: each distinct one is composed once
        // (a PLD costs milliseconds, and a book may hold thousands of identical runs).
        let mut seen: std::collections::HashMap<String, f64> = Default::default();
        for row in rows {
            let one = Book {
                curve: row.curve,
                charges: row.charges,
            };
            let id = match &one.charges {
                Some(c) => charges_json(c),
                None => curve_json(&one.curve),
            };
            let epsilon = *seen
                .entry(id)
                .or_insert_with(|| one.compose(&self.orders, budget.delta).epsilon);
            let interrupted =
                row.state == "reserved" && row.owner.as_deref().is_some_and(owner::is_gone);
            entries.push(Entry {
                interrupted,
                id: row.id,
                epsilon,
                state: row.state,
                description: row.description,
                created: row.created,
            });
            all = all.merge(one, n);
        }
        let spent = all.compose(&self.orders, budget.delta);
        Ok(Standing {
            dataset: dataset.to_string(),
            budget,
            budget_is_default: is_default,
            spent: spent.epsilon,
            accountant: spent.by.name(),
            remaining: (budget.epsilon - spent.epsilon).max(0.0),
            reserved_entries: entries.iter().filter(|e| e.state == "reserved").count(),
            entries,
        })
    }
}

/// One book's part of a reservation inside `tx`: its record opened with `first` when it
/// has none, a killed run's untouched reservations released, the plan checked against the
/// budget and entered. `db` words a database error with the ledger's path.
fn reserve_in(
    tx: &rusqlite::Transaction<'_>,
    (dataset, orders): (&str, &[f64]),
    plan: &[Charge],
    (curve, charges, description): (String, String, &str),
    (first, db): (Budget, &dyn Fn(rusqlite::Error) -> LedgerError),
) -> Result<i64, LedgerError> {
    let (mut budget, is_default) = budget_of(tx, dataset).map_err(db)?;
    if is_default {
        budget = first;
        tx.execute(
            "INSERT INTO dataset(id, budget_epsilon, budget_delta, created) VALUES (?1, ?2, ?3, ?4)",
            params![dataset, budget.epsilon, budget.delta, now()],
        )
        .map_err(db)?;
    }
    release_untouched_stale(tx, dataset, orders.len()).map_err(db)?;
    let book = Book::read(tx, dataset, orders).map_err(db)?;
    if !book.with(plan, orders).fits(orders, budget) {
        let before = book.compose(orders, budget.delta);
        let alone = Book::of(plan, orders).compose(orders, budget.delta);
        return Err(LedgerError::Insufficient {
            needed: alone.epsilon,
            remaining: (budget.epsilon - before.epsilon).max(0.0),
            total: budget.epsilon,
            delta: budget.delta,
        });
    }
    tx.execute(
        "INSERT INTO entry(dataset_id, state, planned_rdp, planned_charges, description, created, owner, touched) VALUES (?1, 'reserved', ?2, ?3, ?4, ?5, ?6, 0)",
        params![dataset, curve, charges, description, now(), owner::current()],
    )
    .map_err(db)?;
    Ok(tx.last_insert_rowid())
}
