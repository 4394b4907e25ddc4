//! The first look: what a person who knows the data sees in the rows before any score.
//!
//! Aggregate scores hide what a reviewer spots at once: a column where most people hold
//! exactly 0 coming back as 38, 991, 2,174 …; numbers with more decimals than the data
//! ever has; a husband who is not male. This section compares, real against synthetic:
//! - each number column's commonest exact values (by the real rows) and the share of rows
//!   at each, and its precision (decimals);
//! - the share of rows breaking each rule of the schema;
//! - twenty random rows of each, side by side.
//!
//! Like the rest of the evaluation it reads the real rows in the clear: a local diagnostic
//! for the data's owner, never part of a release.

use std::collections::HashMap;

use crate::data::Table;
use crate::data::rules;
use crate::data::schema::{Kind, Schema};

use super::results::{ExactShare, ExactValues, FirstLook, RuleShare};

/// Commonest exact values reported per number column.
const TOP_VALUES: usize = 3;
/// A value is reported when at least this share of real rows hold it exactly.
const COMMON_SHARE: f64 = 0.01;
/// Rows shown side by side.
pub const SHOWN_ROWS: usize = 20;

/// The cells of a number column as canonical text (blanks left out).
fn texts(t: &Table, name: &str) -> Vec<String> {
    let Some(c) = t.column(name) else {
        return Vec::new();
    };
    (0..t.n_rows).filter_map(|r| c.text(r)).collect()
}

fn decimals(cells: &[String]) -> u32 {
    cells
        .iter()
        .filter(|s| !s.contains('e') && !s.contains('E'))
        .map(|s| s.split_once('.').map_or(0, |(_, d)| d.len() as u32))
        .max()
        .unwrap_or(0)
}

fn exact_values(name: &str, real: &Table, synthetic: &Table) -> Option<ExactValues> {
    // A column the synthetic rows lack is named as missing (the report's
    // `not_synthesized`), never as a value held by 0 % of them.
    synthetic.column(name)?;
    let (r, s) = (texts(real, name), texts(synthetic, name));
    if r.is_empty() {
        return None;
    }
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for v in &r {
        *counts.entry(v).or_default() += 1;
    }
    let mut top: Vec<(&str, usize)> = counts.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let share = |cells: &[String], v: &str| {
        cells.iter().filter(|c| *c == v).count() as f64 / cells.len().max(1) as f64
    };
    let values: Vec<ExactShare> = top
        .into_iter()
        .take(TOP_VALUES)
        .filter(|(_, k)| *k as f64 >= COMMON_SHARE * r.len() as f64)
        .map(|(v, _)| ExactShare {
            value: v.to_string(),
            real: share(&r, v),
            synthetic: share(&s, v),
        })
        .collect();
    Some(ExactValues {
        column: name.to_string(),
        values,
        real_decimals: decimals(&r),
        synthetic_decimals: decimals(&s),
    })
}

/// Up to [`SHOWN_ROWS`] rows of `t` drawn with `seed`, as text.
fn shown(t: &Table, header: &[String], seed: u64) -> Vec<Vec<String>> {
    let s = t.sample_rows(SHOWN_ROWS, seed);
    (0..s.n_rows)
        .map(|r| {
            header
                .iter()
                .map(|h| s.column(h).and_then(|c| c.text(r)).unwrap_or_default())
                .collect()
        })
        .collect()
}

/// The first look at `synthetic` beside `real` under `schema` (its rules included).
pub fn first_look(schema: &Schema, real: &Table, synthetic: &Table, seed: u64) -> FirstLook {
    let exact: Vec<ExactValues> = schema
        .columns
        .iter()
        .filter(|c| c.kind == Kind::Continuous && c.time_format.is_none())
        .filter_map(|c| exact_values(&c.name, real, synthetic))
        .collect();
    let rules = rule_shares(schema, real, synthetic);
    let header: Vec<String> = schema
        .columns
        .iter()
        .filter(|c| c.kind != Kind::Ignored && synthetic.column(&c.name).is_some())
        .map(|c| c.name.clone())
        .collect();
    let mut look = FirstLook {
        real_rows: shown(real, &header, seed),
        synthetic_rows: shown(synthetic, &header, seed ^ 0x5eed),
        header,
        exact,
        rules,
        worst: None,
    };
    look.worst = worst(&look);
    look
}

fn rule_shares(schema: &Schema, real: &Table, synthetic: &Table) -> Vec<RuleShare> {
    let Ok(stated) = rules::of_schema(schema) else {
        return Vec::new();
    };
    let share = |t: &Table| -> Vec<f64> {
        rules::broken_counts(&stated, schema, t)
            .map(|v| {
                v.iter()
                    .map(|k| *k as f64 / t.n_rows.max(1) as f64)
                    .collect()
            })
            .unwrap_or_else(|_| vec![f64::NAN; stated.len()])
    };
    let (r, s) = (share(real), share(synthetic));
    let parts = |t: &Table| {
        rules::part_shares(&stated, schema, t).unwrap_or_else(|_| vec![(None, None); stated.len()])
    };
    let (pr, ps) = (parts(real), parts(synthetic));
    let both = |a: Option<f64>, b: Option<f64>| a.zip(b);
    stated
        .iter()
        .zip(r.into_iter().zip(s))
        .zip(pr.into_iter().zip(ps))
        .map(
            |((st, (real, synthetic)), ((wr, tr), (ws, ts)))| RuleShare {
                rule: st.text.clone(),
                real,
                synthetic,
                when: both(wr, ws),
                then: both(tr, ts),
            },
        )
        .collect()
}

fn pct(x: f64) -> String {
    format!("{:.1} %", 100.0 * x)
}

/// The largest gap a person would see first, as a sentence: a common exact value the
/// synthetic rows miss (or overdo), rows breaking a rule, or numbers written with more
/// decimals than the data has. Gaps under 3 points are not named.
fn worst(look: &FirstLook) -> Option<String> {
    let mut found: Vec<(f64, String)> = Vec::new();
    // First, so that an equal gap named more plainly below wins.
    for r in &look.rules {
        // A group the rule speaks of, grown or shrunk (kept by dropping rows).
        for (part, shares) in [("condition", r.when), ("consequence", r.then)] {
            if let Some((real, synthetic)) = shares {
                found.push((
                    (real - synthetic).abs(),
                    format!(
                        "the {part} of the rule '{}' holds in {} of real rows but {} of synthetic rows",
                        r.rule,
                        pct(real),
                        pct(synthetic)
                    ),
                ));
            }
        }
    }
    for e in &look.exact {
        for v in &e.values {
            found.push((
                (v.real - v.synthetic).abs(),
                format!(
                    "'{}' is exactly {} in {} of real rows but {} of synthetic rows",
                    e.column,
                    v.value,
                    pct(v.real),
                    pct(v.synthetic)
                ),
            ));
        }
        if e.synthetic_decimals > e.real_decimals {
            found.push((
                0.05,
                format!(
                    "'{}' is written with {} decimals in the synthetic rows but at most {} in the real ones",
                    e.column, e.synthetic_decimals, e.real_decimals
                ),
            ));
        }
    }
    for r in &look.rules {
        if r.synthetic.is_finite() {
            found.push((
                r.synthetic - r.real,
                format!(
                    "{} of synthetic rows break the rule '{}' ({} of real rows do)",
                    pct(r.synthetic),
                    r.rule,
                    pct(r.real)
                ),
            ));
        }
    }
    found
        .into_iter()
        .filter(|(gap, _)| *gap >= 0.03)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, s)| s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::csv::{LoadOptions, parse_csv_bytes};

    fn table(csv: &str) -> Table {
        parse_csv_bytes(csv.as_bytes().to_vec(), "t", &LoadOptions::default()).unwrap()
    }

    #[test]
    fn the_worst_gap_is_named_in_a_sentence() {
        let schema: Schema = serde_json::from_str(
            r#"{"columns":[
            {"name":"gain","kind":"continuous","domain":{"bounds":{"lower":0,"upper":100}}},
            {"name":"loss","kind":"continuous","integer":true,"domain":{"bounds":{"lower":0,"upper":100}}}],
            "rules":["gain > 0 => loss = 0"]}"#,
        )
        .unwrap();
        let real = table("gain,loss\n0,0\n0,0\n0,5\n7,0\n");
        let synthetic = table("gain,loss\n38.25,3\n0,0\n2.5,0\n12.75,0\n");
        let look = first_look(&schema, &real, &synthetic, 1);
        let gain = &look.exact[0];
        assert_eq!(gain.values[0].value, "0");
        assert_eq!(
            (gain.values[0].real, gain.values[0].synthetic),
            (0.75, 0.25)
        );
        assert_eq!((gain.real_decimals, gain.synthetic_decimals), (0, 2));
        assert_eq!(look.rules[0].real, 0.0);
        assert_eq!(look.rules[0].synthetic, 0.25);
        // gain > 0 in 1 of 4 real rows, 3 of 4 synthetic; loss = 0 in 3 and 3.
        assert_eq!(look.rules[0].when, Some((0.25, 0.75)));
        assert_eq!(look.rules[0].then, Some((0.75, 0.75)));
        assert_eq!(look.real_rows.len(), 4);
        assert_eq!(look.header, vec!["gain", "loss"]);
        let w = look.worst.unwrap();
        assert!(
            w.contains("'gain' is exactly 0 in 75.0 % of real rows but 25.0 %"),
            "{w}"
        );
    }
}
