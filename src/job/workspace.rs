//! The dataset a user opened, read once.
//!
//! Why: the window holds the rows it shows, and a run needs the same rows; reading the file
//! again for the run (and once more to name it in the ledger) costs a large file seconds
//! to minutes and memory twice over. [`open`] parses the file once and computes both
//! ledger keys there — the content key over the very rows it returns, the byte key over the
//! file — and a run given the [`Shared`] handle (`RunConfig::opened`) trains on those rows.
//! The CLI opens through here too, so both paths read a file the same way.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::JobError;
use crate::data::image::ImageSet;
use crate::data::table::Table;
use crate::data::{self, Dataset};
use crate::util::tally::{self, Work};

/// The rows of an opened dataset, shared with the runs that train on them.
#[derive(Debug, Clone)]
pub enum Rows {
    Table(Arc<Table>),
    Images(Arc<ImageSet>),
}

impl Rows {
    /// Rows (records) in the dataset.
    pub fn len(&self) -> usize {
        match self {
            Rows::Table(t) => t.n_rows,
            Rows::Images(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A dataset as opened: its rows and the two keys the ledger knows it by.
#[derive(Debug)]
pub struct Opened {
    pub path: PathBuf,
    pub rows: Rows,
    /// The key its budget is kept under: a digest of the parsed rows, so the same rows in
    /// another format or order share one entry ([`crate::data::digest`]).
    pub content_key: String,
    /// SHA-256 of the file's bytes: how the ledger recognises the file without parsing it.
    pub byte_key: String,
}

/// Opens `path` (any format [`data::open`] reads): one parse, one hash of the rows, one of
/// the bytes. `progress` gets `(bytes read, file size)` while a CSV file is read.
pub fn open(path: &Path, progress: &mut dyn FnMut(u64, u64)) -> Result<Opened, JobError> {
    open_with(path, &Default::default(), progress)
}

/// [`open`] with the reader's options (missing-value tokens, separator), as `dpsynth
/// inspect` takes them.
pub fn open_with(
    path: &Path,
    options: &data::csv::LoadOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Opened, JobError> {
    if let Some(source) = data::engine::EngineSource::parse(path) {
        let at = source
            .map(|s| s.identity())
            .unwrap_or_else(|e| e.to_string());
        return Err(JobError::Usage(format!(
            "{at} is a table a query engine holds: its rows are counted there and never opened or shown here. Train MST or AIM on it from the command line with a public schema: dpsynth train --data {at} --schema SCHEMA.json --method aim --epsilon 1 --delta 1e-6"
        )));
    }
    let dataset =
        data::open_with_progress(path, options, progress).map_err(|e| JobError::file(path, e))?;
    tally::note(Work::ContentHash, path);
    let content_key = data::digest::content_key(&dataset);
    let byte_key = byte_key(path).map_err(|e| JobError::file(path, e))?;
    let rows = match dataset {
        Dataset::Table(t) => Rows::Table(Arc::new(t)),
        Dataset::Images(s) => Rows::Images(Arc::new(s)),
    };
    Ok(Opened {
        path: path.to_path_buf(),
        rows,
        content_key,
        byte_key,
    })
}

/// A table a query engine holds, or a file read in parts, as the window shows it: its
/// public schema and how many records the engine (or the survey) counted. Its rows never come here; a run counts them again where
/// they lie (the table may have changed since), so this holds no handle to them.
#[derive(Debug, Clone)]
pub struct Connected {
    /// The table's identity (`ballista://HOST:PORT/PATH`, or the streamed file's path), as
    /// the ledger and the statement name it.
    pub identity: String,
    pub schema: crate::data::schema::Schema,
    /// Records the engine counted (the data's owner sees this, as a file's row count).
    pub records: usize,
    /// The ledger key a run on these rows is charged to ([`data::engine::EngineTable::survey`]).
    pub content_key: String,
}

/// Connects to the engine table `url` — or, for a CSV or Parquet file's path, to the file
/// read in parts (the window's streamed file: what `dpsynth train --stream` reads) — and
/// surveys it under the public schema at `schema`: the same checks a run makes before
/// anything is spent (every column fits the schema, continuous columns hold numbers), so a
/// wrong schema or an unreachable engine shows when the user connects rather than when
/// they train.
pub fn connect(url: &Path, schema: &Path) -> Result<Connected, JobError> {
    let Some(source) = data::engine::EngineSource::parse(url) else {
        return connect_streamed(url, schema);
    };
    let source = source.map_err(|e| JobError::Usage(e.to_string()))?;
    let identity = source.identity();
    if !data::engine::AVAILABLE {
        return Err(JobError::Usage(format!(
            "{identity}: {}",
            data::engine::ABSENT
        )));
    }
    let schema = given_schema(schema)?;
    let at = |e: &dyn std::fmt::Display| JobError::file(url, e);
    let mut table = data::engine::EngineTable::connect(source).map_err(|e| at(&e))?;
    let survey = table
        .survey(&schema, &Default::default(), &mut || false)
        .map_err(|e| at(&e))?;
    Ok(Connected {
        identity,
        schema,
        records: survey.rows,
        content_key: survey.content_key,
    })
}

/// A CSV or Parquet file surveyed in parts under its public schema (`Scan::survey`, the
/// pass a streamed run makes first): its rows never come into memory at once, and its
/// content key is the one an in-memory open of the same rows computes.
fn connect_streamed(path: &Path, schema: &Path) -> Result<Connected, JobError> {
    let schema = given_schema(schema)?;
    let at = |e: &dyn std::fmt::Display| JobError::file(path, e);
    let scan = data::stream::Scan::open(path, Default::default()).map_err(|e| {
        JobError::Usage(format!(
            "{}: {e} (give a query engine's table, {}, or a CSV or Parquet file to read in parts)",
            path.display(),
            data::engine::URL_FORMS
        ))
    })?;
    let survey = scan
        .survey(&mut |part, before| schema.check_fits_at(part, &[], before))
        .map_err(|e| at(&e))?;
    Ok(Connected {
        identity: path.display().to_string(),
        schema,
        records: survey.rows,
        content_key: survey.content_key,
    })
}

fn given_schema(path: &Path) -> Result<crate::data::schema::Schema, JobError> {
    let schema = crate::data::schema::Schema::load(path).map_err(|e| JobError::file(path, e))?;
    schema
        .validate()
        .map_err(|e| JobError::Usage(e.to_string()))?;
    Ok(schema)
}

/// Whether the window's connection `path` is a file read in parts rather than a query
/// engine's table (its runs set `stream`).
pub fn streamed(path: &Path) -> bool {
    data::engine::EngineSource::parse(path).is_none()
}

/// The ledger's byte key of `path`: the hash of the file's bytes (of its files, for a
/// folder of IDX files), followed by the sheet and header selector when `path` names one
/// (`survey.xlsx#titled@2`): two sheets of one workbook are two datasets.
pub fn byte_key(path: &Path) -> std::io::Result<String> {
    let src = data::source::Source::parse(path);
    let key = crate::privacy::ledger::dataset_key_any(&src.file)?;
    let whole = path.to_string_lossy();
    let file = src.file.to_string_lossy();
    Ok(match whole.strip_prefix(file.as_ref()) {
        Some(selector) if !selector.is_empty() => format!("{key}{selector}"),
        _ => key,
    })
}

/// Tells the ledger at `ledger` that the file's bytes hold these rows, so that asking for
/// the file's key later ([`super::cost::dataset_key`]) needs no parse.
pub fn remember(opened: &Opened, ledger: &Path) -> Result<(), JobError> {
    crate::privacy::ledger::Ledger::open(ledger)?
        .adopt_key(&opened.byte_key, &opened.content_key)?;
    Ok(())
}

/// An opened dataset handed to a run: compared by file and content, shown by file.
#[derive(Clone)]
pub struct Shared(pub Arc<Opened>);

impl PartialEq for Shared {
    fn eq(&self, other: &Self) -> bool {
        self.0.path == other.0.path && self.0.content_key == other.0.content_key
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Shared({})", self.0.path.display())
    }
}
