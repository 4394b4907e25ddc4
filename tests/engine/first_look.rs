//! Rows that survive a first look, end to end on the bundled Adult: point masses come back
//! exactly, a release obeys the schema's rules, `sample --where` keeps only rows that meet
//! its condition (exactly the model's conditional), and the CLI refuses bad rules with the
//! line at fault.

use crate::common;

use dpsynth::data::Table;
use dpsynth::data::rules;
use dpsynth::data::schema::Schema;
use dpsynth::methods::released::ReleasedModel;

fn share(t: &Table, column: &str, f: impl Fn(&str) -> bool) -> f64 {
    let c = t.column(column).unwrap();
    (0..t.n_rows)
        .filter(|r| c.text(*r).is_some_and(|v| f(&v)))
        .count() as f64
        / t.n_rows as f64
}

fn adult_rules() -> Vec<String> {
    std::fs::read_to_string(common::repo("assets/adult/adult.rules"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// AIM (tiny) on Adult with the public schema's point masses and the six codebook rules:
/// most synthetic people have exactly 0 gains and 0 losses, nobody has both, and no row
/// breaks a rule.
#[test]
fn aim_keeps_point_masses_and_obeys_the_rules() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::adult_run("aim", "tiny", 1.0, dir.path().join("aim.dpsynth"));
    let mut schema = Schema::load(&common::repo("assets/adult/adult.schema.json")).unwrap();
    schema.rules = adult_rules();
    cfg.inline_schema = Some(schema.clone());
    let s = common::run_job(cfg, &dir.path().join("l.sqlite3"), None).unwrap();
    let m = ReleasedModel::load(&s.model, &candle_core::Device::Cpu).unwrap();
    assert_eq!(m.header.privacy.rules.len(), 6);
    // 0 is also the value the rule `capital-gain > 0` sets apart, and the statement says so.
    assert!(
        m.header.privacy.point_masses[0]
            .starts_with("capital-gain (0, 99999; named by the rules: 0)"),
        "{:?}",
        m.header.privacy.point_masses
    );
    let t = m.sample(4_000, Some(7)).unwrap();
    assert_eq!(t.n_rows, 4_000);
    let zero_gain = share(&t, "capital-gain", |v| v == "0");
    let zero_loss = share(&t, "capital-loss", |v| v == "0");
    // The real rows: 91.7 % and 95.3 %.
    assert!(zero_gain > 0.85, "capital-gain is 0 in {zero_gain}");
    assert!(zero_loss > 0.88, "capital-loss is 0 in {zero_loss}");
    let stated = rules::of_schema(&m.header.schema).unwrap();
    let broken = rules::broken_counts(&stated, &m.header.schema, &t).unwrap();
    assert!(broken.iter().all(|b| *b == 0), "{broken:?}");
}

/// Rejection from the model is its exact conditional: the share of husbands among rows
/// drawn `--where sex = "Male"` matches that share among the model's own male rows.
#[test]
fn sample_where_draws_the_models_conditional() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::adult_run("mst", "tiny", 1.0, dir.path().join("mst.dpsynth"));
    let s = common::run_job(cfg, &dir.path().join("l.sqlite3"), None).unwrap();
    let model = s.model.display().to_string();
    let out = dir.path().join("men.csv");
    let o = common::dpsynth(&[
        "sample",
        "--model",
        &model,
        "--rows",
        "3000",
        "--where",
        r#"sex = "Male" and age >= 30"#,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("met the condition"),
        "{}",
        common::stderr(&o)
    );
    let men = dpsynth::data::csv::load_csv(&out, &Default::default()).unwrap();
    assert_eq!(men.n_rows, 3000);
    assert_eq!(share(&men, "sex", |v| v == "Male"), 1.0);
    assert_eq!(
        share(&men, "age", |v| v.parse::<f64>().unwrap() < 30.0),
        0.0
    );
    let side = std::fs::read_to_string(dir.path().join("men.csv.privacy.json")).unwrap();
    assert!(side.contains("acceptance_rate"), "{side}");
    // The model's own rows, filtered here: the same conditional.
    let m = ReleasedModel::load(&s.model, &candle_core::Device::Cpu).unwrap();
    let all = m.sample(40_000, Some(11)).unwrap();
    let cond = rules::condition(r#"sex = "Male" and age >= 30"#, &m.header.schema).unwrap();
    let reference = rules::select(&cond, &m.header.schema, all).unwrap();
    let husband = |t: &Table| share(t, "relationship", |v| v == "Husband");
    let (p, q) = (husband(&men), husband(&reference));
    // Two independent draws of about 3,000 and 20,000 rows: 4 standard errors apart at most.
    let se = (p * (1.0 - p) / 3000.0 + q * (1.0 - q) / reference.n_rows as f64).sqrt();
    assert!((p - q).abs() < 4.0 * se + 1e-3, "{p} vs {q} (se {se})");
    // A condition no row meets is an error, never fewer rows.
    let o = common::dpsynth(&[
        "sample",
        "--model",
        &model,
        "--rows",
        "10",
        "--where",
        "age > 200",
        "--out",
        dir.path().join("none.csv").to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        common::stderr(&o).contains("meet the condition"),
        "{}",
        common::stderr(&o)
    );
    // An unknown level is refused before drawing, naming it.
    let o = common::dpsynth(&[
        "sample",
        "--model",
        &model,
        "--rows",
        "10",
        "--where",
        r#"sex = "male""#,
        "--out",
        dir.path().join("bad.csv").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("not a level of 'sex'"),
        "{}",
        common::stderr(&o)
    );
}

/// `train --rules` refuses a bad rule before anything is reserved, with the file's line.
#[test]
fn train_refuses_a_bad_rules_file_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("bad.rules");
    std::fs::write(
        &rules,
        "# rules\nage >= 17\nrelationship = \"Husbnd\" => sex = \"Male\"\n",
    )
    .unwrap();
    let ledger = dir.path().join("l.sqlite3");
    let o = common::dpsynth(&[
        "train",
        "--data",
        common::repo("assets/adult/adult_train.csv")
            .to_str()
            .unwrap(),
        "--schema",
        common::repo("assets/adult/adult.schema.json")
            .to_str()
            .unwrap(),
        "--rules",
        rules.to_str().unwrap(),
        "--method",
        "aim",
        "--preset",
        "tiny",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--ledger",
        ledger.to_str().unwrap(),
        "--out",
        dir.path().join("m.dpsynth").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    let e = common::stderr(&o);
    assert!(
        e.contains("line 3") && e.contains("not a level of 'relationship'"),
        "{e}"
    );
    // Refused while reading the arguments: the ledger was never opened.
    assert!(!ledger.exists());
}

/// A point mass is its own one-hot slot beside the scaled value, and decoding its slot
/// gives the point exactly, whatever the scaled value says.
#[test]
fn point_masses_get_a_slot_and_come_back_exactly() {
    use dpsynth::data::encode::{DecodeMode, Encoding, SpanKind};
    use dpsynth::data::{Column, Values};
    use rand::SeedableRng;
    let schema: Schema = serde_json::from_str(
        r#"{"columns":[{"name":"gain","kind":"continuous","integer":true,"missing":true,
            "point_masses":[0,99999],"domain":{"bounds":{"lower":0,"upper":99999}}}]}"#,
    )
    .unwrap();
    let enc = Encoding::new(&schema).unwrap();
    let kinds: Vec<(SpanKind, usize)> = enc.spans.iter().map(|s| (s.kind.clone(), s.len)).collect();
    assert_eq!(
        kinds,
        vec![
            (SpanKind::Continuous, 1),
            (SpanKind::PointMass, 3),
            (SpanKind::MissingIndicator, 1)
        ]
    );
    let t = Table {
        columns: vec![Column {
            name: "gain".into(),
            values: Values::Number(vec![Some(0.0), Some(99999.0), Some(2174.0), None]),
        }],
        n_rows: 4,
    };
    let e = enc.encode(&t).unwrap();
    assert_eq!(e.row(0), [0.0, 1.0, 0.0, 0.0, 0.0]);
    assert_eq!(e.row(1), [1.0, 0.0, 1.0, 0.0, 0.0]);
    assert_eq!(e.row(2)[1..], [0.0, 0.0, 1.0, 0.0]);
    assert_eq!(e.row(3)[1..], [0.0, 0.0, 1.0, 1.0]);
    // A generator's row: the scaled value says 38 but the point slot says 0.
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let out = enc
        .decode(
            &[0.00038, 0.9, 0.05, 0.05, 0.0, 0.6, 0.1, 0.1, 0.8, 0.0],
            DecodeMode::Argmax,
            &mut rng,
        )
        .unwrap();
    let Values::Number(v) = &out.columns[0].values else {
        panic!("a number column")
    };
    assert_eq!(v, &vec![Some(0.0), Some(59999.0)]);
    // Point masses must sit inside the bounds and fit the column's kind.
    let mut bad = schema.clone();
    bad.columns[0].point_masses = vec![-1.0];
    assert!(
        bad.validate()
            .unwrap_err()
            .to_string()
            .contains("outside the bounds")
    );
    bad.columns[0].point_masses = vec![0.5];
    assert!(
        bad.validate()
            .unwrap_err()
            .to_string()
            .contains("whole number")
    );
    bad.columns[0].point_masses = vec![0.0, 0.0];
    assert!(bad.validate().unwrap_err().to_string().contains("twice"));
}

/// A column written to the cent comes back to the cent, inside its bounds.
#[test]
fn decimals_are_kept_on_the_way_back() {
    use dpsynth::data::Values;
    use dpsynth::data::encode::{DecodeMode, Encoding};
    use rand::SeedableRng;
    let schema: Schema = serde_json::from_str(
        r#"{"columns":[{"name":"pay","kind":"continuous","decimals":2,
            "domain":{"bounds":{"lower":0.001,"upper":99.999}}}]}"#,
    )
    .unwrap();
    let enc = Encoding::new(&schema).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let out = enc
        .decode(&[0.123_456_7, 0.0, 1.0], DecodeMode::Argmax, &mut rng)
        .unwrap();
    let Values::Number(v) = &out.columns[0].values else {
        panic!("a number column")
    };
    let cents: Vec<String> = v
        .iter()
        .map(|x| dpsynth::util::fmt::number(x.unwrap()))
        .collect();
    assert_eq!(cents, vec!["12.35", "0.01", "99.99"]);
    let mut bad = schema.clone();
    bad.columns[0].decimals = Some(13);
    assert!(
        bad.validate()
            .unwrap_err()
            .to_string()
            .contains("at most 12")
    );
}

/// With no held-out file beside the data, the window's evaluation holds out a fifth of the
/// rows: the real-row ceiling is never scored on the rows it trained on, and the note under
/// the scores says so.
#[test]
fn without_a_held_out_file_a_fifth_of_the_rows_is_held_out() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::adult_run("mst", "tiny", 1.0, dir.path().join("mst.dpsynth"));
    let s = common::run_job(cfg, &dir.path().join("l.sqlite3"), None).unwrap();
    // A file of the user's own, with no `…test…` file beside it.
    let people = dir.path().join("people.csv");
    std::fs::write(
        &people,
        common::head_lines("assets/adult/adult_train.csv", 2_000).join("\n") + "\n",
    )
    .unwrap();
    let table = match dpsynth::data::open(&people, &Default::default()).unwrap() {
        dpsynth::data::Dataset::Table(t) => t,
        _ => unreachable!(),
    };
    let schema = Schema::load(&common::repo("assets/adult/adult.schema.json")).unwrap();
    let spec = dpsynth::job::evaluation::EvalSpec {
        rows: Some(1_000),
        label: Some("income".into()),
        options: dpsynth::eval::results::Options {
            dimwise_rows: 200,
            wasserstein_repeats: 1,
            ..Default::default()
        },
        draw: None,
    };
    let ev = dpsynth::job::evaluation::evaluate_model(
        &s.model,
        &people,
        &table,
        &schema,
        &spec,
        &mut |_| {},
    )
    .unwrap();
    assert!(
        ev.rows_note.contains("a fifth of the rows was held out"),
        "{}",
        ev.rows_note
    );
    assert!(
        ev.rows_note
            .contains("1000 rows of real-train, 400 of real-test"),
        "{}",
        ev.rows_note
    );
}

/// Without a rule, MST finds in its own noisy counts that education and education-num are
/// one fact written twice, says so in the model file, and every synthetic education keeps
/// its one number (the real rows' map: Bachelors is 13, HS-grad 9, …).
#[test]
fn mst_keeps_a_pair_its_noisy_counts_show_one_to_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::adult_run("mst", "tiny", 1.0, dir.path().join("mst.dpsynth"));
    // 16 levels: education-num keeps one level per number.
    cfg.overrides.insert("bins".into(), 16.into());
    let s = common::run_job(cfg, &dir.path().join("l.sqlite3"), None).unwrap();
    // The run's summary names it too (`train` prints it, `--json` lists it).
    let pair = ["education".to_string(), "education-num".to_string()];
    assert_eq!(s.one_to_one, vec![pair.clone()]);
    let m = ReleasedModel::load(&s.model, &candle_core::Device::Cpu).unwrap();
    let g = m.header.graphical.as_ref().unwrap();
    assert!(
        g.one_to_one
            .contains(&["education".to_string(), "education-num".to_string()]),
        "{:?}",
        g.one_to_one
    );
    let t = m.sample(4_000, Some(7)).unwrap();
    let real = dpsynth::data::csv::load_csv(
        &common::repo("assets/adult/adult_train.csv"),
        &Default::default(),
    )
    .unwrap();
    let map = |t: &Table, r: usize| {
        let e = t.column("education").unwrap().text(r).unwrap_or_default();
        let n = t
            .column("education-num")
            .unwrap()
            .text(r)
            .unwrap_or_default();
        (e, n)
    };
    let truth: std::collections::HashMap<String, String> =
        (0..real.n_rows).map(|r| map(&real, r)).collect();
    let wrong = (0..t.n_rows)
        .filter(|r| {
            let (e, n) = map(&t, *r);
            truth.get(&e) != Some(&n)
        })
        .count();
    assert!(
        wrong * 100 <= t.n_rows,
        "{wrong} of {} rows disagree",
        t.n_rows
    );
}
