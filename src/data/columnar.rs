//! Parquet and Arrow IPC (Feather v2) files, read with polars' own readers: the CSV reader
//! is polars already, so these two formats add no second dataframe library.
//!
//! Numeric columns stay numbers; every other type (text, booleans, dates, times,
//! categories) is read as the text polars writes for it (`2024-03-01`, `true`,
//! `2024-03-01 10:37:00.250000`), which is what the CSV export of the same frame holds, so
//! the same rules (and the same digest) apply. Polars reads dates and times only with its
//! `dtype-date` and `dtype-datetime` features: without them any file holding one was
//! refused as damaged.

use polars::prelude::*;

use super::cells::{Cell, RawColumn};
use super::error::DataError;
use super::source::{Format, Source};

/// The program that reads a columnar file once in a child process before this process
/// reads it (set by the `dpsynth` binary at start; tests and library callers read
/// in-process only).
static CHECKER: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// The hidden subcommand [`CHECKER`] runs: `dpsynth __check-columnar FILE`.
pub const CHECK_COMMAND: &str = "__check-columnar";

/// Has every later [`read`] try the file first in `exe __check-columnar FILE`.
///
/// Why a child process: polars sizes buffers from what a Parquet page or an IPC message
/// declares, and a crafted file can ask for 2⁶¹ bytes. That is an allocation failure,
/// which Rust turns into an abort (not a panic: `catch_unwind` cannot stop it), taking the
/// window and any unsaved work with it. A child that dies instead says only "this file is
/// damaged". The file is read twice; Parquet and IPC read at hundreds of MB a second, so
/// the check costs less than the rest of opening a file.
pub fn check_in_child_process(exe: std::path::PathBuf) {
    let _ = CHECKER.set(exe);
}

/// The columns of a Parquet or Arrow IPC file.
pub fn read(src: &Source, format: Format) -> Result<Vec<RawColumn>, DataError> {
    if let Some(exe) = CHECKER.get() {
        check_in_child(exe, src, format)?;
    }
    read_here(src, format)
}

/// Reads the file in a child: exit 0 (read) or [`CHECK_FAILED`] (a clean error, which
/// reading here reproduces with its message) let this process read it; anything else (an
/// abort, a signal) means the reader crashed on it.
fn check_in_child(exe: &std::path::Path, src: &Source, format: Format) -> Result<(), DataError> {
    let name = src.file.display().to_string();
    let status = std::process::Command::new(exe)
        .arg(CHECK_COMMAND)
        .arg(&src.file)
        .env("DPSYNTH_HANDOFF", "0")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    match status {
        // The checker could not start (moved binary, no process slots): read here as before.
        Err(_) => Ok(()),
        Ok(s) if s.success() || s.code() == Some(CHECK_FAILED) => Ok(()),
        Ok(_) => Err(DataError::file(
            &name,
            format!(
                "could not be read as {}: the reader crashed on it, so the file is damaged or was made to crash readers (nothing was read)",
                format.name()
            ),
        )),
    }
}

/// The exit status of `__check-columnar` for a file that gave a clean error.
pub const CHECK_FAILED: i32 = 3;

/// Reads `file` in this process, for `dpsynth __check-columnar`: exit 0 when it reads,
/// [`CHECK_FAILED`] when it gives an error (an abort speaks for itself).
pub fn check_here(file: &std::path::Path) -> i32 {
    let src = Source {
        file: file.to_path_buf(),
        sheet: None,
        header_row: None,
    };
    match read_here(&src, super::source::detect(file)) {
        Ok(_) => 0,
        Err(_) => CHECK_FAILED,
    }
}

/// [`read`] without the child process.
fn read_here(src: &Source, format: Format) -> Result<Vec<RawColumn>, DataError> {
    let name = src.file.display().to_string();
    let file = std::fs::File::open(&src.file).map_err(|e| DataError::io(&src.file, e))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    // polars panics on some malformed footers (an `unwrap` on a thrift error); a damaged
    // file is an error here, not the end of the program.
    let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match format {
        Format::Parquet => {
            let mut reader = ParquetReader::new(file);
            check_parquet_sizes(&mut reader, size, &name, super::cells::MAX_ROWS)
                .map(|_| reader.finish())
        }
        _ => Ok(IpcReader::new(file).finish()),
    }))
    .map_err(|_| {
        DataError::file(
            &name,
            format!(
                "could not be read as {}: the file is damaged",
                format.name()
            ),
        )
    })??;
    let df = read.map_err(|e| {
        DataError::file(
            &name,
            format!(
                "could not be read as {} ({e}); is the file complete?",
                format.name()
            ),
        )
    })?;
    frame_columns(&df, &name)
}

/// A polars frame's columns as cells, by the rules in the module's doc.
pub(super) fn frame_columns(df: &DataFrame, name: &str) -> Result<Vec<RawColumn>, DataError> {
    let mut out = Vec::with_capacity(df.width());
    for col in df.columns() {
        let s = col.as_materialized_series();
        let cells: Vec<Cell> = if s.dtype().is_primitive_numeric() {
            let f = s
                .cast(&DataType::Float64)
                .map_err(|e| column_error(name, s.name(), e))?;
            let f = f.f64().map_err(|e| column_error(name, s.name(), e))?;
            f.iter()
                .map(|v| v.map_or(Cell::Missing, Cell::Number))
                .collect()
        } else {
            let t = s
                .cast(&DataType::String)
                .map_err(|e| column_error(name, s.name(), e))?;
            let t = t.str().map_err(|e| column_error(name, s.name(), e))?;
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

/// Refuses a Parquet file whose footer declares more than it can hold, before polars reads
/// the data: polars sizes its buffers from the footer, and an impossible size aborts the
/// process instead of failing (found by `dpsynth fuzz --target columnar`). A file of more
/// than `max_rows` rows is refused too (a streamed scan allows any number).
pub(super) fn check_parquet_sizes(
    reader: &mut ParquetReader<std::fs::File>,
    file_size: u64,
    name: &str,
    max_rows: usize,
) -> Result<(), DataError> {
    let damaged = |what: String| {
        DataError::file(
            name,
            format!("could not be read as Parquet: {what}; is the file complete?"),
        )
    };
    let meta = reader
        .get_metadata()
        .map_err(|e| damaged(e.to_string()))?
        .clone();
    if meta.num_rows > max_rows {
        return Err(DataError::file(
            name,
            format!(
                "has {} rows; dpsynth reads at most {max_rows} in memory (sample or split it, or train MST or AIM with --stream)",
                meta.num_rows,
            ),
        ));
    }
    // A page decompresses to at most this many times its size (zstd and snappy stay far
    // below it on real data).
    const MAX_RATIO: i64 = 1_000;
    for rg in &meta.row_groups {
        if rg.num_rows() > meta.num_rows.max(1) {
            return Err(damaged("a row group holds more rows than the file".into()));
        }
        for c in rg.parquet_columns() {
            let r = c.byte_range();
            let (comp, uncomp) = (c.compressed_size(), c.uncompressed_size());
            if r.end > file_size
                || r.start > r.end
                || comp < 0
                || uncomp < 0
                || uncomp > comp.saturating_mul(MAX_RATIO).max(1 << 20)
            {
                return Err(damaged(
                    "a column chunk's declared size does not fit the file".into(),
                ));
            }
        }
    }
    Ok(())
}

fn column_error(file: &str, column: &str, e: PolarsError) -> DataError {
    DataError::file(
        file,
        format!("column '{column}' has a type dpsynth cannot read as numbers or text ({e})"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for `dpsynth __check-columnar` that ends the way the real one does on
    /// such a file: by `sh -c`'s script, with the given exit or signal.
    #[cfg(unix)]
    fn checker(dir: &std::path::Path, body: &str) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt as _;
        let p = dir.join("checker.sh");
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[cfg(unix)]
    #[test]
    fn a_reader_that_dies_in_the_child_is_an_error_and_a_clean_refusal_is_left_to_this_process() {
        let dir = tempfile::tempdir().unwrap();
        let src = Source {
            file: dir.path().join("x.parquet"),
            sheet: None,
            header_row: None,
        };
        // An allocation failure aborts (SIGABRT): the file is refused, the caller lives.
        let aborts = checker(dir.path(), "kill -ABRT $$");
        let e = check_in_child(&aborts, &src, Format::Parquet)
            .unwrap_err()
            .to_string();
        assert!(e.contains("the reader crashed on it"), "{e}");
        let dies = checker(dir.path(), "exit 134");
        assert!(check_in_child(&dies, &src, Format::ArrowIpc).is_err());
        // Read, or refused with a message that reading here gives: this process goes on.
        for fine in ["exit 0", &format!("exit {CHECK_FAILED}")] {
            let c = checker(dir.path(), fine);
            assert!(check_in_child(&c, &src, Format::Parquet).is_ok(), "{fine}");
        }
        // A checker that cannot start leaves the reading to this process, as before.
        assert!(check_in_child(&dir.path().join("absent"), &src, Format::Parquet).is_ok());
    }

    #[test]
    fn the_check_command_answers_with_its_exit_status() {
        let formats = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/formats");
        assert_eq!(check_here(&formats.join("small.parquet")), 0);
        assert_eq!(check_here(&formats.join("small.arrow")), 0);
        assert_eq!(
            check_here(&formats.join("bad/truncated.parquet")),
            CHECK_FAILED
        );
    }
}
