//! The survey's witness of an engine table: a few cells per column (a continuous column's
//! smallest and largest numbers, a categorical column's distinct values, a missing cell
//! where the table has one) that fit a schema exactly when the whole table does, so the
//! schema's own checks run here on what the engine found, without the rows.

use datafusion::arrow::array::ArrayRef;

use super::arrays::{as_f64, as_i64};
use crate::data::DataError;
use crate::data::cells::{Cell, RawColumn};
use crate::data::csv::LoadOptions;

/// Each continuous column's witness cells (its smallest and largest numbers, and a missing
/// cell when it has any) from the survey's four figures per column; text that is not a
/// number is refused, as a file's continuous column would be.
pub(super) fn continuous_witness(
    figures: &[ArrayRef],
    continuous: &[&str],
) -> Result<Vec<(String, Vec<Cell>)>, DataError> {
    let mut witness = Vec::new();
    for (c, f) in continuous.iter().zip(figures.chunks(4)) {
        let bad = f.first().and_then(as_i64).unwrap_or(0);
        if bad > 0 {
            return Err(DataError::column(
                c,
                format!(
                    "holds text that is not a number in {bad} records; a continuous column needs numbers (convert dates or codes before the engine reads them)"
                ),
            ));
        }
        let mut cells: Vec<Cell> = f
            .iter()
            .skip(1)
            .take(2)
            .filter_map(|a| as_f64(a).map(Cell::Number))
            .collect();
        if f.get(3).and_then(as_i64).unwrap_or(0) > 0 {
            cells.push(Cell::Missing);
        }
        witness.push((c.to_string(), cells));
    }
    Ok(witness)
}

/// A schema check's message about the witness table, worded for the engine's table: the
/// witness's row numbers and cell counts are not the table's, so "row 17 holds 'x'" says "a
/// record holds 'x'" and "has 1 missing cells" says "has missing cells".
pub(super) fn unrowed(e: &DataError) -> String {
    let text = e.to_string();
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    let next = |r: &str| [r.find("row "), r.find("has ")].into_iter().flatten().min();
    while let Some(at) = next(rest) {
        let (head, tail) = rest.split_at(at);
        out.push_str(head);
        let word = &tail[..4];
        let digits = tail[4..].chars().take_while(char::is_ascii_digit).count();
        let after = &tail[4 + digits..];
        match (word, digits > 0) {
            ("row ", true) if after.starts_with(" holds") => {
                out.push_str("a record");
                rest = after;
            }
            ("has ", true)
                if after.starts_with(" missing cells") || after.starts_with(" blank cells") =>
            {
                out.push_str("has");
                rest = after;
            }
            _ => {
                out.push_str(word);
                rest = &tail[4..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// A table whose every column holds each of its witness cells at least once (shorter
/// columns repeat their first cell): it fits a schema exactly when the whole table does.
pub(super) fn witness_table(
    name: &str,
    witness: &[(String, Vec<Cell>)],
    opts: &LoadOptions,
) -> Result<crate::data::Table, DataError> {
    let rows = witness
        .iter()
        .map(|(_, c)| c.len())
        .max()
        .unwrap_or(0)
        .max(1);
    let raw = witness
        .iter()
        .map(|(n, cells)| {
            let first = cells.first().cloned().unwrap_or(Cell::Missing);
            let mut cells = cells.clone();
            cells.resize(rows, first);
            RawColumn {
                name: n.clone(),
                cells,
                codebook: Vec::new(),
            }
        })
        .collect();
    crate::data::cells::finish_part(name, raw, opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn witness_messages_name_no_rows() {
        let e = DataError::column(
            "education",
            "row 17 holds 'Academy', which is not in the column's categories",
        );
        assert_eq!(
            unrowed(&e),
            "column 'education': a record holds 'Academy', which is not in the column's categories"
        );
        let e = DataError::column("age", "has 1 missing cells but the schema says it has none");
        assert!(unrowed(&e).ends_with("age': has missing cells but the schema says it has none"));
        let e = DataError::column("age", "has 12 blank cells but the schema says it has none");
        assert!(unrowed(&e).ends_with("age': has blank cells but the schema says it has none"));
        let e = DataError::column("the row 5 has", "rows 3 holds nothing");
        assert_eq!(unrowed(&e), e.to_string());
    }
}
