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
