//! `dpsynth sample --jitter`: every sampled image turned, zoomed and moved at
//! random — post-processing of the released generator, for digits meant to train a
//! classifier — with the statement saying so; refused for a table model and for settings
//! out of range.

use crate::common;

use dpsynth::job::RunConfig;

fn images(path: &std::path::Path) -> dpsynth::data::image::ImageSet {
    match dpsynth::data::open(path, &Default::default()).unwrap() {
        dpsynth::data::Dataset::Images(set) => set,
        dpsynth::data::Dataset::Table(_) => panic!("{}: not images", path.display()),
    }
}

#[test]
fn jittered_digits_move_keep_their_ink_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut overrides = serde_json::Map::new();
    overrides.insert("label".into(), serde_json::json!("label"));
    let cfg = RunConfig {
        data: common::repo("assets/mnist/train-images-idx3-ubyte.gz"),
        schema: None,
        seed: Some(5),
        overrides,
        ..common::adult_run("dp-merf", "tiny", 2.0, dir.path().join("digits.dpsynth"))
    };
    let s = common::run_job(cfg, &dir.path().join("ledger.sqlite3"), None).unwrap();
    let model = s.model.display().to_string();
    let sample = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut args = vec!["sample", "--model", &model, "--rows", "60", "--seed", "4"];
        let o = out.display().to_string();
        args.extend(["--out", &o]);
        args.extend(extra);
        let r = common::dpsynth(&args);
        assert!(r.status.success(), "{}", common::stderr(&r));
        out
    };
    let plain = sample("plain.csv", &[]);
    let jittered = sample("jittered.csv", &["--jitter"]);
    let (a, b) = (images(&plain), images(&jittered));
    assert_eq!((b.len(), b.width, b.height), (60, 28, 28));
    // Every image moved (the same seed draws the same digits before they are warped)…
    let px = 28 * 28;
    let moved = (0..60)
        .filter(|i| a.pixels[i * px..(i + 1) * px] != b.pixels[i * px..(i + 1) * px])
        .count();
    assert!(moved >= 55, "only {moved} of 60 images changed");
    // …and kept about its ink: a turn, a 10 % zoom and a small shift lose little.
    let ink = |s: &dpsynth::data::image::ImageSet| s.pixels.iter().map(|&p| p as f64).sum::<f64>();
    let ratio = ink(&b) / ink(&a);
    assert!((0.7..1.3).contains(&ratio), "ink ratio {ratio}");
    // The statement names the warp; the plain sample's does not.
    let statement = |csv: &std::path::Path| -> serde_json::Value {
        let side = dpsynth::job::services::sidecar_path(csv);
        serde_json::from_str(&std::fs::read_to_string(side).unwrap()).unwrap()
    };
    assert_eq!(statement(&jittered)["jittered"]["degrees"], 10.0);
    assert!(statement(&plain).get("jittered").is_none());
    // An elastic bend is named in the statement too.
    assert!(statement(&jittered)["jittered"].get("elastic").is_none());
    let bent = statement(&sample("bent.csv", &["--jitter", "10,0.1,0.1,34,4"]));
    assert_eq!(bent["jittered"]["elastic"]["alpha"], 34.0);

    // Out of range, and on a table: bad usage (exit 2), nothing written.
    let bad = dir.path().join("bad.csv").display().to_string();
    let r = common::dpsynth(&[
        "sample", "--model", &model, "--rows", "5", "--out", &bad, "--jitter", "5,2,0.1",
    ]);
    assert_eq!(r.status.code(), Some(2), "{}", common::stderr(&r));
    assert!(common::stderr(&r).contains("zoom"));
    let table = common::run_job(
        common::adult_run("mst", "tiny", 1.0, dir.path().join("table.dpsynth")),
        &dir.path().join("ledger2.sqlite3"),
        None,
    )
    .unwrap();
    let r = common::dpsynth(&[
        "sample",
        "--model",
        &table.model.display().to_string(),
        "--rows",
        "5",
        "--out",
        &bad,
        "--jitter",
    ]);
    assert_eq!(r.status.code(), Some(2), "{}", common::stderr(&r));
    assert!(
        common::stderr(&r).contains("images"),
        "{}",
        common::stderr(&r)
    );
    assert!(!std::path::Path::new(&bad).exists());
}

/// A model trained on digits without class conditioning generates the label's one-hot
/// block like any other column: jitter warps the pixels beside it and leaves the label
/// alone (it was refused as "table rows" before, and the window's default export with it).
#[test]
fn digits_from_a_model_without_conditioning_jitter_too() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = RunConfig {
        data: common::repo("assets/mnist/train-images-idx3-ubyte.gz"),
        schema: None,
        seed: Some(6),
        ..common::adult_run("dp-merf", "tiny", 2.0, dir.path().join("digits.dpsynth"))
    };
    let s = common::run_job(cfg, &dir.path().join("ledger.sqlite3"), None).unwrap();
    let m = dpsynth::methods::released::ReleasedModel::load(&s.model, &candle_core::Device::Cpu)
        .unwrap();
    assert!(m.header.conditioning.is_none(), "the case under test");
    let out = dir.path().join("jittered.csv");
    let r = common::dpsynth(&[
        "sample",
        "--model",
        &s.model.display().to_string(),
        "--rows",
        "30",
        "--seed",
        "4",
        "--jitter",
        "--out",
        &out.display().to_string(),
    ]);
    assert!(r.status.success(), "{}", common::stderr(&r));
    let set = images(&out);
    assert_eq!((set.len(), set.width, set.height), (30, 28, 28));
    let labels = set.labels.expect("the label column survives the warp");
    assert!(labels.iter().all(|&l| l < 10), "{labels:?}");
}
