//! Rules read against sets of values instead of rows: whether every row whose columns
//! take values in given sets surely breaks a rule. A marginal method asks it of each cell
//! of its discrete domain (a category, a whole number, a bin's range) to find the cells
//! no row may take, the rule's structural zeros.
//!
//! The answer is three-valued (Kleene): a comparison on a range that holds for some of
//! its values and fails for others is unknown, and only a rule that surely fails makes a
//! cell forbidden. A cell that some rows could fill lawfully is never forbidden; rows
//! drawn from it are checked one by one at sampling ([`super::enforce`]).

use super::parse::{Atom, Cond, Op, Rule, Value};
use super::{level_in, number_in};
use crate::data::schema::{Kind, Schema};

/// The values one column takes in a cell of the domain.
#[derive(Debug, Clone, PartialEq)]
pub enum Span {
    /// One category (of a categorical or binary column).
    Level(String),
    /// Every number in [lo, hi] (a whole number: lo = hi).
    Range { lo: f64, hi: f64 },
    /// Anything, a blank included (a missing slot, a column the caller cannot bound).
    Any,
}

/// Whether every row whose columns take values in `span_of(column)` breaks `rule`. A `->`
/// rule reads the whole table, never one row: never surely broken here.
pub fn surely_broken(rule: &Rule, schema: &Schema, span_of: &dyn Fn(&str) -> Span) -> bool {
    let cond = |c: &Cond| cond_value(c, schema, span_of);
    match rule {
        Rule::Determines { .. } => false,
        Rule::Implies { when, then } => cond(when) == Some(true) && cond(then) == Some(false),
        Rule::Holds(c) => cond(c) == Some(false),
    }
}

/// A conjunction: false when one atom surely fails, true when all surely hold.
fn cond_value(c: &Cond, schema: &Schema, span_of: &dyn Fn(&str) -> Span) -> Option<bool> {
    super::all_of(c.0.iter().map(|a| atom_value(a, schema, span_of)))
}

/// `Some(true)`: holds for every value of the span; `Some(false)`: for none; `None`:
/// for some, or cannot tell.
fn atom_value(a: &Atom, schema: &Schema, span_of: &dyn Fn(&str) -> Span) -> Option<bool> {
    match a {
        Atom::Compare { column, op, value } => value_value(schema, column, *op, value, span_of),
        Atom::In { column, values } => {
            let mut any_unknown = false;
            for v in values {
                match value_value(schema, column, Op::Eq, v, span_of) {
                    Some(true) => return Some(true),
                    None => any_unknown = true,
                    Some(false) => {}
                }
            }
            (!any_unknown).then_some(false)
        }
        Atom::Columns { left, op, right } => match (span_of(left), span_of(right)) {
            (Span::Range { lo: a, hi: b }, Span::Range { lo: c, hi: d }) => {
                ranges(*op, (a, b), (c, d))
            }
            (Span::Level(x), Span::Level(y)) => match op {
                Op::Eq => Some(x == y),
                Op::Ne => Some(x != y),
                _ => None,
            },
            _ => None,
        },
    }
}

fn value_value(
    schema: &Schema,
    column: &str,
    op: Op,
    v: &Value,
    span_of: &dyn Fn(&str) -> Span,
) -> Option<bool> {
    let spec = schema.column(column)?;
    match span_of(column) {
        Span::Any => None,
        Span::Range { lo, hi } if spec.kind == Kind::Continuous => {
            let x = number_in(spec, v)?;
            ranges(op, (lo, hi), (x, x))
        }
        Span::Level(cell) if spec.kind != Kind::Continuous => {
            let level = level_in(spec, v)?;
            match op {
                Op::Eq => Some(cell == level),
                Op::Ne => Some(cell != level),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `x op y` for every x in [a, b] and y in [c, d]: true for all pairs, false for none,
/// else unknown.
fn ranges(op: Op, (a, b): (f64, f64), (c, d): (f64, f64)) -> Option<bool> {
    if [a, b, c, d].iter().any(|v| v.is_nan()) || a > b || c > d {
        return None;
    }
    let (all, none) = match op {
        Op::Lt => (b < c, a >= d),
        Op::Le => (b <= c, a > d),
        Op::Gt => (a > d, b <= c),
        Op::Ge => (a >= d, b < c),
        Op::Eq => (a == b && c == d && a == c, b < c || d < a),
        Op::Ne => (b < c || d < a, a == b && c == d && a == c),
    };
    if all {
        Some(true)
    } else if none {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::super::{broken_counts, parse_line, parse_text};
    use super::*;
    use crate::data::csv::{LoadOptions, parse_csv_bytes};

    fn schema() -> Schema {
        serde_json::from_str(
            r#"{"columns":[
            {"name":"relationship","kind":"categorical","domain":{"categories":["Husband","Wife","Own-child"]}},
            {"name":"sex","kind":"binary","domain":{"categories":["Female","Male"]}},
            {"name":"gain","kind":"continuous","integer":true,"domain":{"bounds":{"lower":0,"upper":10}}},
            {"name":"loss","kind":"continuous","integer":true,"domain":{"bounds":{"lower":0,"upper":10}}}]}"#,
        )
        .unwrap()
    }

    fn broken(line: &str, cells: &[(&str, Span)]) -> bool {
        let rule = parse_line(line).unwrap().unwrap();
        let span_of = |c: &str| {
            cells
                .iter()
                .find(|(n, _)| *n == c)
                .map_or(Span::Any, |(_, s)| s.clone())
        };
        surely_broken(&rule, &schema(), &span_of)
    }

    fn level(s: &str) -> Span {
        Span::Level(s.into())
    }

    fn bin(lo: f64, hi: f64) -> Span {
        Span::Range { lo, hi }
    }

    #[test]
    fn a_cell_is_forbidden_only_when_every_row_in_it_breaks_the_rule() {
        let husband = r#"relationship = "Husband" => sex = "Male""#;
        let r = ("relationship", level("Husband"));
        assert!(broken(husband, &[r.clone(), ("sex", level("Female"))]));
        assert!(!broken(husband, &[r.clone(), ("sex", level("Male"))]));
        let wife = ("relationship", level("Wife"));
        assert!(!broken(husband, &[wife.clone(), ("sex", level("Female"))]));
        // A blank sex could be anything: never forbidden.
        assert!(!broken(husband, &[r, ("sex", Span::Any)]));

        let gain = "gain > 0 => loss = 0";
        assert!(broken(
            gain,
            &[("gain", bin(1.0, 2.0)), ("loss", bin(5.0, 9.0))]
        ));
        assert!(broken(
            gain,
            &[("gain", bin(7.0, 7.0)), ("loss", bin(3.0, 3.0))]
        ));
        assert!(!broken(
            gain,
            &[("gain", bin(0.0, 0.0)), ("loss", bin(3.0, 3.0))]
        ));
        assert!(!broken(
            gain,
            &[("gain", bin(7.0, 7.0)), ("loss", bin(0.0, 0.0))]
        ));
        // A bin that holds 0 as well as gains: some of its rows are lawful.
        assert!(!broken(
            gain,
            &[("gain", bin(0.0, 2.0)), ("loss", bin(5.0, 9.0))]
        ));
        assert!(!broken(
            gain,
            &[("gain", bin(1.0, 2.0)), ("loss", bin(0.0, 9.0))]
        ));

        let inside = r#"relationship in {"Husband", "Wife"} => gain >= 5"#;
        assert!(broken(inside, &[wife.clone(), ("gain", bin(0.0, 4.0))]));
        let child = ("relationship", level("Own-child"));
        assert!(!broken(inside, &[child, ("gain", bin(0.0, 4.0))]));
        assert!(!broken(inside, &[wife.clone(), ("gain", bin(3.0, 6.0))]));

        assert!(broken("gain >= 3", &[("gain", bin(0.0, 2.5))]));
        assert!(!broken("gain >= 3", &[("gain", bin(0.0, 3.0))]));
        assert!(!broken("relationship -> sex", &[wife]));
    }

    /// Against the row-by-row check, the reference: a range cell is forbidden exactly when
    /// every row of whole numbers in it breaks the rule (the rules here compare each
    /// column with a constant or the other, so ranges lose nothing), and never when one
    /// row is lawful (`!=` and `in`, where a range can only say "unknown").
    #[test]
    fn ranges_agree_with_the_rows_they_hold() {
        let s = schema();
        let mut csv = String::from("relationship,sex,gain,loss\n");
        for g in 0..=10 {
            for l in 0..=10 {
                csv.push_str(&format!("Husband,Male,{g},{l}\n"));
            }
        }
        let t = parse_csv_bytes(csv.into_bytes(), "grid", &LoadOptions::default()).unwrap();
        let lines = [
            "gain > 3 => loss = 0",
            "gain <= loss",
            "gain != loss",
            "gain in {2, 5} => loss < 4",
            "loss >= 2",
            "gain >= 1 => gain < loss",
        ];
        let cuts = [(0, 2), (3, 3), (4, 8), (2, 5), (9, 10), (0, 10)];
        for line in lines {
            let rules = parse_text(line, "r").unwrap();
            // The reference: each row of the grid broken or not, by the row evaluator.
            let row_broken = |g: usize, l: usize| {
                let one = t.rows(&[g * 11 + l]);
                broken_counts(&rules, &s, &one).unwrap()[0] == 1
            };
            for (g0, g1) in cuts {
                for (l0, l1) in cuts {
                    let span_of = |c: &str| match c {
                        "gain" => bin(g0 as f64, g1 as f64),
                        _ => bin(l0 as f64, l1 as f64),
                    };
                    let by_range = surely_broken(&rules[0].rule, &s, &span_of);
                    let every = (g0..=g1).all(|g| (l0..=l1).all(|l| row_broken(g, l)));
                    let cell = format!("{line}: gain [{g0},{g1}] × loss [{l0},{l1}]");
                    assert!(!by_range || every, "forbids a lawful row: {cell}");
                    if !line.contains("!=") && !line.contains(" in ") {
                        assert_eq!(by_range, every, "{cell}");
                    }
                }
            }
        }
    }
}
