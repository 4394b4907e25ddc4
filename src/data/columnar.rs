//! Parquet and Arrow IPC (Feather v2) files, read with polars' own readers: the CSV reader
//! is polars already, so these two formats add no second dataframe library.
//!
//! Numeric columns stay numbers; every other type (text, booleans, dates, categories) is
//! read as the text polars writes for it (`2024-03-01`, `true`), which is what the CSV
//! export of the same frame holds, so the same rules (and the same digest) apply.

use polars::prelude::*;

use super::cells::{Cell, RawColumn};
use super::error::DataError;
use super::source::{Format, Source};

/// The columns of a Parquet or Arrow IPC file.
pub fn read(src: &Source, format: Format) -> Result<Vec<RawColumn>, DataError> {
    let name = src.file.display().to_string();
    let file = std::fs::File::open(&src.file).map_err(|e| DataError::io(&src.file, e))?;
    let df = match format {
        Format::Parquet => ParquetReader::new(file).finish(),
        _ => IpcReader::new(file).finish(),
    }
    .map_err(|e| {
        DataError::file(
            &name,
            format!(
                "could not be read as {} ({e}); is the file complete?",
                format.name()
            ),
        )
    })?;
    let mut out = Vec::with_capacity(df.width());
    for col in df.columns() {
        let s = col.as_materialized_series();
        let cells: Vec<Cell> = if s.dtype().is_primitive_numeric() {
            let f = s
                .cast(&DataType::Float64)
                .map_err(|e| column_error(&name, s.name(), e))?;
            let f = f.f64().map_err(|e| column_error(&name, s.name(), e))?;
            f.iter()
                .map(|v| v.map_or(Cell::Missing, Cell::Number))
                .collect()
        } else {
            let t = s
                .cast(&DataType::String)
                .map_err(|e| column_error(&name, s.name(), e))?;
            let t = t.str().map_err(|e| column_error(&name, s.name(), e))?;
            t.iter()
                .map(|v| v.map_or(Cell::Missing, |x| Cell::Text(x.to_string())))
                .collect()
        };
        out.push(RawColumn {
            name: s.name().to_string(),
            cells,
            codebook: vec![],
        });
    }
    Ok(out)
}

fn column_error(file: &str, column: &str, e: PolarsError) -> DataError {
    DataError::file(
        file,
        format!("column '{column}' has a type dpsynth cannot read as numbers or text ({e})"),
    )
}
