//! A first guess at each column's kind and domain, read off the data.
//!
//! Every domain guessed here is marked [`Provenance::FromData`]: it is a convenience for
//! getting started, not private. The user confirms or replaces it with public values.
//! Every kind guessed here is marked `kind_from_data` for the same reason: the rules below
//! are deterministic in the rows, so one record can flip them, and the statement names
//! such columns until the user confirms their kinds as public facts.
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
        time_format: None,
        domain,
        point_masses: Vec::new(),
        point_masses_estimated: false,
        no_point_masses: false,
        decimals: None,
        kind_from_data: true,
        blank_share: None,
        codebook: false,
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
    match &col.values {
        Values::Number(v) => Ok(infer_numbers(col, v)),
        Values::Text(v) if !v.codebook().is_empty() => Ok(from_codebook(col, v)),
        Values::Text(v) => infer_text(col, v, present),
    }
}

/// Two values: binary; one: a constant; whole numbers with few levels: categories; else
/// a continuous range.
fn infer_numbers(col: &Column, v: &[Option<f64>]) -> Guess {
    let distinct = col.distinct_count();
    let levels = col.levels();
    let all_int = v.iter().flatten().all(|x| x.fract() == 0.0);
    if distinct == 2 {
        return (categories(col, Kind::Binary, levels), None);
    }
    if distinct == 1 {
        let note = Some("has a single value (constant column)".to_string());
        return (categories(col, Kind::Categorical, levels), note);
    }
    if all_int && distinct <= MAX_INTEGER_LEVELS {
        return (categories(col, Kind::Categorical, levels), None);
    }
    let (lower, upper) = value_range(v);
    let mut guess = spec(
        col,
        Kind::Continuous,
        all_int,
        Some(Domain::Bounds { lower, upper }),
    );
    if !all_int {
        guess.decimals = written_decimals(v);
    }
    (guess, None)
}

/// The most decimals any value is written with, when at most [`MAX_GUESSED_DECIMALS`]
/// (wages in cents, a tax rate to four places): part of the kind guessed from the rows,
/// named as such until the user confirms it, so synthetic values come back written as
/// the real ones are.
fn written_decimals(v: &[Option<f64>]) -> Option<u32> {
    (1..=MAX_GUESSED_DECIMALS).find(|d| {
        let scale = 10f64.powi(*d as i32);
        v.iter().flatten().all(|x| {
            let y = x * scale;
            (y - y.round()).abs() <= 1e-6 * y.abs().max(1.0)
        })
    })
}

/// Values written with more decimals than this are taken as measured ("any decimals").
const MAX_GUESSED_DECIMALS: u32 = 4;

/// A column with the file's codebook: every label, in its order, then any unlabelled level.
fn from_codebook(col: &Column, v: &super::table::TextColumn) -> Guess {
    // The file's codebook: every label, in its order, then any unlabelled level.
    let mut levels: Vec<String> = v.codebook().to_vec();
    for l in col.levels() {
        if !levels.contains(&l) {
            levels.push(l);
        }
    }
    let kind = if levels.len() == 2 {
        Kind::Binary
    } else {
        Kind::Categorical
    };
    let mut spec = spec(col, kind, false, Some(Domain::Categories(levels)));
    spec.codebook = true;
    (
        spec,
        Some(
            "categories from the file's codebook (value labels); public once you say the codebook is"
                .to_string(),
        ),
    )
}

/// Two values: binary; dates or times; an identifier or too many values: ignored; else
/// categories.
fn infer_text(
    col: &Column,
    v: &super::table::TextColumn,
    present: usize,
) -> Result<Guess, DataError> {
    let distinct = col.distinct_count();
    check_mixed(&col.name, v, present)?;
    let levels = col.levels();
    if distinct == 2 {
        return Ok((categories(col, Kind::Binary, levels), None));
    }
    if let Some(f) = super::times::detect(levels.iter().map(String::as_str)) {
        let days: Vec<Option<f64>> = levels.iter().map(|l| super::times::parse(l, f)).collect();
        let mut spec = spec(
            col,
            Kind::Continuous,
            !super::times::has_time(f),
            Some(bounds_around(&days)),
        );
        spec.time_format = Some(f.to_string());
        return Ok((spec, Some(format!("read as dates/times in the format {f}"))));
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
    Ok((categories(col, Kind::Categorical, levels), note))
}

/// A column of `kind` over the category list `levels` (read off the rows).
fn categories(col: &Column, kind: Kind, levels: Vec<String>) -> ColumnSpec {
    spec(col, kind, false, Some(Domain::Categories(levels)))
}

/// A column's guessed spec, and a note for the user.
type Guess = (ColumnSpec, Option<String>);

/// Bounds around the present values of a column: their range, widened by one each way
/// when every value is the same (bounds need lower < upper).
pub fn bounds_around(v: &[Option<f64>]) -> Domain {
    let (lo, hi) = value_range(v);
    let (lower, upper) = if lo < hi {
        (lo, hi)
    } else {
        (lo - 1.0, lo + 1.0)
    };
    Domain::Bounds { lower, upper }
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

/// `inf`, `-Infinity`, `NaN`, or a number beyond f64's range such as `1e400`.
fn is_non_finite_number(s: &str) -> bool {
    s.trim().parse::<f64>().is_ok_and(|x| !x.is_finite())
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
    // `inf`, `NaN` or `1e400` among numbers would make the column categorical, its
    // numbers mere labels: name the cell instead.
    if let Some((row, s)) = v
        .iter()
        .enumerate()
        .find_map(|(i, c)| c.filter(|s| is_non_finite_number(s)).map(|s| (i, s)))
    {
        let non_finite = v
            .iter()
            .flatten()
            .filter(|s| is_non_finite_number(s))
            .count();
        if numeric + non_finite == present && numeric > 0 {
            return Err(DataError::column(
                name,
                format!(
                    "row {} holds '{s}', a number that is infinite or not a number; the column's other cells are numbers. Fix the cell or add '{s}' to the missing-value tokens",
                    row + 1
                ),
            ));
        }
    }
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
    fn decimals_are_guessed_as_written() {
        let mut s = String::from("wage,rate,measured\n");
        for i in 0..30 {
            s += &format!(
                "{}.{:02},0.{:04},{}\n",
                3 + i,
                (i * 7) % 100,
                4411 + i * 13,
                0.1234567 * i as f64 + 0.5
            );
        }
        let inf = infer(&s).unwrap();
        let d: Vec<Option<u32>> = inf.schema.columns.iter().map(|c| c.decimals).collect();
        assert_eq!(d, vec![Some(2), Some(4), None]);
        assert!(inf.schema.columns.iter().all(|c| c.kind_from_data));
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

    #[test]
    fn date_columns_are_continuous_days_with_their_format() {
        let mut s = String::from("when,stamp,n\n");
        for i in 0..25 {
            s += &format!("2021-03-{:02},2021-03-01 {:02}:30:00,{i}\n", i + 1, i % 24);
        }
        let inf = infer(&s).unwrap();
        let when = &inf.schema.columns[0];
        assert_eq!(when.kind, Kind::Continuous);
        assert_eq!(when.time_format.as_deref(), Some("%Y-%m-%d"));
        assert!(when.integer);
        let (lo, hi) = when.bounds().unwrap();
        assert_eq!(crate::data::times::format(lo, "%Y-%m-%d"), "2021-03-01");
        assert_eq!(hi - lo, 24.0);
        // Unique on every row, yet a timestamp, not an identifier.
        let stamp = &inf.schema.columns[1];
        assert_eq!(stamp.kind_label(), "date/time");
        assert!(!stamp.integer);
    }

    #[test]
    fn infinite_numbers_among_numbers_are_errors_naming_the_cell() {
        for bad in ["inf", "1e400", "+inf", "-Infinity"] {
            let e = infer(&format!("a,b\n1,x\n2.5,y\n{bad},z\n"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("row 3") && e.contains(bad), "{e}");
        }
        // Words that merely parse as numbers elsewhere stay categories among words.
        let inf = infer("a,b\ninf,x\nlow,y\nhigh,z\n").unwrap();
        assert_eq!(inf.schema.columns[0].kind, Kind::Categorical);
    }
}
