//! A first guess at each column's kind and domain, read off the data.
//!
//! Every domain guessed here is marked [`Provenance::FromData`]: it is a convenience for
//! getting started, not private. The user confirms or replaces it with public values.
//!
//! Rules, in order: two distinct values → binary; numbers that are all integers with at
//! most [`MAX_INTEGER_LEVELS`] levels → categorical; other numbers → continuous (integer
//! flag when all whole); text unique on every row → ignored (an identifier); text with
//! more than [`MAX_CATEGORIES`] levels → ignored; other text → categorical. A column that
//! is mostly numbers with a few words, or numbers with thousands separators, is an error
//! naming the cell, because guessing would silently turn the numbers into categories.

use super::error::DataError;
use super::schema::{ColumnSpec, Domain, Kind, MAX_CATEGORIES, Provenance, Schema};
use super::table::{Column, Table, Values};
use crate::util::fmt::parse_number;

/// Integer columns with this many levels or fewer are taken as categories (digit labels,
/// ratings); more levels are quantities.
pub const MAX_INTEGER_LEVELS: usize = 10;
/// Text columns unique on every row are identifiers only from this many rows on.
const MIN_ROWS_FOR_ID: usize = 20;

/// A guessed schema with notes a person should read.
#[derive(Debug, Clone)]
pub struct Inference {
    pub schema: Schema,
    /// (column, note) pairs: identifiers dropped, constant columns, many missing, …
    pub notes: Vec<(String, String)>,
}

/// Guesses a schema for `t`.
pub fn infer_schema(t: &Table) -> Result<Inference, DataError> {
    let mut columns = Vec::with_capacity(t.n_cols());
    let mut notes = Vec::new();
    for col in &t.columns {
        let (spec, note) = infer_column(col, t.n_rows)?;
        if let Some(n) = note {
            notes.push((col.name.clone(), n));
        }
        let missing = col.missing_count();
        if missing * 2 > t.n_rows {
            notes.push((
                col.name.clone(),
                format!("{missing} of {} cells are missing", t.n_rows),
            ));
        }
        columns.push(spec);
    }
    let schema = Schema::new(columns);
    schema.validate()?;
    Ok(Inference { schema, notes })
}

fn spec(col: &Column, kind: Kind, integer: bool, domain: Option<Domain>) -> ColumnSpec {
    ColumnSpec {
        name: col.name.clone(),
        kind,
        integer,
        missing: kind != Kind::Ignored && col.missing_count() > 0,
        domain,
        provenance: Provenance::FromData,
    }
}

fn infer_column(col: &Column, n_rows: usize) -> Result<(ColumnSpec, Option<String>), DataError> {
    let present = n_rows - col.missing_count();
    if present == 0 {
        return Err(DataError::column(
            &col.name,
            format!(
                "all {n_rows} cells are missing, so its kind cannot be guessed; remove the column or mark it ignored in a schema"
            ),
        ));
    }
    let distinct = col.distinct_count();
    match &col.values {
        Values::Number(v) => {
            let levels = col.levels();
            let all_int = v.iter().flatten().all(|x| x.fract() == 0.0);
            if distinct == 2 {
                return Ok((
                    spec(col, Kind::Binary, false, Some(Domain::Categories(levels))),
                    None,
                ));
            }
            if distinct == 1 {
                let note = Some("has a single value (constant column)".to_string());
                return Ok((
                    spec(
                        col,
                        Kind::Categorical,
                        false,
                        Some(Domain::Categories(levels)),
                    ),
                    note,
                ));
            }
            if all_int && distinct <= MAX_INTEGER_LEVELS {
                return Ok((
                    spec(
                        col,
                        Kind::Categorical,
                        false,
                        Some(Domain::Categories(levels)),
                    ),
                    None,
                ));
            }
            let (lower, upper) = value_range(v);
            Ok((
                spec(
                    col,
                    Kind::Continuous,
                    all_int,
                    Some(Domain::Bounds { lower, upper }),
                ),
                None,
            ))
        }
        Values::Text(v) => {
            check_mixed(&col.name, v, present)?;
            let levels = col.levels();
            if distinct == 2 {
                return Ok((
                    spec(col, Kind::Binary, false, Some(Domain::Categories(levels))),
                    None,
                ));
            }
            if distinct == present && present >= MIN_ROWS_FOR_ID {
                return Ok((
                    spec(col, Kind::Ignored, false, None),
                    Some("every value is different (an identifier?): ignored".to_string()),
                ));
            }
            if distinct > MAX_CATEGORIES {
                return Ok((
                    spec(col, Kind::Ignored, false, None),
                    Some(format!(
                        "{distinct} distinct values exceed {MAX_CATEGORIES} categories: ignored"
                    )),
                ));
            }
            let note = (distinct == 1).then(|| "has a single value (constant column)".to_string());
            let note = note.or_else(|| {
                (distinct > 100).then(|| format!("{distinct} categories: a wide one-hot encoding"))
            });
            Ok((
                spec(
                    col,
                    Kind::Categorical,
                    false,
                    Some(Domain::Categories(levels)),
                ),
                note,
            ))
        }
    }
}

/// The smallest and largest present value of a numeric column (±∞ when all are missing).
pub fn value_range(v: &[Option<f64>]) -> (f64, f64) {
    v.iter()
        .flatten()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(*x), hi.max(*x))
        })
}

fn looks_like_thousands(s: &str) -> bool {
    let t = s.strip_prefix('-').unwrap_or(s);
    let int = t.split('.').next().unwrap_or("");
    let groups: Vec<&str> = int.split(',').collect();
    groups.len() >= 2
        && !groups[0].is_empty()
        && groups[0].len() <= 3
        && groups[0].bytes().all(|b| b.is_ascii_digit())
        && groups[1..]
            .iter()
            .all(|g| g.len() == 3 && g.bytes().all(|b| b.is_ascii_digit()))
}

/// Rejects text columns that are really numbers written badly.
fn check_mixed(name: &str, v: &super::table::TextColumn, present: usize) -> Result<(), DataError> {
    if let Some((row, s)) = v
        .iter()
        .enumerate()
        .find_map(|(i, c)| c.filter(|s| looks_like_thousands(s)).map(|s| (i, s)))
    {
        let rest_numeric = v
            .iter()
            .flatten()
            .all(|s| looks_like_thousands(s) || parse_number(s).is_some());
        if rest_numeric {
            return Err(DataError::column(
                name,
                format!(
                    "row {} holds '{s}', a number with thousands separators; remove the separators so the column reads as numbers",
                    row + 1
                ),
            ));
        }
    }
    let numeric = v
        .iter()
        .flatten()
        .filter(|s| parse_number(s).is_some())
        .count();
    if numeric * 10 >= present * 9 && numeric < present {
        let (row, s) = v
            .iter()
            .enumerate()
            .find_map(|(i, c)| c.filter(|s| parse_number(s).is_none()).map(|s| (i, s)))
            .unwrap_or((0, ""));
        return Err(DataError::column(
            name,
            format!(
                "mixes numbers and text: {numeric} of {present} cells are numbers but row {} holds '{s}'; fix the cell, add it to the missing-value tokens, or give a schema",
                row + 1
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::csv::{LoadOptions, parse_csv_bytes};

    fn infer(s: &str) -> Result<Inference, DataError> {
        let t = parse_csv_bytes(s.as_bytes().to_vec(), "t.csv", &LoadOptions::default())?;
        infer_schema(&t)
    }

    #[test]
    fn kinds_follow_the_rules() {
        let mut s = String::from("id,flag,grade,score,city\n");
        for i in 0..30 {
            s += &format!(
                "u{i},{},{},{}.5,{}\n",
                i % 2,
                i % 5,
                i * 3,
                ["a", "b", "c"][i % 3]
            );
        }
        let inf = infer(&s).unwrap();
        let kinds: Vec<Kind> = inf.schema.columns.iter().map(|c| c.kind).collect();
        assert_eq!(
            kinds,
            vec![
                Kind::Ignored,
                Kind::Binary,
                Kind::Categorical,
                Kind::Continuous,
                Kind::Categorical
            ]
        );
        assert!(!inf.schema.columns[3].integer);
        assert!(
            inf.schema
                .columns
                .iter()
                .all(|c| c.provenance == Provenance::FromData)
        );
    }

    #[test]
    fn thousands_separators_and_mixed_types_are_errors() {
        let e = infer("a,b\n\"1,234\",x\n\"2,000\",y\n12,z\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("thousands"), "{e}");
        let mut s = String::from("a,b\n");
        for i in 0..20 {
            s += &format!("{i},x\n");
        }
        s += "oops,y\n";
        let e = infer(&s).unwrap_err().to_string();
        assert!(e.contains("'a'") && e.contains("oops"), "{e}");
    }
}
