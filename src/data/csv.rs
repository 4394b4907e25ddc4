//! CSV loading: polars parses, dpsynth checks and explains.
//!
//! Before polars sees the bytes, one cheap pass checks what polars would report badly or
//! not at all: empty files, NUL bytes (binary files), invalid UTF-8, a byte-order mark,
//! ragged rows, unclosed quotes, huge fields and too many columns, each with the line at
//! fault. Polars then reads every column as text; trimming, missing-value tokens and the
//! number/text decision are ours, so the rules are the same for every file.

use std::path::Path;

use polars::prelude::*;

use super::error::DataError;
use super::table::{Column, Table, TextColumn, Values};
use crate::util::fmt::parse_number;

/// Most columns a table may have: wider inputs are almost always a mistake (a transposed
/// file, the wrong delimiter), and the encoded width would explode.
pub const MAX_COLUMNS: usize = 2_000;
/// Longest cell accepted, in bytes.
pub const MAX_FIELD_BYTES: usize = 64 * 1024;

/// How to read a CSV file.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Cells equal to one of these (after trimming) are missing. An empty cell always is.
    pub missing_tokens: Vec<String>,
    /// Field separator; `None` sniffs comma, semicolon, tab or pipe.
    pub delimiter: Option<u8>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            missing_tokens: default_missing_tokens(),
            delimiter: None,
        }
    }
}

/// The tokens treated as missing unless configured otherwise.
pub fn default_missing_tokens() -> Vec<String> {
    ["?", "NA", "N/A", "NaN", "nan", "null", "NULL", "None"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// Loads a CSV file from disk.
pub fn load_csv(path: &Path, opts: &LoadOptions) -> Result<Table, DataError> {
    load_csv_with_progress(path, opts, &mut |_, _| {})
}

/// Loads a CSV file, calling `progress(bytes_read, file_size)` as the bytes come in (the
/// window draws a bar from it; parsing afterwards takes a fraction of the read time).
pub fn load_csv_with_progress(
    path: &Path,
    opts: &LoadOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Table, DataError> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| DataError::io(path, e))?;
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(size as usize);
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut chunk).map_err(|e| DataError::io(path, e))?;
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&chunk[..n]);
        progress(bytes.len() as u64, size.max(bytes.len() as u64));
    }
    parse_csv_bytes(bytes, &path.display().to_string(), opts)
}

/// Parses CSV bytes; `name` is used in messages.
pub fn parse_csv_bytes(bytes: Vec<u8>, name: &str, opts: &LoadOptions) -> Result<Table, DataError> {
    parse(bytes, name, opts, false)
}

/// Parses one part of a CSV file read in parts ([`super::stream`]): the header line and
/// whole records. A part may hold any number of records (a last part only one), so the
/// whole file's count is checked by the caller; set `opts.delimiter` to the file's, so
/// every part reads alike.
pub fn parse_csv_part(bytes: Vec<u8>, name: &str, opts: &LoadOptions) -> Result<Table, DataError> {
    parse(bytes, name, opts, true)
}

/// The separator [`load_csv`] would pick for a file starting with `bytes`.
pub fn delimiter_of(bytes: &[u8], opts: &LoadOptions) -> u8 {
    opts.delimiter.unwrap_or_else(|| sniff_delimiter(bytes))
}

/// Drops a byte-order mark and refuses what is not CSV text (empty, gzip, binary, not UTF-8),
/// naming the line where it goes wrong.
fn check_text(bytes: &mut Vec<u8>, name: &str) -> Result<(), DataError> {
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        bytes.drain(..3);
    }
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(DataError::file(
            name,
            "the file is empty: a CSV needs a header row and data rows",
        ));
    }
    if bytes.starts_with(&[0x1f, 0x8b]) {
        return Err(DataError::file(
            name,
            "this is a gzip-compressed file; decompress it first (only MNIST IDX files may be .gz)",
        ));
    }
    if let Some(pos) = bytes.iter().position(|&b| b == 0) {
        return Err(DataError::file(
            name,
            format!(
                "contains a NUL byte on line {}: this looks like a binary file, not a CSV text file",
                line_of(&bytes, pos)
            ),
        ));
    }
    if let Err(e) = std::str::from_utf8(&bytes) {
        let pos = e.valid_up_to();
        return Err(DataError::file(
            name,
            format!(
                "is not valid UTF-8 (first bad byte on line {}); save the file with UTF-8 encoding",
                line_of(&bytes, pos)
            ),
        ));
    }
    Ok(())
}

/// Polars' reading of the text, every cell as a string (the kinds come from the schema).
fn read_frame(bytes: Vec<u8>, delimiter: u8, name: &str) -> Result<DataFrame, DataError> {
    CsvReadOptions::default()
        .with_has_header(true)
        .with_infer_schema_length(Some(0))
        .with_raise_if_empty(true)
        .map_parse_options(|p| {
            p.with_separator(delimiter)
                .with_quote_char(Some(b'"'))
                .with_missing_is_null(true)
                .with_truncate_ragged_lines(false)
        })
        .into_reader_with_file_handle(std::io::Cursor::new(bytes))
        .finish()
        .map_err(|e| DataError::file(name, format!("could not be parsed as CSV: {e}")))
}

fn parse(
    mut bytes: Vec<u8>,
    name: &str,
    opts: &LoadOptions,
    part: bool,
) -> Result<Table, DataError> {
    check_text(&mut bytes, name)?;
    let delimiter = opts.delimiter.unwrap_or_else(|| sniff_delimiter(&bytes));
    let header = check_structure(&bytes, delimiter, name)?;
    let df = read_frame(bytes, delimiter, name)?;
    let n_rows = df.height();
    if part && n_rows == 0 {
        return Ok(Table::empty(header));
    }
    if n_rows == 0 {
        return Err(DataError::file(name, "has a header but no data rows"));
    }
    if n_rows == 1 && !part {
        return Err(DataError::file(
            name,
            "has only one data row; synthetic data needs a table of many rows",
        ));
    }
    if df.width() != header.len() {
        return Err(DataError::file(
            name,
            format!(
                "the header names {} columns but {} were read",
                header.len(),
                df.width()
            ),
        ));
    }

    // Cells are trimmed and missing tokens mapped to `None` on the fly; polars' columns
    // are dropped one by one as they are converted, so the text and the table are never
    // both whole in memory.
    let tokens = &opts.missing_tokens;
    fn cell<'a>(v: Option<&'a str>, tokens: &[String]) -> Option<&'a str> {
        v.map(str::trim)
            .filter(|s| !s.is_empty() && !tokens.iter().any(|t| t == s))
    }
    let columns_in = df.into_columns();
    // A line with no value at all (a blank line, a trailing newline, a row of bare
    // separators) is not a record: it would train as a row of missing cells and make the
    // same table look different to the ledger.
    // (When nearly every row is empty, all are kept: the schema checks then name the
    // empty columns.)
    let mut keep = vec![false; n_rows];
    for (col, name_h) in columns_in.iter().zip(&header) {
        let strings = text_of(col, name_h, name)?;
        for (k, v) in keep.iter_mut().zip(strings.iter()) {
            *k |= cell(v, tokens).is_some();
        }
    }
    if keep.iter().filter(|k| **k).count() < 2 && !part {
        keep.iter_mut().for_each(|k| *k = true);
    }
    let n_rows = keep.iter().filter(|k| **k).count();
    let mut columns = Vec::with_capacity(header.len());
    for (col, name_h) in columns_in.into_iter().zip(header) {
        let strings = text_of(&col, &name_h, name)?;
        let cells = || {
            strings
                .iter()
                .zip(&keep)
                .filter_map(|(v, k)| k.then(|| cell(v, tokens)))
        };
        let values = to_values(cells, delimiter != b',');
        drop(col);
        columns.push(Column {
            name: name_h,
            values,
        });
    }
    Ok(Table { columns, n_rows })
}

/// A polars column read as text.
fn text_of<'a>(
    col: &'a polars::prelude::Column,
    column: &str,
    name: &str,
) -> Result<&'a StringChunked, DataError> {
    col.str().map_err(|e| {
        DataError::file(
            name,
            format!("column '{column}' could not be read as text: {e}"),
        )
    })
}

/// A column is numeric when every non-missing cell parses as a finite number; else text,
/// dictionary-encoded. `cells` is walked once, twice for a text column that starts with
/// numbers, three times for decimal commas.
///
/// `decimal_commas`: the file is not comma-separated, so `1,5` may be one and a half (the
/// way Excel writes `;`-separated files in much of Europe). A column is read so only when
/// every present cell is a number written with one decimal comma (or none), and no cell
/// uses a decimal point: `1.234,5` style thousands points would be ambiguous and stay text.
fn to_values<'a, I>(cells: impl Fn() -> I, decimal_commas: bool) -> Values
where
    I: Iterator<Item = Option<&'a str>>,
{
    let mut numbers: Vec<Option<f64>> = Vec::new();
    for c in cells() {
        match c {
            None => numbers.push(None),
            Some(s) => match parse_number(s) {
                Some(x) => numbers.push(Some(x)),
                None => {
                    if decimal_commas && let Some(v) = with_decimal_commas(cells()) {
                        return Values::Number(v);
                    }
                    return Values::Text(TextColumn::from_cells(cells()));
                }
            },
        }
    }
    Values::Number(numbers)
}

/// The cells as numbers written with decimal commas (`-1,25`), or `None` when one is not.
fn with_decimal_commas<'a>(
    cells: impl Iterator<Item = Option<&'a str>>,
) -> Option<Vec<Option<f64>>> {
    cells
        .map(|c| match c {
            None => Some(None),
            Some(s) => {
                if s.contains('.') || s.matches(',').count() > 1 {
                    return None;
                }
                let (whole, frac) = s.split_once(',').unwrap_or((s, "0"));
                let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
                let body = whole.strip_prefix('-').unwrap_or(whole);
                (digits(body) && digits(frac))
                    .then(|| parse_number(&format!("{whole}.{frac}")))
                    .flatten()
                    .map(Some)
            }
        })
        .collect()
}

fn line_of(bytes: &[u8], pos: usize) -> usize {
    bytes[..pos.min(bytes.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Picks the candidate separator that splits the first lines into the same number (≥ 2)
/// of fields most consistently; comma when nothing fits.
fn sniff_delimiter(bytes: &[u8]) -> u8 {
    let sample_end = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(50)
        .map(|(i, _)| i)
        .unwrap_or(bytes.len());
    let sample = &bytes[..sample_end];
    let mut best = (b',', 0usize, 0usize); // (delimiter, consistent lines, fields)
    for &d in &[b',', b';', b'\t', b'|'] {
        let counts: Vec<usize> = records(sample, d)
            .filter(|r| !r.blank)
            .map(|r| r.fields.len())
            .collect();
        let Some(&first) = counts.first() else {
            continue;
        };
        if first < 2 {
            continue;
        }
        let agree = counts.iter().filter(|&&c| c == first).count();
        if agree > best.1 || (agree == best.1 && first > best.2) {
            best = (d, agree, first);
        }
    }
    best.0
}

/// One record found by the structural scan.
struct Record {
    line: usize,
    blank: bool,
    fields: Vec<(usize, usize)>,
    unclosed_quote: bool,
}

/// A quote-aware split into records and field byte ranges (no unescaping: polars does
/// that), one record at a time: a tall file is checked without holding its records.
fn records(bytes: &[u8], delim: u8) -> impl Iterator<Item = Record> + '_ {
    let mut i = 0;
    let mut line = 1;
    std::iter::from_fn(move || {
        if i >= bytes.len() {
            return None;
        }
        let start_line = line;
        let mut fields = Vec::new();
        let mut field_start = i;
        let mut in_quotes = false;
        let mut blank = true;
        loop {
            if i >= bytes.len() {
                fields.push((field_start, i));
                break;
            }
            let b = bytes[i];
            if in_quotes {
                if b == b'"' {
                    if bytes.get(i + 1) == Some(&b'"') {
                        i += 1;
                    } else {
                        in_quotes = false;
                    }
                } else if b == b'\n' {
                    line += 1;
                }
            } else if b == b'"' {
                in_quotes = true;
                blank = false;
            } else if b == delim {
                fields.push((field_start, i));
                field_start = i + 1;
                blank = false;
            } else if b == b'\n' {
                let end = if i > field_start && bytes[i - 1] == b'\r' {
                    i - 1
                } else {
                    i
                };
                fields.push((field_start, end));
                line += 1;
                i += 1;
                break;
            } else if !b.is_ascii_whitespace() {
                blank = false;
            }
            i += 1;
        }
        Some(Record {
            line: start_line,
            blank,
            fields,
            unclosed_quote: in_quotes,
        })
    })
}

/// A record's fault that outranks raggedness (it explains it): an unclosed quote or an
/// oversized field.
fn record_fault(r: &Record, name: &str) -> Option<DataError> {
    if r.unclosed_quote {
        return Some(DataError::file(
            name,
            format!(
                "a quoted field that starts on line {} is never closed",
                r.line
            ),
        ));
    }
    r.fields
        .iter()
        .find(|(s, e)| e - s > MAX_FIELD_BYTES)
        .map(|(s, e)| {
            DataError::file(
                name,
                format!(
                    "line {} has a field of {} bytes; the limit is {MAX_FIELD_BYTES} bytes per cell",
                    r.line,
                    e - s
                ),
            )
        })
}

/// Checks the file's shape and returns the header names, in one pass over the records.
fn check_structure(bytes: &[u8], delim: u8, name: &str) -> Result<Vec<String>, DataError> {
    let mut recs = records(bytes, delim);
    let head = loop {
        match recs.next() {
            None => return Err(DataError::file(name, "the file is empty")),
            Some(r) => {
                if let Some(e) = record_fault(&r, name) {
                    return Err(e);
                }
                if !r.blank {
                    break r;
                }
            }
        }
    };
    if head.fields.len() > MAX_COLUMNS {
        return Err(DataError::file(
            name,
            format!(
                "the header has {} columns; dpsynth accepts at most {MAX_COLUMNS} (is the delimiter right?)",
                head.fields.len()
            ),
        ));
    }
    let mut header = Vec::with_capacity(head.fields.len());
    for (k, &(s, e)) in head.fields.iter().enumerate() {
        let raw = String::from_utf8_lossy(&bytes[s..e]);
        let h = raw.trim().trim_matches('"').trim().to_string();
        if h.is_empty() {
            return Err(DataError::file(
                name,
                format!(
                    "column {} of the header (line {}) has no name; every column needs one",
                    k + 1,
                    head.line
                ),
            ));
        }
        if header.contains(&h) {
            return Err(DataError::file(
                name,
                format!(
                    "the header names column '{h}' twice (line {}); column names must be unique",
                    head.line
                ),
            ));
        }
        header.push(h);
    }
    // A ragged row is reported only if no record has a fault that would explain it.
    let mut ragged = None;
    for r in recs {
        if let Some(e) = record_fault(&r, name) {
            return Err(e);
        }
        if ragged.is_none() && !r.blank && r.fields.len() != header.len() {
            ragged = Some(DataError::file(
                name,
                format!(
                    "line {} has {} fields but the header has {} (ragged rows; check quoting and the delimiter)",
                    r.line,
                    r.fields.len(),
                    header.len()
                ),
            ));
        }
    }
    match ragged {
        Some(e) => Err(e),
        None => Ok(header),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Table, DataError> {
        parse_csv_bytes(s.as_bytes().to_vec(), "t.csv", &LoadOptions::default())
    }

    #[test]
    fn sniffs_semicolons_and_trims_spaces() {
        let t = parse("a; b\n 1; x \n2;y\n").unwrap();
        assert_eq!(t.n_cols(), 2);
        assert_eq!(t.columns[1].name, "b");
        assert_eq!(
            t.columns[0].values,
            Values::Number(vec![Some(1.0), Some(2.0)])
        );
        assert_eq!(t.columns[1].text(0).as_deref(), Some("x"));
    }

    #[test]
    fn tabs_quotes_bom_and_missing_tokens() {
        let t = parse("\u{feff}name\tval\n\"a\tb\"\t?\n\"c \"\"q\"\"\"\tNA\nd\t3\n").unwrap();
        assert_eq!(t.columns[0].name, "name");
        assert_eq!(t.columns[0].text(0).as_deref(), Some("a\tb"));
        assert_eq!(t.columns[0].text(1).as_deref(), Some("c \"q\""));
        assert_eq!(
            t.columns[1].values,
            Values::Number(vec![None, None, Some(3.0)])
        );
    }

    #[test]
    fn ragged_rows_name_the_line() {
        let e = parse("a,b\n1,2\n3\n").unwrap_err().to_string();
        assert!(e.contains("line 3"), "{e}");
    }

    #[test]
    fn crlf_line_endings() {
        let t = parse("a,b\r\n1,x\r\n2,y\r\n").unwrap();
        assert_eq!(t.n_rows, 2);
        assert_eq!(t.columns[1].text(1).as_deref(), Some("y"));
    }
}
