//! Rules between columns: facts the user states about every row, like a domain.
//!
//! `education -> education-num` (each education has one education-num), `relationship =
//! "Husband" => sex = "Male"`, `capital-gain > 0 => capital-loss = 0`, `age >= 17`,
//! `start_date <= end_date` ([`parse`] has the grammar). A rule is public: it changes no
//! charge, the statement and the report list it, and a release obeys it. How many real
//! rows break a rule ([`Checked::broken`] on the private table) is a local diagnostic for
//! the data's owner, never released.
//!
//! Checking a rule against the schema refuses what could never be meant: an unknown
//! column or level, an order on categories, text against a number column, and rules no
//! row can satisfy together (one column's conditions that exclude its whole domain).

mod cells;
mod eval;
mod moved;
mod named;
pub mod parse;

pub use cells::{Span, surely_broken};
pub use eval::{Enforced, Repair, broken_counts, enforce, fix_values, part_shares, select};
pub use moved::{MOVED, Moved, Tally};
pub use named::{hold_named_values, is_named, named_values};
pub use parse::{Atom, Cond, Op, Rule, Value, parse_condition, parse_line};

use super::error::DataError;
use super::schema::{ColumnSpec, Kind, Schema};

/// One rule as the user wrote it, with its line (1-based) in the file or list it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Stated {
    pub line: usize,
    pub text: String,
    pub rule: Rule,
}

/// Parses a rules file's text: one rule per line, `#` comments, blank lines skipped. The
/// first bad line is the error, with its number.
pub fn parse_text(text: &str, name: &str) -> Result<Vec<Stated>, DataError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let rule = parse_line(line).map_err(|m| {
            DataError::Schema(format!("{name}: line {}: {m}: {}", i + 1, line.trim()))
        })?;
        if let Some(rule) = rule {
            out.push(Stated {
                line: i + 1,
                text: strip_comment(line).to_string(),
                rule,
            });
        }
    }
    Ok(out)
}

/// The rule without its trailing comment.
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            _ if escaped => escaped = false,
            (Some(_), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '`') => quote = Some(c),
            (None, '#') => return line[..i].trim(),
            _ => {}
        }
    }
    line.trim()
}

/// Parses the schema's `rules` list (one rule per entry) and checks it against the schema.
pub fn of_schema(schema: &Schema) -> Result<Vec<Stated>, DataError> {
    let rules = parse_text(&schema.rules.join("\n"), "the schema's rules")?;
    check(&rules, schema)?;
    Ok(rules)
}

/// Refuses a rule the schema cannot hold: the line and the reason.
pub fn check(rules: &[Stated], schema: &Schema) -> Result<(), DataError> {
    for r in rules {
        check_rule(&r.rule, schema)
            .map_err(|m| DataError::Schema(format!("rule on line {} ({}): {m}", r.line, r.text)))?;
    }
    contradictions(rules, schema)
}

fn column<'a>(schema: &'a Schema, name: &str) -> Result<&'a ColumnSpec, String> {
    match schema.column(name) {
        Some(c) if c.kind == Kind::Ignored => Err(format!(
            "column '{name}' is ignored, so no synthetic row holds it"
        )),
        Some(c) => Ok(c),
        None => Err(format!(
            "there is no column '{name}' (names are case-sensitive; put a name with spaces or other characters in `backquotes`)"
        )),
    }
}

fn check_rule(rule: &Rule, schema: &Schema) -> Result<(), String> {
    match rule {
        Rule::Determines { left, right, map } => {
            let (l, r) = (column(schema, left)?, column(schema, right)?);
            if l.name == r.name {
                return Err("a column determines itself; name two columns".into());
            }
            if l.kind == Kind::Continuous && !l.integer {
                return Err(format!(
                    "'{left}' is a continuous column with fractions; the left side of '->' must be categorical, binary or whole numbers"
                ));
            }
            for (k, v) in map {
                check_value(l, Op::Eq, k).map_err(|m| format!("in the map: {m}"))?;
                check_value(r, Op::Eq, v).map_err(|m| format!("in the map: {m}"))?;
                if let (Some(x), Some((lo, hi))) = (number_in(r, v), r.bounds()) {
                    if x < lo || x > hi {
                        return Err(format!(
                            "in the map: {v} is outside the bounds of '{right}' ({lo} to {hi})"
                        ));
                    }
                }
            }
            Ok(())
        }
        Rule::Implies { when, then } => {
            check_cond(when, schema)?;
            check_cond(then, schema)
        }
        Rule::Holds(c) => check_cond(c, schema),
    }
}

fn check_cond(c: &Cond, schema: &Schema) -> Result<(), String> {
    for a in &c.0 {
        match a {
            Atom::Compare {
                column: n,
                op,
                value,
            } => check_value(column(schema, n)?, *op, value)?,
            Atom::In { column: n, values } => {
                let spec = column(schema, n)?;
                for v in values {
                    check_value(spec, Op::Eq, v)?;
                }
            }
            Atom::Columns { left, op, right } => {
                let (l, r) = (column(schema, left)?, column(schema, right)?);
                let ordered = |c: &ColumnSpec| c.kind == Kind::Continuous;
                if ordered(l) != ordered(r) {
                    return Err(format!(
                        "'{left}' and '{right}' are not comparable: one is a number column, the other categories"
                    ));
                }
                if !ordered(l) && !matches!(op, Op::Eq | Op::Ne) {
                    return Err(format!(
                        "'{left}' and '{right}' hold categories, which have no order; use = or !="
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A three-valued (Kleene) conjunction: false as soon as one part surely fails, true when
/// every part surely holds, else unknown. Rows and cells of the domain read conditions the
/// same way.
fn all_of(parts: impl Iterator<Item = Option<bool>>) -> Option<bool> {
    let mut unknown = false;
    for p in parts {
        match p {
            Some(false) => return Some(false),
            None => unknown = true,
            Some(true) => {}
        }
    }
    (!unknown).then_some(true)
}

/// The number a value stands for in a continuous column (a date in the column's format).
pub(crate) fn number_in(spec: &ColumnSpec, v: &Value) -> Option<f64> {
    match v {
        Value::Number(x) => Some(*x),
        Value::Text(s) => match &spec.time_format {
            Some(f) => super::times::parse(s, f),
            None => None,
        },
    }
}

/// A value as a cell of `spec` reads as text (a level, or a number in canonical form), as
/// rules compare cells.
pub(crate) fn text_in(spec: &ColumnSpec, v: &Value) -> Option<String> {
    if spec.kind == Kind::Continuous {
        return match (&spec.time_format, v) {
            (Some(_), Value::Text(s)) => number_in(spec, v).map(|_| s.clone()),
            _ => number_in(spec, v).map(crate::util::fmt::number),
        };
    }
    level_in(spec, v).map(str::to_string)
}

/// The category a value names in a categorical or binary column.
pub(crate) fn level_in<'a>(spec: &'a ColumnSpec, v: &Value) -> Option<&'a str> {
    let cats = spec.categories()?;
    match v {
        Value::Text(s) => cats.iter().find(|c| *c == s).map(String::as_str),
        Value::Number(x) => cats
            .iter()
            .find(|c| crate::util::fmt::parse_number(c) == Some(*x))
            .map(String::as_str),
    }
}

fn check_value(spec: &ColumnSpec, op: Op, v: &Value) -> Result<(), String> {
    let name = &spec.name;
    if spec.kind == Kind::Continuous {
        return match number_in(spec, v) {
            Some(_) => Ok(()),
            None => Err(match &spec.time_format {
                Some(f) => format!("'{name}' holds dates; {v} is not a date in the format '{f}'"),
                None => format!("'{name}' holds numbers; compare it with a number, not {v}"),
            }),
        };
    }
    if !matches!(op, Op::Eq | Op::Ne) {
        return Err(format!(
            "'{name}' holds categories, which have no order; use =, != or in {{…}}"
        ));
    }
    match level_in(spec, v) {
        Some(_) => Ok(()),
        None => Err(format!(
            "{v} is not a level of '{name}' (its levels: {})",
            spec.domain_summary(200)
        )),
    }
}

/// Refuses rules that no row can satisfy together: the rules that hold on their own
/// (`age >= 17`, `sex in {…}`) leave some value of each column they speak of.
fn contradictions(rules: &[Stated], schema: &Schema) -> Result<(), DataError> {
    for spec in &schema.columns {
        let on: Vec<(&Stated, &Atom)> = rules
            .iter()
            .filter_map(|r| match &r.rule {
                Rule::Holds(c) => Some(c.0.iter().map(move |a| (r, a))),
                _ => None,
            })
            .flatten()
            .filter(|(_, a)| matches!(a, Atom::Compare { column, .. } | Atom::In { column, .. } if *column == spec.name))
            .collect();
        if on.is_empty() || eval::some_value_meets(spec, on.iter().map(|(_, a)| *a)) {
            continue;
        }
        let lines: Vec<String> = on.iter().map(|(r, _)| r.line.to_string()).collect();
        return Err(DataError::Schema(format!(
            "the rules on lines {} leave no value of '{}' that meets them all (its domain: {}); no row could satisfy them together",
            lines.join(", "),
            spec.name,
            spec.domain_summary(80)
        )));
    }
    Ok(())
}

/// Parses `sample --where`'s condition and checks it against the schema, as a rule.
pub fn condition(text: &str, schema: &Schema) -> Result<Cond, DataError> {
    let c = parse_condition(text)
        .map_err(|m| DataError::Schema(format!("the condition '{text}': {m}")))?;
    check_cond(&c, schema)
        .map_err(|m| DataError::Schema(format!("the condition '{text}': {m}")))?;
    Ok(c)
}

#[cfg(test)]
mod tests;
