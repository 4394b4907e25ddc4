//! A pair's schemas may call a domain `dp_estimated`. A schema file can claim anything:
//! only an estimate the table's own ledger book recorded stays private, as for a single
//! table. The check runs on the tables' books before the pair reserves anything, so a
//! claim that does not hold refuses the run before a charge, and the part runs (paid on a
//! scratch ledger, on derived tables) are told which claims held.

use std::path::Path;

use super::LinkedConfig;
use crate::data::estimate::{distrust_unrecorded, spec_digest};
use crate::data::schema::{Provenance, Schema};
use crate::job::{Event, JobError};
use crate::privacy::ledger::Ledger;

/// `cfg` with each table's `dp_estimated` claims checked against that table's book:
/// those without a recorded estimate become "read off the rows" (and are named).
pub(super) fn checked(
    cfg: &LinkedConfig,
    ledger_path: &Path,
    (parent_key, child_key): (&str, &str),
    send: &(dyn Fn(Event) + Sync),
) -> Result<LinkedConfig, JobError> {
    let mut out = cfg.clone();
    let parent = match (&cfg.parent.inline_schema, &cfg.parent.schema) {
        (Some(s), _) => Some(s.clone()),
        (None, Some(p)) => Some(Schema::load(p).map_err(|e| JobError::Usage(e.to_string()))?),
        (None, None) => None,
    };
    let claims = |s: &Option<Schema>| {
        s.iter()
            .flat_map(|s| &s.columns)
            .any(|c| matches!(c.provenance, Provenance::DpEstimated { .. }))
    };
    if !claims(&parent) && !claims(&cfg.child_schema) {
        return Ok(out);
    }
    let ledger = Ledger::open(ledger_path)?;
    let mut demoted = Vec::new();
    if let Some(mut s) = parent {
        demoted.extend(distrust_unrecorded(&mut s, |d| {
            ledger.has_estimate(parent_key, d).unwrap_or(false)
        }));
        out.parent.inline_schema = Some(s);
    }
    if let Some(s) = out.child_schema.as_mut() {
        demoted.extend(distrust_unrecorded(s, |d| {
            ledger.has_estimate(child_key, d).unwrap_or(false)
        }));
    }
    if !demoted.is_empty() {
        send(Event::Notice(format!(
            "the schemas call the domains of {} DP-estimated, but the tables' ledger books have no such estimate: they are treated as read off the rows",
            demoted.join(", ")
        )));
    }
    Ok(out)
}

/// Tells the scratch ledger of a part run that the `dp_estimated` domains left in its
/// (derived) schema held on the tables' books: recorded under the derived file's key.
pub(super) fn vouch(scratch: &Path, data: &Path, schema: &Schema) -> Result<(), JobError> {
    let held: Vec<String> = schema
        .columns
        .iter()
        .filter(|c| matches!(c.provenance, Provenance::DpEstimated { .. }))
        .map(spec_digest)
        .collect();
    if held.is_empty() {
        return Ok(());
    }
    let key = crate::job::cost::dataset_key(data, scratch)?;
    let mut ledger = Ledger::open(scratch)?;
    for d in held {
        ledger.record_estimate(&key, &d)?;
    }
    Ok(())
}
