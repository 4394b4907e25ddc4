//! Writing a table to CSV, atomically (a reader never sees half a file).

use std::path::Path;

use polars::prelude::*;

use super::error::DataError;
use super::table::{Table, Values};

/// Serialises `t` as CSV: a header, numbers that are whole printed as integers, missing
/// cells empty, text quoted where needed.
pub fn to_csv_bytes(t: &Table) -> Result<Vec<u8>, DataError> {
    csv_bytes(t, true)
}

/// [`to_csv_bytes`], with or without the header line (the chunks after a stream's first).
pub fn csv_bytes(t: &Table, header: bool) -> Result<Vec<u8>, DataError> {
    let mut cols: Vec<polars::prelude::Column> = Vec::with_capacity(t.n_cols());
    for c in &t.columns {
        let name = PlSmallStr::from(c.name.as_str());
        let col = match &c.values {
            Values::Number(v)
                if v.iter()
                    .flatten()
                    .all(|x| x.fract() == 0.0 && x.abs() < 9e15) =>
            {
                let ints: Vec<Option<i64>> = v.iter().map(|x| x.map(|x| x as i64)).collect();
                polars::prelude::Column::new(name, ints)
            }
            // Each cell as a person writes it: a point mass 0 beside fractions is "0", not
            // "0.0" (a reader comparing text, or a first look, sees the same value).
            Values::Number(v) => {
                let s: Vec<Option<String>> =
                    v.iter().map(|x| x.map(crate::util::fmt::number)).collect();
                polars::prelude::Column::new(name, s)
            }
            Values::Text(v) => {
                let s: Vec<Option<&str>> = v.iter().collect();
                polars::prelude::Column::new(name, s)
            }
        };
        cols.push(col);
    }
    let mut df = DataFrame::new(t.n_rows, cols)
        .map_err(|e| DataError::Schema(format!("cannot build the table: {e}")))?;
    let mut out = Vec::new();
    CsvWriter::new(&mut out)
        .include_header(header)
        .with_separator(b',')
        .finish(&mut df)
        .map_err(|e| DataError::Schema(format!("cannot write CSV: {e}")))?;
    Ok(out)
}

/// Writes a table that arrives in chunks to `path` as one CSV, atomically: `produce` is
/// called with a sink that takes each chunk in order, so memory holds one chunk at a time
/// however long the file grows. Returns the rows written.
pub fn write_csv_stream<E>(
    path: &Path,
    produce: impl FnOnce(&mut dyn FnMut(Table) -> Result<(), E>) -> Result<(), E>,
) -> Result<usize, StreamError<E>> {
    let mut rows = 0usize;
    let mut failed: Option<E> = None;
    let written = crate::util::atomic::write_atomic_with(path, |out| {
        let mut first = true;
        let mut io_err: Option<std::io::Error> = None;
        let mut sink = |t: Table| -> Result<(), E> {
            if io_err.is_some() {
                return Ok(());
            }
            let r = csv_bytes(&t, first)
                .map_err(std::io::Error::other)
                .and_then(|b| out.write_all(&b));
            match r {
                Ok(()) => {
                    first = false;
                    rows += t.n_rows;
                }
                Err(e) => io_err = Some(e),
            }
            Ok(())
        };
        if let Err(e) = produce(&mut sink) {
            failed = Some(e);
            return Err(std::io::Error::other("the rows could not be produced"));
        }
        match io_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    });
    match (failed, written) {
        (Some(e), _) => Err(StreamError::Produce(e)),
        (None, Err(e)) => Err(StreamError::Write(DataError::io(path, e))),
        (None, Ok(())) => Ok(rows),
    }
}

/// Why a streamed CSV was not written (the file is then left as it was).
#[derive(Debug)]
pub enum StreamError<E> {
    /// Making the rows failed.
    Produce(E),
    /// Writing them failed (disk full, no permission, …).
    Write(DataError),
}

/// Writes `t` to `path` as CSV, atomically.
pub fn write_csv(t: &Table, path: &Path) -> Result<(), DataError> {
    let bytes = to_csv_bytes(t)?;
    crate::util::atomic::write_atomic(path, &bytes).map_err(|e| DataError::io(path, e))
}
