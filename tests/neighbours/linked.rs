//! The linked pair: the unit is a parent with all its children, so a neighbour adds,
//! removes or replaces a whole person with up to K years. Only the child model's calls
//! may move by K times their row-level Δ (a unit's k ≤ K rows); the parent model's calls
//! and the record counts are allowed their declared Δ.

use std::path::{Path, PathBuf};

use dpsynth::job::{self, RunConfig};
use dpsynth::privacy::probe::{self, Call, Fault, Mode};

use crate::common;
use crate::tables::{K, pair};
use crate::{Checked, calibration, compare};

/// One linked run under a probe: its calls, ε spent, δ and the three headers, or its error.
fn run_linked(
    cfg: &job::linked::LinkedConfig,
    (parents, children): &(PathBuf, PathBuf),
    (mode, fault): (Mode, Fault),
    dir: &Path,
    tag: &str,
) -> Result<(Vec<Call>, Option<f64>, serde_json::Value), String> {
    let mut cfg = cfg.clone();
    cfg.parent.data = parents.clone();
    cfg.child = children.clone();
    cfg.parent.out = dir.join(format!("{tag}.dpsynth"));
    probe::install_faulty(mode, fault);
    let r = job::linked::run_linked(
        &cfg,
        &dir.join(format!("{tag}.sqlite3")),
        &|_| {},
        &std::sync::atomic::AtomicBool::new(false),
    );
    let calls = probe::take();
    let s = r.map_err(|e| e.to_string())?;
    let calls = calls.map_err(|e| format!("the neighbour's run left the table's: {e}"))?;
    let m = job::linked::model::LinkedModel::load(&s.model).map_err(|e| e.to_string())?;
    Ok((
        calls,
        s.epsilon_spent,
        serde_json::json!({
            "linked": m.header,
            "parent": m.parent.header,
            "child": m.child.header,
        }),
    ))
}

/// The pair's config for `method`; `independent`: the child model without its parent's
/// columns.
pub fn config(method: &str, independent: bool) -> job::linked::LinkedConfig {
    job::linked::LinkedConfig {
        parent: RunConfig {
            schema: Some(common::repo("assets/gsoep/persons.schema.json")),
            preset: "tiny".into(),
            seed: Some(3),
            threads: Some(1),
            ..RunConfig::new(PathBuf::new(), method, 2.0, 1e-5)
        },
        child: PathBuf::new(),
        child_schema: Some(
            dpsynth::data::schema::Schema::load(&common::repo("assets/gsoep/years.schema.json"))
                .unwrap(),
        ),
        link: dpsynth::data::linked::Link {
            key: "id".into(),
            max_children: K,
            min_children: 1,
        },
        parent_share: job::linked::DEFAULT_PARENT_SHARE,
        independent,
        unique: vec!["year".into()],
        count_by: Some("outwork".into()),
    }
}

/// The pair's neighbours: (name, files, units apart, hostile).
#[allow(clippy::type_complexity)]
fn neighbours(dir: &Path) -> Vec<(&'static str, (PathBuf, PathBuf), f64, bool)> {
    let a = |y: &str| format!("418,{y},2,0,0,1,0,0,3.5");
    let years: Vec<String> = ["1984", "1985", "1986", "1987", "1988"]
        .iter()
        .map(|y| a(y))
        .collect();
    let mut many = years.clone();
    many.extend(["1984", "1985", "1986"].iter().map(|y| a(y)));
    let mut unseen = years.clone();
    unseen[2] = a("1999");
    let person = "418,1,1,1923";
    vec![
        (
            "a person and its years removed",
            pair(dir, "linked-r", Some("1"), &[]),
            1.0,
            false,
        ),
        (
            "a person and its years added",
            pair(dir, "linked-a", None, &[(person, years.clone())]),
            1.0,
            false,
        ),
        (
            "a person and its years replaced",
            pair(dir, "linked-x", Some("1"), &[(person, years)]),
            2.0,
            false,
        ),
        (
            "a person with more than K years added",
            pair(dir, "linked-m", None, &[(person, many)]),
            1.0,
            false,
        ),
        (
            "a person with an unseen year added",
            pair(dir, "linked-u", None, &[(person, unseen)]),
            1.0,
            true,
        ),
    ]
}

/// How many times its declared Δ a call of `part` may move per unit.
fn per_unit(part: &str) -> f64 {
    if part == "child" { K as f64 } else { 1.0 }
}

/// Checks one linked configuration against its neighbours, under `fault`.
pub fn check(dir: &Path, name: &str, cfg: &job::linked::LinkedConfig, fault: Fault) -> Checked {
    let base = pair(dir, "linked-d", None, &[]);
    let slug: String = name.chars().filter(|c| c.is_alphanumeric()).collect();
    let (d, spent, header) =
        run_linked(cfg, &base, (Mode::Record, fault), dir, &format!("{slug}-d"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(!d.is_empty(), "{name}: no noise call");
    let mut out = Checked::default();
    let parts: std::collections::BTreeSet<&str> = d.iter().map(|c| c.part).collect();
    eprintln!("{name}: {} noise calls per run, parts {parts:?}", d.len());
    match calibration(&d, spent, cfg.parent.delta, K as f64) {
        Ok(line) => eprintln!("{name}: {line}"),
        Err(e) => out.failures.push(format!("{name}: {e}")),
    }
    for (i, (what, files, units, hostile)) in neighbours(dir).into_iter().enumerate() {
        let got = run_linked(
            cfg,
            &files,
            (Mode::Replay(d.clone()), fault),
            dir,
            &format!("{slug}-n{i}"),
        );
        out.take(
            name,
            what,
            hostile,
            got.map(|(c, _, h)| (c, h)),
            |other| compare(&d, other, |c| units * per_unit(c.part)),
            &header,
        );
    }
    out
}
