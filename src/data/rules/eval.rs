//! Rules read against a table: how many rows break each (a local diagnostic on real rows,
//! a first-look figure on synthetic ones), and a synthetic table made to obey them.
//!
//! A comparison on a blank cell is unknown: a rule is broken only when its condition
//! surely holds and its consequence surely fails, so blanks never count as breaking one.

use std::collections::HashMap;

use super::parse::{Atom, Cond, Op, Rule, Value};
use super::{Stated, level_in, number_in, text_in};
use crate::data::error::DataError;
use crate::data::schema::{ColumnSpec, Kind, Schema};
use crate::data::table::{Column, Table, TextColumn, Values};

/// One column's cells as a rule reads them.
enum Cells {
    Numbers(Vec<Option<f64>>),
    Text(Vec<Option<String>>),
}

/// The cells of every column the rules read.
struct Frame<'a> {
    schema: &'a Schema,
    cells: HashMap<&'a str, Cells>,
}

impl<'a> Frame<'a> {
    fn new(
        schema: &'a Schema,
        rules: impl Iterator<Item = &'a Rule>,
        t: &Table,
    ) -> Result<Self, DataError> {
        let mut cells = HashMap::new();
        for rule in rules {
            for name in rule.columns() {
                if cells.contains_key(name) {
                    continue;
                }
                let spec = schema.column(name).ok_or_else(|| {
                    DataError::column(name, "a rule names it but the schema has no such column")
                })?;
                let col = t.column(name).ok_or_else(|| {
                    DataError::column(name, "a rule names it but the table has no such column")
                })?;
                cells.insert(spec.name.as_str(), read(spec, col)?);
            }
        }
        Ok(Self { schema, cells })
    }

    fn spec(&self, name: &str) -> Option<&ColumnSpec> {
        self.schema.column(name)
    }

    fn number(&self, name: &str, r: usize) -> Option<f64> {
        match self.cells.get(name)? {
            Cells::Numbers(v) => v[r],
            Cells::Text(v) => v[r].as_deref().and_then(crate::util::fmt::parse_number),
        }
    }

    fn text(&self, name: &str, r: usize) -> Option<String> {
        match self.cells.get(name)? {
            Cells::Numbers(v) => v[r].map(crate::util::fmt::number),
            Cells::Text(v) => v[r].clone(),
        }
    }
}

fn read(spec: &ColumnSpec, col: &Column) -> Result<Cells, DataError> {
    Ok(if spec.kind == Kind::Continuous {
        Cells::Numbers(spec.numbers(col)?)
    } else {
        Cells::Text((0..col.values.len()).map(|r| col.text(r)).collect())
    })
}

/// Whether one comparison holds in row `r` (`None`: a cell it reads is blank).
fn atom_holds(f: &Frame<'_>, a: &Atom, r: usize) -> Option<bool> {
    match a {
        Atom::Compare { column, op, value } => value_holds(f, column, *op, value, r),
        Atom::In { column, values } => {
            let mut any = false;
            for v in values {
                any |= value_holds(f, column, Op::Eq, v, r)?;
            }
            Some(any)
        }
        Atom::Columns { left, op, right } => {
            let spec = f.spec(left)?;
            if spec.kind == Kind::Continuous {
                let (a, b) = (f.number(left, r)?, f.number(right, r)?);
                Some(op.holds(a.partial_cmp(&b)?))
            } else {
                let (a, b) = (f.text(left, r)?, f.text(right, r)?);
                Some(op.holds(a.cmp(&b)))
            }
        }
    }
}

fn value_holds(f: &Frame<'_>, column: &str, op: Op, v: &Value, r: usize) -> Option<bool> {
    let spec = f.spec(column)?;
    if spec.kind == Kind::Continuous {
        let x = f.number(column, r)?;
        Some(op.holds(x.partial_cmp(&number_in(spec, v)?)?))
    } else {
        let cell = f.text(column, r)?;
        let level = level_in(spec, v)?;
        let same = cell == level
            || matches!((crate::util::fmt::parse_number(&cell), crate::util::fmt::parse_number(level)), (Some(a), Some(b)) if a == b);
        Some(op.holds(if same {
            std::cmp::Ordering::Equal
        } else {
            std::cmp::Ordering::Less
        }))
    }
}

/// Whether a condition holds in row `r` (`None`: unknown for a blank).
fn cond_holds(f: &Frame<'_>, c: &Cond, r: usize) -> Option<bool> {
    super::all_of(c.0.iter().map(|a| atom_holds(f, a, r)))
}

/// Whether row `r` breaks a rule that reads one row (a `->` rule reads the whole table:
/// see [`determined`]).
fn breaks(f: &Frame<'_>, rule: &Rule, r: usize) -> bool {
    match rule {
        Rule::Determines { .. } => false,
        Rule::Implies { when, then } => {
            cond_holds(f, when, r) == Some(true) && cond_holds(f, then, r) == Some(false)
        }
        Rule::Holds(c) => cond_holds(f, c, r) == Some(false),
    }
}

/// For each value of `left`, the value of `right` most rows of `t` hold with it (ties to
/// the value seen first).
fn determined(f: &Frame<'_>, left: &str, right: &str, n: usize) -> HashMap<String, String> {
    let mut counts: HashMap<String, (Vec<(String, usize)>, usize)> = HashMap::new();
    for r in 0..n {
        let (Some(l), Some(x)) = (f.text(left, r), f.text(right, r)) else {
            continue;
        };
        let (seen, _) = counts.entry(l).or_default();
        match seen.iter_mut().find(|(v, _)| *v == x) {
            Some((_, c)) => *c += 1,
            None => seen.push((x, 1)),
        }
    }
    counts
        .into_iter()
        .filter_map(|(l, (seen, _))| {
            let mut best: Option<&(String, usize)> = None;
            for s in &seen {
                if best.is_none_or(|b| s.1 > b.1) {
                    best = Some(s);
                }
            }
            best.map(|b| (l, b.0.clone()))
        })
        .collect()
}

/// For each rule, the share of `t`'s rows where its condition surely holds and where its
/// consequence does (`None` where the rule has no such part: a `->` rule; a rule that
/// holds on its own has only a consequence). The first look compares them, real against
/// synthetic, so a rule that reshaped the table (a group dropped to keep it) shows.
pub fn part_shares(
    rules: &[Stated],
    schema: &Schema,
    t: &Table,
) -> Result<Vec<(Option<f64>, Option<f64>)>, DataError> {
    let f = Frame::new(schema, rules.iter().map(|r| &r.rule), t)?;
    let n = t.n_rows.max(1) as f64;
    let share = |c: &Cond| {
        (0..t.n_rows)
            .filter(|&r| cond_holds(&f, c, r) == Some(true))
            .count() as f64
            / n
    };
    Ok(rules
        .iter()
        .map(|s| match &s.rule {
            Rule::Determines { .. } => (None, None),
            Rule::Implies { when, then } => (Some(share(when)), Some(share(then))),
            Rule::Holds(c) => (None, Some(share(c))),
        })
        .collect())
}

/// A `->` rule's given map as cell texts (left value → right value).
fn given(
    schema: &Schema,
    left: &str,
    right: &str,
    map: &[(Value, Value)],
) -> HashMap<String, String> {
    let (Some(l), Some(r)) = (schema.column(left), schema.column(right)) else {
        return HashMap::new();
    };
    map.iter()
        .filter_map(|(k, v)| Some((text_in(l, k)?, text_in(r, v)?)))
        .collect()
}

/// How many rows of `t` break each rule. A `->` rule counts the rows whose right value is
/// not the one most rows with their left value hold.
pub fn broken_counts(
    rules: &[Stated],
    schema: &Schema,
    t: &Table,
) -> Result<Vec<usize>, DataError> {
    let f = Frame::new(schema, rules.iter().map(|r| &r.rule), t)?;
    Ok(rules
        .iter()
        .map(|s| match &s.rule {
            Rule::Determines { left, right, map } => {
                let mut learnt = determined(&f, left, right, t.n_rows);
                learnt.extend(given(schema, left, right, map));
                let map = learnt;
                (0..t.n_rows)
                    .filter(|&r| match (f.text(left, r), f.text(right, r)) {
                        (Some(l), Some(x)) => map.get(&l).is_some_and(|m| *m != x),
                        _ => false,
                    })
                    .count()
            }
            rule => (0..t.n_rows).filter(|&r| breaks(&f, rule, r)).count(),
        })
        .collect())
}

/// The `->` maps a release applies: for each left value, the right value. Learnt from
/// synthetic rows (the model's own favourite), so it is post-processing.
#[derive(Debug, Clone, Default)]
pub struct Repair {
    maps: Vec<(String, String, HashMap<String, String>)>,
}

impl Repair {
    /// The maps of the `->` rules, from a synthetic table.
    pub fn learn(rules: &[Stated], schema: &Schema, synthetic: &Table) -> Result<Self, DataError> {
        let f = Frame::new(schema, rules.iter().map(|r| &r.rule), synthetic)?;
        let maps = rules
            .iter()
            .filter_map(|s| match &s.rule {
                Rule::Determines { left, right, map } => {
                    // The codebook's map where the rule gives one; the model's favourite
                    // for the left values it does not list.
                    let mut learnt = determined(&f, left, right, synthetic.n_rows);
                    learnt.extend(given(schema, left, right, map));
                    Some((left.clone(), right.clone(), learnt))
                }
                _ => None,
            })
            .collect();
        Ok(Self { maps })
    }
}

/// A synthetic table made to obey the rules, and how many of its rows were kept.
#[derive(Debug, Clone)]
pub struct Enforced {
    pub table: Table,
    /// Rows drawn before the rules.
    pub drawn: usize,
}

/// Sets every `->` rule's right value from its left one (`repair`), sets the value a
/// rule's consequence fixes where its condition holds ([`fix_values`]), then drops the
/// rows that still break a rule. Post-processing of synthetic rows.
pub fn enforce(
    rules: &[Stated],
    schema: &Schema,
    t: Table,
    repair: &Repair,
) -> Result<Enforced, DataError> {
    let drawn = t.n_rows;
    let mut t = t;
    for (left, right, map) in &repair.maps {
        t = apply_map(schema, t, left, right, map)?;
    }
    t = fix_values(rules, schema, t)?;
    let f = Frame::new(schema, rules.iter().map(|r| &r.rule), &t)?;
    let keep: Vec<usize> = (0..t.n_rows)
        .filter(|&r| !rules.iter().any(|s| breaks(&f, &s.rule, r)))
        .collect();
    let table = if keep.len() == t.n_rows {
        t
    } else {
        t.rows(&keep)
    };
    Ok(Enforced { table, drawn })
}

/// The values a rule's consequence fixes (`… => hours = 0`, `… => sex = "Male" and
/// …`): every comparison of `then` an `=` on a column `when` does not read. `None` for a
/// rule whose consequence leaves a choice (`hours > 0`), which only dropping can keep.
fn fixed_by<'r>(rule: &'r Rule, schema: &Schema) -> Option<Vec<(&'r str, &'r Value)>> {
    let Rule::Implies { when, then } = rule else {
        return None;
    };
    let read: Vec<&str> = when.0.iter().flat_map(Atom::columns).collect();
    then.0
        .iter()
        .map(|a| match a {
            Atom::Compare {
                column,
                op: Op::Eq,
                value,
            } if !read.contains(&column.as_str()) => {
                let spec = schema.column(column)?;
                let known = if spec.kind == Kind::Continuous {
                    number_in(spec, value).is_some()
                } else {
                    level_in(spec, value).is_some()
                };
                known.then_some((column.as_str(), value))
            }
            _ => None,
        })
        .collect()
}

/// Where a rule's condition holds and the value its consequence fixes does not, sets
/// that value: a row drawn as a non-participant working 37 hours becomes one working 0
/// (what `participation = "no" => hours = 0` means), where dropping it would leave a
/// table of participants. Repairs may enable other rules' conditions, so they run until
/// nothing changes (at most once per rule). Post-processing of synthetic rows.
pub fn fix_values(rules: &[Stated], schema: &Schema, mut t: Table) -> Result<Table, DataError> {
    let fixers: Vec<(&Rule, Vec<(&str, &Value)>)> = rules
        .iter()
        .filter_map(|s| fixed_by(&s.rule, schema).map(|f| (&s.rule, f)))
        .collect();
    for _ in 0..fixers.len() {
        let mut changed = false;
        for (rule, fixes) in &fixers {
            let f = Frame::new(schema, std::iter::once(*rule), &t)?;
            let rows: Vec<usize> = (0..t.n_rows).filter(|&r| breaks(&f, rule, r)).collect();
            if rows.is_empty() {
                continue;
            }
            changed = true;
            for (column, value) in fixes {
                set_cells(schema, &mut t, column, value, &rows)?;
            }
        }
        if !changed {
            break;
        }
    }
    Ok(t)
}

/// Sets `column` to `value` in `rows`.
fn set_cells(
    schema: &Schema,
    t: &mut Table,
    column: &str,
    value: &Value,
    rows: &[usize],
) -> Result<(), DataError> {
    let spec = schema.column(column).ok_or_else(|| {
        DataError::column(column, "a rule names it but the schema has no such column")
    })?;
    let text = match value {
        _ if spec.kind != Kind::Continuous => level_in(spec, value).map(str::to_string),
        Value::Text(s) => Some(s.clone()),
        Value::Number(x) => Some(crate::util::fmt::number(*x)),
    };
    let number = number_in(spec, value);
    let Some(col) = t.columns.iter_mut().find(|c| c.name == column) else {
        return Err(DataError::column(
            column,
            "a rule names it but the table has no such column",
        ));
    };
    match &mut col.values {
        Values::Number(v) => {
            for &r in rows {
                v[r] = number.or(v[r]);
            }
        }
        Values::Text(v) => {
            let mut cells: Vec<Option<String>> =
                (0..v.len()).map(|r| v.get(r).map(str::to_string)).collect();
            for &r in rows {
                if let Some(x) = &text {
                    cells[r] = Some(x.clone());
                }
            }
            *v = TextColumn::from_cells(cells.iter().map(Option::as_deref));
        }
    }
    Ok(())
}

fn apply_map(
    schema: &Schema,
    mut t: Table,
    left: &str,
    right: &str,
    map: &HashMap<String, String>,
) -> Result<Table, DataError> {
    let spec = schema.column(left).ok_or_else(|| {
        DataError::column(left, "a rule names it but the schema has no such column")
    })?;
    let lefts: Vec<Option<String>> = match t.column(left) {
        Some(c) => match read(spec, c)? {
            Cells::Numbers(v) => v
                .into_iter()
                .map(|x| x.map(crate::util::fmt::number))
                .collect(),
            Cells::Text(v) => v,
        },
        None => {
            return Err(DataError::column(
                left,
                "a rule names it but the table has no such column",
            ));
        }
    };
    let Some(col) = t.columns.iter_mut().find(|c| c.name == right) else {
        return Err(DataError::column(
            right,
            "a rule names it but the table has no such column",
        ));
    };
    let target = |r: usize| lefts[r].as_ref().and_then(|l| map.get(l));
    col.values = match &col.values {
        Values::Number(v) => Values::Number(
            v.iter()
                .enumerate()
                .map(|(r, x)| match target(r) {
                    Some(m) => crate::util::fmt::parse_number(m).or(*x),
                    None => *x,
                })
                .collect(),
        ),
        Values::Text(v) => {
            let cells: Vec<Option<String>> = (0..v.len())
                .map(|r| match target(r) {
                    Some(m) if v.get(r).is_some() => Some(m.clone()),
                    _ => v.get(r).map(str::to_string),
                })
                .collect();
            Values::Text(TextColumn::from_cells(cells.iter().map(Option::as_deref)))
        }
    };
    Ok(t)
}

/// Whether some value of `spec`'s domain meets every comparison in `atoms` (all on it).
pub(super) fn some_value_meets<'a>(
    spec: &ColumnSpec,
    atoms: impl Iterator<Item = &'a Atom> + Clone,
) -> bool {
    let meets_text = |level: &str| {
        atoms.clone().all(|a| match a {
            Atom::Compare { op, value, .. } => op.holds(if level_in(spec, value) == Some(level) {
                std::cmp::Ordering::Equal
            } else {
                std::cmp::Ordering::Less
            }),
            Atom::In { values, .. } => values.iter().any(|v| level_in(spec, v) == Some(level)),
            Atom::Columns { .. } => true,
        })
    };
    let meets_number = |x: f64| {
        atoms.clone().all(|a| match a {
            Atom::Compare { op, value, .. } => number_in(spec, value)
                .and_then(|v| x.partial_cmp(&v))
                .is_some_and(|o| op.holds(o)),
            Atom::In { values, .. } => values.iter().any(|v| number_in(spec, v) == Some(x)),
            Atom::Columns { .. } => true,
        })
    };
    if let Some(cats) = spec.categories() {
        return cats.iter().any(|c| meets_text(c));
    }
    let Some((lo, hi)) = spec.bounds() else {
        return true;
    };
    // The domain's ends, every value named, and numbers just either side of each.
    let mut candidates = vec![lo, hi, 0.5 * (lo + hi)];
    for a in atoms.clone() {
        let named: Vec<f64> = match a {
            Atom::Compare { value, .. } => number_in(spec, value).into_iter().collect(),
            Atom::In { values, .. } => values.iter().filter_map(|v| number_in(spec, v)).collect(),
            Atom::Columns { .. } => vec![],
        };
        for v in named {
            let step = if spec.integer {
                1.0
            } else {
                1e-9 * v.abs().max(1.0)
            };
            candidates.extend([v, v - step, v + step]);
        }
    }
    candidates
        .into_iter()
        .filter(|x| *x >= lo && *x <= hi && (!spec.integer || x.fract() == 0.0))
        .any(meets_number)
}

/// The rows of `t` where `cond` surely holds (a blank cell it reads drops the row).
pub fn select(cond: &Cond, schema: &Schema, t: Table) -> Result<Table, DataError> {
    let rule = Rule::Holds(cond.clone());
    let f = Frame::new(schema, std::iter::once(&rule), &t)?;
    let keep: Vec<usize> = (0..t.n_rows)
        .filter(|&r| cond_holds(&f, cond, r) == Some(true))
        .collect();
    Ok(if keep.len() == t.n_rows {
        t
    } else {
        t.rows(&keep)
    })
}
