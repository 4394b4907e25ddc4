//! How many times each file was parsed or hashed in this process: the cost a test can
//! count (opening a file in the window and training on it parses it once and hashes it
//! once), keyed by path so that tests running side by side do not see each other's work.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// What was done to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Work {
    /// Its rows were read and parsed.
    Parse,
    /// Its bytes were hashed (the ledger's byte key).
    ByteHash,
    /// Its parsed rows were hashed (the ledger's content key).
    ContentHash,
}

fn counts() -> &'static Mutex<HashMap<(Work, PathBuf), u64>> {
    static COUNTS: OnceLock<Mutex<HashMap<(Work, PathBuf), u64>>> = OnceLock::new();
    COUNTS.get_or_init(Default::default)
}

/// Records one `work` on `path`.
pub fn note(work: Work, path: &Path) {
    if let Ok(mut m) = counts().lock() {
        *m.entry((work, path.to_path_buf())).or_insert(0) += 1;
    }
}

/// How many times `work` was done on `path` so far.
pub fn count(work: Work, path: &Path) -> u64 {
    counts()
        .lock()
        .ok()
        .and_then(|m| m.get(&(work, path.to_path_buf())).copied())
        .unwrap_or(0)
}
