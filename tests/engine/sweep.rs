//! `dpsynth sweep`: one run per (method, ε), scored, as a table and a figure; on public data
//! nothing is charged to the user's ledger.

use crate::common;

#[test]
fn a_small_sweep_writes_its_table_and_figure_and_charges_public_data_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    // The first 3,000 training rows and 1,500 test rows: every point is scored by eight
    // classifiers, and on the whole sample that scoring is most of a minute per point.
    let (data, _) = common::adult_head(dir.path(), 3_000, 1_500);
    let p = |n: &str| dir.path().join(n).display().to_string();
    let o = common::dpsynth(&[
        "sweep",
        "--data",
        &data.display().to_string(),
        "--schema",
        &common::repo("assets/adult/adult.schema.json")
            .display()
            .to_string(),
        "--method",
        "dp-merf",
        "--epsilons",
        "1,inf",
        "--preset",
        "tiny",
        "--public",
        "--seed",
        "3",
        "--ledger",
        &ledger.display().to_string(),
        "--out",
        &p("models"),
        "--json",
        &p("s.json"),
        "--csv",
        &p("s.csv"),
        "--svg",
        &p("s.svg"),
        "--html",
        &p("s.html"),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p("s.json")).unwrap()).unwrap();
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    assert!(points[0]["epsilon_spent"].as_f64().unwrap() <= 1.0 + 1e-9);
    assert!(points[1]["epsilon"].is_null(), "the ∞ point");
    for pt in points {
        let acc = pt["tstr_accuracy"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&acc), "{pt}");
    }
    assert!(v["real_accuracy"].as_f64().unwrap() > v["majority_accuracy"].as_f64().unwrap());
    assert_eq!(v["charged"], false);
    let csv = std::fs::read_to_string(p("s.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3);
    let svg = std::fs::read_to_string(p("s.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("dp-merf") && svg.contains("∞"));
    // The real-data lines are scores on the private rows: the figure says so itself.
    assert!(
        svg.contains("NOT FOR RELEASE"),
        "the SVG has no not-for-release note"
    );
    assert!(
        std::fs::read_to_string(p("s.html"))
            .unwrap()
            .contains("<svg")
    );
    // The user's ledger was never written.
    assert!(
        !ledger.exists() || {
            let key = dpsynth::job::cost::dataset_key(&data, &ledger).unwrap();
            dpsynth::privacy::ledger::Ledger::open(&ledger)
                .unwrap()
                .standing(&key)
                .unwrap()
                .entries
                .is_empty()
        }
    );
}

/// Images are swept by the papers' protocol: a classifier trained on generated digits and
/// tested on the real test digits (the `t10k-` file beside the bundled sample).
#[test]
fn an_image_sweep_scores_classifiers_on_real_test_digits() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let data = common::repo("assets/mnist/train-images-idx3-ubyte.gz");
    let o = common::dpsynth(&[
        "sweep",
        "--data",
        &data.display().to_string(),
        "--method",
        "dp-merf",
        "--epsilons",
        "1",
        "--preset",
        "tiny",
        "--public",
        "--seed",
        "3",
        "--ledger",
        &p("ledger.sqlite3"),
        "--out",
        &p("models"),
        "--json",
        &p("s.json"),
        "--svg",
        &p("s.svg"),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p("s.json")).unwrap()).unwrap();
    let pt = &v["points"][0];
    let acc = pt["tstr_accuracy"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&acc), "{pt}");
    assert!(pt["tv_1way"].is_null(), "no marginals for images: {pt}");
    // The real-data ceiling is a trained classifier, well above the most common digit.
    assert!(v["real_accuracy"].as_f64().unwrap() > 0.6);
    assert!(v["majority_accuracy"].as_f64().unwrap() < 0.2);
    let svg = std::fs::read_to_string(p("s.svg")).unwrap();
    assert!(svg.contains("accuracy on real test digits") && !svg.contains("1-way TV"));
}

/// One failed point does not stop a sweep (it is marked, with its
/// reason), every finished point is kept in the sweep's folder as it lands, and running
/// the same sweep again resumes: kept points are not run again.
#[test]
fn a_sweep_survives_a_failed_point_and_resumes() {
    use dpsynth::job::{self, RunConfig, sweep};
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    let (data, _) = common::adult_head(dir.path(), 2_000, 1_000);
    let mut base = RunConfig::new(data, "", 1.0, 1e-5);
    base.schema = Some(common::repo("assets/adult/adult.schema.json"));
    base.preset = "tiny".into();
    base.seed = Some(3);
    base.threads = Some(1);
    // A setting DP-MERF has and MST does not: every MST point fails before it reads a row.
    base.overrides
        .insert("features".into(), serde_json::json!(50));
    base.overrides.insert("steps".into(), serde_json::json!(20));
    let cfg = sweep::SweepConfig {
        base,
        methods: vec!["mst".into(), "dp-merf".into()],
        epsilons: vec![1.0],
        repeats: 1,
        public: true,
        out_dir: dir.path().join("sweep"),
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    let first = sweep::run_sweep(&cfg, &ledger, &|_| {}, &stop).unwrap();
    assert_eq!(first.points.len(), 2);
    let failed = &first.points[0];
    assert_eq!(failed.method, "mst");
    assert!(
        failed
            .failed
            .as_deref()
            .is_some_and(|f| f.contains("features")),
        "{failed:?}"
    );
    let ok = &first.points[1];
    assert!(ok.failed.is_none() && ok.tstr_accuracy.is_some(), "{ok:?}");
    assert!(sweep::to_csv(&first).contains("failed"));
    // Kept on disk as it landed; the failed point is not kept (it is tried again).
    let kept = dpsynth::job::sweep::store::kept_points(&cfg);
    assert_eq!(kept.len(), 1);
    // The same sweep again: the DP-MERF point comes back as it was, not trained again.
    let lines = std::sync::Mutex::new(Vec::<String>::new());
    let again = sweep::run_sweep(
        &cfg,
        &ledger,
        &|l| lines.lock().unwrap().push(l.into()),
        &stop,
    )
    .unwrap();
    assert_eq!(again.points[1].seconds, ok.seconds);
    assert!(
        lines
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("kept from before")),
        "{:?}",
        lines.lock().unwrap()
    );
    let _ = job::methods();
}
