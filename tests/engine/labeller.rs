//! The labeller: a DP-SGD digit classifier trained beside DP-MERF's kernel
//! release, charged within the same budget, released in the model file, and used by
//! sampling to keep only the images it reads as their class.

use crate::common;

use dpsynth::job::RunConfig;
use dpsynth::methods::released::ReleasedModel;
use dpsynth::privacy::Mechanism;

fn config(dir: &std::path::Path, share: f64) -> RunConfig {
    let mut overrides = serde_json::Map::new();
    for (k, v) in [
        ("label", serde_json::json!("label")),
        ("labeller_share", serde_json::json!(share)),
        ("labeller_steps", serde_json::json!(40)),
        ("labeller_batch", serde_json::json!(64)),
    ] {
        overrides.insert(k.into(), v);
    }
    RunConfig {
        data: common::repo("assets/mnist/train-images-idx3-ubyte.gz"),
        schema: None,
        seed: Some(11),
        overrides,
        ..common::adult_run(
            "dp-merf",
            "tiny",
            2.0,
            dir.join(format!("labelled-{share}.dpsynth")),
        )
    }
}

/// The class of each generated row's label span (the one-hot span comes first).
fn drawn_classes(rows: &[f32], width: usize, classes: usize) -> Vec<usize> {
    rows.chunks(width)
        .map(|r| {
            (0..classes)
                .max_by(|a, b| r[*a].total_cmp(&r[*b]))
                .unwrap_or(0)
        })
        .collect()
}

#[test]
fn a_labeller_is_charged_released_and_keeps_only_rows_it_reads_as_their_class() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    let s = common::run_job(config(dir.path(), 0.5), &ledger, None).unwrap();
    // Both releases and the 40 DP-SGD steps fit the budget, and the statement lists them.
    assert!(
        s.epsilon_spent.unwrap() <= 2.0 + 1e-9,
        "{:?}",
        s.epsilon_spent
    );
    let model = ReleasedModel::load(&s.model, &candle_core::Device::Cpu).unwrap();
    let steps: u64 = model
        .header
        .privacy
        .mechanisms
        .iter()
        .filter(|c| matches!(c.mechanism, Mechanism::SubsampledGaussian { .. }))
        .map(|c| c.count)
        .sum();
    assert_eq!(steps, 40, "{:?}", model.header.privacy.mechanisms);
    assert!(
        model
            .header
            .privacy
            .mechanisms
            .iter()
            .any(|c| matches!(c.mechanism, Mechanism::Gaussian { .. })),
        "the kernel release is still there"
    );
    let labeller = model
        .labeller
        .as_ref()
        .expect("the model holds its labeller");
    assert!(model.header.labeller.is_some());

    // Sampling through the labeller: more rows read as their class than the generator
    // alone writes (the labeller of 40 steps on the sample is weak, so not all).
    let width = 794;
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(5);
    let agree = |rows: &[f32]| {
        let read = labeller.classes_of(rows, width).unwrap();
        let drawn = drawn_classes(rows, width, 10);
        read.iter().zip(&drawn).filter(|(a, b)| a == b).count()
    };
    let checked = agree(&model.generate(300, &mut rng).unwrap());
    let mut plain = model.snapshot().unwrap();
    plain.labeller = None;
    let unchecked = agree(&plain.generate(300, &mut rng).unwrap());
    assert!(checked > unchecked + 30, "{checked} vs {unchecked} of 300");

    // The rejection itself, with a reader whose answers are known: it agrees with a row's
    // drawn class when the row's ink (its pixels' sum) is below the median, so every row
    // kept has such ink, and the classes still follow the released proportions.
    let pixel = |r: &[f32]| r[10..].iter().sum::<f32>();
    let mut firsts: Vec<f32> = plain
        .generate(2_000, &mut rng)
        .unwrap()
        .chunks(width)
        .map(pixel)
        .collect();
    firsts.sort_by(f32::total_cmp);
    let median = firsts[1_000];
    let read = |rows: &[f32]| {
        Ok(rows
            .chunks(width)
            .zip(drawn_classes(rows, width, 10))
            .map(|(r, c)| if pixel(r) < median { c } else { (c + 1) % 10 })
            .collect())
    };
    let rows = model
        .generate_read_by(300, &mut rng, read)
        .unwrap()
        .unwrap();
    assert!(rows.chunks(width).all(|r| pixel(r) < median));
    let classes: std::collections::HashSet<usize> =
        drawn_classes(&rows, width, 10).into_iter().collect();
    assert!(classes.len() > 5, "{classes:?}");

    // The exported file's statement says how the rows were chosen.
    let csv = dir.path().join("digits.csv");
    let sidecar = dpsynth::job::services::export_csv(&s.model, 50, Some(1), &csv).unwrap();
    let side: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sidecar).unwrap()).unwrap();
    assert!(side["checked_by"].as_str().unwrap().contains("DP-SGD"));
}

#[test]
fn a_labeller_is_refused_without_a_label_or_on_a_table() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    let mut cfg = config(dir.path(), 0.5);
    cfg.overrides.insert("label".into(), serde_json::json!(""));
    let e = common::run_job(cfg, &ledger, None).unwrap_err();
    assert!(e.contains("label column"), "{e}");
    let mut cfg = config(dir.path(), 0.5);
    let key =
        dpsynth::job::cost::dataset_key(&common::repo("assets/adult/adult_train.csv"), &ledger)
            .unwrap();
    cfg.data = common::repo("assets/adult/adult_train.csv");
    cfg.schema = Some(common::repo("assets/adult/adult.schema.json"));
    cfg.overrides
        .insert("label".into(), serde_json::json!("income"));
    let e = common::run_job(cfg, &ledger, None).unwrap_err();
    assert!(
        e.contains("square images") && e.contains("labeller_share=0"),
        "{e}"
    );
    // Refused before anything was charged.
    let l = dpsynth::privacy::ledger::Ledger::open(&ledger).unwrap();
    assert!(!l.has_entries(&key).unwrap());
}
