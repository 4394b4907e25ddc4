//! The per-dataset privacy budget book on disk. It never loses a charge.
//!
//! Storage is SQLite in WAL mode with `synchronous=FULL`: a committed transaction survives
//! a crash or power cut. A run **reserves** its whole planned RDP curve before touching
//! data, in one `BEGIN IMMEDIATE` transaction that takes the write lock and re-checks the
//! remaining budget, so two processes cannot overspend together. When the run ends it
//! **settles** to the curve it actually used. A crash between the two leaves the
//! reservation counted in full — the safe direction.
//!
//! Curves, not (ε, δ) pairs, are stored: RDP adds order by order, so the total of many
//! runs converts to a far smaller ε than the sum of their ε's.
//!
//! Datasets are keyed by the SHA-256 of the file's bytes, so renaming or moving a file
//! does not reset its budget. (The schema is deliberately not part of the key: editing a
//! bound must not open a fresh budget for the same people's records.)

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior, params};
use serde::Serialize;
use sha2::{Digest as _, Sha256};

use super::accountant::Budget;
use super::convert::{EpsilonAt, to_epsilon};
use super::rdp::product_orders;

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
}

/// A dataset's standing.
#[derive(Debug, Clone, Serialize)]
pub struct Standing {
    pub dataset: String,
    pub budget: Budget,
    pub budget_is_default: bool,
    /// ε of everything settled or reserved, composed by RDP, at the budget's δ.
    pub spent: f64,
    pub order: f64,
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

/// Where the ledger lives: `$DPSYNTH_LEDGER`, else `$XDG_DATA_HOME/dpsynth/ledger.sqlite3`,
/// else `~/.local/share/dpsynth/ledger.sqlite3`.
pub fn default_ledger_path() -> PathBuf {
    if let Some(p) = std::env::var_os("DPSYNTH_LEDGER") {
        return PathBuf::from(p);
    }
    data_dir().join("ledger.sqlite3")
}

/// dpsynth's per-user data folder (models, schemas, the ledger).
pub fn data_dir() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("dpsynth")
}

/// SHA-256 of a file's bytes, hex: the key of its budget.
pub fn dataset_key(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

/// Key of a folder dataset (MNIST IDX files): the hash of its files' names and hashes.
pub fn dataset_key_any(path: &Path) -> std::io::Result<String> {
    if !path.is_dir() {
        return dataset_key(path);
    }
    let mut names: Vec<PathBuf> = std::fs::read_dir(path)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    names.sort();
    let mut h = Sha256::new();
    for p in names {
        h.update(
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
        h.update(dataset_key(&p)?);
    }
    Ok(hex(&h.finalize()))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn now() -> String {
    let s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("{s}")
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
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS dataset (
                 id TEXT PRIMARY KEY,
                 budget_epsilon REAL NOT NULL CHECK (budget_epsilon > 0),
                 budget_delta REAL NOT NULL CHECK (budget_delta > 0 AND budget_delta < 1),
                 created TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS entry (
                 id INTEGER PRIMARY KEY AUTOINCREMENT,
                 dataset_id TEXT NOT NULL REFERENCES dataset(id),
                 state TEXT NOT NULL CHECK (state IN ('reserved', 'settled')),
                 planned_rdp TEXT NOT NULL,
                 spent_rdp TEXT,
                 description TEXT NOT NULL,
                 created TEXT NOT NULL,
                 settled TEXT);
             CREATE INDEX IF NOT EXISTS entry_dataset ON entry(dataset_id);",
        )
        .map_err(db)?;
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

    /// Sets a dataset's total budget (creating its record).
    pub fn set_budget(&mut self, dataset: &str, budget: Budget) -> Result<(), LedgerError> {
        budget.validate().map_err(LedgerError::Invalid)?;
        let db = self.db();
        self.conn
            .execute(
                "INSERT INTO dataset(id, budget_epsilon, budget_delta, created) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(id) DO UPDATE SET budget_epsilon = ?2, budget_delta = ?3",
                params![dataset, budget.epsilon, budget.delta, now()],
            )
            .map_err(db)?;
        Ok(())
    }

    /// The dataset's budget, and whether it is the default (never set).
    pub fn budget(&self, dataset: &str) -> Result<(Budget, bool), LedgerError> {
        budget_of(&self.conn, dataset).map_err(self.db())
    }

    /// Reserves `planned` (an RDP curve on [`Self::orders`]) for a run, atomically
    /// re-checking that it fits. Returns the reservation's id.
    pub fn reserve(
        &mut self,
        dataset: &str,
        planned: &[f64],
        description: &str,
    ) -> Result<i64, LedgerError> {
        if planned.len() != self.orders.len() || planned.iter().any(|x| x.is_nan() || *x < 0.0) {
            return Err(LedgerError::Invalid(
                "a planned curve must have one non-negative value per order".into(),
            ));
        }
        let path = self.path.display().to_string();
        let db = |source| LedgerError::Db {
            path: path.clone(),
            source,
        };
        let orders = self.orders.clone();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db)?;
        let (budget, is_default) = budget_of(&tx, dataset).map_err(db)?;
        if is_default {
            tx.execute(
                "INSERT INTO dataset(id, budget_epsilon, budget_delta, created) VALUES (?1, ?2, ?3, ?4)",
                params![dataset, budget.epsilon, budget.delta, now()],
            )
            .map_err(db)?;
        }
        let total = total_curve(&tx, dataset, orders.len()).map_err(db)?;
        let before = to_epsilon(&orders, &total, budget.delta).epsilon;
        let with: Vec<f64> = total.iter().zip(planned).map(|(a, b)| a + b).collect();
        let after = to_epsilon(&orders, &with, budget.delta).epsilon;
        if after > budget.epsilon {
            return Err(LedgerError::Insufficient {
                needed: to_epsilon(&orders, planned, budget.delta).epsilon,
                remaining: (budget.epsilon - before).max(0.0),
                total: budget.epsilon,
                delta: budget.delta,
            });
        }
        tx.execute(
            "INSERT INTO entry(dataset_id, state, planned_rdp, description, created) VALUES (?1, 'reserved', ?2, ?3, ?4)",
            params![dataset, curve_json(planned), description, now()],
        )
        .map_err(db)?;
        let id = tx.last_insert_rowid();
        tx.commit().map_err(db)?;
        Ok(id)
    }

    /// Settles a reservation to what the run actually used.
    pub fn settle(&mut self, id: i64, spent: &[f64]) -> Result<(), LedgerError> {
        if spent.len() != self.orders.len() || spent.iter().any(|x| x.is_nan() || *x < 0.0) {
            return Err(LedgerError::Invalid(
                "a spent curve must have one non-negative value per order".into(),
            ));
        }
        let path = self.path.display().to_string();
        let db = |source| LedgerError::Db {
            path: path.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db)?;
        let planned: Option<String> = tx
            .query_row(
                "SELECT planned_rdp FROM entry WHERE id = ?1 AND state = 'reserved'",
                params![id],
                |r| r.get(0),
            )
            .optional()
            .map_err(db)?;
        let Some(planned) = planned else {
            return Err(LedgerError::NotReserved(id));
        };
        // The plan was checked against the budget; a run never spends more than its plan
        // (the accountant refuses), so the actual curve is what stays counted.
        let _ = planned;
        let kept = spent.to_vec();
        tx.execute(
            "UPDATE entry SET state = 'settled', spent_rdp = ?2, settled = ?3 WHERE id = ?1 AND state = 'reserved'",
            params![id, curve_json(&kept), now()],
        )
        .map_err(db)?;
        tx.commit().map_err(db)?;
        Ok(())
    }

    /// ε the dataset would have spent after also reserving `planned` (RDP composition).
    pub fn epsilon_after(&self, dataset: &str, planned: &[f64]) -> Result<f64, LedgerError> {
        let (budget, _) = self.budget(dataset)?;
        let total = total_curve(&self.conn, dataset, self.orders.len()).map_err(self.db())?;
        let sum: Vec<f64> = total.iter().zip(planned).map(|(a, b)| a + b).collect();
        Ok(to_epsilon(&self.orders, &sum, budget.delta).epsilon)
    }

    /// The RDP curve spent (settled + reserved) on the ledger's orders.
    pub fn spent_curve(&self, dataset: &str) -> Result<Vec<f64>, LedgerError> {
        total_curve(&self.conn, dataset, self.orders.len()).map_err(self.db())
    }

    /// ε spent (settled + reserved) at the dataset's δ.
    pub fn spent(&self, dataset: &str) -> Result<EpsilonAt, LedgerError> {
        let (budget, _) = self.budget(dataset)?;
        let total = total_curve(&self.conn, dataset, self.orders.len()).map_err(self.db())?;
        Ok(to_epsilon(&self.orders, &total, budget.delta))
    }

    /// Everything known about a dataset's budget.
    pub fn standing(&self, dataset: &str) -> Result<Standing, LedgerError> {
        let (budget, is_default) = self.budget(dataset)?;
        let spent = self.spent(dataset)?;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, state, planned_rdp, spent_rdp, description, created FROM entry WHERE dataset_id = ?1 ORDER BY id",
            )
            .map_err(self.db())?;
        let n = self.orders.len();
        let rows = stmt
            .query_map(params![dataset], |r| {
                let state: String = r.get(1)?;
                let planned: String = r.get(2)?;
                let spent: Option<String> = r.get(3)?;
                Ok((
                    r.get::<_, i64>(0)?,
                    state,
                    planned,
                    spent,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })
            .map_err(self.db())?;
        let mut entries = Vec::new();
        for row in rows {
            let (id, state, planned, spent_c, description, created) = row.map_err(self.db())?;
            let curve = if state == "settled" {
                parse_curve(spent_c.as_deref().unwrap_or(&planned), n)
            } else {
                parse_curve(&planned, n)
            };
            entries.push(Entry {
                id,
                epsilon: to_epsilon(&self.orders, &curve, budget.delta).epsilon,
                state,
                description,
                created,
            });
        }
        Ok(Standing {
            dataset: dataset.to_string(),
            budget,
            budget_is_default: is_default,
            spent: spent.epsilon,
            order: spent.order,
            remaining: (budget.epsilon - spent.epsilon).max(0.0),
            reserved_entries: entries.iter().filter(|e| e.state == "reserved").count(),
            entries,
        })
    }
}

fn budget_of(conn: &Connection, dataset: &str) -> rusqlite::Result<(Budget, bool)> {
    let row: Option<(f64, f64)> = conn
        .query_row(
            "SELECT budget_epsilon, budget_delta FROM dataset WHERE id = ?1",
            params![dataset],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    Ok(match row {
        Some((epsilon, delta)) => (Budget { epsilon, delta }, false),
        None => (DEFAULT_BUDGET, true),
    })
}

/// Sum of every entry's curve: the plan while reserved, the actual spend once settled.
fn total_curve(conn: &Connection, dataset: &str, n: usize) -> rusqlite::Result<Vec<f64>> {
    let mut stmt =
        conn.prepare("SELECT state, planned_rdp, spent_rdp FROM entry WHERE dataset_id = ?1")?;
    let mut total = vec![0.0; n];
    let rows = stmt.query_map(params![dataset], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, Option<String>>(2)?,
        ))
    })?;
    for row in rows {
        let (state, planned, spent) = row?;
        let c = if state == "settled" {
            parse_curve(spent.as_deref().unwrap_or(&planned), n)
        } else {
            parse_curve(&planned, n)
        };
        for (t, x) in total.iter_mut().zip(c) {
            *t += x;
        }
    }
    Ok(total)
}

fn curve_json(c: &[f64]) -> String {
    // Infinite values are stored as a large sentinel so JSON stays valid.
    let v: Vec<f64> = c
        .iter()
        .map(|x| if x.is_finite() { *x } else { f64::MAX })
        .collect();
    serde_json::to_string(&v).unwrap_or_default()
}

/// An unreadable stored curve counts as infinite spend: conservative, never lost.
fn parse_curve(s: &str, n: usize) -> Vec<f64> {
    match serde_json::from_str::<Vec<f64>>(s) {
        Ok(v) if v.len() == n => v
            .into_iter()
            .map(|x| if x >= f64::MAX { f64::INFINITY } else { x })
            .collect(),
        _ => vec![f64::INFINITY; n],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::mechanism::Mechanism;

    #[test]
    fn reserve_refuses_past_budget_and_settle_releases() {
        let dir = tempfile::tempdir().unwrap();
        let mut l = Ledger::open(&dir.path().join("l.sqlite3")).unwrap();
        l.set_budget(
            "d",
            Budget {
                epsilon: 0.8,
                delta: 1e-5,
            },
        )
        .unwrap();
        let orders = l.orders().to_vec();
        let m = Mechanism::SubsampledGaussian {
            q: 0.01,
            sigma: 2.0,
        };
        let plan: Vec<f64> = m.rdp(&orders).iter().map(|x| x * 1000.0).collect();
        let id = l.reserve("d", &plan, "run 1").unwrap();
        let spent_reserved = l.spent("d").unwrap().epsilon;
        assert!(
            spent_reserved > 0.3 && spent_reserved < 0.8,
            "{spent_reserved}"
        );
        // A second identical run would not fit (2000 steps compose to ε ≈ 0.99).
        let e = l.reserve("d", &plan, "run 2").unwrap_err();
        assert!(matches!(e, LedgerError::Insufficient { .. }), "{e}");
        // Settling to half the plan frees budget.
        let half: Vec<f64> = plan.iter().map(|x| x / 2.0).collect();
        l.settle(id, &half).unwrap();
        assert!(l.spent("d").unwrap().epsilon < spent_reserved);
        assert!(matches!(
            l.settle(id, &half),
            Err(LedgerError::NotReserved(_))
        ));
        let st = l.standing("d").unwrap();
        assert_eq!(st.entries.len(), 1);
        assert_eq!(st.reserved_entries, 0);
    }
}
