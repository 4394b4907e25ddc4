//! Which file, which part of it, and what format: the one place a `--data` path is read.
//!
//! A path may name a sheet of a workbook and the row its header is on, after the file:
//! `survey.xlsx#Wave 2` or `survey.xlsx#Wave 2:3` (header on row 3, counted from 1 as a
//! spreadsheet shows it). The selector travels inside the path string, so a run's
//! configuration, the ledger, recent files and a resumed run all remember it without a
//! second setting. A file whose own name contains `#` is taken as it is: the selector is
//! split off only when the whole string is not an existing file.
//!
//! The format comes from the content first (a Parquet file renamed `.csv` still reads as
//! Parquet) and the extension second.

use std::path::{Path, PathBuf};

/// A data path split into the file and what to read of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub file: PathBuf,
    /// The sheet of a workbook; `None`: the first sheet that holds any cell.
    pub sheet: Option<String>,
    /// The header's row, counted from 1; `None`: the first row that is not blank.
    pub header_row: Option<usize>,
}

impl Source {
    /// Splits `path` into the file and its selector (see the module's doc).
    pub fn parse(path: &Path) -> Self {
        let plain = Self {
            file: path.to_path_buf(),
            sheet: None,
            header_row: None,
        };
        if path.exists() {
            return plain;
        }
        let text = path.to_string_lossy();
        let Some((file, selector)) = text.rsplit_once('#') else {
            return plain;
        };
        let (sheet, header_row) = match selector.rsplit_once(':') {
            Some((s, row)) if !row.is_empty() && row.bytes().all(|b| b.is_ascii_digit()) => {
                (s, row.parse().ok())
            }
            _ => (selector, None),
        };
        Self {
            file: PathBuf::from(file),
            sheet: (!sheet.is_empty()).then(|| sheet.to_string()),
            header_row,
        }
    }

    /// The path string naming this source (the inverse of [`Self::parse`]).
    pub fn to_path(&self) -> PathBuf {
        match (&self.sheet, self.header_row) {
            (None, None) => self.file.clone(),
            (sheet, row) => {
                let mut s = self.file.to_string_lossy().into_owned();
                s.push('#');
                s.push_str(sheet.as_deref().unwrap_or(""));
                if let Some(r) = row {
                    s.push_str(&format!(":{r}"));
                }
                PathBuf::from(s)
            }
        }
    }
}

/// The kinds of file a table can come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Delimited text: comma, semicolon, tab or pipe (CSV, TSV, `.txt`).
    Csv,
    /// A workbook: `.xlsx`, `.xlsm`, `.xlsb`, `.xls` or OpenDocument `.ods`.
    Workbook,
    Parquet,
    /// Arrow IPC (Feather v2): `.arrow`, `.feather`, `.ipc`.
    ArrowIpc,
    /// SPSS `.sav` / `.zsav`.
    Spss,
    /// Stata `.dta`.
    Stata,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Csv => "CSV",
            Format::Workbook => "spreadsheet",
            Format::Parquet => "Parquet",
            Format::ArrowIpc => "Arrow IPC",
            Format::Spss => "SPSS",
            Format::Stata => "Stata",
        }
    }
}

/// The extensions the Open dialog offers for tables (without the dot).
pub const TABLE_EXTENSIONS: &[&str] = &[
    "csv", "tsv", "txt", "xlsx", "xlsm", "xlsb", "xls", "ods", "parquet", "arrow", "feather",
    "ipc", "sav", "zsav", "dta",
];

/// The format of `file`, by its first bytes, else its extension; CSV when neither says.
pub fn detect(file: &Path) -> Format {
    let mut head = [0u8; 8];
    let n = std::fs::File::open(file)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .unwrap_or(0);
    let head = &head[..n];
    if head.starts_with(b"PAR1") {
        return Format::Parquet;
    }
    if head.starts_with(b"ARROW1") {
        return Format::ArrowIpc;
    }
    if head.starts_with(b"$FL2") || head.starts_with(b"$FL3") {
        return Format::Spss;
    }
    if head.starts_with(b"<stata_dta>") || head.starts_with(b"<stata") {
        return Format::Stata;
    }
    let ext = file
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match ext.as_str() {
        "xlsx" | "xlsm" | "xlsb" | "xls" | "xla" | "xlam" | "ods" => Format::Workbook,
        "parquet" | "pq" => Format::Parquet,
        "arrow" | "feather" | "ipc" => Format::ArrowIpc,
        "sav" | "zsav" => Format::Spss,
        "dta" => Format::Stata,
        // A zip (xlsx, ods) or an OLE compound file (xls) under another name.
        _ if head.starts_with(b"PK\x03\x04") || head.starts_with(&[0xD0, 0xCF, 0x11, 0xE0]) => {
            Format::Workbook
        }
        _ => Format::Csv,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selector_splits_off_only_when_the_path_is_not_a_file() {
        let s = Source::parse(Path::new("/no/such/book.xlsx#Wave 2:3"));
        assert_eq!(s.file, PathBuf::from("/no/such/book.xlsx"));
        assert_eq!(s.sheet.as_deref(), Some("Wave 2"));
        assert_eq!(s.header_row, Some(3));
        assert_eq!(s.to_path(), PathBuf::from("/no/such/book.xlsx#Wave 2:3"));
        let s = Source::parse(Path::new("/no/such/book.xlsx#Data: 2024"));
        assert_eq!(s.sheet.as_deref(), Some("Data: 2024"));
        assert_eq!(s.header_row, None);
        let s = Source::parse(Path::new("/no/such/book.xlsx#:4"));
        assert_eq!((s.sheet, s.header_row), (None, Some(4)));
        let dir = tempfile::tempdir().unwrap();
        let odd = dir.path().join("a#b.csv");
        std::fs::write(&odd, "x,y\n1,2\n").unwrap();
        assert_eq!(Source::parse(&odd).file, odd);
    }
}
