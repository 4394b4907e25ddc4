//! Private domains for the columns whose bounds or categories the user could not give.
//!
//! A column whose domain was read off the rows (`from_data`) leaks: a bound is someone's
//! value, a rare category names someone. This module replaces each such domain with a DP
//! estimate ([`crate::privacy::estimators`]), charged to the run's accountant before the
//! rows are read, and records it as `dp_estimated` in the schema.
//!
//! Accounting: one charge per release, all at one noise level `std` calibrated so that the
//! step as a whole costs the domain share of the run's ε (PLD; the method then calibrates
//! its own noise so that both together fit the run's budget). Number columns are a
//! Gaussian histogram (sensitivity 1); text columns a thresholded Gaussian histogram. A
//! number column whose schema names no point masses gets a second, thresholded histogram
//! of its exact values ([`crate::privacy::point_masses`]): the values many rows hold come
//! back exactly. The thresholded releases share an infinite-loss mass of a tenth of the
//! run's δ.
//!
//! A number column whose bounds are public (typed, or the codebook's) and whose schema
//! names no point masses has its public candidates counted with noise (0 and the two
//! bounds: a codebook's "none", floor and top code; sensitivity 1, no threshold since the
//! candidates are public), at the same noise, in the same step ([`DomainPlan::masses`]):
//! typed bounds must not lose the zeros a survey's hours hold, and a table of a few
//! hundred rows keeps them where a thresholded search would need more rows than hold one. The user turns it off per column by saying the column has
//! none (`no_point_masses`), and a run that does not hold its rows (streamed, an engine's)
//! or a linked pair's part does without it.
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
use crate::privacy::point_masses::{
    candidate_mechanism, estimate_candidate_masses, estimate_point_masses, point_mass_mechanism,
    public_candidates,
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
    /// Number columns with public bounds whose exact values alone are found privately
    /// (schema names, in schema order).
    pub masses: Vec<String>,
    /// `->` rules without a map whose map is measured with noise (left, right):
    /// [`super::measured_map`].
    pub maps: Vec<(String, String)>,
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
pub(crate) fn is_number(spec: &ColumnSpec) -> bool {
    spec.kind == Kind::Continuous
}

/// Whether a number column's estimate also looks for point masses: the user named none,
/// and it is not a date (a date held by many rows is better a category).
fn finds_point_masses(spec: &ColumnSpec) -> bool {
    is_number(spec)
        && spec.point_masses.is_empty()
        && spec.time_format.is_none()
        && !spec.no_point_masses
}

/// A whole-number column spanning at most this many values is left out of the search for
/// exact values: each of its values is already a level of MST's and AIM's domain and
/// comes back whole from the other methods, and every column searched raises the noise of
/// all (a small table's zeros must still pass the threshold).
const FEW_WHOLE_VALUES: f64 = 64.0;

/// The columns with public bounds whose exact values a private run looks for: a public
/// number column that names none, does not say it has none, has none named by a rule
/// (`hours = 0` is public by the rule: [`super::rules::hold_named_values`]), and is not
/// a whole-number column of a few values.
pub fn masses_to_find(schema: &Schema) -> Vec<String> {
    let ruled: Vec<String> = super::rules::of_schema(schema)
        .map(|r| {
            super::rules::named_values(&r, schema)
                .into_iter()
                .map(|(c, _)| c)
                .collect()
        })
        .unwrap_or_default();
    schema
        .columns
        .iter()
        .filter(|c| c.provenance == Provenance::UserProvided && finds_point_masses(c))
        .filter(|c| !ruled.contains(&c.name))
        .filter(|c| {
            c.bounds()
                .is_some_and(|(lo, hi)| !c.integer || hi - lo >= FEW_WHOLE_VALUES)
        })
        .map(|c| c.name.clone())
        .collect()
}

/// The releases estimating one column's domain makes, in order.
fn column_charges(spec: &ColumnSpec, std: f64, delta_inf: f64) -> Vec<Charge> {
    let once = |mechanism| Charge {
        mechanism,
        count: 1,
    };
    if !is_number(spec) {
        return vec![once(category_mechanism(std, delta_inf))];
    }
    let mut out = vec![once(number_mechanism(std))];
    if finds_point_masses(spec) {
        out.push(once(point_mass_mechanism(std, delta_inf)));
    }
    out
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
/// too when `all_uncovered`, and, when `exact_values`, of the exact values of the public
/// number columns that name none ([`masses_to_find`]), at `share` of `budget.epsilon`;
/// `None` when there is nothing to estimate.
pub fn plan_domains(
    schema: &Schema,
    budget: Budget,
    share: f64,
    all_uncovered: bool,
    (exact_values, measure_maps): (bool, bool),
) -> Result<Option<DomainPlan>, DataError> {
    let columns = names_where(schema, |p| {
        p == Provenance::ToEstimate || (all_uncovered && p == Provenance::FromData)
    });
    let masses = if exact_values {
        masses_to_find(schema)
    } else {
        Vec::new()
    };
    let maps = if measure_maps {
        super::measured_map::maps_to_measure(schema)
    } else {
        Vec::new()
    };
    if columns.is_empty() && masses.is_empty() && maps.is_empty() {
        return Ok(None);
    }
    if !(share > 0.0 && share < 1.0) {
        return Err(DataError::Schema(format!(
            "the share of ε for estimating domains must be between 0 and 1, got {share}"
        )));
    }
    let specs: Vec<&ColumnSpec> = columns.iter().filter_map(|c| schema.column(c)).collect();
    let thresholded = specs
        .iter()
        .filter(|s| !is_number(s) || finds_point_masses(s))
        .count();
    let delta_inf = budget.delta * THRESHOLD_DELTA_SHARE / thresholded.max(1) as f64;
    let charges_at = |std: f64| -> Vec<Charge> {
        specs
            .iter()
            .flat_map(|s| column_charges(s, std, delta_inf))
            .chain(masses.iter().map(|_| Charge {
                mechanism: candidate_mechanism(std),
                count: 1,
            }))
            .chain(maps.iter().map(|_| Charge {
                mechanism: number_mechanism(std),
                count: 1,
            }))
            .collect()
    };
    let epsilon = budget.epsilon * share;
    let std = sigma_for_plan(
        charges_at,
        epsilon,
        budget.delta,
        &product_orders(),
        ((specs.len() + masses.len() + maps.len()) as f64).sqrt() / epsilon,
        1e-3,
    )
    .map_err(|e| DataError::Schema(format!("cannot estimate the domains privately: {e}")))?;
    let charges = charges_at(std);
    let spent = crate::privacy::compose::compose(&charges, &product_orders(), budget.delta);
    Ok(Some(DomainPlan {
        columns,
        masses,
        maps,
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
    for name in &plan.columns {
        let Some(spec) = out.columns.iter_mut().find(|c| &c.name == name) else {
            continue;
        };
        let col = table
            .column(name)
            .ok_or_else(|| DataError::column(name, "is in the schema but not in the data"))?;
        for charge in column_charges(spec, plan.std, plan.delta_inf) {
            accountant.charge(charge.mechanism, 1).map_err(|e| {
                DataError::column(name, format!("its domain estimate was refused: {e}"))
            })?;
        }
        let estimated = if is_number(spec) {
            estimate_bounds(spec, col, plan, rng)
        } else {
            estimate_levels(spec, col, plan, rng)
        };
        if !estimated {
            failed.push(name.clone());
        }
    }
    for name in &plan.masses {
        let Some(spec) = out.columns.iter_mut().find(|c| &c.name == name) else {
            continue;
        };
        let col = table
            .column(name)
            .ok_or_else(|| DataError::column(name, "is in the schema but not in the data"))?;
        accountant
            .charge(candidate_mechanism(plan.std), 1)
            .map_err(|e| {
                DataError::column(
                    name,
                    format!("the search for its exact values was refused: {e}"),
                )
            })?;
        find_masses(spec, col, plan, rng)?;
    }
    for (left, right) in &plan.maps {
        accountant
            .charge(number_mechanism(plan.std), 1)
            .map_err(|e| {
                DataError::column(
                    left,
                    format!("measuring the map to '{right}' was refused: {e}"),
                )
            })?;
        super::measured_map::measure(table, &mut out, (left, right), plan.std, rng)?;
    }
    out.validate().map_err(|e| {
        DataError::Schema(format!(
            "after estimating domains privately nothing usable is left ({e}); columns too sparse to estimate: {}. Give their domains as public facts",
            failed.join(", ")
        ))
    })?;
    Ok(out)
}

/// The exact values of a number column with public bounds among its public candidates (0
/// and the bounds: [`crate::privacy::point_masses::public_candidates`]), from their noisy
/// counts (charged by the caller). Only whole candidates in a whole-number column.
fn find_masses(
    spec: &mut ColumnSpec,
    col: &super::table::Column,
    plan: &DomainPlan,
    rng: &mut dyn RngCore,
) -> Result<(), DataError> {
    let values = spec.numbers(col)?;
    let n = plan.public_rows.unwrap_or(values.len()) as f64;
    let Some((lo, hi)) = spec.bounds() else {
        return Ok(());
    };
    let candidates: Vec<f64> = public_candidates(lo, hi)
        .into_iter()
        .filter(|p| !spec.integer || p.fract() == 0.0)
        .collect();
    spec.point_masses = estimate_candidate_masses(&values, &candidates, plan.std, n, rng);
    spec.point_masses_estimated = !spec.point_masses.is_empty();
    Ok(())
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
    let find_masses = finds_point_masses(spec);
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
    if find_masses {
        let most = super::schema::MAX_POINT_MASSES;
        spec.point_masses = estimate_point_masses(&values, plan.std, plan.delta_inf, n, most, rng);
        spec.point_masses_estimated = !spec.point_masses.is_empty();
    }
    // Point masses are public or DP outputs: the bounds reach them, and a fractional one
    // makes the column fractional (post-processing of the estimates and public facts).
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
pub(crate) fn level_counts(col: &super::table::Column) -> Vec<(String, u64)> {
    let mut map: std::collections::BTreeMap<String, u64> = Default::default();
    for r in 0..col.values.len() {
        if let Some(v) = col.text(r) {
            *map.entry(v).or_insert(0) += 1;
        }
    }
    map.into_iter().collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::data::infer::infer_schema;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    pub(crate) fn adult() -> Table {
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
        let plan = plan_domains(&schema, budget, 0.1, true, (false, false))
            .unwrap()
            .unwrap();
        assert_eq!(plan.columns.len(), 15);
        assert!(
            plan.epsilon <= 0.1 + 1e-9 && plan.epsilon > 0.09,
            "{plan:?}"
        );
        let mut acc = Accountant::for_plan(budget, &plan.charges).unwrap();
        let mut rng = StdRng::seed_from_u64(3);
        let out = estimate_domains(&t, &schema, &plan, &mut acc, &mut rng).unwrap();
        // One release per column, and one more per number column for its point masses.
        let numbers = schema.columns.iter().filter(|c| is_number(c)).count();
        assert_eq!(numbers, 6);
        assert_eq!(plan.charges.len(), 15 + numbers);
        assert_eq!(
            acc.history().iter().map(|c| c.count).sum::<u64>(),
            15 + numbers as u64
        );
        assert!(out.non_private_domains().is_empty());
        // The values many people hold come back exactly, each a DP output; a column with
        // no common value has none.
        let masses = |c: &str| out.column(c).unwrap().point_masses.clone();
        assert_eq!(masses("capital-gain"), vec![0.0]);
        assert_eq!(masses("capital-loss"), vec![0.0]);
        assert!(masses("hours-per-week").contains(&40.0));
        assert!(masses("fnlwgt").is_empty());
        assert!(out.column("capital-gain").unwrap().point_masses_estimated);
        assert!(!out.column("fnlwgt").unwrap().point_masses_estimated);
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
            let mut plan = plan_domains(&schema, budget, 0.5, true, (false, false))
                .unwrap()
                .unwrap();
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
