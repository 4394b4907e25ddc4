//! `dpsynth train --child …` and `dpsynth sample --child-out …`: linked tables.

use std::io::Write as _;

use serde_json::json;

use super::train::{SampleArgs, TrainArgs};
use crate::data::linked::Link;
use crate::job::linked::{self, LinkedConfig, LinkedEvent};
use crate::job::{Event, JobError};

pub fn train(a: &TrainArgs) -> anyhow::Result<()> {
    let parent = super::train::run_config(a)?;
    let (Some(child), Some(key), Some(k)) = (&a.child, &a.key, a.max_children) else {
        return Err(JobError::Usage("--child needs --key and --max-children".into()).into());
    };
    let cfg = LinkedConfig {
        parent,
        child: child.clone(),
        child_schema: match &a.child_schema {
            Some(p) => Some(
                crate::data::schema::Schema::load(p).map_err(|e| JobError::Usage(e.to_string()))?,
            ),
            None => None,
        },
        link: Link {
            key: key.clone(),
            max_children: k,
            min_children: a.min_children,
        },
        parent_share: a.parent_share.unwrap_or(linked::DEFAULT_PARENT_SHARE),
        independent: a.independent,
        unique: a.unique.clone(),
        count_by: a.count_by.clone(),
    };
    let ledger = a
        .ledger
        .clone()
        .unwrap_or_else(super::budget::default_ledger_path);
    let s = follow(linked::spawn_linked(cfg, ledger))?;
    if a.json {
        return super::print_json(&json!({
            "epsilon_spent": s.epsilon_spent,
            "delta": s.delta,
            "model": s.model.display().to_string(),
            "seconds": s.seconds,
            "not_for_release": a.seed.is_some(),
            "parents": s.parents,
            "children": s.children,
            "max_children": k,
            "truncated_parents": s.truncated_parents,
            "dropped_children": s.dropped_children,
            "parent_rho": s.split.map(|x| x.parent_rho),
            "child_rho": s.split.map(|x| x.child_unit_rho()),
            "independent": a.independent,
        }));
    }
    let eps = s
        .epsilon_spent
        .map_or("∞ (not private)".to_string(), |e| format!("{e:.4}"));
    println!(
        "linked model written to {} — ε = {eps} at δ = {} per parent with its children (K = {k}), {:.1} s",
        s.model.display(),
        s.delta,
        s.seconds
    );
    if s.epsilon_spent.is_some() {
        eprintln!("dpsynth: note: {}", linked::unit_statement(key, k));
        if a.allow_data_domains {
            eprintln!(
                "dpsynth: warning: domains read off the private rows are in the model file as read; the guarantee does NOT cover them"
            );
        }
    }
    Ok(())
}

/// Prints both runs' progress on stderr until the linked run ends.
fn follow(handle: crate::job::Worker<LinkedEvent>) -> anyhow::Result<linked::LinkedSummary> {
    let mut err = std::io::stderr();
    let mut result = None;
    for ev in handle.events.iter() {
        match ev {
            LinkedEvent::Run(Event::Notice(m)) => {
                let _ = writeln!(err, "dpsynth: {m}");
            }
            LinkedEvent::Run(Event::Progress(p)) => {
                let _ = write!(err, "\r{} step {}/{}   ", p.phase, p.step, p.total);
                let _ = err.flush();
            }
            LinkedEvent::Run(Event::Started { rows, width, .. }) => {
                let _ = writeln!(err, "\ndpsynth: {rows} rows, {width} encoded columns");
            }
            LinkedEvent::Run(_) => {}
            LinkedEvent::Finished(r) => {
                let _ = writeln!(err);
                result = Some(r);
            }
        }
    }
    handle.join();
    match result {
        Some(Ok(s)) => Ok(s),
        Some(Err(e)) => Err(e.into()),
        None => anyhow::bail!("the training thread ended without a result"),
    }
}

/// Whether `sample` is asked for a linked pair: a linked model, or `--child-out`.
pub fn is_linked_sample(a: &SampleArgs) -> bool {
    a.child_out.is_some() || linked::model::is_linked(&a.model)
}

pub fn sample(a: &SampleArgs) -> anyhow::Result<()> {
    let Some(child_out) = &a.child_out else {
        return Err(JobError::Usage(format!(
            "{} is a linked model: say where its children go with --child-out FILE (--out gets the parents)",
            a.model.display()
        ))
        .into());
    };
    if a.condition.is_some() || a.jitter.is_some() || a.draw.is_some() {
        return Err(JobError::Usage(
            "--where, --jitter and --draw do not apply to a linked model".into(),
        )
        .into());
    }
    let (m, rows) = linked::services::export_pair(&a.model, a.rows, a.seed, (&a.out, child_out))?;
    if rows.unmatched_groups > 0 {
        eprintln!(
            "dpsynth: note: for {} kinds of synthetic parent the child model had no mass; their children were drawn without the parent's columns",
            rows.unmatched_groups
        );
    }
    eprintln!(
        "dpsynth: wrote {} parents to {} and their {} children to {} (model: {} linked by '{}', K = {}, ε = {} at δ = {})",
        rows.parents.n_rows,
        a.out.display(),
        rows.children.n_rows,
        child_out.display(),
        m.header.method,
        m.header.key,
        m.header.max_children,
        m.header
            .epsilon
            .map_or("∞ (not private)".to_string(), |e| e.to_string()),
        m.header.delta
    );
    if m.header.not_for_release {
        eprintln!("dpsynth: caveat: trained with a fixed seed: NOT for release");
    }
    Ok(())
}
