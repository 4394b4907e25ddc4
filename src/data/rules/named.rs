//! The exact values a rule names, as point masses of their number columns.
//!
//! A codebook rule such as `participation = "no" => hours = 0` says that 0 is a value rows
//! hold exactly: a number column binned and decoded uniformly would never give it back,
//! and the rule could then only be met by dropping every "no" row. So each exact value a
//! rule names on a number column (`= v`, `!= v`, `in {…}`, and a strict bound at the
//! domain's edge such as `hours > 0` on bounds [0, 5000]) becomes one of the column's
//! point masses: its own level of every method's encoding and of the graphical models'
//! domain, where the rule then becomes structural zeros.
//!
//! The value is public by the rule itself (the user stated it, as they state a bound), so
//! this changes no charge. Nothing here reads the rows.

use super::parse::{Atom, Op, Rule};
use super::{Stated, number_in};
use crate::data::error::DataError;
use crate::data::schema::{ColumnSpec, Kind, MAX_POINT_MASSES, Schema};

/// The exact values the rules name on each number column, in the order they appear.
pub fn named_values(rules: &[Stated], schema: &Schema) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = Vec::new();
    let mut push = |spec: &ColumnSpec, x: f64| {
        if takes(spec, x) && !out.iter().any(|(c, v)| *c == spec.name && *v == x) {
            out.push((spec.name.clone(), x));
        }
    };
    for r in rules {
        let conds = match &r.rule {
            Rule::Implies { when, then } => vec![when, then],
            Rule::Holds(c) => vec![c],
            Rule::Determines { .. } => continue,
        };
        for atom in conds.into_iter().flat_map(|c| &c.0) {
            match atom {
                Atom::Compare { column, op, value } => {
                    let Some(spec) = number_column(schema, column) else {
                        continue;
                    };
                    let Some(x) = number_in(spec, value) else {
                        continue;
                    };
                    if matches!(op, Op::Eq | Op::Ne) || at_edge(spec, *op, x) {
                        push(spec, x);
                    }
                }
                Atom::In { column, values } => {
                    let Some(spec) = number_column(schema, column) else {
                        continue;
                    };
                    for x in values.iter().filter_map(|v| number_in(spec, v)) {
                        push(spec, x);
                    }
                }
                Atom::Columns { .. } => {}
            }
        }
    }
    out
}

/// A number column (not a date: a date many rows share is better a category).
fn number_column<'a>(schema: &'a Schema, name: &str) -> Option<&'a ColumnSpec> {
    schema
        .column(name)
        .filter(|s| s.kind == Kind::Continuous && s.time_format.is_none())
}

/// `> lower` or `< upper`: the rule sets the domain's edge apart from the rest.
fn at_edge(spec: &ColumnSpec, op: Op, x: f64) -> bool {
    match (spec.bounds(), op) {
        (Some((lo, _)), Op::Gt) => x == lo,
        (Some((_, hi)), Op::Lt) => x == hi,
        _ => false,
    }
}

/// Whether `x` can be a point mass of `spec`: inside its bounds, whole in a whole-number
/// column.
fn takes(spec: &ColumnSpec, x: f64) -> bool {
    let inside = spec.bounds().is_some_and(|(lo, hi)| x >= lo && x <= hi);
    inside && x.is_finite() && (!spec.integer || x.fract() == 0.0)
}

/// Adds the values the schema's rules name to their columns' point masses (those already
/// there are kept; at most [`MAX_POINT_MASSES`] in all). Returns the `(column, value)`
/// pairs added.
pub fn hold_named_values(schema: &mut Schema) -> Result<Vec<(String, f64)>, DataError> {
    if schema.rules.is_empty() {
        return Ok(Vec::new());
    }
    let rules = super::of_schema(schema)?;
    let mut added = Vec::new();
    for (column, x) in named_values(&rules, schema) {
        let Some(spec) = schema.columns.iter_mut().find(|c| c.name == column) else {
            continue;
        };
        if spec.point_mass_of(x).is_some() || spec.point_masses.len() >= MAX_POINT_MASSES {
            continue;
        }
        spec.point_masses.push(x);
        added.push((column, x));
    }
    Ok(added)
}

/// Whether `x` is a value some rule of `schema` names on `column` (the statement marks
/// such point masses as the rules').
pub fn is_named(schema: &Schema, column: &str, x: f64) -> bool {
    super::of_schema(schema)
        .map(|rules| {
            named_values(&rules, schema)
                .iter()
                .any(|(c, v)| c == column && (v - x).abs() <= 1e-9 * v.abs().max(1.0))
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn survey(rules: &[&str]) -> Schema {
        let mut s = Schema::from_json(
            r#"{"columns":[
            {"name":"participation","kind":"categorical","domain":{"categories":["no","yes"]}},
            {"name":"hours","kind":"continuous","integer":true,"domain":{"bounds":{"lower":0,"upper":5000}}},
            {"name":"wage","kind":"continuous","domain":{"bounds":{"lower":0,"upper":30}}},
            {"name":"age","kind":"continuous","integer":true,"domain":{"bounds":{"lower":30,"upper":60}}}]}"#,
            "test",
        )
        .unwrap();
        s.rules = rules.iter().map(|r| r.to_string()).collect();
        s
    }

    #[test]
    fn a_rules_exact_values_become_point_masses() {
        let mut s = survey(&[
            r#"participation = "no" => hours = 0"#,
            r#"participation = "no" => wage = 0"#,
            r#"participation = "yes" => hours > 0"#,
            "age >= 30",
            "wage in {0, 7.25}",
        ]);
        let added = hold_named_values(&mut s).unwrap();
        assert_eq!(
            added,
            vec![
                ("hours".to_string(), 0.0),
                ("wage".to_string(), 0.0),
                ("wage".to_string(), 7.25)
            ]
        );
        assert_eq!(s.column("hours").unwrap().point_masses, vec![0.0]);
        // `age >= 30` is a bound, not a value rows hold exactly.
        assert!(s.column("age").unwrap().point_masses.is_empty());
        s.validate().unwrap();
        assert!(is_named(&s, "hours", 0.0));
        assert!(!is_named(&s, "hours", 40.0));
        // Applied twice, nothing more is added.
        assert!(hold_named_values(&mut s).unwrap().is_empty());
    }

    #[test]
    fn values_outside_the_domain_or_not_whole_are_left_alone() {
        let mut s = survey(&["hours != 6000", "hours != 2.5", "age < 60"]);
        let added = hold_named_values(&mut s).unwrap();
        assert_eq!(added, vec![("age".to_string(), 60.0)]);
        assert!(s.column("hours").unwrap().point_masses.is_empty());
    }
}
