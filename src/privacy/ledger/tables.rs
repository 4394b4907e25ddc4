//! The ledger's SQLite tables and the keys it files datasets under: the schema (created or
//! migrated on open), a file's byte key, and the stale-reservation queries that make a killed
//! run stay spent.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};
use sha2::{Digest as _, Sha256};

use super::book::curve_json;
use super::owner;

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
    crate::util::tally::note(crate::util::tally::Work::ByteHash, path);
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

pub(super) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub(super) fn now() -> String {
    let s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("{s}")
}

/// The dataset's reservations whose process has ended, with whether each is known to
/// have never read the data.
pub(super) fn stale_reservations(
    conn: &Connection,
    dataset: &str,
) -> rusqlite::Result<Vec<(i64, bool)>> {
    let mut stmt = conn.prepare(
        "SELECT id, owner, touched FROM entry WHERE dataset_id = ?1 AND state = 'reserved' AND owner IS NOT NULL",
    )?;
    let rows = stmt.query_map(params![dataset], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, Option<i64>>(2)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (id, who, touched) = row?;
        if owner::is_gone(&who) {
            out.push((id, touched == Some(0)));
        }
    }
    Ok(out)
}

/// Releases (settles to nothing) the dataset's reservations whose process ended before it
/// read the data. Returns their ids.
pub(super) fn release_untouched_stale(
    conn: &Connection,
    dataset: &str,
    n_orders: usize,
) -> rusqlite::Result<Vec<i64>> {
    let nothing = curve_json(&vec![0.0; n_orders]);
    let ids: Vec<i64> = stale_reservations(conn, dataset)?
        .into_iter()
        .filter_map(|(id, untouched)| untouched.then_some(id))
        .collect();
    for &id in &ids {
        conn.execute(
            "UPDATE entry SET state = 'settled', spent_rdp = ?3, spent_charges = '[]', settled = ?2, description = description || ' — released: its process ended before reading the data' WHERE id = ?1 AND state = 'reserved' AND touched = 0",
            params![id, now(), nothing],
        )?;
    }
    Ok(ids)
}

/// Creates the ledger's tables, and adds the columns older ledgers lack.
pub(super) fn create_tables(conn: &Connection) -> rusqlite::Result<()> {
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
         CREATE INDEX IF NOT EXISTS entry_dataset ON entry(dataset_id);
         CREATE TABLE IF NOT EXISTS budget_change (
             id INTEGER PRIMARY KEY AUTOINCREMENT,
             dataset_id TEXT NOT NULL,
             epsilon REAL NOT NULL,
             delta REAL NOT NULL,
             was_epsilon REAL NOT NULL,
             was_delta REAL NOT NULL,
             was_default INTEGER NOT NULL,
             created TEXT NOT NULL);
         CREATE TABLE IF NOT EXISTS exposure (
             id INTEGER PRIMARY KEY AUTOINCREMENT,
             dataset_id TEXT NOT NULL,
             description TEXT NOT NULL,
             created TEXT NOT NULL);
         CREATE TABLE IF NOT EXISTS estimate (
             dataset_id TEXT NOT NULL,
             digest TEXT NOT NULL,
             created TEXT NOT NULL,
             PRIMARY KEY (dataset_id, digest));
         CREATE TABLE IF NOT EXISTS key_alias (
             byte_key TEXT PRIMARY KEY,
             content_key TEXT NOT NULL);",
    )?;
    // Ledgers written before charges were stored gain the columns (empty: RDP only), and
    // before owners were recorded, the owner and touched columns (empty: never stale).
    for (col, ty) in [
        ("planned_charges", "TEXT"),
        ("spent_charges", "TEXT"),
        ("owner", "TEXT"),
        ("touched", "INTEGER"),
    ] {
        let has: bool = conn.query_row(
            "SELECT COUNT(*) FROM pragma_table_info('entry') WHERE name = ?1",
            params![col],
            |r| r.get::<_, i64>(0),
        )? > 0;
        if !has {
            conn.execute(&format!("ALTER TABLE entry ADD COLUMN {col} {ty}"), [])?;
        }
    }
    Ok(())
}
