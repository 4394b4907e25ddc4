//! The SQL an engine table is asked: the cell rules, the record filter, the bins and the
//! digest, written once here.

use super::Grouping;

/// The registered table's name in the engine session.
pub(super) const TABLE: &str = "dpsynth_table";

/// A quoted identifier (a column name may hold anything).
pub(super) fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A quoted text literal.
fn text(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// An exact double literal (Rust's shortest round-trip form).
fn number(x: f64) -> String {
    format!("CAST({x:?} AS DOUBLE)")
}

/// A cell as text, trimmed, with the missing-value tokens (and the empty cell) missing:
/// the rules of [`crate::data::cells`].
pub(super) fn cell(column: &str, tokens: &[String]) -> String {
    let t = format!("TRIM(CAST({} AS VARCHAR))", ident(column));
    let mut missing = vec![text("")];
    missing.extend(tokens.iter().map(|s| text(s)));
    format!(
        "(CASE WHEN {t} IN ({}) THEN NULL ELSE {t} END)",
        missing.join(", ")
    )
}

/// A cell as a number: the column's own numbers, or its text read as one (`NULL` when it
/// is missing or not a number; the survey refuses the latter).
pub(super) fn numeric(column: &str, is_number: bool, tokens: &[String]) -> String {
    if is_number {
        format!("CAST({} AS DOUBLE)", ident(column))
    } else {
        format!("TRY_CAST({} AS DOUBLE)", cell(column, tokens))
    }
}

/// Whether a record has any value: a line with none is not a record (as in a file).
pub(super) fn is_record(columns: &[String], tokens: &[String]) -> String {
    let cells: Vec<String> = columns.iter().map(|c| cell(c, tokens)).collect();
    match cells.len() {
        0 => "TRUE".into(),
        1 => format!("{} IS NOT NULL", cells[0]),
        _ => format!("COALESCE({}) IS NOT NULL", cells.join(", ")),
    }
}

/// Present cells of a continuous column that are not numbers (nor finite ones).
pub(super) fn not_numbers(column: &str, tokens: &[String]) -> String {
    let c = cell(column, tokens);
    let x = format!("TRY_CAST({c} AS DOUBLE)");
    format!(
        "SUM(CASE WHEN {c} IS NOT NULL AND ({x} IS NULL OR isnan({x}) OR abs({x}) = CAST('inf' AS DOUBLE)) THEN 1 ELSE 0 END)"
    )
}

/// The level of a number `x` under `g`, by the encoder's and the domain's arithmetic
/// (clamp, scale to [0, 1] in f32, then cut; a point mass first, by
/// `ColumnSpec::point_mass_of`'s test on the raw number); `NULL` for a missing cell.
pub(super) fn level(x: &str, g: &Grouping) -> String {
    let Grouping::Bins { size, points, .. } = g else {
        return bin(x, g);
    };
    if points.is_empty() {
        return bin(x, g);
    }
    let arms: Vec<String> = points
        .iter()
        .enumerate()
        .map(|(k, p)| {
            let tol = 1e-9 * p.abs().max(1.0);
            format!(
                "WHEN abs({x} - {}) <= {} THEN {}",
                number(*p),
                number(tol),
                size + k
            )
        })
        .collect();
    format!("(CASE {} ELSE {} END)", arms.join(" "), bin(x, g))
}

/// The level of `x` among `g`'s bins (or whole numbers), its points aside.
fn bin(x: &str, g: &Grouping) -> String {
    match g {
        // Text columns are grouped by their cell, never by a level.
        Grouping::Text => "NULL".into(),
        Grouping::Missing => format!("({x} IS NULL)"),
        Grouping::Bins {
            lo,
            hi,
            size,
            integers,
            ..
        } => {
            let (l, h) = (number(*lo), number(*hi));
            let u = format!(
                "CAST(CAST((LEAST(GREATEST({x}, {l}), {h}) - {l}) / ({h} - {l}) AS FLOAT) AS DOUBLE)"
            );
            let last = size.saturating_sub(1);
            match integers {
                None => format!("LEAST(CAST(FLOOR({u} * {size}) AS BIGINT), {last})"),
                Some(first) => format!(
                    "LEAST(GREATEST(CAST(ROUND({l} + {u} * ({h} - {l})) - {} AS BIGINT), 0), {last})",
                    number(*first)
                ),
            }
        }
    }
}

/// The row's digest as hex: the SHA-256 of the row's cells (columns in the given order,
/// each as its length, a colon and its text, or `-` when missing; commas between).
pub(super) fn digest_hex(columns: &[String], tokens: &[String]) -> String {
    let row: Vec<String> = columns
        .iter()
        .map(|c| {
            let t = cell(c, tokens);
            format!("COALESCE(CAST(character_length({t}) AS VARCHAR) || ':' || {t}, '-')")
        })
        .collect();
    let row = if row.is_empty() {
        "''".to_string()
    } else {
        row.join(" || ',' || ")
    };
    format!("encode(sha256({row}), 'hex')")
}

/// The sums of a hex digest `h`'s sixteen 16-bit words (big-endian) over the records.
/// Summed as 64-bit integers they cannot overflow below 2⁴⁷ records; the caller adds them
/// up mod 2²⁵⁶.
pub(super) fn digest_words(h: &str) -> Vec<String> {
    (0..16)
        .map(|w| {
            let nibbles: Vec<String> = (0..4u32)
                .map(|j| {
                    format!(
                        "(strpos('0123456789abcdef', substr({h}, {}, 1)) - 1) * {}",
                        4 * w + j + 1,
                        16i64.pow(3 - j)
                    )
                })
                .collect();
            format!("SUM(CAST({} AS BIGINT))", nibbles.join(" + "))
        })
        .collect()
}
