//! Column settings kept per data file, so kinds and domains the user set survive reopening
//! the file and restarting the window. They live in the app's data folder
//! (`schemas/<hash of the file's absolute path>.json`, the CLI's schema format), never
//! beside the user's data.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, channel};

use sha2::{Digest, Sha256};

use crate::data::Table;
use crate::data::schema::Schema;

/// Where the schema kept for the data file at `data` lives.
fn path_for(data: &Path) -> PathBuf {
    let abs = std::fs::canonicalize(data).unwrap_or_else(|_| data.to_path_buf());
    let hash = Sha256::digest(abs.to_string_lossy().as_bytes());
    let name: String = hash.iter().take(12).map(|b| format!("{b:02x}")).collect();
    crate::job::paths::schemas_dir().join(format!("{name}.json"))
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

/// Writes kept schemas on a worker thread (a write ends with an fsync, which may take a
/// frame's budget), in order, the newest of a burst only: typing a bound writes once the
/// typing pauses, not per key.
#[derive(Default)]
pub struct Keeper {
    worker: Option<(Sender<(PathBuf, Schema)>, Receiver<String>)>,
}

impl Keeper {
    /// Keeps `schema` for the data file at `data`, soon.
    pub fn keep(&mut self, data: &Path, schema: &Schema) {
        let (tx, _) = self.worker.get_or_insert_with(|| {
            let (tx, rx) = channel::<(PathBuf, Schema)>();
            let (etx, erx) = channel();
            std::thread::spawn(move || {
                crate::job::priority::yield_to_window();
                while let Ok(mut next) = rx.recv() {
                    // Only the newest request of a burst (per file) matters.
                    let mut others = Vec::new();
                    while let Ok(n) = rx.try_recv() {
                        if n.0 == next.0 {
                            next = n;
                        } else {
                            others.push(std::mem::replace(&mut next, n));
                        }
                    }
                    others.push(next);
                    for (p, s) in others {
                        if let Err(e) = keep(&p, &s) {
                            let _ = etx.send(e);
                        }
                    }
                }
            });
            (tx, erx)
        });
        let _ = tx.send((data.to_path_buf(), schema.clone()));
    }

    /// A failure to keep settings since the last call, to show.
    pub fn failure(&self) -> Option<String> {
        self.worker.as_ref().and_then(|(_, e)| e.try_recv().ok())
    }
}
