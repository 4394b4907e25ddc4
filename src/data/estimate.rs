//! Private domains for the columns whose bounds or categories the user could not give.
//!
//! A column whose domain was read off the rows (`from_data`) leaks: a bound is someone's
//! value, a rare category names someone. This module replaces each such domain with a DP
//! estimate ([`crate::privacy::estimators`]), charged to the run's accountant before the
//! rows are read, and records it as `dp_estimated` in the schema.
//!
//! Accounting: one charge per estimated column, all at one noise level `std` calibrated so
//! that the step as a whole costs the domain share of the run's ε (PLD; the method then
//! calibrates its own noise so that both together fit the run's budget). Number columns are
//! a Gaussian histogram (sensitivity 1); text columns a thresholded Gaussian histogram
//! whose total infinite-loss mass is a tenth of the run's δ, split over those columns.
//!
//! Estimated category columns always allow missing values: levels too rare to pass the
//! threshold are encoded as missing instead of failing the run (a public rule, not one
//! the data choose). Estimated number columns do too, for the same reason. The same
//! histogram estimates the share of blanks (`blank_share`), and decoding fills generated
//! blanks beyond it, so a column the estimate found complete gets none in a release.

use rand::RngCore;

use super::error::DataError;
use super::schema::{ColumnSpec, Domain, EstimateMechanism, Kind, Provenance, Schema};
use super::table::{Table, Values};
use crate::privacy::calibrate::sigma_for_plan;
use crate::privacy::estimators::{
    category_mechanism, estimate_categories_and_blanks, estimate_number, number_mechanism,
};
use crate::privacy::rdp::product_orders;
use crate::privacy::{Accountant, Budget, Charge};

/// Default share of the run's ε spent on domains.
pub const DEFAULT_SHARE: f64 = 0.1;
/// Share of the run's δ given to the threshold of category estimates.
const THRESHOLD_DELTA_SHARE: f64 = 0.1;

/// What estimating the domains will cost, decided before any row is read.
#[derive(Debug, Clone, PartialEq)]
pub struct DomainPlan {
    /// Columns to estimate (schema names), in schema order.
    pub columns: Vec<String>,
    pub std: f64,
    /// Infinite-loss mass per category column.
    pub delta_inf: f64,
    /// The charges, in the order [`estimate_domains`] makes them.
    pub charges: Vec<Charge>,
    /// ε of the step alone (PLD) at the run's δ.
    pub epsilon: f64,
    pub delta: f64,
    /// The number of records as a public fact, when the user gave one: the estimators'
    /// rules read it instead of the file's count (which is then not public).
    pub public_rows: Option<usize>,
}

/// Whether a column's domain is estimated as numbers (bounds) or as text (categories).
fn is_number(spec: &ColumnSpec) -> bool {
    spec.kind == Kind::Continuous
}

/// The columns whose domain was read off the rows (`from_data`).
pub fn uncovered(schema: &Schema) -> Vec<String> {
    names_where(schema, |p| p == Provenance::FromData)
}

/// The columns marked for a private estimate (`to_estimate`).
pub fn marked(schema: &Schema) -> Vec<String> {
    names_where(schema, |p| p == Provenance::ToEstimate)
}

fn names_where(schema: &Schema, f: impl Fn(Provenance) -> bool) -> Vec<String> {
    schema
        .columns
        .iter()
        .filter(|c| c.kind != Kind::Ignored && f(c.provenance))
        .map(|c| c.name.clone())
        .collect()
}

/// Plans the estimate of the columns marked `to_estimate`, and of every `from_data` one
/// too when `all_uncovered`, at `share` of `budget.epsilon`; `None` when there are none.
pub fn plan_domains(
    schema: &Schema,
    budget: Budget,
    share: f64,
    all_uncovered: bool,
) -> Result<Option<DomainPlan>, DataError> {
    let columns = names_where(schema, |p| {
        p == Provenance::ToEstimate || (all_uncovered && p == Provenance::FromData)
    });
    if columns.is_empty() {
        return Ok(None);
    }
    if !(share > 0.0 && share < 1.0) {
        return Err(DataError::Schema(format!(
            "the share of ε for estimating domains must be between 0 and 1, got {share}"
        )));
    }
    let specs: Vec<&ColumnSpec> = columns.iter().filter_map(|c| schema.column(c)).collect();
    let n_text = specs.iter().filter(|s| !is_number(s)).count();
    let delta_inf = budget.delta * THRESHOLD_DELTA_SHARE / n_text.max(1) as f64;
    let charges_at = |std: f64| -> Vec<Charge> {
        specs
            .iter()
            .map(|s| Charge {
                mechanism: if is_number(s) {
                    number_mechanism(std)
                } else {
                    category_mechanism(std, delta_inf)
                },
                count: 1,
            })
            .collect()
    };
    let epsilon = budget.epsilon * share;
    let std = sigma_for_plan(
        charges_at,
        epsilon,
        budget.delta,
        &product_orders(),
        (specs.len() as f64).sqrt() / epsilon,
        1e-3,
    )
    .map_err(|e| DataError::Schema(format!("cannot estimate the domains privately: {e}")))?;
    let charges = charges_at(std);
    let spent = crate::privacy::compose::compose(&charges, &product_orders(), budget.delta);
    Ok(Some(DomainPlan {
        columns,
        std,
        delta_inf,
        charges,
        epsilon: spent.epsilon,
        delta: budget.delta,
        public_rows: None,
    }))
}

/// Runs `plan` on `table`: charges each column's estimate to `accountant` before reading
/// it, and returns `schema` with those domains replaced and marked `dp_estimated`. A
/// text column with no level frequent enough becomes ignored, and a number column whose
/// counts are all within the noise keeps no bounds: both are named in the error if
/// nothing usable is left.
pub fn estimate_domains(
    table: &Table,
    schema: &Schema,
    plan: &DomainPlan,
    accountant: &mut Accountant,
    rng: &mut dyn RngCore,
) -> Result<Schema, DataError> {
    let mut out = schema.clone();
    let mut failed = Vec::new();
    for (name, charge) in plan.columns.iter().zip(&plan.charges) {
        let Some(spec) = out.columns.iter_mut().find(|c| &c.name == name) else {
            continue;
        };
        let col = table
            .column(name)
            .ok_or_else(|| DataError::column(name, "is in the schema but not in the data"))?;
        accountant.charge(charge.mechanism, 1).map_err(|e| {
            DataError::column(name, format!("its domain estimate was refused: {e}"))
        })?;
        let estimated = if is_number(spec) {
            estimate_bounds(spec, col, plan, rng)
        } else {
            estimate_levels(spec, col, plan, rng)
        };
        if !estimated {
            failed.push(name.clone());
        }
    }
    out.validate().map_err(|e| {
        DataError::Schema(format!(
            "after estimating domains privately nothing usable is left ({e}); columns too sparse to estimate: {}. Give their domains as public facts",
            failed.join(", ")
        ))
    })?;
    Ok(out)
}

/// What a private estimate says of where a column's domain came from.
fn estimated_by(plan: &DomainPlan, mechanism: EstimateMechanism) -> Provenance {
    Provenance::DpEstimated {
        epsilon: plan.epsilon,
        delta: plan.delta,
        mechanism,
    }
}

/// A number or date column's bounds, integrality and blank share from its noisy grid
/// histogram; where no cell passes, the column is ignored (false).
fn estimate_bounds(
    spec: &mut ColumnSpec,
    col: &super::table::Column,
    plan: &DomainPlan,
    rng: &mut dyn RngCore,
) -> bool {
    let values: Vec<Option<f64>> = match (&col.values, &spec.time_format) {
        (Values::Number(v), _) => v.clone(),
        // Dates: an unreadable cell counts as missing here (check_table names it).
        (Values::Text(v), Some(f)) => v
            .iter()
            .map(|c| c.and_then(|s| super::times::parse(s, f)))
            .collect(),
        (Values::Text(v), None) => v
            .iter()
            .map(|c| c.and_then(crate::util::fmt::parse_number))
            .collect(),
    };
    let n = plan.public_rows.unwrap_or(values.len()) as f64;
    let d = estimate_number(&values, plan.std, n, rng);
    spec.provenance = estimated_by(plan, EstimateMechanism::GaussianGridHistogram);
    let Some((lower, upper)) = d.bounds else {
        spec.kind = Kind::Ignored;
        spec.domain = None;
        spec.point_masses.clear();
        spec.time_format = None;
        spec.integer = false;
        spec.missing = false;
        spec.blank_share = None;
        return false;
    };
    // Point masses the user named are public: the bounds reach them, and a fractional one
    // makes the column fractional (post-processing of the estimate with public facts).
    let lower = spec.point_masses.iter().fold(lower, |l, p| l.min(*p));
    let upper = spec.point_masses.iter().fold(upper, |u, p| u.max(*p));
    spec.domain = Some(Domain::Bounds { lower, upper });
    spec.integer = d.integer && spec.point_masses.iter().all(|p| p.fract() == 0.0);
    spec.missing = true;
    spec.blank_share = Some(d.blank_share);
    true
}

/// A categorical column's levels and blank share from its thresholded noisy histogram;
/// where no level passes, the column is ignored (false).
fn estimate_levels(
    spec: &mut ColumnSpec,
    col: &super::table::Column,
    plan: &DomainPlan,
    rng: &mut dyn RngCore,
) -> bool {
    let counts = level_counts(col);
    let blanks = (0..col.values.len())
        .filter(|r| col.text(*r).is_none())
        .count();
    let d = estimate_categories_and_blanks(&counts, blanks as u64, plan.std, plan.delta_inf, rng);
    let levels = d.levels;
    spec.provenance = estimated_by(plan, EstimateMechanism::ThresholdedGaussianHistogram);
    spec.missing = true;
    spec.blank_share = Some(d.blank_share);
    match levels.len() {
        0 => {
            spec.kind = Kind::Ignored;
            spec.domain = None;
            spec.missing = false;
            spec.blank_share = None;
            return false;
        }
        2 if spec.kind == Kind::Binary => {}
        _ => spec.kind = Kind::Categorical,
    }
    spec.domain = Some(Domain::Categories(levels));
    true
}

/// Most level counts a [`LevelProfile`] keeps (the commonest).
const PROFILE_LEVELS: usize = 256;

/// One column's level counts, read off the rows for the data owner's diagnostic
/// ([`diagnose`]): shown to the person who holds the data before any budget is spent,
/// never released, never part of a model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LevelProfile {
    pub column: String,
    /// Cells that are not missing.
    pub present: u64,
    /// Distinct values.
    pub levels: u64,
    /// The commonest values' counts, most frequent first (at most [`PROFILE_LEVELS`]).
    pub top: Vec<u64>,
}

/// The level profile of every column of `table`.
pub fn profile(table: &Table) -> Vec<LevelProfile> {
    table
        .columns
        .iter()
        .map(|col| {
            let mut counts: Vec<u64> = level_counts(col).into_iter().map(|(_, c)| c).collect();
            counts.sort_unstable_by(|a, b| b.cmp(a));
            let levels = counts.len() as u64;
            let present = counts.iter().sum();
            counts.truncate(PROFILE_LEVELS);
            LevelProfile {
                column: col.name.clone(),
                present,
                levels,
                top: counts,
            }
        })
        .collect()
}

/// What `plan` will do to the columns it estimates, in words, computed on the rows'
/// profile: which columns no value survives in (they will be dropped), which lose their
/// rarer values, and the fixes. `None` when every estimated column keeps all it has.
///
/// A category survives when its noisy count passes the threshold τ, which a value held
/// by about τ rows does half the time; a number column keeps bounds when its values
/// outnumber the noise summed over the grid (3σ·√cells). This reads the rows: it is a
/// diagnostic for the data's owner, shown before anything is spent, never released.
pub fn diagnose(schema: &Schema, plan: &DomainPlan, profiles: &[LevelProfile]) -> Option<String> {
    let tau = crate::privacy::estimators::category_threshold(plan.std, plan.delta_inf);
    let cells = crate::privacy::estimators::bound_grid().len() as f64 + 1.0;
    let spread = 3.0 * plan.std * cells.sqrt();
    let mut lost = Vec::new();
    let mut thinned = Vec::new();
    for name in &plan.columns {
        let (Some(spec), Some(p)) = (
            schema.column(name),
            profiles.iter().find(|p| &p.column == name),
        ) else {
            continue;
        };
        if is_number(spec) {
            if p.present as f64 <= spread {
                lost.push(name.clone());
            }
            continue;
        }
        let kept = p.top.iter().filter(|c| **c as f64 >= tau).count() as u64;
        if kept == 0 {
            lost.push(name.clone());
        } else if kept < p.levels {
            thinned.push(format!("{name} keeps about {kept} of {}", p.levels));
        }
    }
    if lost.is_empty() && thinned.is_empty() {
        return None;
    }
    let mut s = format!(
        "The private domain estimate (noise σ = {:.1}) keeps a value only if about {:.0} rows or more hold it.",
        plan.std, tau
    );
    if !lost.is_empty() {
        s.push_str(&format!(
            " {} of the {} estimated columns have no value that common and will be dropped: {}.",
            lost.len(),
            plan.columns.len(),
            lost.join(", ")
        ));
    }
    if !thinned.is_empty() {
        let shown: Vec<&str> = thinned.iter().take(4).map(String::as_str).collect();
        s.push_str(&format!(
            " {} more lose their rarer values ({}{}); rows holding a dropped value are synthesized as the column's commoner values.",
            thinned.len(),
            shown.join("; "),
            if thinned.len() > shown.len() { "; …" } else { "" }
        ));
    }
    s.push_str(" Fixes: give the categories or bounds as public facts (type them, or load the codebook's schema), raise the domain share of ε, or leave columns out (kind: ignored). This check reads the rows: it is shown to you and never released.");
    Some(s)
}

/// A digest of one column's spec (kind, domain, flags, provenance): what the ledger keeps
/// to recognise a DP estimate when a schema file brings it back.
pub fn spec_digest(spec: &ColumnSpec) -> String {
    use sha2::{Digest as _, Sha256};
    let json = serde_json::to_string(spec).unwrap_or_default();
    Sha256::digest(json.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Turns every `dp_estimated` column for which `trusted` says no into `from_data`: a
/// schema file can claim anything, and only an estimate this dataset's ledger charged
/// is covered. Returns the columns demoted.
pub fn distrust_unrecorded(schema: &mut Schema, trusted: impl Fn(&str) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    for c in &mut schema.columns {
        if matches!(c.provenance, Provenance::DpEstimated { .. }) && !trusted(&spec_digest(c)) {
            c.provenance = Provenance::FromData;
            out.push(c.name.clone());
        }
    }
    out
}

/// Each level of a text column and how many rows hold it (missing cells left out).
fn level_counts(col: &super::table::Column) -> Vec<(String, u64)> {
    let mut map: std::collections::BTreeMap<String, u64> = Default::default();
    for r in 0..col.values.len() {
        if let Some(v) = col.text(r) {
            *map.entry(v).or_insert(0) += 1;
        }
    }
    map.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::infer::infer_schema;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn adult() -> Table {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/adult/adult_train.csv");
        match crate::data::open(&path, &Default::default()).unwrap() {
            crate::data::Dataset::Table(t) => t,
            _ => unreachable!(),
        }
    }

    #[test]
    fn estimated_domains_hide_rare_levels_and_extremes_and_are_charged() {
        let t = adult();
        let schema = infer_schema(&t).unwrap().schema;
        let budget = Budget {
            epsilon: 1.0,
            delta: 1e-5,
        };
        let plan = plan_domains(&schema, budget, 0.1, true).unwrap().unwrap();
        assert_eq!(plan.columns.len(), 15);
        assert!(
            plan.epsilon <= 0.1 + 1e-9 && plan.epsilon > 0.09,
            "{plan:?}"
        );
        let mut acc = Accountant::for_plan(budget, &plan.charges).unwrap();
        let mut rng = StdRng::seed_from_u64(3);
        let out = estimate_domains(&t, &schema, &plan, &mut acc, &mut rng).unwrap();
        assert_eq!(acc.history().iter().map(|c| c.count).sum::<u64>(), 15);
        assert!(out.non_private_domains().is_empty());
        let country = out.column("native-country").unwrap();
        let levels = country.categories().unwrap();
        assert!(levels.contains(&"United-States".to_string()));
        assert!(!levels.contains(&"Holand-Netherlands".to_string()));
        let (_, upper) = out.column("fnlwgt").unwrap().bounds().unwrap();
        assert!(
            upper < 1_484_705.0,
            "the one extreme value is not a bound: {upper}"
        );
        assert!(out.column("age").unwrap().integer);
        // The estimated schema encodes the same rows without error.
        let enc = crate::data::encode::Encoding::new(&out).unwrap();
        enc.encode(&t).unwrap();
    }

    /// Issue #44, item 1: before anything is spent, the owner is told which columns a
    /// private estimate will leave with nothing (a small table, many columns).
    #[test]
    fn the_diagnostic_names_the_columns_an_estimate_will_drop() {
        let t = adult();
        let rows: Vec<usize> = (0..1_000).collect();
        let small = Table {
            columns: t
                .columns
                .iter()
                .map(|c| crate::data::table::Column {
                    name: c.name.clone(),
                    values: match &c.values {
                        Values::Number(v) => Values::Number(v[..1_000].to_vec()),
                        Values::Text(v) => Values::Text(v.select(&rows)),
                    },
                })
                .collect(),
            n_rows: 1_000,
        };
        let schema = infer_schema(&small).unwrap().schema;
        let budget = Budget {
            epsilon: 1.0,
            delta: 1e-5,
        };
        let plan = plan_domains(&schema, budget, 0.1, true).unwrap().unwrap();
        let d = diagnose(&schema, &plan, &profile(&small)).expect("a small table loses columns");
        assert!(d.contains("will be dropped"), "{d}");
        assert!(d.contains("never released"), "{d}");
        // With the whole table and a generous share, nothing is lost outright.
        let whole = infer_schema(&t).unwrap().schema;
        let plan = plan_domains(&whole, budget, 0.5, true).unwrap().unwrap();
        let d = diagnose(&whole, &plan, &profile(&t)).unwrap_or_default();
        assert!(!d.contains("will be dropped"), "{d}");
    }

    /// With a public record count, the integer flag's rule reads it, not the file's row
    /// count (which is then not public): 3 % fractional values are "a few" of 100,000
    /// public records but not of the file's 2,000.
    #[test]
    fn the_integer_rule_reads_the_public_record_count() {
        use crate::data::table::{Column, Values};
        let values: Vec<Option<f64>> = (0..2_000)
            .map(|i| {
                Some(if i % 33 == 0 {
                    i as f64 + 0.5
                } else {
                    i as f64
                })
            })
            .collect();
        let t = Table {
            columns: vec![Column {
                name: "x".into(),
                values: Values::Number(values),
            }],
            n_rows: 2_000,
        };
        let schema = infer_schema(&t).unwrap().schema;
        let budget = Budget {
            epsilon: 50.0,
            delta: 1e-5,
        };
        let flag = |public_rows: Option<usize>| {
            let mut plan = plan_domains(&schema, budget, 0.5, true).unwrap().unwrap();
            plan.public_rows = public_rows;
            let mut acc = Accountant::for_plan(budget, &plan.charges).unwrap();
            let mut rng = StdRng::seed_from_u64(4);
            let out = estimate_domains(&t, &schema, &plan, &mut acc, &mut rng).unwrap();
            out.column("x").unwrap().integer
        };
        assert!(!flag(None));
        assert!(flag(Some(100_000)));
    }
}
