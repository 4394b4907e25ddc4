//! What a release carries about the private rows: every header field that differs between
//! two tables one record apart is a DP output, column kinds guessed from the rows are named
//! as not covered, and a run that cannot use the rows costs nothing.

use crate::common;

use std::path::{Path, PathBuf};

use dpsynth::job::{self, DomainPolicy, RunConfig};
use dpsynth::methods::released::ReleasedModel;

/// The first `n` data rows of the bundled Adult sample (plus `extra` rows after them),
/// written to `dir/name`.
fn adult_rows(dir: &Path, name: &str, n: usize, extra: usize) -> PathBuf {
    let text = std::fs::read_to_string(common::repo("assets/adult/adult_train.csv")).unwrap();
    let lines: Vec<&str> = text.lines().take(1 + n + extra).collect();
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// The header fields that are DP outputs (or functions of DP outputs only), per method:
/// they may differ between neighbouring tables. Everything else in a header — kinds,
/// levels, bounds, names, the row count, the settings, the statement — must not.
fn dp_outputs(method: &str) -> Vec<&'static str> {
    let mut ok = vec![
        // The marginal methods' fitted model: post-processing of noisy marginals.
        "/graphical",
        // Class proportions of a conditional generator: noisy class counts.
        "/conditioning/proportions",
        // Post-GAN boosting's weights: the exponential mechanism's picks.
        "/mixture",
    ];
    if method == "aim" {
        // AIM picks each round's marginal and noise by the exponential mechanism, so the
        // list of its measurements is a function of those DP picks (its total ρ, and so
        // the statement's ε, is the plan's).
        ok.push("/privacy/mechanisms");
    }
    ok
}

fn train(cfg: RunConfig, ledger: &Path) -> ReleasedModel {
    let method = cfg.method.clone();
    let s = common::run_job(cfg, ledger, None).unwrap_or_else(|e| panic!("{method}: {e}"));
    ReleasedModel::load(&s.model, &candle_core::Device::Cpu).unwrap()
}

/// DESIGN.md invariant 4's test: each private method, tiny preset, the same seed, on a
/// table and on the same table plus one record, under the public Adult schema and a
/// public record count. Every header field that differs must be a DP output.
#[test]
fn neighbouring_tables_differ_only_in_dp_outputs() {
    let dir = tempfile::tempdir().unwrap();
    const N: usize = 1_500;
    let d0 = adult_rows(dir.path(), "d0.csv", N, 0);
    let d1 = adult_rows(dir.path(), "d1.csv", N, 1);
    let mut cases: Vec<(String, Option<job::BoostConfig>)> = job::methods()
        .iter()
        .filter(|m| m.private)
        .map(|m| (m.id.to_string(), None))
        .collect();
    assert!(cases.len() >= 7, "{cases:?}");
    cases.push((
        "dp-gan".into(),
        Some(job::BoostConfig {
            generators: 3,
            samples_per_generator: 100,
            rounds: 10,
            ..Default::default()
        }),
    ));
    let mut failures = Vec::new();
    let mut dp_differences = 0;
    for (method, boost) in cases {
        let info = job::method(&method).unwrap();
        let preset = if info.has_preset("tiny") {
            "tiny"
        } else {
            info.default_preset()
        };
        let header = |data: &Path, tag: &str| {
            let mut cfg = common::adult_run(
                &method,
                preset,
                2.0,
                dir.path().join(format!("{method}-{tag}.dpsynth")),
            );
            cfg.data = data.to_path_buf();
            cfg.overrides = common::few_steps(&method, preset, 10);
            cfg.public_rows = Some(N);
            cfg.boost = boost.clone();
            if boost.is_some() {
                cfg.checkpoints = Some(dir.path().join(format!("ck-{method}-{tag}")));
            }
            let ledger = dir.path().join(format!("{method}-{tag}.sqlite3"));
            let m = train(cfg, &ledger);
            let tables = m.graphical.map(|g| g.tables);
            (serde_json::to_value(&m.header).unwrap(), tables)
        };
        let ((h0, t0), (h1, t1)) = (header(&d0, "d0"), header(&d1, "d1"));
        let mut diff = Vec::new();
        common::json_differences(&h0, &h1, String::new(), &mut diff);
        let allowed = dp_outputs(&method);
        // The marginal methods' fitted tables (tensors, not header fields) are DP outputs
        // too: they show the neighbour was seen even when every pick came out the same.
        dp_differences += diff.len() + usize::from(t0 != t1);
        let mut tops: Vec<String> = diff
            .iter()
            .map(|p| p.split('/').take(3).collect::<Vec<_>>().join("/"))
            .collect();
        tops.dedup();
        eprintln!("{method}: {} fields differ, under {tops:?}", diff.len());
        let bad: Vec<&String> = diff
            .iter()
            .filter(|p| !allowed.iter().any(|a| p.starts_with(a)))
            .collect();
        if !bad.is_empty() {
            failures.push(format!(
                "{method}{}: {bad:?}",
                if boost.is_some() { " (boosted)" } else { "" }
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "non-DP header fields differ:\n{}",
        failures.join("\n")
    );
    // Not vacuous: the DP outputs (the marginal methods' fitted tables at least) did differ.
    assert!(dp_differences > 0);
}

/// A table of `rows` rows: `digit` 0–9, `answer` yes/no, `id` unique text, `when` dates,
/// `x` a measurement; `extra` appends one more row, given as CSV text.
fn kinds_table(dir: &Path, name: &str, extra: Option<&str>) -> PathBuf {
    let mut s = String::from("digit,answer,id,when,x\n");
    for i in 0..800 {
        s.push_str(&format!(
            "{},{},id{i},2020-{:02}-{:02},{}.{}\n",
            i % 10,
            if i % 3 == 0 { "yes" } else { "no" },
            1 + i % 12,
            1 + i % 28,
            20 + i % 50,
            i % 7
        ));
    }
    if let Some(e) = extra {
        s.push_str(e);
        s.push('\n');
    }
    let path = dir.join(name);
    std::fs::write(&path, s).unwrap();
    path
}

fn estimated_run(dir: &Path, data: &Path, tag: &str, public_kinds: bool) -> ReleasedModel {
    // The default total budget of a new dataset is ε = 3.
    let mut cfg = RunConfig::new(data.to_path_buf(), "mst", 3.0, 1e-5);
    cfg.preset = "tiny".into();
    cfg.seed = Some(5);
    cfg.threads = Some(1);
    cfg.out = dir.join(format!("{tag}.dpsynth"));
    cfg.domains = DomainPolicy::Estimate { share: 0.5 };
    cfg.public_kinds = public_kinds;
    train(cfg, &dir.join(format!("{tag}.sqlite3")))
}

/// Four counterexamples: one added record flips a guessed kind (0–9 →
/// continuous at 10; yes/no → categorical with "unknown"; an identifier → categorical when
/// a value repeats; a date → text when one cell is not a date). With `--estimate-domains`
/// the domains are DP estimates but the kinds are still guessed, so both statements must
/// name the column as not covered, and the export's sentence must not claim the whole file.
#[test]
fn kinds_guessed_from_the_rows_are_named_as_not_covered() {
    let dir = tempfile::tempdir().unwrap();
    let base = kinds_table(dir.path(), "base.csv", None);
    let m0 = estimated_run(dir.path(), &base, "base", false);
    let cases = [
        ("digit", "10,no,idx,2020-01-01,3.5", true),
        ("answer", "1,unknown,idx,2020-01-01,3.5", true),
        ("id", "1,no,id0,2020-01-01,3.5", false),
        ("when", "1,no,idx,someday,3.5", true),
    ];
    let kind = |m: &ReleasedModel, c: &str| {
        m.header
            .schema
            .column(c)
            .map(|s| (s.kind, s.time_format.clone()))
    };
    for (column, row, flips) in cases {
        let data = kinds_table(dir.path(), &format!("{column}.csv"), Some(row));
        let m1 = estimated_run(dir.path(), &data, column, false);
        if flips {
            assert_ne!(
                kind(&m0, column),
                kind(&m1, column),
                "{column}: the counterexample no longer flips the guess"
            );
        }
        for (m, which) in [(&m0, "base"), (&m1, "neighbour")] {
            let p = &m.header.privacy;
            assert!(
                p.non_private_kinds.iter().any(|c| c == column),
                "{column} ({which}): not named in {:?}",
                p.non_private_kinds
            );
            let covers = job::services::coverage(p, "sampled");
            assert!(
                !covers.contains("the whole file") && covers.contains(column),
                "{column} ({which}): {covers}"
            );
        }
        // Every column whose kind differs is named on both sides.
        for c in &m0.header.schema.columns {
            if kind(&m0, &c.name) != kind(&m1, &c.name) {
                for m in [&m0, &m1] {
                    assert!(
                        m.header.privacy.non_private_kinds.contains(&c.name),
                        "{}",
                        c.name
                    );
                }
            }
        }
    }
    // Kinds the user states are public (a codebook's) are covered, and the export says so.
    let m = estimated_run(dir.path(), &base, "public", true);
    assert!(m.header.privacy.non_private_kinds.is_empty());
    assert!(m.header.privacy.non_private_domains.is_empty());
    let covers = job::services::coverage(&m.header.privacy, "sampled");
    assert!(covers.contains("the whole file"), "{covers}");
}

/// The ledger's spent ε for `data`, through the CLI.
fn spent(data: &Path, ledger: &Path) -> f64 {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dpsynth"))
        .args(["budget", "show", "--data", data.to_str().unwrap(), "--json"])
        .env("DPSYNTH_LEDGER", ledger)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", common::stderr(&out)));
    v["epsilon_spent"].as_f64().unwrap()
}

/// A schema that does not fit the rows (a missing cell where it says none; a level not in
/// its list; text in a continuous column) is found before the ledger reserves anything.
#[test]
fn a_schema_that_does_not_fit_the_rows_costs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"columns":[
            {"name":"colour","kind":"categorical","domain":{"categories":["red","blue"]}},
            {"name":"size","kind":"continuous","domain":{"bounds":{"lower":0,"upper":10}}}
        ]}"#,
    )
    .unwrap();
    let body: String = (0..200)
        .map(|i| format!("{},{}\n", if i % 2 == 0 { "red" } else { "blue" }, i % 10))
        .collect();
    for (name, bad, want) in [
        ("missing.csv", ",3", "missing"),
        ("level.csv", "green,3", "green"),
        ("text.csv", "red,big", "big"),
    ] {
        let data = dir.path().join(name);
        std::fs::write(&data, format!("colour,size\n{body}{bad}\n")).unwrap();
        let ledger = dir.path().join(format!("{name}.sqlite3"));
        let mut cfg = RunConfig::new(data.clone(), "mst", 1.0, 1e-5);
        cfg.preset = "tiny".into();
        cfg.schema = Some(schema.clone());
        cfg.out = dir.path().join(format!("{name}.dpsynth"));
        let e = common::run_job(cfg, &ledger, None).unwrap_err();
        assert!(e.contains(want), "{name}: {e}");
        assert_eq!(spent(&data, &ledger), 0.0, "{name}: {e}");
    }
}

/// DP-auto-GAN's image preset has a critic that reads codes, which boosting cannot score:
/// refused before anything is planned or charged.
#[test]
fn boosting_a_code_critic_is_refused_before_any_charge() {
    let dir = tempfile::tempdir().unwrap();
    let data = common::repo("assets/mnist/t10k-images-idx3-ubyte.gz");
    let ledger = dir.path().join("l.sqlite3");
    let mut cfg = RunConfig::new(data.clone(), "dp-auto-gan", 1.0, 1e-6);
    cfg.preset = "mnist-conv".into();
    cfg.out = dir.path().join("m.dpsynth");
    cfg.boost = Some(job::BoostConfig::default());
    let e = common::run_job(cfg, &ledger, None).unwrap_err();
    assert!(e.contains("latent codes"), "{e}");
    assert_eq!(spent(&data, &ledger), 0.0);
}

/// The export's sidecar says where the rows came from (a graphical model for the marginal
/// methods, not "a generator"), names the model by content, and carries no local path.
#[test]
fn the_sidecar_names_the_source_and_no_local_path() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::adult_run("mst", "tiny", 1.0, dir.path().join("adult-private.dpsynth"));
    cfg.data = adult_rows(dir.path(), "adult-private.csv", 1_000, 0);
    let s = common::run_job(cfg, &dir.path().join("l.sqlite3"), None).unwrap();
    let out = dir.path().join("synthetic.csv");
    let side = job::services::export_csv(&s.model, 50, Some(1), &out).unwrap();
    let text = std::fs::read_to_string(&side).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let covers = v["guarantee_covers"].as_str().unwrap();
    assert!(covers.contains("graphical model"), "{covers}");
    assert!(!covers.contains("generator"), "{covers}");
    assert_eq!(v["model"]["sha256"].as_str().map(str::len), Some(64));
    assert!(
        !text.contains("adult-private"),
        "a local path leaked: {text}"
    );
}

/// A private domain estimate encodes rows holding a value too rare to
/// release as blank, so the model learns blanks; a column the estimate found complete must
/// still get none in the release, while a column that has blanks keeps about its share.
#[test]
fn a_column_the_estimate_found_complete_gets_no_invented_blanks() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = String::from("grade,colour,note\n");
    for i in 0..1_000 {
        // grade: A 60 %, B 30 %, C 8 %, a rare D 2 %; colour: six levels, two rare; note:
        // blank in 40 % of the rows.
        let grade = match i % 50 {
            0..=29 => "A",
            30..=44 => "B",
            45..=48 => "C",
            _ => "D",
        };
        let colour = ["red", "red", "blue", "blue", "green", "teal"][i % 6];
        let colour = if i % 97 == 0 { "mauve" } else { colour };
        let note = if i % 5 < 2 { "" } else { "ok" };
        s.push_str(&format!("{grade},{colour},{note}\n"));
    }
    let data = dir.path().join("complete.csv");
    std::fs::write(&data, s).unwrap();
    let m = estimated_run(dir.path(), &data, "complete", true);
    let schema = &m.header.schema;
    assert_eq!(schema.column("grade").unwrap().blank_share, Some(0.0));
    assert!(
        schema.column("note").unwrap().blank_share.unwrap() > 0.2,
        "{:?}",
        schema.column("note")
    );
    let t = m.sample(4_000, Some(9)).unwrap();
    let blanks = |name: &str| {
        let c = t.column(name).unwrap();
        (0..t.n_rows).filter(|r| c.text(*r).is_none()).count()
    };
    assert_eq!(blanks("grade"), 0, "blanks invented in a complete column");
    assert_eq!(blanks("colour"), 0, "blanks invented in a complete column");
    let note = blanks("note") as f64 / t.n_rows as f64;
    assert!((0.2..0.6).contains(&note), "note keeps its blanks: {note}");
}
