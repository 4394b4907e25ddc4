//! Each run's evaluation, kept beside its model (`<model>.report.json`), so reopening a
//! file or restarting the window shows a kept run's scores at once instead of spending
//! minutes recomputing them.
//!
//! A stored report is used only for exactly what it was computed on: the same model file,
//! training file and held-out file (path, size, modification time), the same column
//! settings, the same draw and the same version of dpsynth; anything else recomputes.
//! The report holds figures of the real rows (histograms, PCA points), so it stays in the
//! app's own folder beside the model and goes with it when the run is deleted; it is never
//! part of an export.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::evaluation::{Evaluated, sibling_test};
use crate::data::schema::Schema;

/// What a stored report was computed on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportKey {
    version: String,
    model: FileStamp,
    data: FileStamp,
    held_out: Option<FileStamp>,
    /// The column settings, as JSON.
    schema: String,
    draw: Option<String>,
    /// How the scores are computed ([`SCORING`]): a report of an older protocol (one that
    /// scored the real-row ceiling on its own training rows) is recomputed.
    #[serde(default)]
    scoring: u32,
}

/// The scoring protocol: 2 holds out a fifth of the rows when no held-out file exists.
const SCORING: u32 = 2;

/// A file as it was: its path and its stamp ([`crate::util::file_stamp`]), written out
/// field by field (serde's `flatten` cannot carry the u128 time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct FileStamp {
    path: PathBuf,
    len: u64,
    modified: u128,
}

impl FileStamp {
    fn of(path: &Path) -> Option<Self> {
        let s = crate::util::file_stamp::FileStamp::of(path).ok()?;
        Some(Self {
            path: path.to_path_buf(),
            len: s.len,
            modified: s.modified,
        })
    }
}

impl ReportKey {
    fn draw(&self) -> Option<super::Draw> {
        self.draw
            .as_deref()
            .and_then(|d| super::Draw::parse(d).ok())
    }

    /// The key of evaluating `model` against `data` with `schema` and `draw`; `None` when
    /// a file cannot be read (nothing is stored or used then).
    pub fn new(
        model: &Path,
        data: &Path,
        schema: &Schema,
        draw: Option<super::Draw>,
    ) -> Option<Self> {
        Some(Self {
            version: env!("CARGO_PKG_VERSION").to_string(),
            model: FileStamp::of(model)?,
            data: FileStamp::of(data)?,
            held_out: sibling_test(data).and_then(|p| FileStamp::of(&p)),
            schema: serde_json::to_string(schema).ok()?,
            draw: draw.map(|d| d.name().to_string()),
            scoring: SCORING,
        })
    }
}

#[derive(Serialize, Deserialize)]
struct Stored {
    key: ReportKey,
    evaluated: Evaluated,
}

/// Where the report of `model` drawn by `draw` is kept.
pub fn path(model: &Path, draw: Option<super::Draw>) -> PathBuf {
    let mut p = model.as_os_str().to_owned();
    match draw {
        None => p.push(".report.json"),
        Some(d) => p.push(format!(".report-{}.json", d.name())),
    }
    PathBuf::from(p)
}

/// Every report file kept for `model` (to delete with it).
pub fn files(model: &Path) -> Vec<PathBuf> {
    let mut out = vec![path(model, None)];
    out.extend(
        [
            super::Draw::Generator,
            super::Draw::Boosted,
            super::Draw::BoostedDrs,
            super::Draw::Labelled,
        ]
        .into_iter()
        .map(|d| path(model, Some(d))),
    );
    out
}

/// The stored report for `key`, if one was computed on exactly that.
pub fn load(model: &Path, key: &ReportKey) -> Option<Evaluated> {
    let bytes = std::fs::read(path(model, key.draw())).ok()?;
    let s: Stored = serde_json::from_slice(&bytes).ok()?;
    (s.key == *key).then_some(s.evaluated)
}

/// Keeps `evaluated` for `key` (atomically), without its real rows. A report that would
/// not read back the same way (a non-finite figure, which JSON cannot hold) is not kept: it is recomputed.
pub fn save(model: &Path, key: &ReportKey, evaluated: &Evaluated) -> std::io::Result<()> {
    // Kept on disk without the real rows the window showed (a folder may be shared).
    let mut kept = evaluated.clone();
    kept.report = kept.report.without_real_rows();
    let bytes = serde_json::to_vec(&Stored {
        key: key.clone(),
        evaluated: kept,
    })
    .map_err(std::io::Error::other)?;
    if serde_json::from_slice::<Stored>(&bytes).is_err() {
        return Ok(());
    }
    crate::util::atomic::write_atomic(&path(model, key.draw()), &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key is written and read back whole: a report whose key cannot be serialised is
    /// never kept, silently (saving is best effort).
    #[test]
    fn a_key_round_trips_through_json() {
        let dir = tempfile::tempdir().unwrap();
        let (model, data) = (dir.path().join("m.dpsynth"), dir.path().join("d.csv"));
        std::fs::write(&model, b"model").unwrap();
        std::fs::write(&data, b"a\n1\n2\n").unwrap();
        let schema: Schema = serde_json::from_str(
            r#"{"columns":[{"name":"a","kind":"continuous","domain":{"bounds":{"lower":0,"upper":9}}}]}"#,
        )
        .unwrap();
        let key = ReportKey::new(&model, &data, &schema, None).unwrap();
        let text = serde_json::to_string(&key).expect("the key serialises");
        assert!(text.contains("\"len\":5"), "{text}");
        let back: ReportKey = serde_json::from_str(&text).unwrap();
        assert_eq!(back, key);
    }
}
