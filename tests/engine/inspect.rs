//! `dpsynth inspect` on the real Adult data: the kinds a person expects, a JSON schema
//! that round-trips, and the image loaders agreeing with each other.

use crate::common;

use common::{dpsynth, repo, stderr, stdout};
use dpsynth::data::schema::{Kind, Provenance, Schema};

fn column<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap()
}

#[test]
fn adult_columns_get_the_expected_kinds() {
    let data = repo("assets/adult/adult_train.csv");
    let out = dpsynth(&["inspect", data.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["rows"], 32561);
    assert_eq!(v["columns"].as_array().unwrap().len(), 15);
    let age = column(&v, "age");
    assert_eq!(age["kind"], "continuous");
    assert_eq!(age["integer"], true);
    assert_eq!(age["domain"]["bounds"]["lower"], 17.0);
    assert_eq!(age["domain"]["bounds"]["upper"], 90.0);
    let wc = column(&v, "workclass");
    assert_eq!(wc["kind"], "categorical");
    assert_eq!(wc["missing"], 1836);
    assert_eq!(wc["missing_allowed"], true);
    assert_eq!(wc["distinct"], 8);
    assert_eq!(column(&v, "sex")["kind"], "binary");
    assert_eq!(column(&v, "income")["kind"], "binary");
    assert_eq!(column(&v, "native-country")["distinct"], 41);
    assert_eq!(column(&v, "education")["kind"], "categorical");
    for c in [
        "fnlwgt",
        "capital-gain",
        "capital-loss",
        "hours-per-week",
        "education-num",
    ] {
        assert_eq!(column(&v, c)["kind"], "continuous", "{c}");
    }
    // Every inferred domain is flagged as not private.
    assert_eq!(v["non_private_domains"].as_array().unwrap().len(), 15);
}

#[test]
fn the_human_table_names_every_column_and_warns() {
    let data = repo("assets/adult/adult_train.csv");
    let out = dpsynth(&["inspect", data.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let s = stdout(&out);
    for c in ["age", "workclass", "fnlwgt", "income", "native-country"] {
        assert!(s.contains(c), "{c} missing from:\n{s}");
    }
    assert!(s.contains("NOT covered by the privacy guarantee"));
    assert!(s.contains("FROM DATA"));
    // The values most rows hold exactly are suggested to the owner as point masses.
    assert!(
        s.contains("capital-gain 0 (91.7 %)") && s.contains("hours-per-week 40 (46.7 %)"),
        "{s}"
    );
    // The saved schema does not carry them: read off the rows, they are the owner's to
    // confirm as public facts.
    assert!(s.contains("\"point_masses\""));
}

#[test]
fn schema_json_round_trips_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let schema_path = dir.path().join("adult.schema.json");
    let data = repo("assets/adult/adult_train.csv");
    let out = dpsynth(&[
        "inspect",
        data.to_str().unwrap(),
        "--schema-out",
        schema_path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let first = Schema::load(&schema_path).unwrap();
    assert_eq!(first.columns.len(), 15);
    // Edit it as a user would: public bounds for age, confirmed provenance.
    let mut edited = first.clone();
    let age = edited.columns.iter_mut().find(|c| c.name == "age").unwrap();
    age.domain = Some(dpsynth::data::schema::Domain::Bounds {
        lower: 0.0,
        upper: 120.0,
    });
    age.provenance = Provenance::UserProvided;
    edited.save(&schema_path).unwrap();
    let second_path = dir.path().join("again.json");
    let out = dpsynth(&[
        "inspect",
        data.to_str().unwrap(),
        "--schema",
        schema_path.to_str().unwrap(),
        "--schema-out",
        second_path.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let second = Schema::load(&second_path).unwrap();
    assert_eq!(second, edited);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(column(&v, "age")["private"], true);
    assert_eq!(second.column("sex").unwrap().kind, Kind::Binary);
}

/// The bundled digits (the first 2,000 of MNIST's training set) load the same from IDX and
/// from a `label,pixel0,…` CSV written from them.
#[test]
fn mnist_idx_and_csv_agree() {
    let opts = dpsynth::data::csv::LoadOptions::default();
    let idx = match dpsynth::data::open(&repo("assets/mnist"), &opts).unwrap() {
        dpsynth::data::Dataset::Images(s) => s,
        _ => panic!("the mnist folder should load as images"),
    };
    assert_eq!(idx.len(), 2_000);
    assert_eq!((idx.width, idx.height), (28, 28));
    let counts: usize = idx.label_counts().iter().map(|(_, c)| *c).sum();
    assert_eq!(counts, 2_000);
    let head = idx.head(300);
    let labels = head.labels.as_ref().unwrap();
    let mut csv = String::from("label");
    for p in 0..28 * 28 {
        csv.push_str(&format!(",pixel{p}"));
    }
    csv.push('\n');
    for (i, label) in labels.iter().enumerate() {
        csv.push_str(&label.to_string());
        for v in head.image(i) {
            csv.push_str(&format!(",{v}"));
        }
        csv.push('\n');
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("digits.csv");
    std::fs::write(&path, csv).unwrap();
    let from_csv = match dpsynth::data::open(&path, &opts).unwrap() {
        dpsynth::data::Dataset::Images(s) => s,
        _ => panic!("a label,pixel CSV should load as images"),
    };
    assert_eq!(from_csv, head);
}

/// The whole MNIST training set and the label counts published with it (60,000 digits: not
/// in the repository). Run it with the folder that holds `mnist/`:
/// `DPSYNTH_DATA=<that folder> cargo test --release --test engine inspect:: -- --ignored`.
#[test]
#[ignore = "needs the full MNIST files: set DPSYNTH_DATA to a folder holding mnist/"]
fn full_mnist_has_the_published_label_counts() {
    let dir = std::path::PathBuf::from(
        std::env::var("DPSYNTH_DATA").expect("set DPSYNTH_DATA to the folder holding mnist/"),
    );
    let opts = dpsynth::data::csv::LoadOptions::default();
    let idx = match dpsynth::data::open(&dir.join("mnist"), &opts).unwrap() {
        dpsynth::data::Dataset::Images(s) => s,
        _ => panic!("the mnist folder should load as images"),
    };
    assert_eq!(idx.len(), 60_000);
    let counts: Vec<usize> = idx.label_counts().iter().map(|(_, c)| *c).collect();
    assert_eq!(
        counts,
        vec![5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    );
    // The bundled sample is the head of the real training set.
    let sample =
        dpsynth::data::image::load_idx_dataset(&repo("assets/mnist/train-images-idx3-ubyte.gz"))
            .unwrap();
    assert_eq!(sample, idx.head(2_000));
}

#[test]
fn inspect_reports_images() {
    let out = dpsynth(&["inspect", repo("assets/mnist").to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["type"], "images");
    assert_eq!(v["count"], 2000);
    let total: u64 = v["label_counts"]
        .as_object()
        .unwrap()
        .values()
        .map(|c| c.as_u64().unwrap())
        .sum();
    assert_eq!(total, 2000);
}

/// `inspect` opens a file the way a run does (`job::workspace`): it names the ledger key the
/// file's budget is kept under, the same for the same rows in another format and different
/// for other rows.
#[test]
fn inspect_names_the_ledger_key_shared_across_formats() {
    let key = |file: &str| {
        let out = dpsynth(&["inspect", repo(file).to_str().unwrap(), "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        v["dataset_key"].as_str().unwrap_or_default().to_string()
    };
    let csv = key("tests/data/formats/adult_1k.csv");
    assert!(csv.len() >= 32, "{csv}");
    assert_eq!(key("tests/data/formats/adult_1k.parquet"), csv);
    assert_ne!(key("tests/data/formats/adult_200.tsv"), csv);
    let out = dpsynth(&[
        "inspect",
        repo("tests/data/formats/adult_1k.csv").to_str().unwrap(),
    ]);
    assert!(
        stdout(&out).contains(&format!("ledger key: {}", &csv[..16])),
        "{}",
        stdout(&out)
    );
}
