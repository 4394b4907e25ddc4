//! MST and AIM end to end on the bundled UCI Adult: what they charge against what their
//! measurements' noise implies, the released graphical model, sampling, stopping early.

use crate::common;

use std::path::Path;

use dpsynth::job::{self, RunConfig};
use dpsynth::methods::released::ReleasedModel;
use dpsynth::privacy::{Charge, Mechanism};

fn config(dir: &Path, method: &str, epsilon: f64) -> RunConfig {
    common::adult_run(
        method,
        "tiny",
        epsilon,
        dir.join(format!("{method}.dpsynth")),
    )
}

fn run(cfg: RunConfig, ledger: &Path, cancel_after: Option<u64>) -> job::RunSummary {
    common::run_job(cfg, ledger, cancel_after).expect("the run succeeds")
}

/// Σρ of a statement's charges, all of which must be zCDP.
fn rho_of(charges: &[Charge]) -> f64 {
    charges
        .iter()
        .map(|c| match c.mechanism {
            Mechanism::Zcdp { rho } => rho * c.count as f64,
            other => panic!("a marginal method charged {other:?}"),
        })
        .sum()
}

/// P(income > 50K | relationship = `rel`) in `t`.
fn rich_among(t: &dpsynth::data::Table, rel: &str) -> f64 {
    let (r, i) = (
        t.column("relationship").unwrap(),
        t.column("income").unwrap(),
    );
    let rows: Vec<usize> = (0..t.n_rows)
        .filter(|k| r.text(*k).as_deref() == Some(rel))
        .collect();
    let rich = rows
        .iter()
        .filter(|k| i.text(**k).is_some_and(|v| v.contains(">50K")))
        .count();
    rich as f64 / rows.len().max(1) as f64
}

/// The strongest dependence in Adult survives: about 45 % of husbands earn more than 50K
/// and about 1 % of own children do.
fn keeps_the_income_relationship(m: &ReleasedModel) {
    let t = m.sample(6_000, Some(4)).unwrap();
    let (h, c) = (rich_among(&t, "Husband"), rich_among(&t, "Own-child"));
    assert!(h > 0.3 && c < 0.1, "husbands {h}, own children {c}");
}

fn load(s: &job::RunSummary) -> ReleasedModel {
    ReleasedModel::load(&s.model, &candle_core::Device::Cpu).unwrap()
}

#[test]
fn mst_measures_with_the_noise_its_charges_pay_for() {
    let dir = tempfile::tempdir().unwrap();
    let s = run(
        config(dir.path(), "mst", 1.0),
        &dir.path().join("l.sqlite3"),
        None,
    );
    let m = load(&s);
    let p = &m.header.privacy;
    let spent = p.epsilon.unwrap();
    assert!(spent <= 1.0 + 1e-9 && spent > 0.99, "{spent}");
    let rho = rho_of(&p.mechanisms);
    let g = m.header.graphical.as_ref().expect("a graphical model");
    let d = g.domain.attributes.len();
    assert_eq!(d, 15, "Adult's 15 columns");
    // 15 one-way marginals and the 14 pairs of a spanning tree.
    assert_eq!(g.measured.len(), 2 * d - 1);
    let third = rho / 3.0;
    for (i, meas) in g.measured.iter().enumerate() {
        let (k, width) = if i < d { (d, 1) } else { (d - 1, 2) };
        assert_eq!(meas.attributes.len(), width);
        // k measurements at σ share a third: k / (2σ²) = ρ/3.
        let paid = k as f64 / (2.0 * meas.sigma * meas.sigma);
        assert!((paid / third - 1.0).abs() < 1e-9, "{i}: {paid} vs {third}");
    }
    // The tree joins every column.
    let mut seen: Vec<&str> = g.measured[d..]
        .iter()
        .flat_map(|m| m.attributes.iter().map(String::as_str))
        .collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), d);
    // The rows it writes keep the schema: both incomes, ages inside the public bounds.
    let t = m.sample(3_000, Some(1)).unwrap();
    let income = t.column("income").unwrap();
    let rich = (0..t.n_rows)
        .filter(|r| income.text(*r).is_some_and(|v| v.contains(">50K")))
        .count() as f64
        / t.n_rows as f64;
    assert!((rich - 0.24).abs() < 0.05, "{rich}");
    let age = t.column("age").unwrap();
    assert!((0..t.n_rows).all(|r| {
        age.text(r)
            .and_then(|v| v.parse::<f64>().ok())
            .is_some_and(|a| (17.0..=100.0).contains(&a))
    }));
    keeps_the_income_relationship(&m);
    // Same seed, same rows: sampling reads only the file.
    let again = load(&s).sample(3_000, Some(1)).unwrap();
    assert_eq!(format!("{:?}", again.columns), format!("{:?}", t.columns));
}

#[test]
fn aim_spends_exactly_its_pool_and_no_more_even_when_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.sqlite3");
    let full = run(config(dir.path(), "aim", 1.0), &ledger, None);
    let m = load(&full);
    let p = &m.header.privacy;
    let spent = p.epsilon.unwrap();
    assert!(spent <= 1.0 + 1e-9 && spent > 0.99, "{spent}");
    let rho = rho_of(&p.mechanisms);
    let g = m.header.graphical.as_ref().unwrap();
    // Every measurement's noise is paid for: Σ 1/(2σ²) over them is at most ρ, and
    // takes 90 % of every round's share (the rest pays for the selections).
    let measured: f64 = g
        .measured
        .iter()
        .map(|m| 1.0 / (2.0 * m.sigma * m.sigma))
        .sum();
    // One-way marginals are one charge for all d of them (d / (2σ²)).
    assert!(measured <= rho * (1.0 + 1e-9), "{measured} vs {rho}");
    assert!(measured >= 0.85 * rho, "{measured} vs {rho}");
    assert!(
        g.measured.len() > 15,
        "rounds were run: {}",
        g.measured.len()
    );
    keeps_the_income_relationship(&m);

    // Stopped after its first round, the run still settles the whole pool.
    let dir2 = tempfile::tempdir().unwrap();
    let stopped = run(
        config(dir2.path(), "aim", 1.0),
        &dir2.path().join("l.sqlite3"),
        Some(1),
    );
    let m2 = load(&stopped);
    let rho2 = rho_of(&m2.header.privacy.mechanisms);
    assert!((rho2 / rho - 1.0).abs() < 1e-9, "{rho2} vs {rho}");
    assert!(m2.header.graphical.as_ref().unwrap().measured.len() < g.measured.len());
    assert!(m2.sample(100, Some(2)).is_ok());
}

#[test]
fn the_non_private_references_charge_nothing() {
    for method in ["mst", "aim"] {
        let dir = tempfile::tempdir().unwrap();
        let s = run(
            config(dir.path(), method, f64::INFINITY),
            &dir.path().join("l.sqlite3"),
            None,
        );
        let m = load(&s);
        assert_eq!(m.header.method, format!("{method} (non-private)"));
        assert!(m.header.privacy.epsilon.is_none());
        assert!(m.header.privacy.mechanisms.is_empty());
        assert!(m.sample(500, None).unwrap().n_rows == 500);
    }
}

#[test]
fn a_damaged_graphical_model_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = run(
        config(dir.path(), "mst", 1.0),
        &dir.path().join("l.sqlite3"),
        None,
    );
    let mut m = load(&s);
    // A node table that does not fit its clique: the file is refused when read back, not
    // sampled out of range.
    if let Some(g) = m.graphical.as_mut() {
        g.tables[0].pop();
    }
    let bytes = m.to_bytes().unwrap();
    let e = ReleasedModel::from_bytes(&bytes, "bad", &candle_core::Device::Cpu)
        .unwrap_err()
        .to_string();
    assert!(e.contains("cells"), "{e}");
}

/// A table with a date column, trained and sampled through the command line: the dates
/// come back in the file's own format, inside the public bounds, and still tied to the
/// column they depend on (each kind lives in its own third of the year).
#[test]
fn dates_train_as_numbers_and_come_back_in_their_format() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("visits.csv");
    let mut csv = String::from("day,amount,kind\n");
    for i in 0..1200u32 {
        let k = i % 3;
        // kind a: January–April, b: May–August, c: September–December 2020.
        let day = 18_262 + k * 122 + (i * 7) % 120;
        let date = dpsynth::data::times::format(f64::from(day), "%d/%m/%Y");
        csv += &format!(
            "{date},{},{}\n",
            (i * 13) % 100,
            ["a", "b", "c"][k as usize]
        );
    }
    std::fs::write(&data, csv).unwrap();
    // The inference reads the column as dates in the file's format.
    let t = dpsynth::data::csv::load_csv(&data, &Default::default()).unwrap();
    let inf = dpsynth::data::infer::infer_schema(&t).unwrap();
    assert_eq!(
        inf.schema.columns[0].time_format.as_deref(),
        Some("%d/%m/%Y")
    );
    let schema = dir.path().join("visits.schema.json");
    std::fs::write(
        &schema,
        r#"{"format":"dpsynth-schema/1","columns":[
            {"name":"day","kind":"continuous","integer":true,"time_format":"%d/%m/%Y",
             "domain":{"bounds":{"lower":18262,"upper":18627}}},
            {"name":"amount","kind":"continuous","domain":{"bounds":{"lower":0,"upper":100}}},
            {"name":"kind","kind":"categorical","domain":{"categories":["a","b","c"]}}]}"#,
    )
    .unwrap();
    let model = dir.path().join("visits.dpsynth");
    let ledger = dir.path().join("ledger.sqlite3");
    let run = |args: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_dpsynth"))
            .args(args)
            .env("DPSYNTH_LEDGER", &ledger)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", common::stderr(&o));
    };
    let (d, s, m) = (
        data.to_str().unwrap(),
        schema.to_str().unwrap(),
        model.to_str().unwrap(),
    );
    run(&[
        "train",
        "--data",
        d,
        "--schema",
        s,
        "--method",
        "mst",
        "--preset",
        "tiny",
        "--epsilon",
        "3",
        "--delta",
        "1e-6",
        "--out",
        m,
    ]);
    let out = dir.path().join("synthetic.csv");
    run(&[
        "sample",
        "--model",
        m,
        "--rows",
        "900",
        "--out",
        out.to_str().unwrap(),
    ]);
    let syn = dpsynth::data::csv::load_csv(&out, &Default::default()).unwrap();
    let (day, kind) = (syn.column("day").unwrap(), syn.column("kind").unwrap());
    let mut third_right = 0;
    for r in 0..syn.n_rows {
        let text = day.text(r).expect("every synthetic date is present");
        let x = dpsynth::data::times::parse(&text, "%d/%m/%Y")
            .unwrap_or_else(|| panic!("row {r}: '{text}' is not a date in %d/%m/%Y"));
        assert!(
            (18_262.0..=18_627.0).contains(&x),
            "row {r}: {text} outside 2020"
        );
        let k = match kind.text(r).as_deref() {
            Some("a") => 0.0,
            Some("b") => 1.0,
            _ => 2.0,
        };
        if ((x - 18_262.0) / 122.0).floor() == k {
            third_right += 1;
        }
    }
    let share = f64::from(third_right) / syn.n_rows as f64;
    assert!(
        share > 0.7,
        "only {share:.2} of dates fall in their kind's third"
    );
}

/// A table of `cols` categorical columns (2–5 levels) where each column after the first
/// copies a level of the one before it 80 % of the time, with its public schema.
fn wide_table(dir: &Path, rows: usize, cols: usize) -> (std::path::PathBuf, std::path::PathBuf) {
    let levels = |j: usize| 2 + (j * 7 % 4);
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let names: Vec<String> = (0..cols).map(|j| format!("c{j:03}")).collect();
    let mut text = names.join(",") + "\n";
    for _ in 0..rows {
        let mut prev = 0usize;
        let row: Vec<String> = (0..cols)
            .map(|j| {
                let v = if j > 0 && next() % 10 < 8 {
                    prev % levels(j)
                } else {
                    (next() % levels(j) as u64) as usize
                };
                prev = v;
                format!("l{v}")
            })
            .collect();
        text.push_str(&row.join(","));
        text.push('\n');
    }
    let data = dir.join("wide.csv");
    std::fs::write(&data, text).unwrap();
    let columns: Vec<serde_json::Value> = names
        .iter()
        .enumerate()
        .map(|(j, n)| {
            serde_json::json!({
                "name": n,
                "kind": "categorical",
                "domain": {"categories": (0..levels(j)).map(|k| format!("l{k}")).collect::<Vec<_>>()},
                "provenance": "user_provided"
            })
        })
        .collect();
    let schema = dir.join("wide.schema.json");
    let json = serde_json::json!({"format": "dpsynth-schema/1", "columns": columns});
    std::fs::write(&schema, serde_json::to_string(&json).unwrap()).unwrap();
    (data, schema)
}

/// Wider than the exact model-size test takes (100 columns): AIM no longer refuses. It
/// states its memory and time before training, spends its whole pool, and its model keeps
/// the chain of copied columns that independent columns would lose.
#[test]
fn aim_trains_a_table_wider_than_the_exact_size_test() {
    use dpsynth::job::Event;
    let dir = tempfile::tempdir().unwrap();
    let (data, schema) = wide_table(dir.path(), 2_000, 120);
    let mut cfg = config(dir.path(), "aim", 2.0);
    cfg.data = data;
    cfg.schema = Some(schema);
    cfg.delta = 1e-5;
    let h = job::spawn(cfg, dir.path().join("l.sqlite3"), None);
    let (mut estimate, mut summary) = (None, None);
    for ev in h.events.iter() {
        match ev {
            Event::Started { resources, .. } => estimate = Some(resources),
            Event::Finished(r) => summary = Some(r.expect("the wide run succeeds")),
            _ => {}
        }
    }
    h.join();
    let estimate = estimate.expect("the run states its cost before training");
    assert!(
        estimate.seconds.is_some_and(|s| s > 0.0 && s < 3_600.0),
        "{estimate:?}"
    );
    assert!(estimate.peak_bytes < 4 << 30, "{estimate:?}");
    let summary = summary.expect("the run finishes");
    let m = load(&summary);
    let spent = m.header.privacy.epsilon.unwrap();
    assert!(spent <= 2.0 + 1e-9 && spent > 1.98, "{spent}");
    let g = m.header.graphical.as_ref().unwrap();
    let pairs = g
        .measured
        .iter()
        .filter(|x| x.attributes.len() == 2)
        .count();
    assert!(pairs >= 10, "rounds measured pairs: {pairs}");
    // Neighbouring columns agree (same level mod the smaller size) far more often than
    // independent ones would (about 1/2 to 1/5 of the time).
    let t = m.sample(3_000, Some(1)).unwrap();
    let mut agree = 0.0;
    let mut seen = 0.0;
    for j in 1..120 {
        let (a, b) = (
            t.column(&format!("c{:03}", j - 1)).unwrap(),
            t.column(&format!("c{j:03}")).unwrap(),
        );
        let lb = 2 + (j * 7 % 4);
        for r in 0..t.n_rows {
            let (Some(x), Some(y)) = (a.text(r), b.text(r)) else {
                continue;
            };
            let (x, y): (usize, usize) = (x[1..].parse().unwrap(), y[1..].parse().unwrap());
            agree += f64::from(u8::from(x % lb == y));
            seen += 1.0;
        }
    }
    assert!(agree / seen > 0.5, "neighbours agree {:.3}", agree / seen);
}
