//! `dpsynth inspect` on the real Adult data: the kinds a person expects, a JSON schema
//! that round-trips, and the image loaders agreeing with each other.

mod common;

use common::{dpsynth, shared, stdout};
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
    let data = shared("data/adult_train.csv");
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
    let data = shared("data/adult_train.csv");
    let out = dpsynth(&["inspect", data.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let s = stdout(&out);
    for c in ["age", "workclass", "fnlwgt", "income", "native-country"] {
        assert!(s.contains(c), "{c} missing from:\n{s}");
    }
    assert!(s.contains("NOT covered by the privacy guarantee"));
    assert!(s.contains("FROM DATA"));
}

#[test]
fn schema_json_round_trips_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let schema_path = dir.path().join("adult.schema.json");
    let data = shared("data/adult_train.csv");
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

#[test]
fn mnist_idx_and_csv_agree() {
    let opts = dpsynth::data::csv::LoadOptions::default();
    let idx = match dpsynth::data::open(&shared("data/mnist"), &opts).unwrap() {
        dpsynth::data::Dataset::Images(s) => s,
        _ => panic!("mnist folder should load as images"),
    };
    assert_eq!(idx.len(), 60_000);
    assert_eq!((idx.width, idx.height), (28, 28));
    let counts: Vec<usize> = idx.label_counts().iter().map(|(_, c)| *c).collect();
    assert_eq!(
        counts,
        vec![5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    );
    let csv = match dpsynth::data::open(&shared("data/mnist_test_2k.csv"), &opts).unwrap() {
        dpsynth::data::Dataset::Images(s) => s,
        _ => panic!("a label,pixel CSV should load as images"),
    };
    let test_idx =
        dpsynth::data::image::load_idx_dataset(&shared("data/mnist/t10k-images-idx3-ubyte.gz"))
            .unwrap();
    assert_eq!(test_idx.len(), 10_000);
    assert_eq!(csv.len(), 2_000);
    assert_eq!(csv, test_idx.head(2_000));
    let train_csv = match dpsynth::data::open(&shared("data/mnist_train_10k.csv"), &opts).unwrap() {
        dpsynth::data::Dataset::Images(s) => s,
        _ => panic!("a label,pixel CSV should load as images"),
    };
    assert_eq!(train_csv, idx.head(10_000));
    // The bundled sample is the head of the real training set.
    let sample = dpsynth::data::image::load_idx_dataset(&common::repo(
        "assets/mnist/train-images-idx3-ubyte.gz",
    ))
    .unwrap();
    assert_eq!(sample.len(), 2_000);
    assert_eq!(sample, idx.head(2_000));
}

#[test]
fn inspect_reports_images() {
    let out = dpsynth(&["inspect", shared("data/mnist").to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["type"], "images");
    assert_eq!(v["count"], 60000);
    assert_eq!(v["label_counts"]["1"], 6742);
}
