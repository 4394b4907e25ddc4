//! Codebook rules on a table shaped like a labour-supply survey the project was not built
//! on: participation yes/no, yearly hours and a wage that are 0 exactly for the "no" rows,
//! typed public bounds that name no exact values. The rules' exact values must be held by
//! the model, so the rules keep the groups' shares instead of dropping one group; a
//! neural method's rows are repaired where a rule fixes a value, and a `->` rule's given
//! map is the one written.

use crate::common;

use dpsynth::data::Table;
use dpsynth::data::rules;
use dpsynth::data::schema::Schema;
use dpsynth::methods::released::ReleasedModel;
use rand::{Rng, SeedableRng};

const RULES: [&str; 3] = [
    r#"participation = "no" => hours = 0"#,
    r#"participation = "no" => wage = 0"#,
    r#"participation = "yes" => hours > 0"#,
];

/// `n` rows: 57 % participate, working 1–5000 hours a year at a wage; the others 0 and 0.
fn survey_csv(dir: &std::path::Path, n: usize) -> std::path::PathBuf {
    let mut rng = rand::rngs::StdRng::seed_from_u64(n as u64);
    let mut csv = String::from("participation,hours,wage,age,kids\n");
    for _ in 0..n {
        let age: u32 = rng.random_range(30..=60);
        let kids: u32 = rng.random_range(0..=3);
        if rng.random::<f64>() < 0.57 {
            let hours = (1300.0 + 700.0 * (rng.random::<f64>() - 0.5) * 2.0).round();
            let wage = 2.0 + 10.0 * rng.random::<f64>();
            csv.push_str(&format!("yes,{hours},{wage:.2},{age},{kids}\n"));
        } else {
            csv.push_str(&format!("no,0,0,{age},{kids}\n"));
        }
    }
    let path = dir.join(format!("survey{n}.csv"));
    std::fs::write(&path, csv).unwrap();
    path
}

/// The codebook's schema as a user types it: bounds, no exact values, no blanks.
fn typed_schema(rules: &[&str]) -> Schema {
    let mut s = Schema::from_json(
        r#"{"columns":[
        {"name":"participation","kind":"categorical","domain":{"categories":["no","yes"]}},
        {"name":"hours","kind":"continuous","integer":true,"domain":{"bounds":{"lower":0,"upper":5000}}},
        {"name":"wage","kind":"continuous","decimals":2,"domain":{"bounds":{"lower":0,"upper":30}}},
        {"name":"age","kind":"continuous","integer":true,"domain":{"bounds":{"lower":30,"upper":60}}},
        {"name":"kids","kind":"continuous","integer":true,"domain":{"bounds":{"lower":0,"upper":3}}}]}"#,
        "survey",
    )
    .unwrap();
    s.rules = rules.iter().map(|r| r.to_string()).collect();
    s
}

fn share(t: &Table, column: &str, value: &str) -> f64 {
    let c = t.column(column).unwrap();
    (0..t.n_rows)
        .filter(|r| c.text(*r).as_deref() == Some(value))
        .count() as f64
        / t.n_rows as f64
}

fn train(method: &str, preset: &str, schema: Schema, dir: &std::path::Path) -> ReleasedModel {
    train_on(753, method, preset, schema, dir)
}

fn train_on(
    n: usize,
    method: &str,
    preset: &str,
    schema: Schema,
    dir: &std::path::Path,
) -> ReleasedModel {
    let data = survey_csv(dir, n);
    let cfg = dpsynth::job::RunConfig {
        inline_schema: Some(schema),
        preset: preset.into(),
        seed: Some(5),
        out: dir.join(format!("{method}.dpsynth")),
        threads: Some(1),
        ..dpsynth::job::RunConfig::new(data, method, 1.0, 1e-5)
    };
    let s = common::run_job(cfg, &dir.join("ledger.sqlite3"), None).unwrap();
    ReleasedModel::load(&s.model, &candle_core::Device::Cpu).unwrap()
}

/// AIM at ε = 1: the rules' 0s are point masses of hours and wage (said so in the
/// statement), the rules are structural zeros, so the drawn rows already obey them:
/// participation keeps the model's own share, and hours = 0 exactly for the "no" rows.
#[test]
fn aim_keeps_the_groups_a_codebook_rule_speaks_of() {
    let dir = tempfile::tempdir().unwrap();
    let m = train("aim", "quick", typed_schema(&RULES), dir.path());
    assert_eq!(
        m.header.schema.column("hours").unwrap().point_masses,
        vec![0.0]
    );
    assert_eq!(
        m.header.schema.column("wage").unwrap().point_masses,
        vec![0.0]
    );
    let masses = m.header.privacy.point_masses.join(" | ");
    assert!(
        masses.contains("hours (0; named by the rules: 0)"),
        "{masses}"
    );

    let mut kept = Vec::new();
    let acc = m
        .sample_where(4_000, Some(9), m.default_draw(), None, &mut |t| {
            kept.push(t);
            Ok(())
        })
        .unwrap();
    let t = Table::concat(&kept.iter().collect::<Vec<_>>()).unwrap();
    assert!(
        acc.moved.is_empty(),
        "the rules reshaped the table: {:?}",
        acc.moved
    );
    // The model's own share, from its draws without the rules (synthetic rows only).
    let mut free = m.clone();
    free.header.schema.rules.clear();
    let own = share(&free.sample(4_000, Some(9)).unwrap(), "participation", "no");
    let no = share(&t, "participation", "no");
    assert!(
        (no - own).abs() <= 0.03,
        "'no' in {no} of kept rows, {own} of drawn"
    );
    assert!((no - 0.43).abs() < 0.1, "'no' in {no} (real about 0.43)");
    let (p, h) = (
        t.column("participation").unwrap(),
        t.column("hours").unwrap(),
    );
    for r in 0..t.n_rows {
        let zero = h.text(r).as_deref() == Some("0");
        assert_eq!(p.text(r).as_deref() == Some("no"), zero, "row {r}");
    }
    let stated = rules::of_schema(&m.header.schema).unwrap();
    let broken = rules::broken_counts(&stated, &m.header.schema, &t).unwrap();
    assert_eq!(broken, vec![0, 0, 0]);
}

/// A neural method (DP-MERF) never learns the rule as a zero: its rows are repaired where
/// the rule fixes a value (a "no" row gets hours 0 rather than being dropped), and
/// whatever keeping rows still moved is named with its figures.
#[test]
fn a_neural_methods_rows_are_repaired_and_what_moved_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let m = train("dp-merf", "quick", typed_schema(&RULES), dir.path());
    let mut kept = Vec::new();
    let acc = m
        .sample_where(2_000, Some(4), m.default_draw(), None, &mut |t| {
            kept.push(t);
            Ok(())
        })
        .unwrap();
    let t = Table::concat(&kept.iter().collect::<Vec<_>>()).unwrap();
    let stated = rules::of_schema(&m.header.schema).unwrap();
    let broken = rules::broken_counts(&stated, &m.header.schema, &t).unwrap();
    assert_eq!(broken, vec![0, 0, 0]);
    let mut free = m.clone();
    free.header.schema.rules.clear();
    let own = share(&free.sample(4_000, Some(4)).unwrap(), "participation", "no");
    let no = share(&t, "participation", "no");
    let named = acc.moved.iter().any(|x| x.column == "participation");
    assert!(
        (no - own).abs() <= 0.05 || named,
        "participation moved from {own} to {no} without a word: {:?}",
        acc.moved
    );
}

/// Typed bounds and no rules: the zeros most non-participants hold are found privately
/// (a share of ε in the plan) and come back exactly, where binned hours gave almost none:
/// within 0.03 of the real share on the labour survey's 3,382 rows, and within the
/// model's own noise on 753.
#[test]
fn typed_bounds_keep_the_zeros_found_privately() {
    for (n, within) in [(3_382, 0.03), (753, 0.05)] {
        let dir = tempfile::tempdir().unwrap();
        let m = train_on(n, "aim", "quick", typed_schema(&[]), dir.path());
        let hours = m.header.schema.column("hours").unwrap();
        assert_eq!(hours.point_masses, vec![0.0], "{hours:?}");
        assert!(hours.point_masses_estimated);
        let masses = m.header.privacy.point_masses.join(" | ");
        assert!(masses.contains("estimated privately"), "{masses}");
        let real = dpsynth::data::csv::load_csv(
            &dir.path().join(format!("survey{n}.csv")),
            &Default::default(),
        )
        .unwrap();
        let t = m.sample(4_000, Some(2)).unwrap();
        // Binned, hours = 0 came back in under 1 % of rows. At ε = 1 the point's count
        // carries noise of σ ≈ 43 rows: 0.013 of 3,382 rows, 0.057 of 753, which the
        // model's other tables narrow (docs/results.md).
        for column in ["hours", "wage"] {
            let (r, s) = (share(&real, column, "0"), share(&t, column, "0"));
            assert!(
                (r - s).abs() <= within,
                "{n} rows, {column} = 0: real {r}, synthetic {s}"
            );
        }
    }
    // A column the user says has none is not looked at: no point mass, no charge for it.
    let mut none = typed_schema(&[]);
    for c in &mut none.columns {
        c.no_point_masses = true;
    }
    let dir2 = tempfile::tempdir().unwrap();
    let m = train("aim", "quick", none, dir2.path());
    assert!(
        m.header
            .schema
            .columns
            .iter()
            .all(|c| c.point_masses.is_empty())
    );
}

/// DP-MERF with `education -> education-num` and no map given: the map is measured with
/// noise in the domain step (its cost in the plan) and written into the released rule, so
/// the rows follow the real codebook, not a pilot draw of a model that never learnt it.
#[test]
fn dp_merf_writes_the_measured_map_of_a_rule_that_gives_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::adult_run("dp-merf", "tiny", 1.0, dir.path().join("merf.dpsynth"));
    let mut schema = Schema::load(&common::repo("assets/adult/adult.schema.json")).unwrap();
    schema.rules = vec!["education -> education-num".into()];
    cfg.inline_schema = Some(schema);
    let s = common::run_job(cfg, &dir.path().join("l.sqlite3"), None).unwrap();
    let m = ReleasedModel::load(&s.model, &candle_core::Device::Cpu).unwrap();
    let rule = &m.header.schema.rules[0];
    assert!(
        rule.contains(dpsynth::data::measured_map::MEASURED),
        "{rule}"
    );
    assert!(rule.contains(r#""Bachelors": 13"#), "{rule}");
    let t = m.sample(4_000, Some(3)).unwrap();
    let real = dpsynth::data::csv::load_csv(
        &common::repo("assets/adult/adult_train.csv"),
        &Default::default(),
    )
    .unwrap();
    // The codebook's map, as the real rows hold it.
    let pairs = |t: &Table| -> Vec<(String, String)> {
        let (e, n) = (
            t.column("education").unwrap(),
            t.column("education-num").unwrap(),
        );
        (0..t.n_rows)
            .filter_map(|r| Some((e.text(r)?, n.text(r)?)))
            .collect()
    };
    let truth: std::collections::HashMap<String, String> = pairs(&real).into_iter().collect();
    let got = pairs(&t);
    let wrong = got.iter().filter(|(e, n)| truth.get(e) != Some(n)).count();
    assert!(
        wrong as f64 <= 0.01 * got.len() as f64,
        "{wrong} of {} rows break the codebook's map",
        got.len()
    );
}

/// Noise in empty cells does not become rows: hours with the public bound of a year
/// (0–8,760) where no real row works more than 2,000, and "may be blank" on for a column
/// with no blank. MST and AIM at ε = 1 on the 753 rows write (almost) no hour past 4,000
/// and no blank hours.
#[test]
fn a_wide_bound_stays_sparse_and_an_allowed_blank_stays_empty() {
    use dpsynth::data::schema::Domain;
    for method in ["mst", "aim"] {
        let dir = tempfile::tempdir().unwrap();
        let mut schema = typed_schema(&[]);
        let hours = schema
            .columns
            .iter_mut()
            .find(|c| c.name == "hours")
            .unwrap();
        hours.domain = Some(Domain::Bounds {
            lower: 0.0,
            upper: 8760.0,
        });
        hours.missing = true;
        let m = train(method, "quick", schema, dir.path());
        let t = m.sample(5_000, Some(3)).unwrap();
        let h = t.column("hours").unwrap();
        let cells: Vec<Option<f64>> = (0..t.n_rows)
            .map(|r| h.text(r).and_then(|v| v.parse().ok()))
            .collect();
        let blank = cells.iter().filter(|c| c.is_none()).count() as f64 / t.n_rows as f64;
        let past = cells.iter().flatten().filter(|x| **x > 4000.0).count() as f64 / t.n_rows as f64;
        // Without the floor: about a fifth of the rows past 4,000, and blanks.
        assert!(
            past < 0.02,
            "{method}: {past} of rows work over 4,000 hours"
        );
        assert!(blank < 0.005, "{method}: {blank} of rows have blank hours");
    }
}
