//! The neighbour harness: every private method (tiny presets, boosted and not), the
//! domain estimators, the streamed count source (MST and AIM reading the file in parts)
//! and, in a build with `--features ballista`, the engine count source (MST and AIM
//! counted by an in-process Ballista engine) run, with the same seed, on a table D and on neighbours of D — one
//! record added, one removed, one replaced, and hostile records added (an outlier, a
//! non-number, an unseen category, a blank in a complete column) — and MST and AIM on a
//! linked pair (persons and their years) and its neighbours: a person with all their
//! years removed or added, a person with more years than K. Every noise call
//! reports the exact query it noises and the sensitivity it declares
//! (`dpsynth::privacy::probe`); on the neighbour each call returns D's output (its noise
//! still drawn), so everything after it is the same in both runs unless something reads
//! the rows without noise.
//!
//! Asserted at every call: the two queries differ by at most the declared sensitivity
//! (twice it for a replaced record). Asserted of the whole run: the neighbour made the
//! same calls in the same order, and the released model header is identical — loop
//! counts, rounds, domains, clique order and every other field.
//!
//! Its own test binary: the probe is one per process, and other tests' noise calls must
//! not reach it.

mod common;

use std::path::{Path, PathBuf};

use dpsynth::job::{self, DomainPolicy, RunConfig};
use dpsynth::methods::released::ReleasedModel;
use dpsynth::privacy::probe::{self, Call, Mode};

/// Rows of D.
const N: usize = 600;

/// The errors that stop a run on a record its schema forbids, before anything is read for
/// a release: the owner is told the column and the reason.
const REFUSALS: [&str; 4] = [
    "but the schema says",
    "which is not in the column's categories",
    "a number that is infinite or not a number",
    // An engine's survey, which sees the table's values, not its row numbers.
    "holds text that is not a number",
];

/// What an engine-counted config's data path starts with: the run's table is D (or a
/// neighbour) as an in-process Ballista engine holds it.
const ENGINE: &str = "ballista://local";

/// The Adult sample's header and its first `n` data rows, then `extra` lines.
fn table(dir: &Path, name: &str, n: usize, extra: &[&str]) -> PathBuf {
    let text = std::fs::read_to_string(common::repo("assets/adult/adult_train.csv")).unwrap();
    let mut lines: Vec<&str> = text.lines().take(1 + n).collect();
    lines.extend(extra);
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// The neighbours of D: (name, file, how many records apart).
fn neighbours(dir: &Path) -> Vec<(&'static str, PathBuf, f64)> {
    let text = std::fs::read_to_string(common::repo("assets/adult/adult_train.csv")).unwrap();
    let next = text.lines().nth(1 + N).unwrap().to_string();
    let next: &'static str = Box::leak(next.into_boxed_str());
    let outlier = "1000000000, Private, 1e12, Doctorate, 99, Never-married, Sales, Unmarried, White, Female, 99999999, -5, 1000, Mars, >50K";
    let garbage = "nan, Private, inf, Bachelors, -inf, Divorced, Sales, Unmarried, White, Male, NaN, 0, 40, United-States, <=50K";
    let unseen = "40, Starfleet, 100000, Academy, 13, Bonded, Captain, Partner, Vulcan, Other, 0, 0, 40, Vulcan, <=50K";
    let blank = ", , , , , , , , , , , , , , ";
    vec![
        ("one added", table(dir, "added.csv", N, &[next]), 1.0),
        ("one removed", table(dir, "removed.csv", N - 1, &[]), 1.0),
        (
            "one replaced",
            table(dir, "replaced.csv", N - 1, &[next]),
            2.0,
        ),
        (
            "an outlier added",
            table(dir, "outlier.csv", N, &[outlier]),
            1.0,
        ),
        (
            "non-numbers added",
            table(dir, "garbage.csv", N, &[garbage]),
            1.0,
        ),
        (
            "unseen categories added",
            table(dir, "unseen.csv", N, &[unseen]),
            1.0,
        ),
        ("blanks added", table(dir, "blank.csv", N, &[blank]), 1.0),
    ]
}

/// One run on `data` under a probe in `mode`: its calls and its model header, or the
/// error that refused it (nothing released).
fn run(
    cfg: &RunConfig,
    data: &Path,
    mode: Mode,
    dir: &Path,
    tag: &str,
) -> Result<(Vec<Call>, serde_json::Value), String> {
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
    probe::install(mode);
    let summary = common::run_job(cfg, &ledger, None);
    let calls = probe::take();
    let summary = summary?;
    let calls = calls.map_err(|e| format!("the neighbour's run left the table's: {e}"))?;
    let m = ReleasedModel::load(&summary.model, &candle_core::Device::Cpu).unwrap();
    Ok((calls, serde_json::to_value(&m.header).unwrap()))
}

/// The calls of two coupled runs, compared; a message per violation.
fn compare(a: &[Call], b: &[Call], records: f64) -> Vec<String> {
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
        let allowed = records * x.sensitivity * (1.0 + 1e-4) + 1e-9;
        if !(d <= allowed) {
            let mut at = String::new();
            if let (probe::Value::Dense(p), probe::Value::Dense(q)) = (&x.query, &y.query) {
                let worst: Vec<String> = p
                    .iter()
                    .zip(q)
                    .enumerate()
                    .filter(|(_, (u, v))| (*u - *v).abs() > allowed)
                    .take(4)
                    .map(|(j, (u, v))| format!("[{j}] {u} vs {v}"))
                    .collect();
                at = format!(" at {}", worst.join(", "));
            }
            bad.push(format!(
                "call {i} ({}): the queries differ by {d}, declared Δ {} × {records}{at}",
                x.site, x.sensitivity
            ));
        }
    }
    bad
}

/// Every private method at its tiny preset (a few steps), under the public Adult schema
/// and a public record count, then two with their domains estimated privately.
fn configs() -> Vec<(String, RunConfig)> {
    let mut out = Vec::new();
    for m in job::methods().iter().filter(|m| m.private) {
        let preset = if m.has_preset("tiny") {
            "tiny"
        } else {
            m.default_preset()
        };
        let mut cfg = common::adult_run(m.id, preset, 2.0, PathBuf::new());
        cfg.overrides = common::few_steps(m.id, preset, 5);
        cfg.public_rows = Some(N);
        out.push((m.id.to_string(), cfg));
    }
    let mut boosted = common::adult_run("dp-gan", "tiny", 2.0, PathBuf::new());
    boosted.overrides = common::few_steps("dp-gan", "tiny", 5);
    boosted.public_rows = Some(N);
    boosted.boost = Some(job::BoostConfig {
        generators: 2,
        samples_per_generator: 50,
        rounds: 5,
        ..Default::default()
    });
    out.push(("dp-gan boosted".into(), boosted));
    // The streamed count source: the marginal methods reading the file in parts of 128
    // rows, so a neighbour's record shifts every later part.
    for method in ["mst", "aim"] {
        let mut cfg = common::adult_run(method, "tiny", 2.0, PathBuf::new());
        cfg.overrides = common::few_steps(method, "tiny", 5);
        cfg.public_rows = Some(N);
        cfg.stream = true;
        cfg.part_rows = Some(128);
        out.push((format!("{method}, streamed"), cfg));
    }
    // The engine count source (a build with `--features ballista`): MST and AIM asking an
    // in-process Ballista engine for the grouped counts of D and of each neighbour.
    if dpsynth::data::engine::AVAILABLE {
        for method in ["mst", "aim"] {
            let mut cfg = common::adult_run(method, "tiny", 2.0, PathBuf::new());
            cfg.overrides = common::few_steps(method, "tiny", 5);
            cfg.public_rows = Some(N);
            cfg.data = PathBuf::from(ENGINE);
            out.push((format!("{method}, counted by an engine"), cfg));
        }
    }
    for method in ["pearl", "aim"] {
        let mut cfg = common::adult_run(method, "tiny", 2.0, PathBuf::new());
        cfg.overrides = common::few_steps(method, "tiny", 5);
        cfg.public_rows = Some(N);
        cfg.schema = None;
        cfg.public_kinds = true;
        cfg.domains = DomainPolicy::Estimate { share: 0.2 };
        out.push((format!("{method}, domains estimated"), cfg));
    }
    out
}

/// Parents of the linked pair's D, and the bound on children.
const PARENTS: usize = 300;
const K: usize = 5;

/// The bundled household-panel pair cut to its first `PARENTS` persons (and their years),
/// with `drop` left out and `extra` persons (each with its years) added.
fn pair(
    dir: &Path,
    tag: &str,
    drop: Option<&str>,
    extra: &[(&str, Vec<String>)],
) -> (PathBuf, PathBuf) {
    let read =
        |f: &str| std::fs::read_to_string(common::repo(&format!("assets/gsoep/{f}"))).unwrap();
    let (persons, years) = (read("persons_train.csv"), read("years_train.csv"));
    let id = |l: &str| l.split(',').next().unwrap_or("").to_string();
    let mut p: Vec<String> = persons
        .lines()
        .take(1 + PARENTS)
        .map(str::to_string)
        .collect();
    let keep: std::collections::HashSet<String> = p.iter().skip(1).map(|l| id(l)).collect();
    let mut c: Vec<String> = years
        .lines()
        .enumerate()
        .filter(|(i, l)| *i == 0 || keep.contains(&id(l)))
        .map(|(_, l)| l.to_string())
        .collect();
    if let Some(d) = drop {
        p.retain(|l| id(l) != d);
        c.retain(|l| id(l) != d);
    }
    for (parent, children) in extra {
        p.push(parent.to_string());
        c.extend(children.iter().cloned());
    }
    let (pp, cp) = (
        dir.join(format!("{tag}-p.csv")),
        dir.join(format!("{tag}-c.csv")),
    );
    std::fs::write(&pp, p.join("\n") + "\n").unwrap();
    std::fs::write(&cp, c.join("\n") + "\n").unwrap();
    (pp, cp)
}

/// One linked run under a probe: its calls and the three headers, or its error.
fn run_linked(
    cfg: &job::linked::LinkedConfig,
    (parents, children): &(PathBuf, PathBuf),
    mode: Mode,
    dir: &Path,
    tag: &str,
) -> Result<(Vec<Call>, serde_json::Value), String> {
    let mut cfg = cfg.clone();
    cfg.parent.data = parents.clone();
    cfg.child = children.clone();
    cfg.parent.out = dir.join(format!("{tag}.dpsynth"));
    probe::install(mode);
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
        serde_json::json!({
            "linked": m.header,
            "parent": m.parent.header,
            "child": m.child.header,
        }),
    ))
}

/// The linked pair: the unit is a parent with all its children, so a neighbour adds or
/// removes a whole person with up to K years (a child count moves by up to K, so every
/// call is allowed K times its row-level Δ), or a person with more than K years, whose
/// surplus the bound drops.
fn linked_pairs(dir: &Path, method: &str) -> (usize, usize, usize, Vec<String>) {
    let a = |y: &str| format!("418,{y},2,0,0,1,0,0,3.5");
    let years: Vec<String> = ["1984", "1985", "1986", "1987", "1988"]
        .iter()
        .map(|y| a(y))
        .collect();
    let mut many = years.clone();
    many.extend(["1984", "1985", "1986"].iter().map(|y| a(y)));
    let mut unseen = years.clone();
    unseen[2] = a("1999");
    let base = pair(dir, "linked-d", None, &[]);
    let near = [
        (
            "a person and its years removed",
            pair(dir, "linked-r", Some("1"), &[]),
        ),
        (
            "a person and its years added",
            pair(dir, "linked-a", None, &[("418,1,1,1923", years)]),
        ),
        (
            "a person with more than K years added",
            pair(dir, "linked-m", None, &[("418,1,1,1923", many)]),
        ),
        (
            "a person with an unseen year added",
            pair(dir, "linked-u", None, &[("418,1,1,1923", unseen)]),
        ),
    ];
    let cfg = job::linked::LinkedConfig {
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
        independent: false,
        unique: vec!["year".into()],
        count_by: Some("outwork".into()),
    };
    let (d, header) = run_linked(
        &cfg,
        &base,
        Mode::Record,
        dir,
        &format!("linked-{method}-d"),
    )
    .unwrap();
    assert!(!d.is_empty(), "the linked run made no noise call");
    let (mut calls, mut pairs, mut refused, mut failures) = (0, 0, 0, Vec::new());
    for (i, (what, files)) in near.iter().enumerate() {
        match run_linked(
            &cfg,
            files,
            Mode::Replay(d.clone()),
            dir,
            &format!("linked-{method}-n{i}"),
        ) {
            Ok((other, h)) => {
                let mut bad = compare(&d, &other, K as f64);
                if h != header {
                    let mut diff = Vec::new();
                    common::json_differences(&header, &h, String::new(), &mut diff);
                    bad.push(format!("the released headers differ at {diff:?}"));
                }
                failures.extend(
                    bad.into_iter()
                        .map(|b| format!("linked {method}, {what}: {b}")),
                );
                calls += other.len();
                pairs += 1;
            }
            Err(e) if REFUSALS.iter().any(|r| e.contains(r)) => {
                eprintln!("linked {method}, {what}: refused: {e}");
                refused += 1;
            }
            Err(e) => failures.push(format!(
                "linked {method}, {what}: the neighbour's run failed: {e}"
            )),
        }
    }
    eprintln!("linked {method}: {} noise calls per run", d.len());
    (calls, pairs, refused, failures)
}

#[test]
fn every_noise_call_moves_by_at_most_its_sensitivity_on_neighbouring_tables() {
    let dir = tempfile::tempdir().unwrap();
    let d = table(dir.path(), "d.csv", N, &[]);
    let near = neighbours(dir.path());
    let mut failures = Vec::new();
    let (mut calls, mut pairs, mut refused) = (0, 0, 0);
    let only = std::env::var("NEIGHBOURS_ONLY").ok();
    for (name, cfg) in configs()
        .into_iter()
        .filter(|(n, _)| only.as_ref().is_none_or(|o| n.contains(o.as_str())))
    {
        let slug: String = name.chars().filter(|c| c.is_alphanumeric()).collect();
        let (base, header) = run(&cfg, &d, Mode::Record, dir.path(), &format!("{slug}-d"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!base.is_empty(), "{name}: no noise call was seen");
        for (i, (what, file, records)) in near.iter().enumerate() {
            let tag = format!("{slug}-n{i}");
            let (other, h) = match run(&cfg, file, Mode::Replay(base.clone()), dir.path(), &tag) {
                Ok(r) => r,
                // A record the public schema forbids stops the run before anything is
                // released (the owner is told which column and why).
                Err(e) if REFUSALS.iter().any(|r| e.contains(r)) => {
                    // The added record is the file's last row, streamed or not (an
                    // engine names the value, not the row).
                    if e.contains("not in the column's categories") && !name.contains("engine") {
                        assert!(e.contains(&format!("row {} ", N + 1)), "{name}: {e}");
                    }
                    refused += 1;
                    eprintln!("{name}, {what}: refused: {e}");
                    continue;
                }
                Err(e) => {
                    failures.push(format!("{name}, {what}: the neighbour's run failed: {e}"));
                    continue;
                }
            };
            let mut bad = compare(&base, &other, *records);
            if h != header {
                let mut diff = Vec::new();
                common::json_differences(&header, &h, String::new(), &mut diff);
                bad.push(format!("the released headers differ at {diff:?}"));
            }
            for b in bad {
                failures.push(format!("{name}, {what}: {b}"));
            }
            calls += other.len();
            pairs += 1;
        }
        eprintln!("{name}: {} noise calls per run", base.len());
    }
    for method in ["mst", "aim"] {
        let name = format!("linked {method}");
        if only.as_ref().is_none_or(|o| name.contains(o.as_str())) {
            let (c, p, r, f) = linked_pairs(dir.path(), method);
            calls += c;
            pairs += p;
            refused += r;
            failures.extend(f);
        }
    }
    eprintln!(
        "checked {calls} noise calls over {pairs} neighbouring pairs ({refused} hostile neighbours refused before any release)"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
