//! The cost preview: what a run would spend and what the dataset's ledger would have left,
//! before anything trains. The window asks for it off its UI thread whenever the form
//! changes (opening SQLite and calibrating σ take longer than a frame).

use std::path::{Path, PathBuf};

use super::{DomainPolicy, JobError};
use crate::privacy::Budget;
use crate::privacy::compose::compose;
use crate::privacy::ledger::Ledger;

/// What the preview is asked about.
#[derive(Debug, Clone, PartialEq)]
pub struct CostRequest {
    /// The dataset's ledger key ([`dataset_key`]).
    pub dataset: String,
    pub ledger: PathBuf,
    pub method: String,
    pub preset: String,
    pub epsilon: f64,
    pub delta: f64,
    pub rows: usize,
    pub overrides: serde_json::Map<String, serde_json::Value>,
    /// The table's schema, when its domains may be estimated privately ([`DomainPolicy`]).
    pub schema: Option<crate::data::schema::Schema>,
    pub domains: DomainPolicy,
    /// Post-GAN boosting after training, when asked for.
    pub boost: Option<super::BoostConfig>,
    /// The fixed schema of data that has no editable one (an image set): used for the
    /// memory and time estimate only.
    pub fixed_schema: Option<crate::data::schema::Schema>,
    /// The table's level counts ([`crate::data::domain_check::profile`]), for the diagnostic
    /// of what a private domain estimate will drop (shown to the data's owner only).
    pub profile: Option<std::sync::Arc<Vec<crate::data::domain_check::LevelProfile>>>,
    /// Where the run will train (the preview says which device `auto` picks).
    pub device: super::DeviceChoice,
    /// Rows the run holds in memory at once when it does not hold them all: one part of
    /// a file read in parts, none for a query engine's table (None: all `rows`).
    pub held: Option<usize>,
    /// The run looks for exact values privately ([`super::RunConfig::exact_values`]).
    pub exact_values: bool,
}

/// The ledger's view of the dataset and the run's planned cost, all at the ledger's δ so
/// that the figures add up (the run reports its own (ε, δ) when it ends).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cost {
    pub total: f64,
    pub delta: f64,
    pub spent: f64,
    pub this_run: f64,
    /// ε of the private domain estimate alone (part of `this_run`), when there is one.
    pub domains: Option<f64>,
    /// ε of the post-GAN boosting rounds alone (part of `this_run`), when boosting.
    pub boost: Option<f64>,
    pub left_after: f64,
    /// The plan in words.
    pub summary: String,
    /// Why the run cannot start (over the dataset's budget); `None` when it can.
    pub refused: Option<String>,
    /// How the run's δ relates to the dataset's.
    pub delta_rule: Option<DeltaRule>,
    /// The δ of the dataset's ledger record, when it has one (the window proposes it).
    pub dataset_delta: Option<f64>,
    /// Estimated peak memory and time, when the table's schema is known.
    pub resources: Option<super::resources::Resources>,
    /// Why the result will likely be noise ([`crate::methods::Plan::noise_warning`]).
    pub warning: Option<String>,
    /// What the private domain estimate will drop ([`crate::data::domain_check::diagnose`]):
    /// read off the rows, for the data's owner, never released.
    pub domain_diagnostic: Option<String>,
    /// Set when that estimate drops most of the table ([`crate::data::domain_check::Diagnosis`]):
    /// the window asks before training.
    pub hopeless: Option<String>,
    /// What the release will not cover, said before anything is spent: domains read off
    /// the rows, kinds guessed from them.
    pub not_covered: Vec<String>,
    /// Where the networks will train, in words ([`super::DeviceChoice::will_use`]).
    pub device: String,
}

impl Cost {
    /// What this run's (ε, δ) means for one person in the data, in one sentence (the
    /// hypothesis-testing view: [`crate::privacy::tradeoff`]).
    pub fn meaning(&self) -> String {
        let s = crate::privacy::tradeoff::sentence(self.this_run, self.delta);
        let mut c = s.chars();
        let lowered: String = c
            .next()
            .map(|f| f.to_lowercase().chain(c).collect())
            .unwrap_or_default();
        format!("What this means: {lowered}")
    }

    /// A sentence for when "left after" is more than total − spent − this run: ε of runs
    /// composed together is less than the sum of their ε (composition is not additive).
    pub fn composition_note(&self) -> Option<String> {
        let additive = self.total - self.spent - self.this_run;
        (self.spent > 0.0 && self.left_after > additive.max(0.0) + 5e-4).then(|| {
            format!(
                "Left after ({:.3}) is more than total − spent − this run ({:.3}): privacy loss composes, it does not add up. The ledger composes every run on this dataset together, and that is tighter than summing their ε.",
                self.left_after,
                additive.max(0.0)
            )
        })
    }
}

/// The run's domain step as the run will plan it: a run that holds its rows looks for
/// exact values; MST and AIM (the methods that train from counts) measure a `->` rule's
/// pair themselves, the others have its map measured in this step.
fn domain_plan(
    req: &CostRequest,
    info: &crate::job::MethodInfo,
    budget: Budget,
) -> Result<Option<crate::data::estimate::DomainPlan>, JobError> {
    let Some(schema) = &req.schema else {
        return Ok(None);
    };
    let rows_here = req.held.is_none() && req.exact_values;
    super::plan::domains(
        schema,
        req.domains,
        super::plan::Uncovered::Plan,
        budget,
        (None, rows_here, rows_here && !info.streams),
    )
}

/// The ledger key of a data file: a digest of its content ([`crate::data::digest`]), so
/// renaming, re-saving or re-ordering the file keeps its budget. A file seen before is
/// recognised by its byte hash without parsing.
pub fn dataset_key(path: &Path, ledger: &Path) -> Result<String, JobError> {
    let bytes = super::workspace::byte_key(path).map_err(|e| JobError::file(path, e))?;
    let mut l = Ledger::open(ledger)?;
    if let Some(k) = l.alias(&bytes)? {
        return Ok(k);
    }
    let d = crate::data::open(path, &Default::default()).map_err(|e| JobError::file(path, e))?;
    let content = crate::data::digest::content_key(&d);
    l.adopt_key(&bytes, &content)?;
    Ok(content)
}

/// What the run described by `req` would cost, without training or reserving anything.
pub fn cost(req: &CostRequest) -> Result<Cost, JobError> {
    let info = super::method(&req.method)?;
    let ledger = Ledger::open(&req.ledger)?;
    let st = ledger.standing(&req.dataset)?;
    let mut c = Cost {
        total: st.budget.epsilon,
        delta: st.budget.delta,
        spent: st.spent,
        dataset_delta: (!st.budget_is_default).then_some(st.budget.delta),
        device: req.device.will_use(),
        ..Default::default()
    };
    if !info.is_private_at(req.epsilon) {
        c.summary = "non-private: spends nothing from the ledger, and guarantees nothing".into();
        c.left_after = st.remaining;
        return Ok(c);
    }
    let budget = Budget {
        epsilon: req.epsilon,
        delta: req.delta,
    };
    budget.validate().map_err(JobError::Usage)?;
    let method =
        info.instantiate_boosted(&req.preset, req.epsilon, &req.overrides, req.boost.as_ref())?;
    let domain_plan = domain_plan(req, info, budget)?;
    if let Some(schema) = &req.schema {
        c.not_covered = not_covered(schema, req.domains);
    }
    if let (Some(d), Some(schema), Some(profile)) = (&domain_plan, &req.schema, &req.profile) {
        if let Some(found) = crate::data::domain_check::diagnosis(schema, d, profile) {
            c.domain_diagnostic = Some(found.message);
            c.hopeless = found.hopeless;
        }
    }
    let (plan, charges) =
        super::plan::method_plan(method.as_ref(), req.rows, budget, domain_plan.as_ref())?;
    c.resources = resources(req, method.as_ref());
    let orders = ledger.orders();
    let rule = DeltaRule::of(&ledger, &req.dataset, req.delta)?;
    let (after, delta) = if st.budget_is_default || matches!(rule, DeltaRule::Adopt { .. }) {
        // The run will create the dataset's record, or set its δ, at its own δ (nothing
        // is spent yet).
        let alone = compose(&charges, orders, req.delta).epsilon;
        (alone, req.delta)
    } else {
        (
            ledger.epsilon_after(&req.dataset, &charges)?.epsilon,
            st.budget.delta,
        )
    };
    c.delta = delta;
    c.this_run = compose(&charges, orders, delta).epsilon;
    c.domains = domain_plan.map(|d| d.epsilon);
    let boosting: Vec<_> = plan
        .charges
        .iter()
        .filter(|ch| matches!(ch.mechanism, crate::privacy::Mechanism::Exponential { .. }))
        .copied()
        .collect();
    c.boost = (!boosting.is_empty()).then(|| compose(&boosting, orders, delta).epsilon);
    c.left_after = (c.total - after).max(0.0);
    c.warning = plan.noise_warning();
    c.summary = plan.summary;
    c.refused = rule.refusal(req.delta).or_else(|| over_budget(&c, after));
    c.delta_rule = Some(rule);
    Ok(c)
}

/// The memory and time estimate, where the schema (the table's or an image set's fixed
/// one) is known.
fn resources(
    req: &CostRequest,
    method: &dyn crate::methods::Synthesizer,
) -> Option<super::resources::Resources> {
    let schema = req.schema.as_ref().or(req.fixed_schema.as_ref())?;
    let enc = crate::data::encode::Encoding::new(schema).ok()?;
    Some(super::plan::resources(
        method,
        (req.rows, req.held.unwrap_or(req.rows).min(req.rows)),
        schema.columns.len(),
        enc.width,
        req.device.resolves_to_cpu(),
    ))
}

/// Why a run that would end at ε `after` on its dataset is refused, when that is over the
/// dataset's total.
fn over_budget(c: &Cost, after: f64) -> Option<String> {
    (after > c.total).then(|| {
        format!(
            "This run needs ε ≈ {:.3} but only {:.3} is left of the dataset's total {:.3}. Lower ε or raise the total.",
            c.this_run,
            (c.total - c.spent).max(0.0),
            c.total
        )
    })
}

/// The facts of `schema` a private release would not cover under `policy`, one sentence
/// each (empty when it covers everything).
pub fn not_covered(schema: &crate::data::schema::Schema, policy: DomainPolicy) -> Vec<String> {
    let mut out = Vec::new();
    let read = crate::data::estimate::uncovered(schema);
    if !read.is_empty() && !matches!(policy, DomainPolicy::Estimate { .. }) {
        out.push(format!(
            "Not covered: the domains of {} column(s) are read off the data and would be released as read ({}). In the Data tab, type public values or estimate them privately.",
            read.len(),
            read.join(", ")
        ));
    }
    let kinds = schema.non_private_kinds();
    if !kinds.is_empty() {
        out.push(format!(
            "Not covered: the kinds of {} column(s) were guessed from the rows; the statement will name them. In the Data tab, set each kind, or press \"Kinds are public\" if a codebook gives them.",
            kinds.len()
        ));
    }
    out
}

/// How a run's δ relates to its dataset's: one δ for both, so that every figure the user
/// sees (preview, gauges, label, statement, ledger) is read at the same δ.
#[derive(Debug, Clone, PartialEq)]
pub enum DeltaRule {
    /// The dataset has no record yet, or it is kept at the run's δ.
    Same,
    /// Nothing was spent on the dataset yet: the run sets its δ (from `was`).
    Adopt { was: f64 },
    /// Runs have spent from the dataset at δ = `fixed`: a run at another δ is refused.
    Fixed { fixed: f64 },
}

impl DeltaRule {
    /// The rule for a run at `delta` on `dataset`.
    pub fn of(ledger: &Ledger, dataset: &str, delta: f64) -> Result<Self, JobError> {
        let (budget, is_default) = ledger.budget(dataset)?;
        if is_default || (budget.delta - delta).abs() <= 1e-12 * delta.max(budget.delta) {
            return Ok(Self::Same);
        }
        Ok(if ledger.has_entries(dataset)? {
            Self::Fixed {
                fixed: budget.delta,
            }
        } else {
            Self::Adopt { was: budget.delta }
        })
    }

    /// Why a run at `delta` cannot start, when it cannot.
    pub fn refusal(&self, delta: f64) -> Option<String> {
        match self {
            Self::Fixed { fixed } => Some(format!(
                "This dataset's budget is kept at δ = {fixed}, and runs have spent from it: a run at δ = {delta} would report its ε at another δ than the dataset's. Use δ = {fixed} (`dpsynth budget set --delta` may lower the dataset's δ, never raise it)."
            )),
            _ => None,
        }
    }
}

/// Sets the dataset's total budget (what all runs on it may spend together).
pub fn set_total(ledger: &Path, dataset: &str, epsilon: f64, delta: f64) -> Result<(), JobError> {
    let b = Budget { epsilon, delta };
    b.validate().map_err(JobError::Usage)?;
    Ok(Ledger::open(ledger)?.set_budget(dataset, b)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_appears_only_when_composition_beats_the_sum() {
        let c = |spent, this_run, left_after| Cost {
            total: 3.0,
            spent,
            this_run,
            left_after,
            ..Default::default()
        };
        // 3 − 0.934 − 0.934 = 1.132, but composed the two runs leave 1.643.
        let note = c(0.934, 0.934, 1.643).composition_note().unwrap();
        assert!(note.contains("1.643") && note.contains("1.132"), "{note}");
        assert_eq!(c(0.0, 0.934, 2.066).composition_note(), None);
        assert_eq!(c(1.0, 1.0, 1.0).composition_note(), None);
    }
}
