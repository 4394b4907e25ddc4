//! Typed cells from a workbook, a columnar or a statistics file, turned into a [`Table`] by
//! the same rules as a CSV file's text.
//!
//! Whatever the format, a cell is trimmed, the missing-value tokens are missing, a column is
//! numeric only when every present cell is a number, and a line with no value at all is not
//! a record. So the same rows saved as CSV, Excel, Parquet, SPSS or Stata give the same
//! [`Table`], hence the same content digest and one ledger entry ([`super::digest`]).

use super::csv::{LoadOptions, MAX_COLUMNS};
use super::error::DataError;
use super::table::{Column, Table, TextColumn, Values};
use crate::util::fmt::parse_number;

/// One cell as a format stores it.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Missing,
    Number(f64),
    Text(String),
}

/// One column as read, before the shared rules.
#[derive(Debug, Clone, Default)]
pub struct RawColumn {
    pub name: String,
    pub cells: Vec<Cell>,
    /// The file's value labels for this column, in the file's order (SPSS and Stata
    /// codebooks); empty when it has none. The cells already hold the labels.
    pub codebook: Vec<String>,
}

/// Most rows a non-CSV table may have: beyond it the whole sheet would not fit a run's
/// memory anyway, and the message says to sample or split the file.
pub const MAX_ROWS: usize = 20_000_000;

/// Applies the shared rules to `columns`; `name` names the file in messages.
pub fn finish(name: &str, columns: Vec<RawColumn>, opts: &LoadOptions) -> Result<Table, DataError> {
    finish_with(name, columns, opts, false)
}

/// [`finish`] for one part of a file read in parts ([`super::stream`]): a part may hold
/// any number of rows (none, one, more than a whole table may), so only the whole file's
/// count is checked, by the caller.
pub fn finish_part(
    name: &str,
    columns: Vec<RawColumn>,
    opts: &LoadOptions,
) -> Result<Table, DataError> {
    finish_with(name, columns, opts, true)
}

fn finish_with(
    name: &str,
    columns: Vec<RawColumn>,
    opts: &LoadOptions,
    part: bool,
) -> Result<Table, DataError> {
    check_header(name, &columns)?;
    let n_rows = columns[0].cells.len();
    if columns.iter().any(|c| c.cells.len() != n_rows) {
        return Err(DataError::file(name, "its columns have different lengths"));
    }
    if n_rows > MAX_ROWS && !part {
        return Err(DataError::file(
            name,
            format!(
                "has {n_rows} rows; dpsynth reads at most {MAX_ROWS} in memory (sample or split it, or train MST or AIM with --stream)"
            ),
        ));
    }
    let present = Present(&opts.missing_tokens);
    let mut keep = vec![false; n_rows];
    for c in &columns {
        for (k, cell) in keep.iter_mut().zip(&c.cells) {
            *k |= present.at(cell);
        }
    }
    let kept = keep.iter().filter(|k| **k).count();
    if kept == 0 && !part {
        return Err(DataError::file(
            name,
            "has a header but no data rows (is it the right sheet?)",
        ));
    }
    if kept == 1 && !part {
        return Err(DataError::file(
            name,
            "has only one data row; synthetic data needs a table of many rows",
        ));
    }
    let columns = columns
        .into_iter()
        .map(|c| Column {
            name: c.name.trim().to_string(),
            values: values_of(&c, &keep, present),
        })
        .collect();
    Ok(Table {
        columns,
        n_rows: kept,
    })
}

/// Refuses a table without columns, with too many, or with a column unnamed or named twice.
fn check_header(name: &str, columns: &[RawColumn]) -> Result<(), DataError> {
    if columns.is_empty() {
        return Err(DataError::file(name, "holds no columns"));
    }
    if columns.len() > MAX_COLUMNS {
        return Err(DataError::file(
            name,
            format!(
                "has {} columns; dpsynth accepts at most {MAX_COLUMNS}",
                columns.len()
            ),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for (k, c) in columns.iter().enumerate() {
        if c.name.trim().is_empty() {
            return Err(DataError::file(
                name,
                format!(
                    "column {} of the header has no name; every column needs one",
                    k + 1
                ),
            ));
        }
        if !seen.insert(c.name.trim()) {
            return Err(DataError::file(
                name,
                format!(
                    "the header names column '{}' twice; column names must be unique",
                    c.name.trim()
                ),
            ));
        }
    }
    Ok(())
}

/// Whether a cell holds a value: not missing, a finite number, or text that is neither
/// blank nor one of the missing-value tokens.
#[derive(Clone, Copy)]
struct Present<'a>(&'a [String]);

impl Present<'_> {
    fn at(self, c: &Cell) -> bool {
        match c {
            Cell::Missing => false,
            Cell::Number(x) => x.is_finite(),
            Cell::Text(s) => {
                let s = s.trim();
                !s.is_empty() && !self.0.iter().any(|t| t == s)
            }
        }
    }
}

/// A column's values in the kept rows: numbers when every present cell is one and the
/// file gives no codebook, otherwise text (in the codebook's order where there is one).
fn values_of(c: &RawColumn, keep: &[bool], present: Present<'_>) -> Values {
    let cells: Vec<&Cell> = c
        .cells
        .iter()
        .zip(keep)
        .filter_map(|(cell, k)| k.then_some(cell))
        .collect();
    let numeric = cells.iter().all(|cell| match cell {
        Cell::Text(s) => !present.at(cell) || parse_number(s.trim()).is_some(),
        _ => true,
    });
    if numeric && c.codebook.is_empty() {
        return Values::Number(
            cells
                .iter()
                .map(|cell| match cell {
                    Cell::Number(x) if x.is_finite() => Some(*x),
                    Cell::Text(s) if present.at(cell) => parse_number(s.trim()),
                    _ => None,
                })
                .collect(),
        );
    }
    let text = |cell: &&Cell| -> Option<String> {
        match cell {
            Cell::Number(x) if x.is_finite() => Some(crate::util::fmt::number(*x)),
            Cell::Text(s) if present.at(cell) => Some(s.trim().to_string()),
            _ => None,
        }
    };
    let codebook: Vec<String> = c.codebook.iter().map(|l| l.trim().to_string()).collect();
    let texts: Vec<Option<String>> = cells.iter().map(text).collect();
    Values::Text(TextColumn::with_codebook(
        &codebook,
        texts.iter().map(|s| s.as_deref()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, cells: Vec<Cell>) -> RawColumn {
        RawColumn {
            name: name.into(),
            cells,
            codebook: vec![],
        }
    }

    #[test]
    fn the_same_rules_as_csv() {
        use Cell::*;
        let t = finish(
            "t",
            vec![
                col(
                    "a",
                    vec![Number(1.0), Text(" 2 ".into()), Missing, Text("?".into())],
                ),
                col(
                    "b",
                    vec![Text(" x".into()), Text("y".into()), Missing, Number(3.0)],
                ),
            ],
            &LoadOptions::default(),
        )
        .unwrap();
        // The blank third row is not a record; "?" is missing; 3 in a text column is "3".
        assert_eq!(t.n_rows, 3);
        assert_eq!(
            t.columns[0].values,
            Values::Number(vec![Some(1.0), Some(2.0), None])
        );
        let Values::Text(b) = &t.columns[1].values else {
            panic!()
        };
        assert_eq!(
            b.iter().collect::<Vec<_>>(),
            [Some("x"), Some("y"), Some("3")]
        );
        let dup = finish(
            "t",
            vec![col("a", vec![]), col("a ", vec![])],
            &LoadOptions::default(),
        );
        assert!(dup.unwrap_err().to_string().contains("twice"));
    }

    #[test]
    fn too_wide_a_table_is_refused_by_name() {
        let wide: Vec<RawColumn> = (0..=MAX_COLUMNS)
            .map(|i| col(&format!("c{i}"), vec![Cell::Number(1.0), Cell::Number(2.0)]))
            .collect();
        let e = finish("wide.parquet", wide, &LoadOptions::default()).unwrap_err();
        assert!(e.to_string().contains("at most 2000"), "{e}");
    }

    #[test]
    fn a_codebook_keeps_labels_no_row_uses() {
        let mut c = col(
            "sex",
            vec![Cell::Text("Male".into()), Cell::Text("Male".into())],
        );
        c.codebook = vec!["Male".into(), "Female".into()];
        let t = finish("t", vec![c], &LoadOptions::default()).unwrap();
        let Values::Text(v) = &t.columns[0].values else {
            panic!()
        };
        assert_eq!(v.codebook(), ["Male", "Female"]);
    }
}
