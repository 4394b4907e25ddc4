//! The run's plan, prepared by one set of functions for the preview ([`super::cost`]) and
//! the run ([`super::run`]): the private domain estimate the policy asks for, the method's
//! plan after it, the charges both make, and the memory and time estimate. So the figure a
//! user is shown before a run is the figure the run reserves.

use super::{DomainPolicy, JobError};
use crate::data::estimate::{self, DomainPlan};
use crate::data::schema::Schema;
use crate::methods::{Plan, Synthesizer};
use crate::privacy::{Budget, Charge};

/// What to do with domains read off the rows when the policy is to refuse them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Uncovered {
    /// The run: refuse, naming the columns (nothing is spent).
    Refuse,
    /// The preview: plan as if they were let through (it lists them as not covered).
    Plan,
}

/// The private domain estimate `policy` asks for on `schema` at `budget`: `None` when no
/// column needs one. Columns marked `to_estimate` are estimated under every policy; the
/// exact values of public number columns that name none are looked for when
/// `exact_values` (a run that holds its rows), and the maps of `->` rules that give none
/// are measured when `measure_maps` (a method that does not measure marginals itself).
pub(super) fn domains(
    schema: &Schema,
    policy: DomainPolicy,
    uncovered: Uncovered,
    budget: Budget,
    (public_rows, exact_values, measure_maps): (Option<usize>, bool, bool),
) -> Result<Option<DomainPlan>, JobError> {
    let read_off = estimate::uncovered(schema);
    let (share, all) = match policy {
        DomainPolicy::Refuse if uncovered == Uncovered::Refuse && !read_off.is_empty() => {
            return Err(JobError::Usage(format!(
                "{} column(s) have domains read off the private rows, which would leave in the model file unprotected: {}. Give a schema with public domains (--schema; `dpsynth inspect --schema-out` writes a draft to edit), or estimate them privately (--estimate-domains), or release them as read, outside the guarantee (--allow-data-domains)",
                read_off.len(),
                read_off.join(", ")
            )));
        }
        DomainPolicy::Estimate { share } => (share, true),
        DomainPolicy::AllowDataWithShare { share } => (share, false),
        _ => (estimate::DEFAULT_SHARE, false),
    };
    let plan = estimate::plan_domains(schema, budget, share, all, (exact_values, measure_maps))
        .map_err(|e| JobError::Usage(e.to_string()))?;
    Ok(plan.map(|p| DomainPlan { public_rows, ..p }))
}

/// The method's plan for `rows` records after the domain estimate, and every charge of
/// the run in the order it makes them (the estimate's, then the method's).
pub(super) fn method_plan(
    method: &dyn Synthesizer,
    rows: usize,
    budget: Budget,
    domains: Option<&DomainPlan>,
) -> Result<(Plan, Vec<Charge>), JobError> {
    let prior: Vec<Charge> = domains.map(|d| d.charges.clone()).unwrap_or_default();
    let plan = method.plan(rows, budget, &prior)?;
    let charges = prior.iter().chain(&plan.charges).copied().collect();
    Ok((plan, charges))
}

/// Peak memory and time of training `method` on `rows` rows of `columns` columns encoded
/// to `width` values, `held` of them in memory at once (all, or a streamed run's part).
pub(super) fn resources(
    method: &dyn Synthesizer,
    (rows, held): (usize, usize),
    columns: usize,
    width: usize,
    cpu: bool,
) -> super::resources::Resources {
    super::resources::estimate(
        &method.footprint_for(rows, columns, width),
        held,
        columns,
        width,
        cpu,
    )
}
