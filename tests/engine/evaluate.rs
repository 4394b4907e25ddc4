//! `dpsynth evaluate` on real ADULT rows: with synthetic = real every real/synthetic pair
//! coincides; with a column-shuffled copy (relationships destroyed, marginals kept) the
//! prediction and PCA scores drop while the 1-way marginals stay equal.

use crate::common;

use std::path::Path;

use serde_json::Value;

fn write(dir: &Path, name: &str, lines: &[String]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, lines.join("\n") + "\n").expect("write csv");
    p.display().to_string()
}

/// Permutes every column independently (a seeded LCG, so the test is deterministic).
fn shuffle_columns(lines: &[String]) -> Vec<String> {
    let rows: Vec<Vec<&str>> = lines[1..].iter().map(|l| l.split(',').collect()).collect();
    let ncol = rows[0].len();
    let mut cols: Vec<Vec<&str>> = (0..ncol)
        .map(|j| rows.iter().map(|r| r[j]).collect())
        .collect();
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for col in &mut cols {
        for i in (1..col.len()).rev() {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let j = (state >> 33) as usize % (i + 1);
            col.swap(i, j);
        }
    }
    let mut out = vec![lines[0].clone()];
    for i in 0..rows.len() {
        out.push((0..ncol).map(|j| cols[j][i]).collect::<Vec<_>>().join(","));
    }
    out
}

fn evaluate(train: &str, test: &str, syn: &str, dir: &Path, tag: &str) -> Value {
    let json = dir.join(format!("{tag}.json"));
    let html = dir.join(format!("{tag}.html"));
    // The shuffled copy's report keeps its real rows (asked for), the other holds none.
    let with_rows = tag == "shuffled";
    let mut args = vec![
        "evaluate",
        "--real-train",
        train,
        "--real-test",
        test,
        "--synthetic",
        syn,
        "--label",
        "income",
        "--wasserstein-repeats",
        "20",
        "--dimwise-rows",
        "2000",
        "--json",
        json.to_str().expect("utf-8 path"),
        "--html",
        html.to_str().expect("utf-8 path"),
    ];
    if with_rows {
        args.push("--with-real-rows");
    }
    let out = common::dpsynth(&args);
    assert!(
        out.status.success(),
        "evaluate failed: {}",
        common::stderr(&out)
    );
    let page = std::fs::read_to_string(&html).expect("html written");
    assert!(
        page.starts_with("<!doctype html>") && page.contains("<svg"),
        "HTML report with inline plots"
    );
    assert!(page.contains("Train on synthetic, test on real"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).expect("json written"))
        .expect("json parses");
    let real_rows = v["first_look"]["real_rows"].as_array().map_or(0, Vec::len);
    let banner = page.contains("This report contains real records");
    if with_rows {
        assert!(
            real_rows > 0 && banner,
            "asked for: rows {real_rows}, banner {banner}"
        );
    } else {
        assert!(
            real_rows == 0 && !banner,
            "rows {real_rows}, banner {banner}"
        );
        // Not one real row verbatim in the page: its first cells would be a row's.
        assert!(!page.contains("Random real rows"));
    }
    v
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

#[test]
fn synthetic_equal_to_real_coincides_and_a_shuffled_copy_scores_worse() {
    let dir = tempfile::tempdir().expect("tempdir");
    let train_lines = common::head_lines("assets/adult/adult_train.csv", 3000);
    let train = write(dir.path(), "train.csv", &train_lines);
    let test = write(
        dir.path(),
        "test.csv",
        &common::head_lines("assets/adult/adult_test.csv", 1500),
    );
    let shuffled = write(dir.path(), "shuffled.csv", &shuffle_columns(&train_lines));

    let same = evaluate(&train, &test, &train, dir.path(), "same");
    assert_eq!(same["sizes"]["real_train"], 3000);
    assert_eq!(same["sizes"]["synthetic"], 3000);
    // Every (real, synthetic) pair coincides: the models see identical rows and seeds.
    let points = same["prediction"]["points"].as_array().expect("points");
    assert!(
        points.len() >= 28,
        "two models per column: {}",
        points.len()
    );
    for p in points {
        let (r, s) = (f(&p["real"]), f(&p["synthetic"]));
        assert!(
            (r - s).abs() < 1e-9,
            "{}: real {r} vs synthetic {s}",
            p["column"]
        );
    }
    for h in same["histograms"].as_array().expect("histograms") {
        assert_eq!(f(&h["tvd"]), 0.0, "{}", h["column"]);
    }
    assert_eq!(f(&same["three_way"]["mean_tv"]), 0.0);
    for row in same["tstr"]["rows"].as_array().expect("tstr rows") {
        let (r, s) = (
            f(&row["real"]["Ok"]["accuracy"]),
            f(&row["synthetic"]["Ok"]["accuracy"]),
        );
        assert!((r - s).abs() < 1e-9, "{}: {r} vs {s}", row["label"]);
        assert!((0.0..=1.0).contains(&r), "{}: accuracy {r}", row["label"]);
    }
    // Logistic regression beats always guessing the majority class on real ADULT rows.
    let lr = f(&same["tstr"]["rows"][0]["real"]["Ok"]["accuracy"]);
    assert!(
        lr > f(&same["tstr"]["majority_accuracy"]) + 0.03,
        "LR accuracy {lr}"
    );
    assert_eq!(f(&same["tstr"]["agreed_ranking_auroc"]) > 0.9, true);
    let risk = &same["privacy_risk"];
    assert_eq!(
        risk["exact_copies"], risk["rows"],
        "every synthetic row is a training row"
    );
    assert!(
        f(&risk["membership_auc"]) > 0.9,
        "copies are detectable: {}",
        risk["membership_auc"]
    );

    let shuf = evaluate(&train, &test, &shuffled, dir.path(), "shuffled");
    // Marginals survive a column shuffle ...
    for h in shuf["histograms"].as_array().expect("histograms") {
        assert!(f(&h["tvd"]) < 1e-12, "{}", h["column"]);
    }
    // ... relationships do not.
    let d_same = f(&same["prediction"]["mean_abs_difference"]);
    let d_shuf = f(&shuf["prediction"]["mean_abs_difference"]);
    assert!(
        d_shuf > d_same + 0.05,
        "prediction gap: same {d_same}, shuffled {d_shuf}"
    );
    assert!(f(&shuf["three_way"]["mean_tv"]) > 0.05);
    let (w_same, w_shuf) = (
        f(&same["pca"]["wasserstein"]["w1_mean"]),
        f(&shuf["pca"]["wasserstein"]["w1_mean"]),
    );
    assert!(w_shuf > w_same, "PCA W1: same {w_same}, shuffled {w_shuf}");
    assert!(f(&shuf["pca"]["wasserstein"]["score"]) < f(&same["pca"]["wasserstein"]["score"]));
    let (s_same, s_shuf) = (
        f(&same["whole_data_wasserstein"]["w1_mean"]),
        f(&shuf["whole_data_wasserstein"]["w1_mean"]),
    );
    assert!(
        s_shuf > s_same,
        "whole-data W1: same {s_same}, shuffled {s_shuf}"
    );
    // (pMSE with a main-effects propensity model cannot see a column shuffle: the marginals
    // are identical. That is what the metric is, not a defect of the test.)
    let acc = |v: &Value| f(&v["tstr"]["rows"][0]["synthetic"]["Ok"]["accuracy"]);
    assert!(
        acc(&shuf) < acc(&same) - 0.02,
        "TSTR accuracy drops: {} vs {}",
        acc(&shuf),
        acc(&same)
    );
}

#[test]
fn bad_inputs_are_clear_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let train = write(
        dir.path(),
        "train.csv",
        &common::head_lines("assets/adult/adult_train.csv", 200),
    );
    let test = write(
        dir.path(),
        "test.csv",
        &common::head_lines("assets/adult/adult_test.csv", 100),
    );
    let other = write(
        dir.path(),
        "other.csv",
        &["a,b".to_string(), "1,2".to_string(), "3,4".to_string()],
    );
    let out = common::dpsynth(&[
        "evaluate",
        "--real-train",
        &train,
        "--real-test",
        &test,
        "--synthetic",
        &other,
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        common::stderr(&out).contains("synthetic"),
        "{}",
        common::stderr(&out)
    );
    let out = common::dpsynth(&[
        "evaluate",
        "--real-train",
        &train,
        "--real-test",
        &test,
        "--synthetic",
        &train,
        "--label",
        "age",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        common::stderr(&out).contains("--label age"),
        "{}",
        common::stderr(&out)
    );
    let out = common::dpsynth(&[
        "evaluate",
        "--real-train",
        &train,
        "--real-test",
        "/nonexistent.csv",
        "--synthetic",
        &train,
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        common::stderr(&out).contains("nonexistent"),
        "{}",
        common::stderr(&out)
    );
}

/// `label,pixel0..pixel783` CSV of uniform noise images with labels 0..9.
fn noise_images(dir: &Path, n: usize) -> String {
    let mut lines = vec![
        std::iter::once("label".to_string())
            .chain((0..784).map(|i| format!("pixel{i}")))
            .collect::<Vec<_>>()
            .join(","),
    ];
    let mut state: u64 = 42;
    for r in 0..n {
        let mut row = vec![(r % 10).to_string()];
        for _ in 0..784 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            row.push(((state >> 56) as u8).to_string());
        }
        lines.push(row.join(","));
    }
    write(dir, "noise.csv", &lines)
}

#[test]
fn images_real_versus_noise() {
    let dir = tempfile::tempdir().expect("tempdir");
    let train = common::repo("assets/mnist/train-images-idx3-ubyte.gz")
        .display()
        .to_string();
    let test = common::repo("assets/mnist/t10k-images-idx3-ubyte.gz")
        .display()
        .to_string();
    let run = |syn: &str, tag: &str| -> Value {
        let json = dir.path().join(format!("{tag}.json"));
        let grid = dir.path().join(format!("{tag}.png"));
        let out = common::dpsynth(&[
            "evaluate",
            "--real-train",
            &train,
            "--real-test",
            &test,
            "--synthetic",
            syn,
            "--json",
            json.to_str().expect("utf-8"),
            "--grid",
            grid.to_str().expect("utf-8"),
        ]);
        assert!(out.status.success(), "{}", common::stderr(&out));
        let png = std::fs::read(&grid).expect("grid written");
        assert_eq!(&png[1..4], b"PNG");
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("parses")
    };
    let same = run(&train, "same");
    let noise = run(&noise_images(dir.path(), 300), "noise");
    let acc = |v: &Value, k: &str| v[k].as_f64().expect("number");
    assert!(acc(&same, "synthetic_mlp_accuracy") > 0.8, "{same}");
    assert!(acc(&noise, "synthetic_mlp_accuracy") < 0.3, "{noise}");
    // The CNN judge: real digits teach it at least as well as the MLP; noise does not.
    assert!(acc(&same, "synthetic_cnn_accuracy") > 0.8, "{same}");
    assert!(acc(&noise, "synthetic_cnn_accuracy") < 0.3, "{noise}");
    assert!(
        (acc(&same, "synthetic_cnn_accuracy") - acc(&same, "real_cnn_accuracy")).abs() < 0.02,
        "the same images and seed train the same CNN: {same}"
    );
    assert!(
        acc(&noise, "frechet_distance") > 5.0 * acc(&same, "frechet_distance").max(0.1),
        "{same} {noise}"
    );
}

/// A column the schema ignores is not synthesized, so samples lack it: the evaluation
/// must compare the other columns instead of refusing the synthetic table.
#[test]
fn an_ignored_column_is_left_out_of_the_comparison() {
    use dpsynth::data::schema::Kind;
    let path = common::repo("assets/adult/adult_train.csv");
    let full = dpsynth::data::csv::load_csv(&path, &Default::default()).unwrap();
    let real = full.head(400);
    let mut schema = dpsynth::data::infer::infer_schema(&real).unwrap().schema;
    schema
        .columns
        .iter_mut()
        .find(|c| c.name == "fnlwgt")
        .unwrap()
        .kind = Kind::Ignored;
    let mut syn = full.rows(&(400..800).collect::<Vec<_>>());
    syn.columns.retain(|c| c.name != "fnlwgt");
    let opts = dpsynth::eval::report::Options {
        label: Some("income".into()),
        seed: 0,
        dimwise_rows: 200,
        wasserstein_repeats: 2,
    };
    let rep = dpsynth::eval::report::evaluate(Some(schema), &real, &real, &syn, &opts, &mut |_| {})
        .expect("an ignored column missing from the samples is fine");
    let cols: Vec<&str> = rep.histograms.iter().map(|h| h.column.as_str()).collect();
    assert_eq!(cols.len(), 14, "{cols:?}");
    assert!(!cols.contains(&"fnlwgt"));
}

/// The plain verdict: a table collapsed onto one row is called not useful, with the
/// collapsed columns named and a warning that the spread scores can still read well; a
/// fresh sample of real rows is not.
#[test]
fn a_collapsed_table_gets_the_collapse_verdict() {
    use dpsynth::eval::verdict::{Grade, verdict};
    let path = common::repo("assets/adult/adult_train.csv");
    let full = dpsynth::data::csv::load_csv(&path, &Default::default()).unwrap();
    let real = full.head(1000);
    let test = full.rows(&(1000..2000).collect::<Vec<_>>());
    let schema = dpsynth::data::infer::infer_schema(&real).unwrap().schema;
    let opts = dpsynth::eval::report::Options {
        label: Some("income".into()),
        seed: 0,
        dimwise_rows: 200,
        wasserstein_repeats: 2,
    };
    let collapsed = full.rows(&[5; 1000]);
    let rep = dpsynth::eval::report::evaluate(
        Some(schema.clone()),
        &real,
        &test,
        &collapsed,
        &opts,
        &mut |_| {},
    )
    .unwrap();
    let v = verdict(&rep);
    assert_eq!(v.grade, Grade::NotUseful, "{v:?}");
    assert!(v.headline.starts_with("Not useful"), "{}", v.headline);
    assert!(
        v.reasons
            .iter()
            .any(|r| r.contains("collapsed: 'occupation'") && r.contains("100.0 %")),
        "{:?}",
        v.reasons
    );
    assert!(
        v.reasons.iter().any(|r| r.contains("PCA")),
        "{:?}",
        v.reasons
    );

    let fresh = full.rows(&(2000..3000).collect::<Vec<_>>());
    let rep = dpsynth::eval::report::evaluate(
        Some(schema.clone()),
        &real,
        &test,
        &fresh,
        &opts,
        &mut |_| {},
    )
    .unwrap();
    let v = verdict(&rep);
    assert_ne!(v.grade, Grade::NotUseful, "{v:?}");
    assert!(
        v.reasons.iter().any(|r| r.contains("close to real data")),
        "{v:?}"
    );

    // Columns a private domain estimate dropped: the headline names that lever, not ε or
    // the method (AIM was once told to try AIM).
    let gone = ["workclass", "occupation", "race"];
    let dropped = dpsynth::data::Table {
        columns: fresh
            .columns
            .iter()
            .filter(|c| !gone.contains(&c.name.as_str()))
            .cloned()
            .collect(),
        n_rows: fresh.n_rows,
    };
    let rep =
        dpsynth::eval::report::evaluate(Some(schema), &real, &test, &dropped, &opts, &mut |_| {})
            .unwrap();
    let v = verdict(&rep);
    assert_eq!(v.grade, Grade::NotUseful, "{v:?}");
    assert!(
        v.headline
            .contains("3 of the data's 15 columns were dropped")
            && !v.headline.contains("AIM"),
        "{}",
        v.headline
    );
}
