//! What keeping rows by rules or a condition did to the table: each column's shares among
//! the rows the model drew against those among the rows kept.
//!
//! Rejection can reshape a table in silence: a rule that only dropping can keep, on a
//! model that never learnt it, may drop every row of one group. Both sides are synthetic
//! rows, so the comparison is post-processing (no charge), and it is what `sample`, the
//! window and the statement name: every column whose share of some value moved by more
//! than [`MOVED`].

use std::collections::HashMap;

use crate::data::schema::{ColumnSpec, Kind, Schema};
use crate::data::table::{Table, Values};

/// A move in a column's share of one value larger than this is named.
pub const MOVED: f64 = 0.05;
/// Equal-width parts of a number column's bounds (besides its point masses) compared.
const PARTS: usize = 5;

/// The value of one column whose share moved most, when it moved by more than [`MOVED`].
#[derive(Debug, Clone, PartialEq)]
pub struct Moved {
    pub column: String,
    /// The value, as shown: a level, `= 0` for a point mass, `1000–2000` for a part of
    /// the bounds, `(blank)`.
    pub value: String,
    /// Its share among the rows drawn, and among those kept.
    pub drawn: f64,
    pub kept: f64,
}

impl std::fmt::Display for Moved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {:.1} % of the rows drawn, {:.1} % of those kept",
            self.column,
            self.value,
            100.0 * self.drawn,
            100.0 * self.kept
        )
    }
}

/// Counts of each column's values among drawn and kept rows, chunk by chunk.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    drawn: HashMap<(String, String), usize>,
    kept: HashMap<(String, String), usize>,
    rows: [usize; 2],
}

impl Tally {
    /// Adds a chunk: the rows drawn and the rows of it kept.
    pub fn add(&mut self, schema: &Schema, drawn: &Table, kept: &Table) {
        count(schema, drawn, &mut self.drawn);
        count(schema, kept, &mut self.kept);
        self.rows[0] += drawn.n_rows;
        self.rows[1] += kept.n_rows;
    }

    /// Every column whose share of some value moved by more than [`MOVED`], with the
    /// value that moved most; largest moves first.
    pub fn moved(&self) -> Vec<Moved> {
        let [nd, nk] = self.rows;
        if nd == 0 || nk == 0 {
            return Vec::new();
        }
        let mut best: HashMap<&str, Moved> = HashMap::new();
        let keys = self.drawn.keys().chain(self.kept.keys());
        for key in keys {
            let d = self.drawn.get(key).copied().unwrap_or(0) as f64 / nd as f64;
            let k = self.kept.get(key).copied().unwrap_or(0) as f64 / nk as f64;
            if (k - d).abs() <= MOVED {
                continue;
            }
            let m = Moved {
                column: key.0.clone(),
                value: key.1.clone(),
                drawn: d,
                kept: k,
            };
            let e = best.entry(key.0.as_str()).or_insert_with(|| m.clone());
            let by = |m: &Moved| (m.kept - m.drawn).abs();
            // Shares of a two-valued column move by the same amount up to rounding: a
            // tolerance keeps which of them is named from hanging on the last bit.
            let (a, b) = (by(&m), by(e));
            if a > b + 1e-9 || ((a - b).abs() <= 1e-9 && m.value < e.value) {
                *e = m;
            }
        }
        let mut out: Vec<Moved> = best.into_values().collect();
        out.sort_by(|a, b| {
            (b.kept - b.drawn)
                .abs()
                .total_cmp(&(a.kept - a.drawn).abs())
                .then(a.column.cmp(&b.column))
        });
        out
    }
}

fn count(schema: &Schema, t: &Table, into: &mut HashMap<(String, String), usize>) {
    for spec in schema.columns.iter().filter(|c| c.kind != Kind::Ignored) {
        let Some(col) = t.column(&spec.name) else {
            continue;
        };
        let mut local: HashMap<String, usize> = HashMap::new();
        match &col.values {
            Values::Number(v) if spec.kind == Kind::Continuous => {
                for x in v {
                    *local.entry(part(spec, *x)).or_default() += 1;
                }
            }
            _ => {
                for r in 0..t.n_rows {
                    let cell = col.text(r).unwrap_or_else(|| "(blank)".into());
                    *local.entry(cell).or_default() += 1;
                }
            }
        }
        for (value, n) in local {
            *into.entry((spec.name.clone(), value)).or_default() += n;
        }
    }
}

/// The part of a number column a value falls in, as shown.
fn part(spec: &ColumnSpec, x: Option<f64>) -> String {
    let Some(x) = x else {
        return "(blank)".into();
    };
    if spec.point_mass_of(x).is_some() {
        return format!("= {}", spec.show_value(x));
    }
    let Some((lo, hi)) = spec.bounds().filter(|(lo, hi)| hi > lo) else {
        return "(any)".into();
    };
    let k = (((x - lo) / (hi - lo) * PARTS as f64).floor() as usize).min(PARTS - 1);
    let w = (hi - lo) / PARTS as f64;
    let show = |v: f64| spec.show_value(v);
    format!(
        "{}–{}",
        show(lo + k as f64 * w),
        show(lo + (k + 1) as f64 * w)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::table::{Column, TextColumn};

    fn table(part: &[&str], hours: &[f64]) -> Table {
        Table {
            columns: vec![
                Column {
                    name: "participation".into(),
                    values: Values::Text(TextColumn::from_cells(part.iter().map(|s| Some(*s)))),
                },
                Column {
                    name: "hours".into(),
                    values: Values::Number(hours.iter().map(|x| Some(*x)).collect()),
                },
            ],
            n_rows: part.len(),
        }
    }

    #[test]
    fn a_two_valued_column_names_the_same_value_whatever_the_rounding() {
        let schema = Schema::from_json(
            r#"{"columns":[
            {"name":"participation","kind":"categorical","domain":{"categories":["no","yes"]}},
            {"name":"hours","kind":"continuous","domain":{"bounds":{"lower":0,"upper":5000}}}]}"#,
            "test",
        )
        .unwrap();
        // "no" moves by 1/3 and "yes" by 1/3 plus a last bit: the tie goes by name.
        let drawn = table(&["no", "yes", "yes"], &[1.0, 1.0, 1.0]);
        let kept = table(&["yes"], &[1.0]);
        let mut t = Tally::default();
        t.add(&schema, &drawn, &kept);
        let p = t.moved().into_iter().find(|m| m.column == "participation").unwrap();
        assert_eq!(p.value, "no", "{p:?}");
    }

    #[test]
    fn a_group_dropped_by_rejection_is_named_with_its_shares() {
        let schema = Schema::from_json(
            r#"{"columns":[
            {"name":"participation","kind":"categorical","domain":{"categories":["no","yes"]}},
            {"name":"hours","kind":"continuous","point_masses":[0],"domain":{"bounds":{"lower":0,"upper":5000}}}]}"#,
            "test",
        )
        .unwrap();
        let drawn = table(&["no", "no", "yes", "yes"], &[0.0, 30.0, 1500.0, 10.0]);
        let kept = table(&["no", "yes", "yes"], &[0.0, 1500.0, 10.0]);
        let mut t = Tally::default();
        t.add(&schema, &drawn, &kept);
        let moved = t.moved();
        assert_eq!(moved.len(), 2, "{moved:?}");
        let p = moved.iter().find(|m| m.column == "participation").unwrap();
        // "no" and "yes" moved alike (half of the rows drawn, a third or two of those kept).
        assert!((p.drawn - 0.5).abs() < 1e-12, "{p:?}");
        assert!(
            ((p.kept - p.drawn).abs() - 1.0 / 6.0).abs() < 1e-12,
            "{p:?}"
        );
        assert!(moved.iter().any(|m| m.column == "hours"));
        // Nothing dropped: nothing moved.
        let mut same = Tally::default();
        same.add(&schema, &drawn, &drawn);
        assert!(same.moved().is_empty());
    }
}
