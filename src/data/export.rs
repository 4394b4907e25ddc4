//! Writing a table to CSV, atomically (a reader never sees half a file).

use std::path::Path;

use polars::prelude::*;

use super::error::DataError;
use super::table::{Table, Values};

/// Serialises `t` as CSV: a header, numbers that are whole printed as integers, missing
/// cells empty, text quoted where needed.
pub fn to_csv_bytes(t: &Table) -> Result<Vec<u8>, DataError> {
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
            Values::Number(v) => polars::prelude::Column::new(name, v.as_slice()),
            Values::Text(v) => {
                let s: Vec<Option<&str>> = v.iter().map(|x| x.as_deref()).collect();
                polars::prelude::Column::new(name, s)
            }
        };
        cols.push(col);
    }
    let mut df = DataFrame::new(t.n_rows, cols)
        .map_err(|e| DataError::Schema(format!("cannot build the table: {e}")))?;
    let mut out = Vec::new();
    CsvWriter::new(&mut out)
        .include_header(true)
        .with_separator(b',')
        .finish(&mut df)
        .map_err(|e| DataError::Schema(format!("cannot write CSV: {e}")))?;
    Ok(out)
}

/// Writes `t` to `path` as CSV, atomically.
pub fn write_csv(t: &Table, path: &Path) -> Result<(), DataError> {
    let bytes = to_csv_bytes(t)?;
    crate::util::atomic::write_atomic(path, &bytes).map_err(|e| DataError::io(path, e))
}
