//! What a private domain estimate will make of the data, told to the data's owner before
//! anything is spent: the columns it will drop, the number columns whose bounds the noise
//! swamps, the categories that lose their rarer levels.
//!
//! Everything here reads the rows and stays on this machine: a diagnostic, never part of
//! a model, a statement or a released file.

use super::estimate::{DomainPlan, is_number, level_counts};
use super::schema::Schema;
use super::table::{Table, Values};

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
    /// Those values, in the same order (the diagnostic names a level at risk).
    pub top_names: Vec<String>,
    /// A number column's exact grid counts, for trial bound estimates
    /// ([`super::bound_trials`]).
    pub numbers: Option<super::bound_trials::NumberProfile>,
}

/// The level profile of every column of `table`.
pub fn profile(table: &Table) -> Vec<LevelProfile> {
    table
        .columns
        .iter()
        .map(|col| {
            let mut named = level_counts(col);
            named.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let levels = named.len() as u64;
            let present = named.iter().map(|(_, c)| c).sum();
            named.truncate(PROFILE_LEVELS);
            let (top_names, counts): (Vec<String>, Vec<u64>) = named.into_iter().unzip();
            let numbers = match &col.values {
                Values::Number(v) => {
                    let (cells, missing) = crate::privacy::estimators::number_counts(v);
                    Some(super::bound_trials::NumberProfile { cells, missing })
                }
                Values::Text(_) => None,
            };
            LevelProfile {
                column: col.name.clone(),
                present,
                levels,
                top: counts,
                top_names,
                numbers,
            }
        })
        .collect()
}

/// One number column's common exact values and their shares of its present cells.
pub type CommonValues = (String, Vec<(f64, f64)>);

/// The exact values each number column holds in at least
/// [`crate::privacy::point_masses::POINT_MASS_SHARE`] of its cells, commonest first: the
/// point masses to name in the schema where they are public facts (a codebook's 0 = none,
/// a top code). Columns with point masses already named, dates, and columns with no
/// common value are left out. Read off the rows: told to the owner, never released.
pub fn common_values(schema: &Schema, table: &Table) -> Vec<CommonValues> {
    use crate::privacy::point_masses::{POINT_MASS_SHARE, value_counts};
    let mut out = Vec::new();
    for spec in &schema.columns {
        let plain = spec.point_masses.is_empty() && spec.time_format.is_none();
        let Some(col) = table
            .column(&spec.name)
            .filter(|_| is_number(spec) && plain)
        else {
            continue;
        };
        let Ok(values) = spec.numbers(col) else {
            continue;
        };
        let counts = value_counts(&values);
        let present: u64 = counts.iter().map(|(_, c)| c).sum();
        let mut common: Vec<(f64, f64)> = counts
            .into_iter()
            .map(|(x, c)| (x, c as f64 / present.max(1) as f64))
            .filter(|(_, share)| *share >= POINT_MASS_SHARE)
            .collect();
        common.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.total_cmp(&b.0)));
        common.truncate(super::schema::MAX_POINT_MASSES);
        if !common.is_empty() {
            out.push((spec.name.clone(), common));
        }
    }
    out
}

/// What `plan` will do to the columns it estimates, in words, computed on the rows'
/// profile: which columns no value survives in (they will be dropped), which number
/// columns' bounds the noise swamps (trial estimates land far from the values or cut
/// many off: [`super::bound_trials`]), which lose their rarer values, and the fixes.
/// `None` when every estimated column keeps all it has.
///
/// A category survives when its noisy count passes the threshold τ, which a value held
/// by about τ rows does half the time. This reads the rows: it is a diagnostic for the
/// data's owner, shown before anything is spent, never released.
pub fn diagnose(schema: &Schema, plan: &DomainPlan, profiles: &[LevelProfile]) -> Option<String> {
    diagnosis(schema, plan, profiles).map(|d| d.message)
}

/// [`diagnose`]'s words, and whether the run is hopeless.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnosis {
    pub message: String,
    /// Set when the estimate will drop more than half of the table's columns: the window
    /// asks before training such a run, with this sentence.
    pub hopeless: Option<String>,
}

/// See [`diagnose`].
pub fn diagnosis(
    schema: &Schema,
    plan: &DomainPlan,
    profiles: &[LevelProfile],
) -> Option<Diagnosis> {
    let tau = crate::privacy::estimators::category_threshold(plan.std, plan.delta_inf);
    let mut found = Findings::default();
    for name in &plan.columns {
        let (Some(spec), Some(p)) = (
            schema.column(name),
            profiles.iter().find(|p| &p.column == name),
        ) else {
            continue;
        };
        if is_number(spec) {
            found.number(name, p, plan);
            continue;
        }
        let kept = p.top.iter().filter(|c| **c as f64 >= tau).count() as u64;
        for (level, c) in p.top_names.iter().zip(&p.top) {
            let odds = drop_chance(*c, tau, plan.std);
            if (AT_RISK..1.0 - AT_RISK).contains(&odds) {
                found.at_risk.push(format!(
                    "{name} = \"{level}\" ({c} rows): dropped with a chance of {:.0} %",
                    100.0 * odds
                ));
            }
        }
        if kept == 0 {
            found.lost.push(name.clone());
        } else if kept < p.levels {
            found
                .thinned
                .push(format!("{name} keeps about {kept} of {}", p.levels));
        }
    }
    let message = found.words(plan, tau)?;
    let active = schema
        .columns
        .iter()
        .filter(|c| c.kind != super::schema::Kind::Ignored)
        .count();
    let hopeless = (2 * found.lost.len() > active).then(|| {
        format!(
            "The private domain estimate will drop {} of the table's {active} columns: the synthetic table would hold {} column(s), which is unlikely to be worth the budget. Give those columns' domains as public facts first, or train anyway.",
            found.lost.len(),
            active - found.lost.len()
        )
    });
    Some(Diagnosis { message, hopeless })
}

/// A level whose chance of being dropped lies between this and one less it is named with
/// its odds: one in 30 runs losing a label (every synthetic row "alive") is not rare.
const AT_RISK: f64 = 0.02;

/// The chance that a level `count` rows hold falls below the threshold `tau` once noise of
/// standard deviation `std` is added (released when the noisy count is above τ).
pub fn drop_chance(count: u64, tau: f64, std: f64) -> f64 {
    if std <= 0.0 {
        return if (count as f64) > tau { 0.0 } else { 1.0 };
    }
    0.5 * libm::erfc((count as f64 - tau) / (std * std::f64::consts::SQRT_2))
}

/// The columns [`diagnose`] names, by what will happen to them.
#[derive(Default)]
struct Findings {
    lost: Vec<String>,
    wild: Vec<String>,
    thinned: Vec<String>,
    /// Levels that survive in some runs and not in others, with their odds.
    at_risk: Vec<String>,
}

impl Findings {
    fn number(&mut self, name: &str, p: &LevelProfile, plan: &DomainPlan) {
        let n = plan.public_rows.map_or(p.present as f64, |r| r as f64);
        let Some(numbers) = &p.numbers else {
            // Text read as numbers: the coarse test (values outnumber the grid's noise).
            let cells = crate::privacy::estimators::bound_grid().len() as f64 + 1.0;
            if p.present as f64 <= 3.0 * plan.std * cells.sqrt() {
                self.lost.push(name.to_string());
            }
            return;
        };
        let t = super::bound_trials::run(numbers, plan.std, n);
        if t.mostly_dropped() {
            self.lost.push(name.to_string());
        } else if t.unreliable() {
            let example = t.example.map_or(String::new(), |e| format!(": {e}"));
            self.wild.push(format!(
                "{name} ({} of {} trial estimates go wrong{example})",
                t.wild + t.clipped + t.dropped,
                super::bound_trials::TRIALS
            ));
        }
    }

    fn words(&self, plan: &DomainPlan, tau: f64) -> Option<String> {
        if self.lost.is_empty()
            && self.thinned.is_empty()
            && self.wild.is_empty()
            && self.at_risk.is_empty()
        {
            return None;
        }
        let mut s = format!(
            "The private domain estimate (noise σ = {:.1}) keeps a value only if about {:.0} rows or more hold it.",
            plan.std, tau
        );
        if !self.lost.is_empty() {
            s.push_str(&format!(
                " {} of the {} estimated columns have no value that common and will be dropped: {}.",
                self.lost.len(),
                plan.columns.len(),
                self.lost.join(", ")
            ));
        }
        if !self.wild.is_empty() {
            s.push_str(&format!(
                " The noise swamps the bounds of {}: the estimate would put them far from the values (a negative age, a bound ten times the largest value) or leave many values outside them, where they are synthesized at the bound.",
                self.wild.join("; ")
            ));
        }
        if !self.thinned.is_empty() {
            let shown: Vec<&str> = self.thinned.iter().take(4).map(String::as_str).collect();
            s.push_str(&format!(
                " {} more lose their rarer values ({}{}); rows holding a dropped value are synthesized as the column's commoner values.",
                self.thinned.len(),
                shown.join("; "),
                if self.thinned.len() > shown.len() { "; …" } else { "" }
            ));
        }
        if !self.at_risk.is_empty() {
            let shown: Vec<&str> = self.at_risk.iter().take(6).map(String::as_str).collect();
            s.push_str(&format!(
                " Left to chance: {}{}. A level dropped this way is gone from every synthetic row (a label always the other value).",
                shown.join("; "),
                if self.at_risk.len() > shown.len() { "; …" } else { "" }
            ));
        }
        s.push_str(" Fixes: give the categories or bounds as public facts (type them, or load the codebook's schema), raise the domain share of ε (Advanced settings in the window, --domain-share on the command line), or leave columns out (kind: ignored). This check reads the rows: it is shown to you and never released.");
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::estimate::plan_domains;
    use crate::data::estimate::tests::adult;
    use crate::data::infer::infer_schema;
    use crate::privacy::Budget;

    /// The owner is told which exact values are common enough to keep exactly, with
    /// Adult's real shares.
    #[test]
    fn common_values_name_the_zeros_and_the_forty_hour_week() {
        let t = adult();
        let schema = infer_schema(&t).unwrap().schema;
        let common = common_values(&schema, &t);
        let of = |c: &str| common.iter().find(|(n, _)| n == c).map(|(_, v)| v.clone());
        let gain = of("capital-gain").unwrap();
        assert_eq!(gain.len(), 1);
        assert_eq!(gain[0].0, 0.0);
        assert!((gain[0].1 - 0.9167).abs() < 1e-3, "{gain:?}");
        assert_eq!(of("hours-per-week").unwrap()[0].0, 40.0);
        assert!(of("fnlwgt").is_none());
        assert!(of("sex").is_none(), "only number columns");
    }

    /// Before anything is spent, the owner is told which columns a
    /// private estimate will leave with nothing (a small table, many columns).
    fn first_rows(t: &Table, n: usize) -> Table {
        let rows: Vec<usize> = (0..n).collect();
        Table {
            columns: t
                .columns
                .iter()
                .map(|c| crate::data::table::Column {
                    name: c.name.clone(),
                    values: match &c.values {
                        Values::Number(v) => Values::Number(v[..n].to_vec()),
                        Values::Text(v) => Values::Text(v.select(&rows)),
                    },
                })
                .collect(),
            n_rows: n,
        }
    }

    #[test]
    fn the_diagnostic_names_the_columns_an_estimate_will_drop() {
        let t = adult();
        let small = first_rows(&t, 1_000);
        let schema = infer_schema(&small).unwrap().schema;
        let budget = Budget {
            epsilon: 1.0,
            delta: 1e-5,
        };
        let plan = plan_domains(&schema, budget, 0.1, true, (false, false))
            .unwrap()
            .unwrap();
        let d = diagnose(&schema, &plan, &profile(&small)).expect("a small table loses columns");
        assert!(d.contains("will be dropped"), "{d}");
        assert!(d.contains("never released"), "{d}");
        // Most columns dropped: the run is hopeless, and the window asks before training.
        assert!(diagnosis(&schema, &plan, &profile(&small)).is_some_and(|d| d.hopeless.is_some()));
        // 3,382 rows keep most columns, but the numbers' bounds, tried on trial noise,
        // lose their tails: the words say so.
        let head = first_rows(&t, 3_382);
        let schema = infer_schema(&head).unwrap().schema;
        let plan = plan_domains(&schema, budget, 0.1, true, (false, false))
            .unwrap()
            .unwrap();
        let found = diagnosis(&schema, &plan, &profile(&head)).unwrap();
        assert!(found.hopeless.is_none(), "{found:?}");
        assert!(
            found.message.contains("The noise swamps the bounds of age"),
            "{found:?}"
        );
        assert!(found.message.contains("of the values outside"), "{found:?}");
        // With the whole table and a generous share, nothing is lost outright.
        let whole = infer_schema(&t).unwrap().schema;
        let plan = plan_domains(&whole, budget, 0.5, true, (false, false))
            .unwrap()
            .unwrap();
        let d = diagnose(&whole, &plan, &profile(&t)).unwrap_or_default();
        assert!(!d.contains("will be dropped"), "{d}");
    }

    /// A minority label held by about τ rows survives in some runs and not others: the
    /// preview names it with its odds, before anything is spent.
    #[test]
    fn a_level_at_the_thresholds_edge_is_named_with_its_odds() {
        let budget = Budget {
            epsilon: 1.0,
            delta: 1e-5,
        };
        let mut csv = String::from("outcome,group\n");
        let schema_of = |t: &Table| infer_schema(t).unwrap().schema;
        let probe = crate::data::csv::parse_csv_bytes(
            b"outcome,group\nalive,a\ndead,b\n".to_vec(),
            "t",
            &Default::default(),
        )
        .unwrap();
        let plan = plan_domains(&schema_of(&probe), budget, 0.1, true, (false, false))
            .unwrap()
            .unwrap();
        let tau = crate::privacy::estimators::category_threshold(plan.std, plan.delta_inf);
        // "dead" held by about τ rows: a coin flip whether it is kept.
        let dead = tau.round() as usize;
        for r in 0..20 * dead {
            let outcome = if r < dead { "dead" } else { "alive" };
            csv.push_str(&format!(
                "{outcome},{}\n",
                if r % 2 == 0 { "a" } else { "b" }
            ));
        }
        let t =
            crate::data::csv::parse_csv_bytes(csv.into_bytes(), "t", &Default::default()).unwrap();
        let schema = schema_of(&t);
        let plan = plan_domains(&schema, budget, 0.1, true, (false, false))
            .unwrap()
            .unwrap();
        let d = diagnose(&schema, &plan, &profile(&t)).expect("a level at risk is named");
        assert!(d.contains("outcome = \"dead\""), "{d}");
        assert!(d.contains("dropped with a chance of"), "{d}");
        assert!(!d.contains("outcome = \"alive\""), "{d}");
        assert!((drop_chance(dead as u64, tau, plan.std) - 0.5).abs() < 0.2);
        assert!(drop_chance(10 * dead as u64, tau, plan.std) < 1e-6);
    }
}
