//! The neighbour harness: every private method (tiny presets, boosted and not, streamed,
//! engine-counted, with estimated domains, with the record count not given, with the
//! codebook's rules, PATE-GAN under each vote aggregator, the image methods on digits) runs,
//! with the same seed, on a table D and on neighbours of D — one record added, removed or
//! replaced at the end, the front and the middle of the file (streamed parts, Poisson
//! membership and teacher partitions shift), and hostile records added (an outlier, a
//! non-number, an unseen category, a blank in a complete column) — and MST and AIM on a
//! linked pair (persons and their years, the child model with and without its parent's
//! columns) and its neighbours: a person with all their years removed, added or replaced,
//! a person with more years than K. Every noise call reports the exact query it noises,
//! the sensitivity it declares, the mechanism its noise implements and the part of the run
//! that made it (`dpsynth::privacy::probe`); on the neighbour each call returns D's output
//! (its noise still drawn), so everything after it is the same in both runs unless
//! something reads the rows without noise.
//!
//! Asserted at every call: the two queries differ by at most the declared sensitivity
//! (twice it for a replaced record; K times it, per person, for a linked pair's child
//! model only). Asserted of the whole run: the neighbour made the same calls in the same
//! order, the released model header is identical, and (calibration) the calls' own
//! mechanisms, composed, spend no more than the ledger booked. A refusal is accepted only
//! for a hostile record the public schema forbids. A second test breaks a mechanism on
//! purpose (Δ declared half its true value; a parent call made per child) and asserts the
//! harness catches it.
//!
//! Its own test binary: the probe is one per process, and other tests' noise calls must
//! not reach it (the two tests here take turns).

#[path = "../common/mod.rs"]
mod common;
mod configs;
mod linked;
mod tables;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use dpsynth::job::RunConfig;
use dpsynth::methods::released::ReleasedModel;
use dpsynth::privacy::probe::{self, Call, Fault, Mode};
use dpsynth::privacy::{Charge, Mechanism};

use configs::ENGINE;
use tables::N;

/// One probe per process: the tests take turns.
static PROBE: Mutex<()> = Mutex::new(());

/// The errors that stop a run on a record its schema forbids, before anything is read for
/// a release: the owner is told the column and the reason.
pub const REFUSALS: [&str; 4] = [
    "but the schema says",
    "which is not in the column's categories",
    "a number that is infinite or not a number",
    // An engine's survey, which sees the table's values, not its row numbers.
    "holds text that is not a number",
];

/// What the checks of one configuration found.
#[derive(Default)]
pub struct Checked {
    pub calls: usize,
    pub pairs: usize,
    pub refused: usize,
    pub failures: Vec<String>,
}

impl Checked {
    /// Files one neighbour's run: its calls and header compared with D's, or its refusal
    /// (accepted only for a `hostile` neighbour), or its failure.
    fn take(
        &mut self,
        name: &str,
        what: &str,
        hostile: bool,
        got: Result<(Vec<Call>, serde_json::Value), String>,
        cmp: impl Fn(&[Call]) -> Vec<String>,
        header: &serde_json::Value,
    ) {
        match got {
            Ok((other, h)) => {
                let mut bad = cmp(&other);
                if &h != header {
                    let mut diff = Vec::new();
                    common::json_differences(header, &h, String::new(), &mut diff);
                    bad.push(format!("the released headers differ at {diff:?}"));
                }
                self.failures
                    .extend(bad.into_iter().map(|b| format!("{name}, {what}: {b}")));
                self.calls += other.len();
                self.pairs += 1;
            }
            Err(e) if hostile && REFUSALS.iter().any(|r| e.contains(r)) => {
                eprintln!("{name}, {what}: refused: {e}");
                self.refused += 1;
            }
            Err(e) if hostile => self
                .failures
                .push(format!("{name}, {what}: refused for another reason: {e}")),
            Err(e) => self.failures.push(format!(
                "{name}, {what}: an ordinary neighbour's run failed or was refused: {e}"
            )),
        }
    }

    fn add(&mut self, other: Checked) {
        self.calls += other.calls;
        self.pairs += other.pairs;
        self.refused += other.refused;
        self.failures.extend(other.failures);
    }
}

/// One run on `data` under a probe: its calls, ε spent and model header, or the error
/// that refused it (nothing released).
fn run(
    cfg: &RunConfig,
    (data, map): (&Path, &[Option<usize>]),
    (mode, fault): (Mode, Fault),
    dir: &Path,
    tag: &str,
) -> Result<(Vec<Call>, Option<f64>, serde_json::Value), String> {
    let mut cfg = cfg.clone();
    cfg.data = if cfg.data == Path::new(ENGINE) {
        // One address for D and each neighbour: the address is the user's public fact
        // (the statement names it), the rows behind it are what differ.
        let at = dir.join("engine").join("table.csv");
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::copy(data, &at).unwrap();
        PathBuf::from(format!("{ENGINE}{}", at.display()))
    } else {
        data.to_path_buf()
    };
    cfg.out = dir.join(format!("{tag}.dpsynth"));
    let ledger = dir.join(format!("{tag}.sqlite3"));
    probe::install_faulty(mode, fault);
    probe::set_rows(map.to_vec());
    let summary = common::run_job(cfg, &ledger, None);
    let calls = probe::take();
    let summary = summary?;
    let calls = calls.map_err(|e| format!("the neighbour's run left the table's: {e}"))?;
    let m = ReleasedModel::load(&summary.model, &candle_core::Device::Cpu).unwrap();
    Ok((
        calls,
        summary.epsilon_spent,
        serde_json::to_value(&m.header).unwrap(),
    ))
}

/// The calls of two coupled runs, compared; a message per violation. `units(call)`: how
/// many times its declared Δ the call may move between the two tables.
pub fn compare(a: &[Call], b: &[Call], units: impl Fn(&Call) -> f64) -> Vec<String> {
    let mut bad = Vec::new();
    if a.len() != b.len() {
        bad.push(format!(
            "{} noise calls on the table, {} on the neighbour",
            a.len(),
            b.len()
        ));
    }
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        if x.site != y.site || x.sensitivity != y.sensitivity || x.norm != y.norm {
            bad.push(format!(
                "call {i}: {} (Δ {}) against {} (Δ {})",
                x.site, x.sensitivity, y.site, y.sensitivity
            ));
            continue;
        }
        let Some(d) = x.query.distance(&y.query, x.norm) else {
            bad.push(format!(
                "call {i} ({}): the queries have different shapes",
                x.site
            ));
            continue;
        };
        // Float sums (gradients) round; integer counts do not.
        let records = units(x);
        let allowed = records * x.sensitivity * (1.0 + 1e-4) + 1e-9;
        if !(d <= allowed) {
            bad.push(format!(
                "call {i} ({}, {}): the queries differ by {d}, declared Δ {} × {records}{}",
                x.site,
                x.part,
                x.sensitivity,
                worst(x, y, allowed)
            ));
        }
    }
    bad
}

/// Where two dense queries differ by more than `allowed` (the first few places).
fn worst(x: &Call, y: &Call, allowed: f64) -> String {
    let (probe::Value::Dense(p), probe::Value::Dense(q)) = (&x.query, &y.query) else {
        return String::new();
    };
    let at: Vec<String> = p
        .iter()
        .zip(q)
        .enumerate()
        .filter(|(_, (u, v))| (*u - *v).abs() > allowed)
        .take(4)
        .map(|(j, (u, v))| format!("[{j}] {u} vs {v}"))
        .collect();
    format!(" at {}", at.join(", "))
}

/// A call's mechanism for the privacy unit: a linked pair's child-model calls move by up
/// to `k` times their row-level Δ, so their noise buys `k` times less.
fn unit_mechanism(c: &Call, k: f64) -> Option<Mechanism> {
    if c.part != "child" {
        return Some(c.mechanism);
    }
    match c.mechanism {
        Mechanism::DiscreteGaussian { std } => Some(Mechanism::Gaussian {
            sensitivity: k,
            std,
        }),
        Mechanism::Gaussian { sensitivity, std } => Some(Mechanism::Gaussian {
            sensitivity: sensitivity * k,
            std,
        }),
        Mechanism::Exponential { epsilon } => Some(Mechanism::Exponential {
            epsilon: epsilon * k,
        }),
        _ => None,
    }
}

/// Calibration: the calls' own mechanisms (from the noise each really drew), composed,
/// against the ε the ledger booked for the run. A line to print, or the failure.
pub fn calibration(
    calls: &[Call],
    spent: Option<f64>,
    delta: f64,
    k: f64,
) -> Result<String, String> {
    let Some(spent) = spent else {
        return Ok("not private: nothing to calibrate".into());
    };
    let mut charges: Vec<Charge> = Vec::new();
    for c in calls {
        let m = unit_mechanism(c, k)
            .ok_or_else(|| format!("{} in the child model has no unit-level bound here", c.site))?;
        match charges.last_mut() {
            Some(last) if last.mechanism == m => last.count += 1,
            _ => charges.push(Charge {
                mechanism: m,
                count: 1,
            }),
        }
    }
    let orders = dpsynth::privacy::rdp::product_orders();
    let composed = dpsynth::privacy::compose::compose(&charges, &orders, delta).epsilon;
    if !(composed <= spent * (1.0 + 1e-6) + 1e-9) {
        return Err(format!(
            "calibration: the calls' own noise composes to ε = {composed}, more than the ε = {spent} the ledger booked"
        ));
    }
    Ok(format!(
        "calibration: {} calls compose to ε = {composed:.4} of the {spent:.4} booked ({:.1} %)",
        calls.len(),
        100.0 * composed / spent
    ))
}

/// Checks one single-table configuration on `d` against `near`, under `fault`.
fn check(
    dir: &Path,
    name: &str,
    cfg: &RunConfig,
    (d, near): (&Path, &[tables::Near]),
    fault: Fault,
) -> Checked {
    let slug: String = name.chars().filter(|c| c.is_alphanumeric()).collect();
    // The first neighbour adds a record: its other rows are D's, in order.
    let rows = near.first().map_or(0, |n| n.map.iter().flatten().count());
    let (base, spent, header) = run(
        cfg,
        (d, &tables::identity(rows)),
        (Mode::Record, fault),
        dir,
        &format!("{slug}-d"),
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(!base.is_empty(), "{name}: no noise call was seen");
    let mut out = Checked::default();
    match calibration(&base, spent, cfg.delta, 1.0) {
        Ok(line) => eprintln!("{name}: {line}"),
        Err(e) => out.failures.push(format!("{name}: {e}")),
    }
    // A run that treats the record count as public (the default path, as its statement
    // says) has neighbours of the same count only: a record replaced.
    let near = near
        .iter()
        .enumerate()
        .filter(|(_, n)| cfg.public_rows.is_some() || n.same_count());
    for (i, n) in near {
        let got = run(
            cfg,
            (&n.file, &n.map),
            (Mode::Replay(base.clone()), fault),
            dir,
            &format!("{slug}-n{i}"),
        );
        // A refused unseen category names the added record's row (the file's last),
        // streamed or not (an engine names the value, not the row).
        if let Err(e) = &got
            && n.hostile
            && e.contains("not in the column's categories")
            && !name.contains("engine")
        {
            assert!(e.contains(&format!("row {} ", N + 1)), "{name}: {e}");
        }
        let records = n.records;
        out.take(
            name,
            n.what,
            n.hostile,
            got.map(|(c, _, h)| (c, h)),
            |other| compare(&base, other, |_| records),
            &header,
        );
    }
    eprintln!("{name}: {} noise calls per run", base.len());
    out
}

#[test]
fn every_noise_call_moves_by_at_most_its_sensitivity_on_neighbouring_tables() {
    let _turn = PROBE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let d = tables::table(dir.path());
    let near = tables::neighbours(dir.path());
    let (digits, digit_near) = tables::digits(dir.path());
    let only = std::env::var("NEIGHBOURS_ONLY").ok();
    let wanted = |n: &str| only.as_ref().is_none_or(|o| n.contains(o.as_str()));
    let mut all = Checked::default();
    for (name, cfg) in configs::tables().into_iter().filter(|(n, _)| wanted(n)) {
        all.add(check(dir.path(), &name, &cfg, (&d, &near), Fault::None));
    }
    for (name, cfg) in configs::images().into_iter().filter(|(n, _)| wanted(n)) {
        all.add(check(
            dir.path(),
            &name,
            &cfg,
            (&digits, &digit_near),
            Fault::None,
        ));
    }
    for method in ["mst", "aim"] {
        for independent in [false, true] {
            let name = match independent {
                false => format!("linked {method}"),
                true => format!("linked {method}, independent children"),
            };
            if wanted(&name) {
                let cfg = linked::config(method, independent);
                all.add(linked::check(dir.path(), &name, &cfg, Fault::None));
            }
        }
    }
    eprintln!(
        "checked {} noise calls over {} neighbouring pairs ({} hostile neighbours refused before any release)",
        all.calls, all.pairs, all.refused
    );
    assert!(all.failures.is_empty(), "{}", all.failures.join("\n"));
}

/// The harness catches what it claims to: a mechanism that declares half its true Δ, and a
/// linked pair's parent statistic computed once per child.
#[test]
fn a_deliberately_broken_mechanism_is_caught() {
    let _turn = PROBE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let d = tables::table(dir.path());
    let near = tables::neighbours(dir.path());
    let cfg = configs::tables()
        .into_iter()
        .find(|(n, _)| n == "mst")
        .map(|(_, c)| c)
        .unwrap();
    let halved = check(
        dir.path(),
        "mst, Δ halved",
        &cfg,
        (&d, &near[..1]),
        Fault::HalfSensitivity,
    );
    eprintln!(
        "Δ halved: {} failures, first: {:?}",
        halved.failures.len(),
        halved.failures.first()
    );
    assert!(
        halved
            .failures
            .iter()
            .any(|f| f.contains("declared Δ 0.5 × 1")),
        "a marginal declaring Δ = 1/2 passed: {:?}",
        halved.failures
    );
    let per_child = linked::check(
        dir.path(),
        "linked mst, per child",
        &linked::config("mst", false),
        Fault::ChildAsParent,
    );
    eprintln!(
        "per child: {} failures, first: {:?}",
        per_child.failures.len(),
        per_child.failures.first()
    );
    assert!(
        per_child
            .failures
            .iter()
            .any(|f| f.contains("parent): the queries differ")),
        "a parent call made per child passed: {:?}",
        per_child.failures
    );
}
