//! train → release → sample → decode → CSV, at small scale, with the budget discipline.

use crate::common;

use std::path::Path;

use dpsynth::job::{self, Event, RunConfig};
use dpsynth::methods::released::ReleasedModel;
use dpsynth::privacy::ledger::Ledger;

/// The ledger's key for `data` (its content digest).
fn dataset_key(data: &Path, ledger: &Path) -> Result<String, dpsynth::job::JobError> {
    dpsynth::job::cost::dataset_key(data, ledger)
}

fn config(dir: &Path, method: &str, epsilon: f64, preset: &str) -> RunConfig {
    RunConfig {
        // Public domains from the census documentation: the guarantee covers the file.
        schema: Some(common::repo("assets/adult/adult.schema.json")),
        preset: preset.into(),
        seed: Some(7),
        out: dir.join(format!("{method}.dpsynth")),
        threads: Some(1),
        ..RunConfig::new(
            common::repo("assets/adult/adult_train.csv"),
            method,
            epsilon,
            1e-5,
        )
    }
}

fn run(
    cfg: RunConfig,
    ledger: &Path,
    cancel_after: Option<u64>,
) -> Result<job::RunSummary, String> {
    common::run_job(cfg, ledger, cancel_after)
}

#[test]
fn dp_gan_round_trip_respects_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    let cfg = config(dir.path(), "dp-gan", 1.0, "tiny");
    let s = run(cfg.clone(), &ledger, None).unwrap();
    let spent = s.epsilon_spent.unwrap();
    assert!(spent <= 1.0 + 1e-9, "spent {spent}");
    assert!(s.not_for_release, "a fixed seed marks the run");
    assert_eq!(s.steps, 300);
    let model = ReleasedModel::load(&s.model, &candle_core::Device::Cpu).unwrap();
    assert_eq!(model.header.method, "dp-gan");
    assert_eq!(model.header.privacy.mechanisms.len(), 1);
    assert!(
        model.header.privacy.non_private_domains.is_empty(),
        "the public schema covers every column"
    );
    let t = model.sample(2000, Some(1)).unwrap();
    assert_eq!(t.n_rows, 2000);
    let names: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names[0], "age");
    assert_eq!(names.len(), 15);
    assert!(t.column("age").unwrap().is_numeric());
    assert!(!t.column("workclass").unwrap().is_numeric());
    // Every decoded value is inside the schema's domain.
    let age: Vec<f64> = match &t.column("age").unwrap().values {
        dpsynth::data::Values::Number(v) => v.iter().flatten().copied().collect(),
        _ => unreachable!(),
    };
    assert!(
        age.iter()
            .all(|a| (17.0..=100.0).contains(a) && a.fract() == 0.0)
    );
    // Written through the CLI too, and read back as the original columns.
    let csv = dir.path().join("syn.csv");
    let out = common::dpsynth(&[
        "sample",
        "--model",
        s.model.to_str().unwrap(),
        "--rows",
        "500",
        "--out",
        csv.to_str().unwrap(),
        "--seed",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let back = dpsynth::data::csv::load_csv(&csv, &Default::default()).unwrap();
    assert_eq!(back.n_rows, 500);
    assert_eq!(back.n_cols(), 15);
    // The statement travels beside the CSV (which stays a plain table).
    let side: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("syn.csv.privacy.json")).unwrap())
            .unwrap();
    assert_eq!(side["rows"], 500);
    assert_eq!(side["model"]["method"], "dp-gan");
    assert_eq!(
        side["privacy"]["epsilon"],
        model.header.privacy.epsilon.unwrap()
    );
    assert!(
        side["guarantee_covers"]
            .as_str()
            .unwrap()
            .contains("the whole file")
    );
    assert!(
        side["records"]
            .as_str()
            .unwrap()
            .contains("treated as public")
    );
    // What the guarantee means for one person, from the model's privacy-loss distribution.
    let means = side["what_it_means"].as_str().unwrap();
    assert!(
        means.contains("right at most") && means.contains("against 50 % by chance"),
        "{means}"
    );
    // The ledger holds the run, settled.
    let l = Ledger::open(&ledger).unwrap();
    let st = l
        .standing(&dataset_key(&cfg.data, &ledger).unwrap())
        .unwrap();
    assert_eq!(st.entries.len(), 1);
    assert_eq!(st.entries[0].state, "settled");
    assert!(st.spent <= 1.0 + 1e-9);
}

#[test]
fn one_delta_per_dataset_a_public_record_count_and_honest_names() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    let mut cfg = config(dir.path(), "dp-gan", 1.0, "tiny");
    let key = dataset_key(&cfg.data, &ledger).unwrap();
    // A record set at another δ with nothing spent: the first run's δ becomes the dataset's.
    Ledger::open(&ledger)
        .unwrap()
        .set_budget(
            &key,
            dpsynth::privacy::Budget {
                epsilon: 4.0,
                delta: 1e-6,
            },
        )
        .unwrap();
    cfg.public_rows = Some(40_000);
    let s = run(cfg.clone(), &ledger, None).unwrap();
    let (b, _) = Ledger::open(&ledger).unwrap().budget(&key).unwrap();
    assert_eq!((b.epsilon, b.delta), (4.0, 1e-5));
    // σ and q come from the public N, and the statement says so.
    let m = ReleasedModel::load(&s.model, &candle_core::Device::Cpu).unwrap();
    assert_eq!(m.header.privacy.public_rows, Some(40_000));
    let batch = job::preset_settings("dp-gan", "tiny").unwrap()["batch"]
        .as_f64()
        .unwrap();
    match m.header.privacy.mechanisms[0].mechanism {
        dpsynth::privacy::Mechanism::SubsampledGaussian { q, .. } => {
            assert!((q - batch / 40_000.0).abs() < 1e-12, "q = {q}")
        }
        ref other => panic!("unexpected {other:?}"),
    }
    // Once spent, a run at another δ is refused before anything is reserved, and the
    // preview says why.
    let mut other = cfg.clone();
    other.delta = 1e-7;
    let e = run(other.clone(), &ledger, None).unwrap_err();
    assert!(e.contains("kept at δ"), "{e}");
    let cost = job::cost::cost(&job::cost::CostRequest {
        dataset: key.clone(),
        ledger: ledger.clone(),
        method: "dp-gan".into(),
        preset: "tiny".into(),
        epsilon: 1.0,
        delta: 1e-7,
        rows: 40_000,
        overrides: Default::default(),
        schema: None,
        domains: job::DomainPolicy::AllowData,
        boost: None,
        fixed_schema: None,
        profile: None,
        device: Default::default(),
        held: None,
        exact_values: true,
    })
    .unwrap();
    assert!(cost.refused.unwrap().contains("kept at δ"));
    assert_eq!(cost.dataset_delta, Some(1e-5));
    assert_eq!(
        Ledger::open(&ledger)
            .unwrap()
            .standing(&key)
            .unwrap()
            .entries
            .len(),
        1
    );
    // A DP method trained without privacy does not carry the DP method's name.
    let mut open = config(dir.path(), "dp-auto-gan", f64::INFINITY, "tiny");
    open.out = dir.path().join("open.dpsynth");
    let s = run(open, &ledger, None).unwrap();
    let m = ReleasedModel::load(&s.model, &candle_core::Device::Cpu).unwrap();
    assert_eq!(m.header.method, "auto-gan (non-private)");
}

#[test]
fn pearl_and_dp_merf_spend_exactly_their_composed_releases() {
    // PEARL: the bandwidth, the income counts and the per-class embedding; DP-MERF (PEARL
    // without the critic, public bandwidth): the counts and the per-class embedding.
    for (method, releases) in [("pearl", 3), ("dp-merf", 2)] {
        embedding_method_spends_its_releases(method, releases);
    }
}

fn embedding_method_spends_its_releases(method: &str, releases: usize) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    let mut cfg = config(dir.path(), method, 1.0, "tiny");
    cfg.overrides
        .insert("label".into(), serde_json::json!("income"));
    let s = run(cfg.clone(), &ledger, None).unwrap();
    let m = ReleasedModel::load(&s.model, &candle_core::Device::Cpu).unwrap();
    assert!(m.header.method.starts_with(method), "{}", m.header.method);
    let p = &m.header.privacy;
    assert_eq!(p.mechanisms.len(), releases, "{method}: {:?}", p.mechanisms);
    let composed = dpsynth::privacy::compose::compose(
        &p.mechanisms,
        &dpsynth::privacy::rdp::product_orders(),
        1e-5,
    );
    let spent = p.epsilon.unwrap();
    assert!(spent <= 1.0 + 1e-9, "{spent}");
    assert!(
        (spent - composed.epsilon).abs() < 1e-9,
        "{spent} vs {composed:?}"
    );
    assert!(
        spent > 0.99,
        "calibrated to the budget, not far below: {spent}"
    );
    // A class-conditional generator: classes are drawn from the released proportions
    // (about a quarter of Adult earns >50K), and both appear.
    let cond = m
        .header
        .conditioning
        .clone()
        .expect("conditional on income");
    assert_eq!((cond.classes, cond.binary), (2, true));
    assert!(
        (cond.proportions[1] - 0.24).abs() < 0.05,
        "{:?}",
        cond.proportions
    );
    let t = m.sample(2000, Some(1)).unwrap();
    let col = t.column("income").unwrap();
    let income: Vec<String> = (0..t.n_rows).filter_map(|r| col.text(r)).collect();
    assert!(income.iter().any(|v| v.contains(">50K")));
    assert!(income.iter().any(|v| v.contains("<=50K")));
    // A label that is not in the data is refused before anything is charged.
    cfg.overrides
        .insert("label".into(), serde_json::json!("nope"));
    let e = run(cfg, &ledger, None).unwrap_err();
    assert!(e.contains("not in the data"), "{e}");
}

#[test]
fn the_model_file_holds_no_training_rows() {
    let dir = tempfile::tempdir().unwrap();
    let s = run(
        config(dir.path(), "dp-gan", 2.0, "tiny"),
        &dir.path().join("l.sqlite3"),
        None,
    )
    .unwrap();
    let bytes = std::fs::read(&s.model).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let t = dpsynth::data::csv::load_csv(
        &common::repo("assets/adult/adult_train.csv"),
        &Default::default(),
    )
    .unwrap();
    let fnlwgt = t.column("fnlwgt").unwrap();
    let mut checked = 0;
    for r in 0..200 {
        let v = fnlwgt.text(r).unwrap();
        assert!(
            !text.contains(&v),
            "training value {v} (row {r}) appears in the model file"
        );
        checked += 1;
    }
    assert!(checked > 150);
    // Neither a critic nor any data-derived statistic beyond the schema is stored.
    assert!(
        !text.contains("critic."),
        "critic weights must not be released"
    );
}

/// A cancel is a stop chosen while watching the run, so the run is charged its whole
/// plan (DESIGN.md invariant 6): the ledger and the statement both hold the plan's ε.
#[test]
fn cancelling_charges_the_whole_plan() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    let cfg = config(dir.path(), "dp-gan", 1.0, "quick");
    let s = run(cfg.clone(), &ledger, Some(100)).unwrap();
    assert!(s.cancelled);
    let l = Ledger::open(&ledger).unwrap();
    let st = l
        .standing(&dataset_key(&cfg.data, &ledger).unwrap())
        .unwrap();
    assert_eq!(st.entries[0].state, "settled");
    assert!(
        st.spent > 0.98 && st.spent <= 1.0 + 1e-9,
        "settled to the plan, not the steps taken: {}",
        st.spent
    );
    let e = s.epsilon_spent.unwrap();
    assert!(
        e > 0.98 && e <= 1.0 + 1e-9,
        "the statement says the plan's ε: {e}"
    );
}

#[test]
fn runs_that_cannot_fit_are_refused_before_training() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    let cfg = config(dir.path(), "dp-gan", 1.0, "tiny");
    let mut l = Ledger::open(&ledger).unwrap();
    l.set_budget(
        &dataset_key(&cfg.data, &ledger).unwrap(),
        dpsynth::privacy::Budget {
            epsilon: 0.5,
            delta: 1e-5,
        },
    )
    .unwrap();
    drop(l);
    let e = run(cfg.clone(), &ledger, None).unwrap_err();
    assert!(e.contains("refused"), "{e}");
    assert!(!cfg.out.exists());
}

#[test]
fn train_cli_json_shape_and_the_non_private_reference() {
    let dir = tempfile::tempdir().unwrap();
    let out_model = dir.path().join("ref.dpsynth");
    let data = common::repo("assets/adult/adult_train.csv");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_dpsynth"))
        .args([
            "train",
            "--data",
            data.to_str().unwrap(),
            "--method",
            "gan",
            "--epsilon",
            "inf",
            "--delta",
            "1e-5",
        ])
        .args([
            "--preset",
            "tiny",
            "--seed",
            "1",
            "--json",
            "--out",
            out_model.to_str().unwrap(),
        ])
        .env("DPSYNTH_LEDGER", dir.path().join("l.sqlite3"))
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for k in ["delta", "steps", "model"] {
        assert!(!v[k].is_null(), "missing {k}: {v}");
    }
    // JSON has no infinity: a non-private run reports ε as null (as the fixtures do).
    assert!(v["epsilon_spent"].is_null());
    let m = ReleasedModel::load(&out_model, &candle_core::Device::Cpu).unwrap();
    assert_eq!(m.header.privacy.epsilon, None);
    assert_eq!(m.header.privacy.accountant, "none");
    assert!(String::from_utf8_lossy(&o.stderr).contains("NOT private"));
    // A marginal method through the same command line: one JSON line, ε within budget.
    let mst = dir.path().join("mst.dpsynth");
    let schema = common::repo("assets/adult/adult.schema.json");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_dpsynth"))
        .env("DPSYNTH_LEDGER", dir.path().join("mst-ledger.sqlite3"))
        .args([
            "train",
            "--data",
            data.to_str().unwrap(),
            "--schema",
            schema.to_str().unwrap(),
            "--method",
            "mst",
            "--preset",
            "tiny",
            "--epsilon",
            "1",
            "--delta",
            "1e-5",
            "--out",
            mst.to_str().unwrap(),
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&o.stdout).trim()).unwrap();
    assert!(
        v["epsilon_spent"]
            .as_f64()
            .is_some_and(|e| e <= 1.0 && e > 0.99),
        "{v}"
    );
}

#[test]
fn dp_auto_gan_composes_both_phases_within_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    let cfg = config(dir.path(), "dp-auto-gan", 1.0, "tiny");
    let s = run(cfg.clone(), &ledger, None).unwrap();
    assert!(s.epsilon_spent.unwrap() <= 1.0 + 1e-9);
    let model = ReleasedModel::load(&s.model, &candle_core::Device::Cpu).unwrap();
    // Two phases, two subsampled-Gaussian mechanisms, composed in one statement.
    assert_eq!(model.header.privacy.mechanisms.len(), 2);
    assert_eq!(model.header.privacy.mechanisms[0].count, 200);
    assert_eq!(model.header.privacy.mechanisms[1].count, 300);
    // σ is calibrated by the tighter accountant: PLD fits the budget, RDP alone would not.
    let p = &model.header.privacy;
    assert_eq!(p.accountant, "pld");
    assert!(p.epsilon_pld.unwrap() <= 1.0 + 1e-9);
    assert!(p.epsilon_rdp.unwrap() > p.epsilon.unwrap());
    let t = model.sample(1000, Some(3)).unwrap();
    assert_eq!(t.n_cols(), 15);
    assert_eq!(t.n_rows, 1000);
    // The release is generator ∘ decoder: it maps the 64-d latent to the encoded width.
    assert_eq!(model.header.latent_dim, 64);
}

#[test]
fn advanced_settings_override_the_preset_and_unknown_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    let mut cfg = config(dir.path(), "dp-gan", 1.0, "tiny");
    cfg.overrides
        .insert("critic_steps".into(), serde_json::json!(120));
    let s = run(cfg.clone(), &ledger, None).unwrap();
    assert_eq!(s.steps, 120);
    cfg.overrides
        .insert("learning_rate".into(), serde_json::json!(0.1));
    let e = run(cfg, &ledger, None).unwrap_err();
    assert!(
        e.contains("unknown setting 'learning_rate'") && e.contains("critic_steps"),
        "{e}"
    );
}

#[test]
fn every_epoch_leaves_a_generator_and_a_critic_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    let mut cfg = config(dir.path(), "dp-gan", 1.0, "tiny");
    let ck = dir.path().join("checkpoints");
    cfg.checkpoints = Some(ck.clone());
    // 32,561 rows at batch 8,192: an epoch is 4 critic steps.
    cfg.overrides
        .insert("critic_steps".into(), serde_json::json!(10));
    cfg.overrides
        .insert("batch".into(), serde_json::json!(8192));
    let h = job::spawn(cfg, ledger.clone(), None);
    let mut epochs = Vec::new();
    let mut checkpoint_eps = Vec::new();
    let mut budgets = 0;
    let mut result = None;
    for ev in h.events.iter() {
        match ev {
            Event::Checkpoint { epoch, step, saved } => {
                assert_eq!(step, epoch * 4);
                let saved = saved.expect("the run keeps checkpoints");
                let m = ReleasedModel::load(&saved, &candle_core::Device::Cpu).unwrap();
                // Stamped with the whole plan the ledger holds for the run, not the
                // smaller figure of the steps so far.
                let eps = m.header.privacy.epsilon.unwrap();
                assert!(eps > 0.9 && eps <= 1.0 + 1e-9, "ε of the plan {eps}");
                checkpoint_eps.push(eps);
                epochs.push(epoch);
            }
            Event::Budget { run, dataset } => {
                // Both figures at the ledger's δ; the dataset's includes this run's.
                let d = dataset.expect("a private run is in the ledger");
                assert!(run > 0.0 && d.run > 0.0 && d.used >= d.run - 1e-9, "{d:?}");
                budgets += 1;
            }
            Event::Finished(r) => result = Some(r),
            _ => {}
        }
    }
    h.join();
    let done = result.unwrap().unwrap();
    assert_eq!(epochs, vec![1, 2]);
    let last = ReleasedModel::load(&done.model, &candle_core::Device::Cpu).unwrap();
    let whole = last.header.privacy.epsilon.unwrap();
    for eps in checkpoint_eps {
        assert!(
            (eps - whole).abs() < 1e-6,
            "checkpoint {eps} against the run's {whole}"
        );
    }
    assert!(budgets >= 1, "the job reports the budget as it spends");
    let mut names: Vec<String> = std::fs::read_dir(&ck)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "epoch-001.critic.safetensors",
            "epoch-001.dpsynth",
            "epoch-002.critic.safetensors",
            "epoch-002.dpsynth"
        ]
    );
    // An epoch's generator is a working released model on its own.
    let m = ReleasedModel::load(&ck.join("epoch-001.dpsynth"), &candle_core::Device::Cpu).unwrap();
    assert_eq!(m.sample(50, Some(1)).unwrap().n_rows, 50);
    // The critic checkpoint is not a model file.
    assert!(
        ReleasedModel::load(
            &ck.join("epoch-001.critic.safetensors"),
            &candle_core::Device::Cpu
        )
        .is_err()
    );
}

#[test]
fn mnist_images_train_and_sample_as_labelled_images() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    for method in ["dp-gan", "dp-auto-gan"] {
        let mut cfg = config(dir.path(), method, 1.0, "mnist");
        cfg.data = common::repo("assets/mnist/train-images-idx3-ubyte.gz");
        cfg.schema = None;
        for (k, v) in [("critic_steps", 20), ("ae_steps", 20)] {
            if method == "dp-auto-gan" || k == "critic_steps" {
                cfg.overrides.insert(k.into(), serde_json::json!(v));
            }
        }
        let s = run(cfg, &ledger, None).unwrap();
        assert!(s.epsilon_spent.unwrap() <= 1.0 + 1e-9);
        let model = ReleasedModel::load(&s.model, &candle_core::Device::Cpu).unwrap();
        // The image schema is the format's, so the guarantee covers every column.
        assert!(model.header.privacy.non_private_domains.is_empty());
        let t = model.sample(30, Some(3)).unwrap();
        assert!(
            dpsynth::data::image::is_image_header(&t),
            "{method}: not label,pixel0,…"
        );
        let csv = dir.path().join(format!("{method}.csv"));
        dpsynth::data::export::write_csv(&t, &csv).unwrap();
        let back = match dpsynth::data::open(&csv, &Default::default()).unwrap() {
            dpsynth::data::Dataset::Images(set) => set,
            dpsynth::data::Dataset::Table(_) => {
                panic!("{method}: samples did not read back as images")
            }
        };
        assert_eq!((back.len(), back.width, back.height), (30, 28, 28));
        assert!(back.labels.unwrap().iter().all(|l| *l < 10));
    }
}

#[test]
fn image_encoding_matches_the_table_encoder() {
    let set = dpsynth::data::image::load_idx_dataset(&common::repo(
        "assets/mnist/t10k-images-idx3-ubyte.gz",
    ))
    .unwrap()
    .head(40);
    let fast = set.encode().unwrap();
    let enc = dpsynth::data::encode::Encoding::new(&set.schema()).unwrap();
    let slow = enc.encode(&set.to_table()).unwrap();
    assert_eq!(fast.width, slow.width);
    assert_eq!(fast.values, slow.values);
    assert_eq!(fast.clamped, slow.clamped);
}

#[test]
fn domains_read_off_the_rows_are_refused_estimated_or_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let data = common::repo("assets/adult/adult_train.csv");
    let ledger = dir.path().join("l.sqlite3");
    let train = |extra: &[&str]| {
        let mut args = vec![
            "train",
            "--data",
            data.to_str().unwrap(),
            "--method",
            "dp-gan",
            "--preset",
            "tiny",
            "--epsilon",
            "1",
            "--delta",
            "1e-5",
            "--seed",
            "1",
            "--json",
            "--set",
            "critic_steps=20",
        ];
        args.extend_from_slice(extra);
        std::process::Command::new(env!("CARGO_BIN_EXE_dpsynth"))
            .args(&args)
            .env("DPSYNTH_LEDGER", &ledger)
            .output()
            .unwrap()
    };
    // No schema and no choice: bad usage, naming the columns, and nothing spent.
    let o = train(&["--out", dir.path().join("a.dpsynth").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("fnlwgt") && err.contains("native-country"),
        "{err}"
    );
    assert!(
        !ledger.exists() || {
            let l = Ledger::open(&ledger).unwrap();
            l.standing(&dataset_key(&data, &ledger).unwrap())
                .unwrap()
                .entries
                .is_empty()
        }
    );
    // Estimated privately: no rare level and no extreme value in the file, every column
    // covered, the estimate charged within the same ε.
    let est = dir.path().join("est.dpsynth");
    let o = train(&["--out", est.to_str().unwrap(), "--estimate-domains"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["non_private_domains"].as_array().unwrap().len(), 0);
    assert_eq!(v["estimated_domains"].as_array().unwrap().len(), 15);
    assert!(v["epsilon_spent"].as_f64().unwrap() <= 1.0 + 1e-9);
    let bytes = std::fs::read(&est).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(!text.contains("Holand-Netherlands"));
    assert!(!text.contains("1484705"));
    let m = ReleasedModel::load(&est, &candle_core::Device::Cpu).unwrap();
    assert!(m.header.privacy.non_private_domains.is_empty());
    assert!(m.header.schema.columns.iter().all(|c| matches!(
        c.provenance,
        dpsynth::data::schema::Provenance::DpEstimated { .. }
    ) || c.kind
        == dpsynth::data::schema::Kind::Ignored));
    let domain_uses: u64 = m
        .header
        .privacy
        .mechanisms
        .iter()
        .filter(|c| {
            !matches!(
                c.mechanism,
                dpsynth::privacy::Mechanism::SubsampledGaussian { .. }
            )
        })
        .map(|c| c.count)
        .sum();
    assert_eq!(
        domain_uses, 21,
        "one charge per estimated column, and one for each of the 6 number columns' exact values"
    );
    // The values most people hold come back exactly, named in the statement as estimated.
    let gain = m.header.schema.column("capital-gain").unwrap();
    assert_eq!(gain.point_masses, vec![0.0]);
    assert!(gain.point_masses_estimated);
    let covers = dpsynth::job::services::coverage(&m.header.privacy, "sampled");
    assert!(
        covers.contains("The exact values") && covers.contains("capital-gain (0)"),
        "{covers}"
    );
    assert!(!covers.contains("named by the user"), "{covers}");
    // Allowed as read: trained, and flagged everywhere.
    let raw = dir.path().join("raw.dpsynth");
    let o = train(&["--out", raw.to_str().unwrap(), "--allow-data-domains"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["non_private_domains"].as_array().unwrap().len(), 15);
    assert!(String::from_utf8_lossy(&o.stderr).contains("NOT cover"));
}

#[test]
fn a_schema_cannot_claim_an_estimate_the_ledger_never_charged() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.sqlite3");
    // A hand-written schema that calls a data-read domain "dp_estimated".
    let text = std::fs::read_to_string(common::repo("assets/adult/adult.schema.json")).unwrap();
    let forged = text.replacen(
        "\"provenance\": \"user_provided\"",
        "\"provenance\": {\"dp_estimated\": {\"epsilon\": 0.01}}",
        1,
    );
    let schema = dir.path().join("forged.schema.json");
    std::fs::write(&schema, forged).unwrap();
    let mut cfg = config(dir.path(), "dp-gan", 1.0, "tiny");
    cfg.schema = Some(schema);
    cfg.overrides
        .insert("critic_steps".into(), serde_json::json!(10));
    // Refused like any data-read domain, naming the column…
    let e = run(cfg.clone(), &ledger, None).unwrap_err();
    assert!(e.contains("age"), "{e}");
    // …and estimated for real (and recorded) when asked.
    cfg.domains = job::DomainPolicy::Estimate { share: 0.1 };
    let s = run(cfg, &ledger, None).unwrap();
    assert_eq!(s.estimated_domains, vec!["age".to_string()]);
}

#[test]
fn pate_gan_charges_one_query_per_label_and_releases_only_the_generator() {
    use dpsynth::methods::method::MethodConfig as _;
    use dpsynth::methods::pate_gan::PateGanConfig;
    use dpsynth::privacy::Mechanism;
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    let mut cfg = config(dir.path(), "pate-gan", 1.0, "tiny");
    let ck = dir.path().join("checkpoints");
    cfg.checkpoints = Some(ck.clone());
    let s = run(cfg.clone(), &ledger, None).unwrap();
    let tiny = PateGanConfig::preset("tiny").unwrap();
    let m = ReleasedModel::load(&s.model, &candle_core::Device::Cpu).unwrap();
    let p = &m.header.privacy;
    // One charge, counted once per labelled generated row: the soft-vote sum (each
    // teacher contributes at most 1) with Gaussian noise.
    assert_eq!(p.mechanisms.len(), 1, "{:?}", p.mechanisms);
    assert_eq!(p.mechanisms[0].count, tiny.queries());
    assert_eq!(tiny.queries(), 40 * 16);
    assert!(matches!(
        p.mechanisms[0].mechanism,
        Mechanism::Gaussian { sensitivity, .. } if sensitivity == 1.0
    ));
    let spent = p.epsilon.unwrap();
    assert!(spent <= 1.0 + 1e-9 && spent > 0.98, "{spent}");
    assert_eq!(m.sample(100, Some(1)).unwrap().n_rows, 100);
    // The file holds the generator alone: as many tensors as its parameters, none named
    // after a teacher or the student.
    let bytes = std::fs::read(&s.model).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    for name in file.names() {
        for word in ["teacher", "student", "critic"] {
            assert!(!name.contains(word), "tensor '{name}' in the released file");
        }
    }
    assert_eq!(
        file.names().len(),
        m.generator.params().len(),
        "only the generator's weights"
    );
    // Ten snapshots, the student kept beside each as the checkpoint's critic.
    let names = std::fs::read_dir(&ck).unwrap().count();
    assert_eq!(names, 20);
    // Cancelled after ten generator steps or so: the stop depended on what was watched, so
    // the statement (and the ledger, which settles to it) holds every planned query.
    let s = run(cfg.clone(), &ledger, Some(10)).unwrap();
    assert!(s.cancelled);
    let m = ReleasedModel::load(&s.model, &candle_core::Device::Cpu).unwrap();
    let queries: u64 = m.header.privacy.mechanisms.iter().map(|c| c.count).sum();
    assert_eq!(queries, tiny.queries());
    assert!((m.header.privacy.epsilon.unwrap() - spent).abs() < 1e-9);
}

/// Post-GAN boosting: priced as its own line, charged inside the run's budget, and the
/// released file holds the generator and the weighted sample set, never a critic.
#[test]
fn post_gan_boosting_spends_within_the_budget_and_releases_no_critic() {
    use dpsynth::job::{BoostConfig, Draw};
    use dpsynth::privacy::Mechanism;
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    let boost = BoostConfig {
        generators: 5,
        samples_per_generator: 200,
        rounds: 50,
        ..Default::default()
    };
    let mut cfg = config(dir.path(), "dp-gan", 1.0, "tiny");
    cfg.boost = Some(boost.clone());
    let ck = dir.path().join("checkpoints");
    cfg.checkpoints = Some(ck.clone());
    let key = dataset_key(&cfg.data, &ledger).unwrap();
    let cost = job::cost::cost(&job::cost::CostRequest {
        dataset: key.clone(),
        ledger: ledger.clone(),
        method: "dp-gan".into(),
        preset: "tiny".into(),
        epsilon: 1.0,
        delta: 1e-5,
        rows: 32_561,
        overrides: Default::default(),
        schema: None,
        domains: job::DomainPolicy::AllowData,
        boost: Some(boost.clone()),
        fixed_schema: None,
        profile: None,
        device: Default::default(),
        held: None,
        exact_values: true,
    })
    .unwrap();
    let b = cost.boost.expect("boosting priced on its own line");
    assert!(b > 0.09 && b <= 0.1 + 1e-9, "{b}");
    assert!(cost.this_run <= 1.0 + 1e-9 && cost.this_run > 0.98);

    let s = run(cfg.clone(), &ledger, None).unwrap();
    assert!(s.boosted);
    let m = ReleasedModel::load(&s.model, &candle_core::Device::Cpu).unwrap();
    let p = &m.header.privacy;
    let spent = p.epsilon.unwrap();
    assert!(spent <= 1.0 + 1e-9 && spent > 0.95, "{spent}");
    let rounds: u64 = p
        .mechanisms
        .iter()
        .filter(|c| matches!(c.mechanism, Mechanism::Exponential { .. }))
        .map(|c| c.count)
        .sum();
    assert_eq!(rounds, 50, "{:?}", p.mechanisms);
    let mix = m.header.mixture.as_ref().unwrap();
    assert_eq!(mix.rounds, 50);
    assert_eq!(mix.generator_steps.len(), 5);
    assert_eq!(
        *mix.generator_steps.last().unwrap(),
        300,
        "the last step is kept"
    );
    assert_eq!(mix.picks.iter().sum::<u64>(), 50);
    assert!(mix.epsilon0.is_some());
    let set = m.mixture.as_ref().unwrap();
    assert_eq!(set.weights.len(), 1000);
    // The file: generator weights and the mixture's three tensors, nothing else.
    let bytes = std::fs::read(&s.model).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut mixture = 0;
    for name in file.names() {
        assert!(
            !name.contains("critic"),
            "tensor '{name}' in the released file"
        );
        if name.starts_with("mixture.") {
            mixture += 1;
        } else {
            assert!(name.starts_with("generator."), "{name}");
        }
    }
    assert_eq!(mixture, 3);
    // A flipped bit in the weights, or one changed byte of the header, is refused.
    let dev = candle_core::Device::Cpu;
    let mut flipped = bytes.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x10;
    let e = ReleasedModel::from_bytes(&flipped, "m", &dev)
        .unwrap_err()
        .to_string();
    assert!(e.contains("checksum"), "{e}");
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let at = text.find("education").expect("a column name in the header");
    let mut renamed = bytes.clone();
    renamed[at] = b'E';
    let e = ReleasedModel::from_bytes(&renamed, "m", &dev)
        .unwrap_err()
        .to_string();
    assert!(e.contains("checksum"), "{e}");
    assert_eq!(file.names().len(), m.generator.params().len() + 3);
    // The three draws sample through the same call; the boosted rows are rows of the set.
    for d in [Draw::Generator, Draw::Boosted, Draw::BoostedDrs] {
        assert_eq!(m.sample_with(300, Some(2), d).unwrap().n_rows, 300);
    }
    assert_eq!(m.default_draw(), Draw::Boosted);
    let (ess, ess_drs) = mix.effective_rows;
    assert!(
        ess > 1.0 && ess <= 1000.0 + 1e-6 && ess_drs > 0.0,
        "{ess} {ess_drs}"
    );
    // Exporting streams in chunks: more rows than one chunk, one header, every row.
    let csv = dir.path().join("boosted.csv");
    let n = dpsynth::methods::released::SAMPLE_CHUNK + 1000;
    job::services::export_csv_with(&s.model, n, Some(3), Some(Draw::Boosted), &csv).unwrap();
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), n + 1);
    let header = text.lines().next().unwrap();
    assert_eq!(text.lines().filter(|l| *l == header).count(), 1);
    let side: serde_json::Value =
        serde_json::from_slice(&std::fs::read(job::services::sidecar_path(&csv)).unwrap()).unwrap();
    assert_eq!(side["rows"], n);
    assert_eq!(side["drawn_from"], "boosted");
    assert_eq!(side["boosting"]["rounds"], 50);
    // The job's checkpoint folder keeps epoch ends only (tiny: 300 steps of 128 rows,
    // 255 steps an epoch → one), though boosting took five snapshots.
    assert_eq!(std::fs::read_dir(&ck).unwrap().count(), 2);
    // The ledger holds what the statement says.
    let st = Ledger::open(&ledger).unwrap().standing(&key).unwrap();
    assert!(
        st.spent <= 1.0 + 1e-9 && (st.spent - spent).abs() < 0.02,
        "{}",
        st.spent
    );

    // A method without a critic is refused before anything is reserved.
    let mut merf = config(dir.path(), "dp-merf", 1.0, "tiny");
    merf.boost = Some(boost);
    let e = run(merf, &ledger, None).unwrap_err();
    assert!(e.contains("trains no discriminator"), "{e}");
    let after = Ledger::open(&ledger).unwrap().standing(&key).unwrap();
    assert_eq!(after.entries.len(), st.entries.len());
}

/// The header alone reads as the full load's, without the weights: a file whose weights
/// are cut off still gives its header (and the full load refuses it).
#[test]
fn the_header_reads_without_the_weights() {
    use candle_core::Device;
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    let path = run(config(dir.path(), "mst", 1.0, "tiny"), &ledger, None)
        .unwrap()
        .model;
    let full = ReleasedModel::load(&path, &Device::Cpu).unwrap();
    let header = ReleasedModel::read_header(&path).unwrap();
    assert_eq!(
        serde_json::to_value(&header).unwrap(),
        serde_json::to_value(&full.header).unwrap()
    );
    let bytes = std::fs::read(&path).unwrap();
    let cut = dir.path().join("cut.dpsynth");
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    std::fs::write(&cut, &bytes[..8 + n + 4]).unwrap();
    assert!(ReleasedModel::load(&cut, &Device::Cpu).is_err());
    assert_eq!(
        serde_json::to_value(ReleasedModel::read_header(&cut).unwrap()).unwrap(),
        serde_json::to_value(&full.header).unwrap()
    );
    // Not a model: clear errors, no panic.
    let junk = dir.path().join("junk.dpsynth");
    std::fs::write(&junk, b"abc").unwrap();
    let e = ReleasedModel::read_header(&junk).unwrap_err().to_string();
    assert!(e.contains("not a dpsynth model file"), "{e}");
    std::fs::write(&junk, [&u64::MAX.to_le_bytes()[..], b"{}"].concat()).unwrap();
    assert!(ReleasedModel::read_header(&junk).is_err());
    std::fs::write(&junk, [&20u64.to_le_bytes()[..], b"{}"].concat()).unwrap();
    let e = ReleasedModel::read_header(&junk).unwrap_err().to_string();
    assert!(e.contains("cut short"), "{e}");
}
