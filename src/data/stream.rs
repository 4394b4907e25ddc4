//! A table file read in parts, for the methods that need only counts of its rows (MST and
//! AIM): memory stays bounded by one part whatever the row count.
//!
//! Each part goes through the very readers and rules a whole file does
//! ([`super::csv::parse_csv_part`], [`super::cells::finish_part`]), so a part's rows are
//! the whole table's rows, cell for cell: the same digest ([`super::digest::TableDigest`]
//! sums per-row hashes), the same encoding, the same counts. What a part cannot see is
//! the whole column: a column read as numbers in one part and as text in another is
//! still one column to the digest (a number written as text reads as that number), but
//! a decimal-comma column (`1,5` in a `;` file) that is text in the whole file could be
//! numbers in a part. Such a file is keyed apart from its whole-file read, so its budget
//! is split; train it in memory, or write it with decimal points.
//!
//! Why polars' readers and not its lazy engine: a part is one call of the same reader the
//! whole-file path uses (CSV bytes cut at record ends; a Parquet row slice, which polars
//! answers from the row groups that hold it), so both paths share every rule by
//! construction, and the build does not take in polars' query engine (minutes of compile
//! time on two cores) for a filter-free scan.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use polars::prelude::*;

use super::cells;
use super::csv::{LoadOptions, delimiter_of, parse_csv_part};
use super::digest::TableDigest;
use super::encode::{EncodedData, Encoding};
use super::error::DataError;
use super::schema::Kind;
use super::source::{Format, Source, detect};
use super::table::Table;

/// Rows in one part (the default): with ten text columns about 100 MB of cells before
/// encoding.
pub const PART_ROWS: usize = 1 << 18;
/// Bytes read from a CSV file at a time.
const READ_BYTES: usize = 8 << 20;

/// A file to be read in parts.
#[derive(Debug, Clone)]
pub struct Scan {
    pub file: PathBuf,
    format: Format,
    opts: LoadOptions,
    /// Rows per part (a CSV part may hold fewer records: blank lines count).
    pub part_rows: usize,
}

/// What a pass over every column found.
#[derive(Debug, Clone)]
pub struct Survey {
    /// Records in the file (rows with no value at all are not records, as when read whole).
    pub rows: usize,
    /// The content key of the whole table ([`super::digest::table_key`] of it read whole).
    pub content_key: String,
    /// The columns, as read.
    pub columns: Vec<String>,
    /// The file's size and time when it was surveyed.
    pub stamp: FileStamp,
}

/// A streamed run reads its file twice — the survey that keys the ledger, then the
/// counting pass — and the budget it charges is the surveyed content's: rows that changed
/// in between would be counted under another dataset's key. So each pass checks the
/// file's stamp and refuses a file that changed.
pub use crate::util::file_stamp::FileStamp;

fn stamp_of(path: &Path) -> Result<FileStamp, DataError> {
    FileStamp::of(path).map_err(|e| DataError::io(path, e))
}

/// An error unless `path` still has `stamp`.
fn check_stamp(stamp: &FileStamp, path: &Path) -> Result<(), DataError> {
    if stamp_of(path)? == *stamp {
        return Ok(());
    }
    Err(DataError::file(
        &path.display().to_string(),
        "changed while the run read it (its size or modification time differs from when its rows were surveyed to key the privacy budget): nothing was released; run again on the file as it is now",
    ))
}

impl Scan {
    /// A scan of `path`: a CSV (or other delimited text) or a Parquet file.
    pub fn open(path: &Path, opts: LoadOptions) -> Result<Self, DataError> {
        let src = Source::parse(path);
        let name = path.display().to_string();
        if src.sheet.is_some() || src.header_row.is_some() || !src.file.is_file() {
            return Err(DataError::io(
                &src.file,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
            ));
        }
        let format = detect(&src.file);
        if !matches!(format, Format::Csv | Format::Parquet) {
            return Err(DataError::file(
                &name,
                format!(
                    "is {}: a streamed run reads CSV and Parquet files (save it as one of those, or train in memory without --stream)",
                    format.name()
                ),
            ));
        }
        Ok(Self {
            file: src.file,
            format,
            opts,
            part_rows: PART_ROWS,
        })
    }

    fn name(&self) -> String {
        self.file.display().to_string()
    }

    /// Calls `each` with every part in file order, holding the `columns` named (matched
    /// after trimming, as a whole read names them), or every column. Returns the rows.
    pub fn for_each(
        &self,
        columns: Option<&[String]>,
        each: &mut dyn FnMut(Table) -> Result<(), DataError>,
    ) -> Result<usize, DataError> {
        let mut rows = 0usize;
        let mut counted = |t: Table| {
            rows += t.n_rows;
            each(t)
        };
        match self.format {
            Format::Parquet => self.parquet_parts(columns, &mut counted)?,
            _ => self.csv_parts(columns, &mut counted)?,
        }
        Ok(rows)
    }

    /// One pass over every column: the record count and the content key, with `check`
    /// called on each part (the schema's checks, before anything is reserved).
    pub fn survey(
        &self,
        check: &mut dyn FnMut(&Table, usize) -> Result<(), DataError>,
    ) -> Result<Survey, DataError> {
        let stamp = stamp_of(&self.file)?;
        let mut digest: Option<TableDigest> = None;
        let mut columns = Vec::new();
        let mut before = 0;
        let rows = self.for_each(None, &mut |t| {
            check(&t, before)?;
            before += t.n_rows;
            let d = digest.get_or_insert_with(|| {
                columns = t.columns.iter().map(|c| c.name.clone()).collect();
                TableDigest::new(&t)
            });
            d.add(&t);
            Ok(())
        })?;
        check_stamp(&stamp, &self.file)?;
        let name = self.name();
        match (digest, rows) {
            (_, 0) | (None, _) => Err(DataError::file(&name, "has a header but no data rows")),
            (_, 1) => Err(DataError::file(
                &name,
                "has only one data row; synthetic data needs a table of many rows",
            )),
            (Some(d), rows) => Ok(Survey {
                rows,
                content_key: d.finish(),
                columns,
                stamp,
            }),
        }
    }

    /// The CSV in parts of [`Self::part_rows`] records, cut after a line end outside
    /// quotes, each parsed with the header line in front of it.
    fn csv_parts(
        &self,
        columns: Option<&[String]>,
        each: &mut dyn FnMut(Table) -> Result<(), DataError>,
    ) -> Result<(), DataError> {
        let name = self.name();
        let mut f = std::fs::File::open(&self.file).map_err(|e| DataError::io(&self.file, e))?;
        let mut opts = self.opts.clone();
        let mut header: Option<Vec<u8>> = None;
        let mut buf: Vec<u8> = Vec::new();
        let mut block = vec![0u8; READ_BYTES];
        // How far `buf` is scanned, whether that point is inside quotes, and how many
        // records end before it.
        let (mut scanned, mut quoted, mut records) = (0usize, false, 0usize);
        let mut emit = |bytes: &[u8], header: &[u8], opts: &LoadOptions| -> Result<(), DataError> {
            if bytes.iter().all(u8::is_ascii_whitespace) {
                return Ok(());
            }
            let mut part = header.to_vec();
            if !part.ends_with(b"\n") {
                part.push(b'\n');
            }
            part.extend_from_slice(bytes);
            each(project(parse_csv_part(part, &name, opts)?, columns))
        };
        loop {
            let k = read_full(&mut f, &mut block).map_err(|e| DataError::io(&self.file, e))?;
            buf.extend_from_slice(&block[..k]);
            let eof = k < block.len();
            if header.is_none() {
                if buf.starts_with(&[0xEF, 0xBB, 0xBF]) {
                    buf.drain(..3);
                }
                let end = match record_ends(&buf).next() {
                    Some(e) => e + 1,
                    None if eof => buf.len(),
                    None => continue,
                };
                opts.delimiter = Some(delimiter_of(&buf, &opts));
                header = Some(buf.drain(..end).collect());
            }
            let head = header.as_deref().unwrap_or_default();
            let mut i = scanned;
            while i < buf.len() {
                match buf[i] {
                    b'"' => quoted = !quoted,
                    b'\n' if !quoted => {
                        records += 1;
                        if records == self.part_rows.max(1) {
                            emit(&buf[..=i], head, &opts)?;
                            buf.drain(..=i);
                            (i, records) = (0, 0);
                            continue;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            scanned = buf.len();
            if eof {
                return emit(&buf, head, &opts);
            }
        }
    }

    /// The Parquet file in row slices of [`Self::part_rows`], only the columns asked for.
    fn parquet_parts(
        &self,
        columns: Option<&[String]>,
        each: &mut dyn FnMut(Table) -> Result<(), DataError>,
    ) -> Result<(), DataError> {
        let name = self.name();
        let damaged = || {
            DataError::file(
                &name,
                "could not be read as Parquet: the file is damaged".to_string(),
            )
        };
        let open = || std::fs::File::open(&self.file).map_err(|e| DataError::io(&self.file, e));
        let file = open()?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        let mut reader = ParquetReader::new(file);
        let (rows, names) =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> Result<_, DataError> {
                super::columnar::check_parquet_sizes(&mut reader, size, &name, usize::MAX)?;
                let rows = reader.num_rows().map_err(|e| read_error(&name, e))?;
                let schema = reader.schema().map_err(|e| read_error(&name, e))?;
                let names: Vec<String> = schema.iter_names().map(|n| n.to_string()).collect();
                Ok((rows, names))
            }))
            .map_err(|_| damaged())??;
        let keep: Option<Vec<String>> = columns.map(|want| {
            names
                .iter()
                .filter(|n| want.iter().any(|w| w.trim() == n.trim()))
                .cloned()
                .collect()
        });
        let step = self.part_rows.max(1);
        let mut at = 0;
        while at < rows {
            let len = step.min(rows - at);
            let file = open()?;
            let df = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                ParquetReader::new(file)
                    .with_columns(keep.clone())
                    .with_slice(Some((at, len)))
                    .finish()
            }))
            .map_err(|_| damaged())?
            .map_err(|e| read_error(&name, e))?;
            let raw = super::columnar::frame_columns(&df, &name)?;
            drop(df);
            each(cells::finish_part(&name, raw, &self.opts)?)?;
            at += len;
        }
        Ok(())
    }
}

/// Where the rows of a run that does not hold them are.
#[derive(Debug, Clone)]
pub enum RowsFrom {
    /// A file here, read in parts.
    File(Scan),
    /// A table a query engine holds: the method asks it for grouped counts
    /// ([`super::engine`]), never for rows.
    Engine(std::sync::Arc<super::engine::EngineTable>),
}

/// A scan whose parts come out encoded by a run's encoding: what a counting method reads
/// instead of the rows in memory. Only the schema's columns are read.
#[derive(Debug, Clone)]
pub struct EncodedScan {
    pub from: RowsFrom,
    pub encoding: Encoding,
    /// Records in the file, from the survey that checked it.
    pub rows: usize,
    /// A file's stamp at the survey (`None` for an engine table).
    pub stamp: Option<FileStamp>,
}

impl EncodedScan {
    /// Rows held in memory at once while counting.
    pub fn rows_held(&self) -> usize {
        match &self.from {
            RowsFrom::File(scan) => self.rows.min(scan.part_rows),
            RowsFrom::Engine(_) => 0,
        }
    }

    /// Where the rows are, in words.
    pub fn name(&self) -> String {
        match &self.from {
            RowsFrom::File(scan) => scan.file.display().to_string(),
            RowsFrom::Engine(t) => t.source.identity(),
        }
    }

    /// Calls `each` with every part of a file, encoded; returns the rows read. (An engine
    /// table is never read row by row.)
    pub fn for_each(
        &self,
        each: &mut dyn FnMut(&EncodedData) -> Result<(), DataError>,
    ) -> Result<usize, DataError> {
        let RowsFrom::File(scan) = &self.from else {
            return Err(DataError::file(
                &self.name(),
                "an engine table is counted by the engine, not read in parts",
            ));
        };
        let columns: Vec<String> = self
            .encoding
            .schema
            .columns
            .iter()
            .filter(|c| c.kind != Kind::Ignored)
            .map(|c| c.name.clone())
            .collect();
        let check =
            |s: &Option<FileStamp>| s.as_ref().map_or(Ok(()), |s| check_stamp(s, &scan.file));
        check(&self.stamp)?;
        let rows = scan.for_each(Some(&columns), &mut |t| each(&self.encoding.encode(&t)?))?;
        check(&self.stamp)?;
        if rows != self.rows {
            return Err(DataError::file(
                &self.name(),
                format!(
                    "held {} records when surveyed and {rows} now: nothing was released; run again on the file as it is now",
                    self.rows
                ),
            ));
        }
        Ok(rows)
    }
}

fn read_error(name: &str, e: PolarsError) -> DataError {
    DataError::file(
        name,
        format!("could not be read as Parquet ({e}); is the file complete?"),
    )
}

/// Keeps the `columns` named (all when `None`).
fn project(t: Table, columns: Option<&[String]>) -> Table {
    match columns {
        None => t,
        Some(want) => t.keep_columns(|n| want.iter().any(|w| w.trim() == n.trim())),
    }
}

/// Fills `block` from `f` unless the file ends first; returns the bytes read.
fn read_full(f: &mut std::fs::File, block: &mut [u8]) -> std::io::Result<usize> {
    let mut at = 0;
    while at < block.len() {
        match f.read(&mut block[at..]) {
            Ok(0) => break,
            Ok(k) => at += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(at)
}

/// The positions of the line ends outside quotes in `bytes`, which starts at a record's
/// start (RFC 4180: a quote opens or closes a quoted field, a doubled quote inside one
/// toggles twice).
fn record_ends(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let mut quoted = false;
    bytes.iter().enumerate().filter_map(move |(i, b)| match b {
        b'"' => {
            quoted = !quoted;
            None
        }
        b'\n' if !quoted => Some(i),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// A CSV read in tiny parts (quoted line breaks, a BOM, a blank line, no
    /// final newline) is the whole file's rows: the same count and content key.
    #[test]
    fn csv_parts_are_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let text = "\u{feff}a,b,c\n1,\"x\ny\",3\n2,\"q,\"\"r\",4\n\n5,z,6\n7,,8\n9,w,10";
        let p = write(dir.path(), "t.csv", text);
        let whole = crate::data::csv::load_csv(&p, &Default::default()).unwrap();
        for part_rows in [1, 2, 3, 5, 1 << 20] {
            let mut scan = Scan::open(&p, Default::default()).unwrap();
            scan.part_rows = part_rows;
            let s = scan.survey(&mut |_, _| Ok(())).unwrap();
            assert_eq!(s.rows, whole.n_rows, "part_rows {part_rows}");
            assert_eq!(
                s.content_key,
                crate::data::digest::table_key(&whole),
                "part_rows {part_rows}"
            );
            let mut seen = Vec::new();
            scan.for_each(Some(&["b".to_string()]), &mut |t| {
                assert_eq!(t.n_cols(), 1);
                seen.extend((0..t.n_rows).map(|r| t.columns[0].text(r)));
                Ok(())
            })
            .unwrap();
            let want: Vec<_> = (0..whole.n_rows)
                .map(|r| whole.column("b").unwrap().text(r))
                .collect();
            assert_eq!(seen, want, "part_rows {part_rows}");
        }
    }

    /// A file that changes between the survey that keys the budget and the counting pass
    /// is refused, whether its size or only its time moved.
    #[test]
    fn a_file_changed_after_its_survey_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "t.csv", "a,b\n1,x\n2,y\n3,z\n");
        let scan = Scan::open(&p, Default::default()).unwrap();
        let survey = scan.survey(&mut |_, _| Ok(())).unwrap();
        let schema: crate::data::schema::Schema = serde_json::from_str(
            r#"{"columns":[{"name":"a","kind":"continuous","domain":{"bounds":{"lower":0,"upper":9}}},
            {"name":"b","kind":"categorical","domain":{"categories":["x","y","z"]}}]}"#,
        )
        .unwrap();
        let encoded = EncodedScan {
            from: RowsFrom::File(scan),
            encoding: Encoding::new(&schema).unwrap(),
            rows: survey.rows,
            stamp: Some(survey.stamp),
        };
        assert_eq!(encoded.for_each(&mut |_| Ok(())).unwrap(), 3);
        // One more person.
        std::fs::write(&p, "a,b\n1,x\n2,y\n3,z\n4,x\n").unwrap();
        let e = encoded.for_each(&mut |_| Ok(())).unwrap_err();
        assert!(
            e.to_string().contains("changed while the run read it"),
            "{e}"
        );
        // The same size, another time: refused too.
        std::fs::write(&p, "a,b\n1,x\n2,y\n3,z\n").unwrap();
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert!(encoded.for_each(&mut |_| Ok(())).is_err());
    }

    /// Errors stay errors: a ragged record in a later part, a file with no rows, a format
    /// a scan does not read.
    #[test]
    fn bad_files_are_refused_with_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "r.csv", "a,b\n1,2\n3,4\n5,6,7\n");
        let mut scan = Scan::open(&p, Default::default()).unwrap();
        scan.part_rows = 1;
        assert!(scan.survey(&mut |_, _| Ok(())).is_err());
        let p = write(dir.path(), "e.csv", "a,b\n");
        let e = Scan::open(&p, Default::default())
            .unwrap()
            .survey(&mut |_, _| Ok(()))
            .unwrap_err();
        assert!(e.to_string().contains("no data rows"), "{e}");
        let p = write(dir.path(), "x.xlsx", "PK\u{3}\u{4}not really");
        assert!(Scan::open(&p, Default::default()).is_err());
        assert!(Scan::open(&dir.path().join("none.csv"), Default::default()).is_err());
    }
}
