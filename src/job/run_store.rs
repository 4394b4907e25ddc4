//! The runs the window keeps, per dataset: each run's model in the app's `models` folder with
//! a record beside it (`<model>.run.json`: its title, the data file, the run's settings and
//! the column settings it trained with). The window lists them again after a file switch or
//! a restart; `dpsynth runs` lists and deletes them from the command line.

use std::path::{Path, PathBuf};

use crate::data::schema::Schema;

/// What is kept beside a run's model. The shape is the one earlier versions wrote.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RunRecord {
    pub title: String,
    pub data: PathBuf,
    pub config: Option<Box<super::RunConfig>>,
    /// The column settings the run trained with (later edits do not change its scores).
    #[serde(default)]
    pub schema: Option<Schema>,
}

/// A kept run: its model file, its record, and when the model was written.
#[derive(Debug, Clone)]
pub struct Kept {
    pub model: PathBuf,
    pub record: RunRecord,
    pub modified: std::time::SystemTime,
}

pub use super::paths::models_dir;

/// Where the record of `model` lives.
pub fn record_path(model: &Path) -> PathBuf {
    let mut p = model.as_os_str().to_owned();
    p.push(".run.json");
    PathBuf::from(p)
}

/// Keeps `record` beside `model` (written atomically).
pub fn keep(model: &Path, record: &RunRecord) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(record).map_err(std::io::Error::other)?;
    crate::util::atomic::write_atomic(&record_path(model), &bytes)
}

/// Every run kept in `dir` whose model still exists, oldest first; those trained on `data`
/// only when it is given. Reads the records, not the models.
pub fn list(dir: &Path, data: Option<&Path>) -> Vec<Kept> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut kept: Vec<Kept> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".dpsynth.run.json"))
        .filter_map(|p| {
            let record: RunRecord = serde_json::from_slice(&std::fs::read(&p).ok()?).ok()?;
            let model = PathBuf::from(p.to_string_lossy().strip_suffix(".run.json")?);
            let modified = std::fs::metadata(&model).and_then(|m| m.modified()).ok()?;
            data.is_none_or(|d| same_file(&record.data, d))
                .then_some(Kept {
                    model,
                    record,
                    modified,
                })
        })
        .collect();
    kept.sort_by_key(|k| k.modified);
    kept
}

/// Deletes `model`, its record and its stored scores; files already gone are fine.
pub fn delete(model: &Path) -> Result<(), String> {
    let mut files = vec![model.to_path_buf(), record_path(model)];
    files.extend(super::report_store::files(model));
    for p in files {
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("could not delete {}: {e}", p.display())),
        }
    }
    Ok(())
}

/// Whether two paths name the same file (by their canonical forms where they exist).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}
