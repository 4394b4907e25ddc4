//! Privacy audits: every noise primitive keeps its claim under a distinguishing test, and
//! a deliberately broken variant of each is caught; the one-run canary audit of a whole
//! method runs end to end, charging nothing on public data and the original dataset's
//! ledger entry otherwise.

use crate::common;

use dpsynth::job::audit::mechanisms;
use dpsynth::privacy::ledger::Ledger;

/// Audits one primitive: the correct code stays within its claim and the broken variant
/// is proved to exceed it. Draw counts are chosen so the whole file runs in seconds.
fn check(name: &str, draws: usize) {
    let r = mechanisms::audit(name, draws, 11).unwrap();
    eprintln!(
        "{name}: claimed ε {:.3} | proved ε ≥ {:.3} ({}) | broken ({}) ε ≥ {:.3} ({})",
        r.claimed_epsilon,
        r.audit.lower_bound,
        r.audit.region,
        r.broken,
        r.broken_audit.lower_bound,
        r.broken_audit.region
    );
    assert!(r.sound(), "{name}: the code exceeds its claim: {r:?}");
    assert!(
        r.catches_broken(),
        "{name}: the broken variant was not caught: {r:?}"
    );
    // The correct code's bound is not vacuous: the test has power against it too.
    assert!(r.audit.lower_bound > 0.0, "{name}: {r:?}");
}

#[test]
fn gaussian_sum_release() {
    check("gaussian-sum", 200_000);
}

#[test]
fn dpsgd_step() {
    check("dpsgd-step", 40_000);
}

#[test]
fn exponential_mechanism() {
    check("exponential", 200_000);
}

#[test]
fn dp_quantile_histogram() {
    check("dp-quantile", 100_000);
}

#[test]
fn thresholded_histogram() {
    check("thresholded-histogram", 100_000);
}

#[test]
fn pate_noisymax() {
    check("pate-noisymax", 200_000);
}

#[test]
fn discrete_gaussian_count() {
    check("discrete-count", 100_000);
}

#[test]
fn an_unknown_primitive_is_named() {
    let e = mechanisms::audit("nope", 10, 1).unwrap_err();
    assert!(e.contains("gaussian-sum"), "{e}");
}

/// `dpsynth audit` on public data charges nothing and reports both bounds beside the claim;
/// on data not declared public it is charged to the original file's ledger entry.
#[test]
fn the_canary_audit_runs_end_to_end_and_charges_only_private_data() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    let data = common::repo("assets/adult/adult_train.csv");
    // fnlwgt ignored: the released rows lack a column the data has.
    let mut sv: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(common::repo("assets/adult/adult.schema.json")).unwrap(),
    )
    .unwrap();
    for c in sv["columns"].as_array_mut().unwrap() {
        if c["name"] == "fnlwgt" {
            let o = c.as_object_mut().unwrap();
            o.insert("kind".into(), serde_json::json!("ignored"));
            o.remove("domain");
            o.remove("integer");
        }
    }
    let schema = dir.path().join("ignored.schema.json");
    std::fs::write(&schema, sv.to_string()).unwrap();
    let args = |public: bool| {
        let mut v = vec![
            "audit".to_string(),
            "--data".into(),
            data.display().to_string(),
            "--schema".into(),
            schema.display().to_string(),
            "--method".into(),
            "dp-gan".into(),
            "--preset".into(),
            "tiny".into(),
            "--epsilon".into(),
            "1".into(),
            "--delta".into(),
            "1e-5".into(),
            "--canaries".into(),
            "64".into(),
            "--seed".into(),
            "3".into(),
            "--ledger".into(),
            ledger.display().to_string(),
            "--json".into(),
        ];
        if public {
            v.push("--public".into());
        }
        v
    };
    let run = |public: bool| {
        let a = args(public);
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        let o = common::dpsynth(&refs);
        assert!(o.status.success(), "{}", common::stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
        v
    };
    let v = run(true);
    assert_eq!(v["canaries"], 64);
    let claimed = v["claimed_epsilon"].as_f64().unwrap();
    assert!(claimed <= 1.0 + 1e-9 && claimed > 0.9, "{v}");
    let lower = v["lower_bound"].as_f64().unwrap();
    assert!((0.0..=claimed).contains(&lower), "{v}");
    assert!(v["white_box"]["guesses"].as_u64().unwrap() > 0, "{v}");
    assert!(v["black_box"]["guesses"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["charged"], false);
    assert!(v["verdict"].as_str().unwrap().contains("ε ≤"), "{v}");
    // Nothing was written to the user's ledger.
    let key = dpsynth::job::cost::dataset_key(&data, &ledger).unwrap();
    let spent = Ledger::open(&ledger).unwrap().standing(&key).unwrap();
    assert!(spent.entries.is_empty(), "{:?}", spent.entries);

    // Private: the original file's entry pays for the run.
    let v = run(false);
    assert_eq!(v["charged"], true);
    let st = Ledger::open(&ledger).unwrap().standing(&key).unwrap();
    assert_eq!(st.entries.len(), 1, "{:?}", st.entries);
    assert!(
        (st.spent - claimed).abs() < 0.05,
        "{} vs {claimed}",
        st.spent
    );
}

/// The mechanisms mode needs no data; the run mode without --data is bad usage (exit 2).
#[test]
fn audit_usage() {
    let o = common::dpsynth(&[
        "audit",
        "--method",
        "dp-gan",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("--data"),
        "{}",
        common::stderr(&o)
    );
}
