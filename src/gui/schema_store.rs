//! Column settings kept per data file, so kinds and domains the user set survive reopening
//! the file and restarting the window. They live in the app's data folder
//! (`schemas/<hash of the file's absolute path>.json`, the CLI's schema format), never
//! beside the user's data.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::data::Table;
use crate::data::schema::Schema;

/// Where the schema kept for the data file at `data` lives.
fn path_for(data: &Path) -> PathBuf {
    let abs = std::fs::canonicalize(data).unwrap_or_else(|_| data.to_path_buf());
    let hash = Sha256::digest(abs.to_string_lossy().as_bytes());
    let name: String = hash.iter().take(12).map(|b| format!("{b:02x}")).collect();
    crate::job::cost::data_dir()
        .join("schemas")
        .join(format!("{name}.json"))
}

/// Keeps `schema` as the user's settings for `data` (best effort: the window works on
/// without it, so a failure is returned for the caller to show, not raised).
pub fn keep(data: &Path, schema: &Schema) -> Result<(), String> {
    let p = path_for(data);
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    schema.save(&p).map_err(|e| e.to_string())
}

/// The schema kept for `data`, when there is one and it still fits the file's columns
/// (a file edited since may no longer match: then the fresh guess wins).
pub fn kept(data: &Path, table: &Table) -> Option<Schema> {
    let s = Schema::load(&path_for(data)).ok()?;
    (s.validate().is_ok() && s.check_table(table).is_ok()).then_some(s)
}
