//! Excel and OpenDocument workbooks (`.xlsx`, `.xlsm`, `.xlsb`, `.xls`, `.ods`), read with
//! calamine: pure Rust, maintained, and it reads all five formats through one API, so no
//! office suite or C library is needed.
//!
//! One sheet is one table: the one the path names (`book.xlsx#Sheet2`), else the first that
//! holds any cell. The header is the row the path names (`#Sheet2:3`), else the first row
//! as full as the fullest of the first 20 (a title line above the table is skipped). Dates are written the way a CSV export writes them (`2024-03-01`,
//! `2024-03-01 14:30:00`), so [`super::times`] reads them as in a CSV. Merged cells in the
//! table are an error: only the first cell of a merge holds the value, so the others would
//! train as missing.

use std::path::Path;

use calamine::{Data, Range, Reader, Sheets, open_workbook_auto};

use super::cells::{Cell, RawColumn};
use super::error::DataError;
use super::source::Source;

/// The names of the sheets in `file`, in the workbook's order.
pub fn sheet_names(file: &Path) -> Result<Vec<String>, DataError> {
    Ok(open(file)?.sheet_names())
}

fn open(file: &Path) -> Result<Sheets<std::io::BufReader<std::fs::File>>, DataError> {
    open_workbook_auto(file).map_err(|e| explain(file, e))
}

/// The columns of the sheet `src` selects.
pub fn read(src: &Source) -> Result<Vec<RawColumn>, DataError> {
    let name = src.file.display().to_string();
    let mut book = open(&src.file)?;
    let names = book.sheet_names();
    if names.is_empty() {
        return Err(DataError::file(&name, "the workbook has no sheets"));
    }
    let (sheet, range) = match &src.sheet {
        Some(s) => {
            if !names.contains(s) {
                return Err(DataError::file(
                    &name,
                    format!("has no sheet '{s}'; its sheets are: {}", names.join(", ")),
                ));
            }
            let r = book.worksheet_range(s).map_err(|e| explain(&src.file, e))?;
            (s.clone(), r)
        }
        None => {
            let mut found = None;
            for s in &names {
                let r = book.worksheet_range(s).map_err(|e| explain(&src.file, e))?;
                if !r.is_empty() {
                    found = Some((s.clone(), r));
                    break;
                }
            }
            found.ok_or_else(|| DataError::file(&name, "every sheet of the workbook is empty"))?
        }
    };
    let at = format!("{name}, sheet '{sheet}'");
    if range.is_empty() {
        return Err(DataError::file(
            &at,
            format!(
                "the sheet is empty; the workbook's sheets are: {} (pick one with {}#SHEET)",
                names.join(", "),
                src.file.display()
            ),
        ));
    }
    let merges = merged(&mut book, &sheet);
    columns(&at, &range, src.header_row, &merges)
}

/// The merged regions of `sheet` as (first row, first column, last row, last column),
/// absolute and counted from 0; empty where the format does not record them.
fn merged(
    book: &mut Sheets<std::io::BufReader<std::fs::File>>,
    sheet: &str,
) -> Vec<(u32, u32, u32, u32)> {
    let dims = match book {
        Sheets::Xlsx(x) => x.merge_cells_by_sheet_name(sheet).ok(),
        Sheets::Xls(x) => x.merge_cells_by_sheet_name(sheet).ok(),
        _ => None,
    };
    dims.unwrap_or_default()
        .into_iter()
        .map(|d| (d.start.0, d.start.1, d.end.0, d.end.1))
        .collect()
}

/// A1-style name of an absolute (row, column), counted from 0.
fn a1(row: u32, col: u32) -> String {
    let mut c = col + 1;
    let mut letters = Vec::new();
    while c > 0 {
        let r = (c - 1) % 26;
        letters.push((b'A' + r as u8) as char);
        c = (c - 1) / 26;
    }
    letters.reverse();
    format!("{}{}", letters.into_iter().collect::<String>(), row + 1)
}

fn columns(
    at: &str,
    range: &Range<Data>,
    header_row: Option<usize>,
    merges: &[(u32, u32, u32, u32)],
) -> Result<Vec<RawColumn>, DataError> {
    let (top, left) = range.start().unwrap_or((0, 0));
    let width = range.width();
    let header = header_index(at, range, header_row)?;
    let header_abs = top + header as u32;
    if let Some(&(r0, c0, r1, c1)) = merges.iter().find(|m| m.2 >= header_abs) {
        return Err(DataError::file(
            at,
            format!(
                "cells {}:{} are merged; only the first holds the value, so the others would read as missing. Unmerge them (and fill in the values) first",
                a1(r0, c0),
                a1(r1, c1)
            ),
        ));
    }
    let rows: Vec<&[Data]> = range.rows().skip(header).collect();
    let Some(head) = rows.first() else {
        return Err(DataError::file(at, "the sheet is empty"));
    };
    // Trailing unnamed and empty columns (formatting past the table) are not columns.
    let mut used = width;
    while used > 0
        && blank(&head[used - 1])
        && rows
            .iter()
            .skip(1)
            .all(|r| r.get(used - 1).is_none_or(blank))
    {
        used -= 1;
    }
    let mut out = Vec::with_capacity(used);
    for j in 0..used {
        let name = match &head[j] {
            Data::Empty => {
                return Err(DataError::file(
                    at,
                    format!(
                        "cell {} of the header row has no name; every column needs one (is row {} the header? name it with #SHEET:ROW)",
                        a1(header_abs, left + j as u32),
                        header_abs + 1
                    ),
                ));
            }
            d => text(d),
        };
        let cells = rows
            .iter()
            .skip(1)
            .map(|r| r.get(j).map_or(Cell::Missing, cell))
            .collect();
        out.push(RawColumn {
            name,
            cells,
            codebook: vec![],
        });
    }
    Ok(out)
}

/// The header's row inside the range: the row the user named (counted from 1 in the
/// sheet), or else the first row as full as the fullest of the first 20 (a title line or
/// notes above the table hold fewer cells than its header).
fn header_index(
    at: &str,
    range: &Range<Data>,
    header_row: Option<usize>,
) -> Result<usize, DataError> {
    let (top, _) = range.start().unwrap_or((0, 0));
    let (bottom, _) = range.end().unwrap_or((0, 0));
    Ok(match header_row {
        Some(0) => {
            return Err(DataError::file(at, "header rows are counted from 1"));
        }
        Some(r) => {
            let abs = (r - 1) as u32;
            if abs < top || abs > bottom {
                return Err(DataError::file(
                    at,
                    format!(
                        "has no row {r}; its cells span rows {} to {}",
                        top + 1,
                        bottom + 1
                    ),
                ));
            }
            (abs - top) as usize
        }
        None => {
            let filled = |row: &[Data]| row.iter().filter(|c| !blank(c)).count();
            let most = range.rows().take(20).map(filled).max().unwrap_or(0);
            range
                .rows()
                .position(|row| most > 0 && filled(row) == most)
                .unwrap_or(0)
        }
    })
}

fn blank(d: &Data) -> bool {
    match d {
        Data::Empty => true,
        Data::String(s) => s.trim().is_empty(),
        _ => false,
    }
}

fn cell(d: &Data) -> Cell {
    match d {
        Data::Empty | Data::Error(_) => Cell::Missing,
        Data::Int(i) => Cell::Number(*i as f64),
        Data::Float(x) => Cell::Number(*x),
        Data::Bool(b) => Cell::Text(if *b { "TRUE" } else { "FALSE" }.into()),
        Data::String(s) => Cell::Text(s.clone()),
        Data::DateTime(_) | Data::DateTimeIso(_) | Data::DurationIso(_) => Cell::Text(text(d)),
    }
}

/// A cell as the text a CSV export of the sheet would hold.
fn text(d: &Data) -> String {
    match d {
        Data::DateTime(dt) => match dt.as_datetime() {
            Some(t) if t.time() == chrono::NaiveTime::MIN => t.format("%Y-%m-%d").to_string(),
            Some(t) => t.format("%Y-%m-%d %H:%M:%S").to_string(),
            None => dt.as_f64().to_string(),
        },
        Data::Int(i) => i.to_string(),
        Data::Float(x) => crate::util::fmt::number(*x),
        other => other.to_string().trim().to_string(),
    }
}

fn explain(file: &Path, e: calamine::Error) -> DataError {
    let name = file.display().to_string();
    let msg = e.to_string();
    let lower = msg.to_lowercase();
    if lower.contains("password") || lower.contains("encrypt") {
        return DataError::file(
            &name,
            "the workbook is password-protected; save an unprotected copy to open it here",
        );
    }
    match e {
        calamine::Error::Io(err) => DataError::io(file, err),
        _ => DataError::file(
            &name,
            format!(
                "could not be read as a spreadsheet ({msg}); is the file complete and really a workbook?"
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cell_names_are_a1() {
        assert_eq!(super::a1(0, 0), "A1");
        assert_eq!(super::a1(9, 27), "AB10");
        assert_eq!(super::a1(0, 25), "Z1");
    }
}
