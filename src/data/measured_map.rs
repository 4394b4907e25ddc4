//! A `->` rule's map measured with noise, for the methods that never measure the pair.
//!
//! `education -> education-num` says each education has one education-num; which one is a
//! fact of the codebook the user may not type. MST and AIM measure the pair's table anyway
//! and read the map off it. A neural method learns no such table: a map taken from its own
//! pilot draw gave every education the same number. So, where the rule gives no map and
//! the method is not a marginal one, the domain step releases the pair's table once with
//! noise (every cell of the public left × right grid plus N_ℤ(0, σ²); one record sits in
//! one cell: L2 sensitivity 1, charged as [`crate::privacy::estimators::number_mechanism`]
//! at the step's σ) and keeps, for each left level, the right level whose noisy count is
//! largest when it stands clear of the noise (3σ). The map is written into the rule
//! (post-processing), with a comment saying it was measured; left levels too rare to read
//! keep the model's own favourite at sampling.

use rand::RngCore;

use super::error::DataError;
use super::rules::{self, Rule};
use super::schema::{ColumnSpec, Kind, Provenance, Schema};
use super::table::Table;

/// Largest left × right grid measured (past it the rule keeps the model's favourite).
pub const MAX_MAP_CELLS: usize = 200_000;
/// Most whole numbers a number column may span to be one side of a measured map.
const MAX_NUMBER_LEVELS: usize = 1_000;
/// A left level's largest noisy count must pass this many σ to fix its right value.
const CLEAR_OF_NOISE: f64 = 3.0;
/// The comment a measured map's rule carries in the released schema.
pub const MEASURED: &str = "# map measured with noise in the domain step";

/// The `->` rules of `schema` that give no map and whose columns both have public domains
/// small enough to list, as (left, right).
pub fn maps_to_measure(schema: &Schema) -> Vec<(String, String)> {
    let Ok(stated) = rules::of_schema(schema) else {
        return Vec::new();
    };
    stated
        .iter()
        .filter_map(|s| match &s.rule {
            Rule::Determines { left, right, map } if map.is_empty() => {
                let (l, r) = (schema.column(left)?, schema.column(right)?);
                let (nl, nr) = (levels(l)?.len(), levels(r)?.len());
                (nl.saturating_mul(nr) <= MAX_MAP_CELLS).then(|| (left.clone(), right.clone()))
            }
            _ => None,
        })
        .collect()
}

/// A public column's values as cells read as text: its categories, or the whole numbers
/// of its bounds.
fn levels(spec: &ColumnSpec) -> Option<Vec<String>> {
    if spec.provenance != Provenance::UserProvided || spec.kind == Kind::Ignored {
        return None;
    }
    if let Some(c) = spec.categories() {
        return Some(c.to_vec());
    }
    let (lo, hi) = spec.bounds()?;
    if !spec.integer || spec.time_format.is_some() || hi - lo >= MAX_NUMBER_LEVELS as f64 {
        return None;
    }
    let (lo, hi) = (lo.ceil() as i64, hi.floor() as i64);
    Some(
        (lo..=hi)
            .map(|x| crate::util::fmt::number(x as f64))
            .collect(),
    )
}

/// Measures the map of `left -> right` on `table` at noise `std` (charge it first) and
/// writes it into the rule of `schema`. Returns how many left levels got a right value.
pub fn measure(
    table: &Table,
    schema: &mut Schema,
    (left, right): (&str, &str),
    std: f64,
    rng: &mut dyn RngCore,
) -> Result<usize, DataError> {
    let spec = |n: &str| {
        schema.column(n).ok_or_else(|| {
            DataError::column(n, "a rule names it but the schema has no such column")
        })
    };
    let (ls, rs) = (spec(left)?, spec(right)?);
    let (Some(lv), Some(rv)) = (levels(ls), levels(rs)) else {
        return Ok(0);
    };
    let col = |n: &str| {
        table
            .column(n)
            .ok_or_else(|| DataError::column(n, "is in the schema but not in the data"))
    };
    let (lc, rc) = (col(left)?, col(right)?);
    let index = |v: &[String]| -> std::collections::HashMap<String, usize> {
        v.iter().enumerate().map(|(i, s)| (s.clone(), i)).collect()
    };
    let (li, ri) = (index(&lv), index(&rv));
    let mut counts = vec![0u64; lv.len() * rv.len()];
    for r in 0..table.n_rows {
        let (Some(a), Some(b)) = (lc.text(r), rc.text(r)) else {
            continue;
        };
        if let (Some(i), Some(j)) = (li.get(&a), ri.get(&b)) {
            counts[i * rv.len() + j] += 1;
        }
    }
    let noisy = crate::privacy::estimators::noisy_table(&counts, std, rng);
    let mut pairs = Vec::new();
    for (i, l) in lv.iter().enumerate() {
        let row = &noisy[i * rv.len()..(i + 1) * rv.len()];
        let best = (0..rv.len()).max_by(|a, b| row[*a].total_cmp(&row[*b]));
        if let Some(j) = best.filter(|j| row[*j] >= CLEAR_OF_NOISE * std) {
            let value = if rs.categories().is_some() {
                quoted(&rv[j])
            } else {
                rv[j].clone()
            };
            pairs.push(format!("{}: {value}", quoted(l)));
        }
    }
    if pairs.is_empty() {
        return Ok(0);
    }
    let text = format!(
        "{} -> {} {{{}}}  {MEASURED}",
        name(left),
        name(right),
        pairs.join(", ")
    );
    for r in &mut schema.rules {
        let is_it = matches!(
            rules::parse_line(r),
            Ok(Some(Rule::Determines { left: l, right: x, map })) if l == left && x == right && map.is_empty()
        );
        if is_it {
            *r = text.clone();
        }
    }
    Ok(pairs.len())
}

/// A column name as a rule writes it (`backquoted` unless plain).
fn name(n: &str) -> String {
    let plain = n
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !matches!(n, "in" | "and")
        && n.parse::<f64>().is_err()
        && !n.contains("->");
    if plain {
        n.to_string()
    } else {
        format!("`{}`", n.replace('\\', "\\\\").replace('`', "\\`"))
    }
}

fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn a_measured_map_is_the_one_the_rows_hold_and_is_written_into_the_rule() {
        let mut schema = Schema::from_json(
            r#"{"columns":[
            {"name":"education","kind":"categorical","domain":{"categories":["Bachelors","HS-grad","11th","Rare"]}},
            {"name":"education-num","kind":"continuous","integer":true,"domain":{"bounds":{"lower":1,"upper":16}}}],
            "rules":["education -> education-num"]}"#,
            "t",
        )
        .unwrap();
        assert_eq!(
            maps_to_measure(&schema),
            vec![("education".to_string(), "education-num".to_string())]
        );
        let mut csv = String::from("education,education-num\n");
        for (e, n, k) in [
            ("Bachelors", 13, 300),
            ("HS-grad", 9, 500),
            ("11th", 7, 120),
            ("Rare", 2, 1),
        ] {
            for _ in 0..k {
                csv.push_str(&format!("{e},{n}\n"));
            }
        }
        let t =
            crate::data::csv::parse_csv_bytes(csv.into_bytes(), "t", &Default::default()).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let kept = measure(
            &t,
            &mut schema,
            ("education", "education-num"),
            5.0,
            &mut rng,
        )
        .unwrap();
        // The rare level stands no clearer than the noise: left to the model.
        assert_eq!(kept, 3);
        let rule = &schema.rules[0];
        assert!(
            rule.contains(r#""Bachelors": 13"#) && rule.contains(r#""HS-grad": 9"#),
            "{rule}"
        );
        assert!(rule.contains(MEASURED), "{rule}");
        // The written rule is a rule: it parses and checks against the schema.
        let stated = rules::of_schema(&schema).unwrap();
        assert!(matches!(&stated[0].rule, Rule::Determines { map, .. } if map.len() == 3));
        // Measured once: nothing left to measure.
        assert!(maps_to_measure(&schema).is_empty());
    }
}
