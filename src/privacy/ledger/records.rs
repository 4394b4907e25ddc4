//! The ledger's side records: which file bytes hold which dataset, which domains were
//! estimated privately on it, and which non-private runs read it.

use rusqlite::{OptionalExtension as _, TransactionBehavior, params};

use super::{Ledger, LedgerError, budget_of, now};

impl Ledger {
    /// The content key a file's byte hash was last seen with.
    pub fn alias(&self, byte_key: &str) -> Result<Option<String>, LedgerError> {
        self.conn
            .query_row(
                "SELECT content_key FROM key_alias WHERE byte_key = ?1",
                params![byte_key],
                |r| r.get(0),
            )
            .optional()
            .map_err(self.db())
    }

    /// Remembers that the file with `byte_key` holds the dataset `content_key`, and moves a
    /// book kept under an older key of the same file to the content key: the byte key
    /// itself (older ledgers), or the content key this file had under an earlier digest
    /// normalisation ([`crate::data::digest`]), so a new digest version never resets a
    /// dataset's spend. When both exist their entries are merged under the smaller of the
    /// two totals.
    pub fn adopt_key(&mut self, byte_key: &str, content_key: &str) -> Result<(), LedgerError> {
        let path = self.path.display().to_string();
        let db = |source| LedgerError::Db {
            path: path.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db)?;
        let previous: Option<String> = tx
            .query_row(
                "SELECT content_key FROM key_alias WHERE byte_key = ?1",
                params![byte_key],
                |r| r.get(0),
            )
            .optional()
            .map_err(db)?;
        tx.execute(
            "INSERT INTO key_alias(byte_key, content_key) VALUES (?1, ?2)
             ON CONFLICT(byte_key) DO UPDATE SET content_key = ?2",
            params![byte_key, content_key],
        )
        .map_err(db)?;
        let mut olds = vec![byte_key.to_string()];
        olds.extend(previous.filter(|p| p != content_key && p != byte_key));
        for old_key in &olds {
            let (old, old_default) = budget_of(&tx, old_key).map_err(db)?;
            if old_default || old_key == content_key {
                continue;
            }
            let (new, new_default) = budget_of(&tx, content_key).map_err(db)?;
            let (e, d) = if new_default {
                (old.epsilon, old.delta)
            } else {
                (old.epsilon.min(new.epsilon), old.delta.min(new.delta))
            };
            tx.execute(
                "INSERT INTO dataset(id, budget_epsilon, budget_delta, created) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(id) DO UPDATE SET budget_epsilon = ?2, budget_delta = ?3",
                params![content_key, e, d, now()],
            )
            .map_err(db)?;
            if old_key == byte_key {
                // A book an older ledger kept under the bytes' own key: those bytes are
                // these rows, so the book moves.
                for table in ["entry", "exposure", "budget_change", "estimate"] {
                    tx.execute(
                        &format!("UPDATE {table} SET dataset_id = ?2 WHERE dataset_id = ?1"),
                        params![old_key, content_key],
                    )
                    .map_err(db)?;
                }
                tx.execute("DELETE FROM dataset WHERE id = ?1", params![old_key])
                    .map_err(db)?;
            } else {
                // Another content key of the same bytes (a new digest version, other
                // parse options): other files may still hold those rows, so the old book
                // stays and the new key gets a copy of its spending. Spending is never
                // moved away from rows it covers.
                copy_book(&tx, old_key, content_key).map_err(db)?;
            }
        }
        tx.commit().map_err(db)?;
        Ok(())
    }

    /// Records that a domain with digest `digest` was estimated privately on the dataset
    /// (and charged there), so a schema file that carries it later can be trusted.
    pub fn record_estimate(&mut self, dataset: &str, digest: &str) -> Result<(), LedgerError> {
        self.conn
            .execute(
                "INSERT OR IGNORE INTO estimate(dataset_id, digest, created) VALUES (?1, ?2, ?3)",
                params![dataset, digest, now()],
            )
            .map_err(self.db())?;
        Ok(())
    }

    /// Whether a domain with `digest` was estimated privately on the dataset.
    pub fn has_estimate(&self, dataset: &str, digest: &str) -> Result<bool, LedgerError> {
        let n: i64 = self
            .conn
            .query_row(
                "SELECT COUNT(*) FROM estimate WHERE dataset_id = ?1 AND digest = ?2",
                params![dataset, digest],
                |r| r.get(0),
            )
            .map_err(self.db())?;
        Ok(n > 0)
    }

    /// Records that a non-private run read the dataset (ε = ∞): it spends nothing from a
    /// budget, but the book shows that the data were exposed.
    pub fn record_exposure(&mut self, dataset: &str, description: &str) -> Result<(), LedgerError> {
        self.conn
            .execute(
                "INSERT INTO exposure(dataset_id, description, created) VALUES (?1, ?2, ?3)",
                params![dataset, description, now()],
            )
            .map_err(self.db())?;
        Ok(())
    }

    /// The non-private runs recorded on a dataset, oldest first.
    pub fn exposures(&self, dataset: &str) -> Result<Vec<String>, LedgerError> {
        let mut stmt = self
            .conn
            .prepare("SELECT description FROM exposure WHERE dataset_id = ?1 ORDER BY id")
            .map_err(self.db())?;
        let rows = stmt
            .query_map(params![dataset], |r| r.get::<_, String>(0))
            .map_err(self.db())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.db())
    }
}

/// Copies every entry, exposure, budget change and estimate of the book `from` into the
/// book `to` (both keep theirs), but those `to` already holds (a file read back and forth
/// between two keys): a reserved entry's copy stays reserved at its plan, which only
/// charges more.
fn copy_book(tx: &rusqlite::Transaction<'_>, from: &str, to: &str) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO entry(dataset_id, state, planned_rdp, spent_rdp, description, created, settled, planned_charges, spent_charges, owner, touched)
         SELECT ?2, state, planned_rdp, spent_rdp, description, created, settled, planned_charges, spent_charges, owner, touched FROM entry AS e WHERE dataset_id = ?1
         AND NOT EXISTS (SELECT 1 FROM entry AS c WHERE c.dataset_id = ?2 AND c.created = e.created AND c.description = e.description AND c.planned_rdp = e.planned_rdp)",
        params![from, to],
    )?;
    tx.execute(
        "INSERT INTO exposure(dataset_id, description, created) SELECT ?2, description, created FROM exposure AS e WHERE dataset_id = ?1
         AND NOT EXISTS (SELECT 1 FROM exposure AS c WHERE c.dataset_id = ?2 AND c.created = e.created AND c.description = e.description)",
        params![from, to],
    )?;
    tx.execute(
        "INSERT INTO budget_change(dataset_id, epsilon, delta, was_epsilon, was_delta, was_default, created)
         SELECT ?2, epsilon, delta, was_epsilon, was_delta, was_default, created FROM budget_change WHERE dataset_id = ?1",
        params![from, to],
    )?;
    tx.execute(
        "INSERT OR IGNORE INTO estimate(dataset_id, digest, created) SELECT ?2, digest, created FROM estimate WHERE dataset_id = ?1",
        params![from, to],
    )?;
    Ok(())
}
