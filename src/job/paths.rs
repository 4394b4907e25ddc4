//! The application's folders and files: where the window and the CLI keep what they write
//! for the user (never beside the user's data, never beside an installed package's samples).
//! One place, so that the privacy core knows nothing of the desktop it runs on.

use std::path::PathBuf;

/// dpsynth's per-user data folder: `$XDG_DATA_HOME/dpsynth`, else
/// `~/.local/share/dpsynth` (models, kept schemas, settings, the ledger).
pub fn data_dir() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("dpsynth")
}

/// The ledger file used when none is named: `$DPSYNTH_LEDGER`, else `ledger.sqlite3` in
/// [`data_dir`].
pub fn default_ledger_path() -> PathBuf {
    if let Some(p) = std::env::var_os("DPSYNTH_LEDGER") {
        return PathBuf::from(p);
    }
    data_dir().join("ledger.sqlite3")
}

/// The window's trained models and their run records ([`super::run_store`]).
pub fn models_dir() -> PathBuf {
    data_dir().join("models")
}

/// The column settings kept per data file.
pub fn schemas_dir() -> PathBuf {
    data_dir().join("schemas")
}

/// A fresh model file in [`models_dir`] for a run on `data`: `STEM-TAG-SECONDS.dpsynth`
/// (the folder created), so runs of one file by one method sort by time.
pub fn new_model_path(data: &std::path::Path, tag: &str) -> Result<PathBuf, String> {
    let dir = models_dir();
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("could not create {}: {e}", dir.display()))?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let stem = data
        .file_stem()
        .map_or("data".into(), |s| s.to_string_lossy().into_owned());
    Ok(dir.join(format!("{stem}-{tag}-{stamp}.dpsynth")))
}
