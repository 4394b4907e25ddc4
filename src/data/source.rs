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

/// One kind of file dpsynth reads as a table.
#[derive(Debug, Clone, Copy)]
pub struct FileType {
    pub format: Format,
    /// Extensions without the dot, the usual one first.
    pub extensions: &'static [&'static str],
    pub mime: &'static str,
    /// Whether the installed packages offer dpsynth to open this type (its usual
    /// extension in the packagers' file associations, its MIME type in the desktop entry).
    pub associated: bool,
}

const fn file_type(
    format: Format,
    extensions: &'static [&'static str],
    mime: &'static str,
    associated: bool,
) -> FileType {
    FileType {
        format,
        extensions,
        mime,
        associated,
    }
}

/// Every table file type, the one list: detection by extension, the Open dialog, and (held
/// to it by tests) Cargo.toml's file associations, `packaging/dpsynth-mime.xml` and the
/// desktop entry's MIME types.
pub const TABLE_TYPES: [FileType; 10] = [
    file_type(Format::Csv, &["csv"], "text/csv", true),
    file_type(Format::Csv, &["tsv"], "text/tab-separated-values", true),
    file_type(Format::Csv, &["txt"], "text/plain", false),
    file_type(
        Format::Workbook,
        &["xlsx", "xlsm"],
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        true,
    ),
    file_type(
        Format::Workbook,
        &["xls", "xla", "xlam", "xlsb"],
        "application/vnd.ms-excel",
        true,
    ),
    file_type(
        Format::Workbook,
        &["ods"],
        "application/vnd.oasis.opendocument.spreadsheet",
        true,
    ),
    file_type(
        Format::Parquet,
        &["parquet", "pq"],
        "application/vnd.apache.parquet",
        true,
    ),
    file_type(
        Format::ArrowIpc,
        &["arrow", "feather", "ipc"],
        "application/vnd.apache.arrow.file",
        false,
    ),
    file_type(
        Format::Spss,
        &["sav", "zsav"],
        "application/x-spss-sav",
        true,
    ),
    file_type(Format::Stata, &["dta"], "application/x-stata-dta", true),
];

/// Every extension of every table type, in the list's order.
pub fn table_extensions() -> impl Iterator<Item = &'static str> {
    TABLE_TYPES
        .iter()
        .flat_map(|t| t.extensions.iter().copied())
}

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
    let by_name = TABLE_TYPES
        .iter()
        .find(|t| t.extensions.contains(&ext.as_str()));
    match by_name {
        Some(t) => t.format,
        // A zip (xlsx, ods) or an OLE compound file (xls) under another name.
        None if head.starts_with(b"PK\x03\x04") || head.starts_with(&[0xD0, 0xCF, 0x11, 0xE0]) => {
            Format::Workbook
        }
        None => Format::Csv,
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
