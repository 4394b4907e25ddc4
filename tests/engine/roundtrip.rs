//! decode(encode(t)) == t for in-domain tables, and atomic CSV export that reads back.

use crate::common;

use dpsynth::data::csv::{LoadOptions, load_csv, parse_csv_bytes};
use dpsynth::data::encode::{DecodeMode, Encoding};
use dpsynth::data::infer::infer_schema;
use dpsynth::data::schema::{Domain, Kind};
use dpsynth::data::{Table, Values, export};
use rand::SeedableRng as _;

fn assert_tables_match(a: &Table, b: &Table, rel_tol: f64) {
    assert_eq!(a.n_rows, b.n_rows);
    assert_eq!(a.columns.len(), b.columns.len());
    for (ca, cb) in a.columns.iter().zip(&b.columns) {
        assert_eq!(ca.name, cb.name);
        match (&ca.values, &cb.values) {
            (Values::Number(x), Values::Number(y)) => {
                let span = x
                    .iter()
                    .flatten()
                    .chain(y.iter().flatten())
                    .fold(0.0f64, |m, v| m.max(v.abs()))
                    .max(1.0);
                for (r, (u, v)) in x.iter().zip(y).enumerate() {
                    match (u, v) {
                        (Some(u), Some(v)) => assert!(
                            (u - v).abs() <= rel_tol * span,
                            "{} row {r}: {u} vs {v}",
                            ca.name
                        ),
                        (None, None) => {}
                        _ => panic!("{} row {r}: {u:?} vs {v:?}", ca.name),
                    }
                }
            }
            (x, y) => assert_eq!(x, y, "column {}", ca.name),
        }
    }
}

#[test]
fn adult_round_trips_exactly() {
    let t = load_csv(
        &common::repo("assets/adult/adult_train.csv"),
        &LoadOptions::default(),
    )
    .unwrap();
    let schema = infer_schema(&t).unwrap().schema;
    let enc = Encoding::new(&schema).unwrap();
    let e = enc.encode(&t).unwrap();
    assert_eq!(e.n_rows, 32561);
    assert!(e.values.iter().all(|v| (0.0..=1.0).contains(v)));
    assert!(
        e.clamped.iter().all(|&c| c == 0),
        "inferred bounds clamp nothing"
    );
    // Spans cover the width exactly, in order.
    let mut at = 0;
    for s in &enc.spans {
        assert_eq!(s.start, at);
        at += s.len;
    }
    assert_eq!(at, enc.width);
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let back = enc.decode(&e.values, DecodeMode::Argmax, &mut rng).unwrap();
    // Every Adult column is integer or categorical, so the round trip is exact.
    assert_tables_match(&t, &back, 0.0);
}

#[test]
fn real_valued_columns_round_trip_within_float_precision() {
    let t = load_csv(
        &common::repo("tests/data/breast_cancer.csv"),
        &LoadOptions::default(),
    )
    .unwrap();
    let schema = infer_schema(&t).unwrap().schema;
    let enc = Encoding::new(&schema).unwrap();
    let e = enc.encode(&t).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    let back = enc.decode(&e.values, DecodeMode::Argmax, &mut rng).unwrap();
    assert_tables_match(&t, &back, 1e-6);
}

#[test]
fn out_of_domain_values_are_clamped_and_counted() {
    let t = parse_csv_bytes(
        b"x,y\n-5,a\n5,b\n50,a\n".to_vec(),
        "t",
        &LoadOptions::default(),
    )
    .unwrap();
    let mut schema = infer_schema(&t).unwrap().schema;
    // Three integer levels are guessed categorical; the user says it is a quantity.
    schema.columns[0].kind = Kind::Continuous;
    schema.columns[0].integer = true;
    schema.columns[0].domain = Some(Domain::Bounds {
        lower: 0.0,
        upper: 10.0,
    });
    let enc = Encoding::new(&schema).unwrap();
    let e = enc.encode(&t).unwrap();
    assert_eq!(e.clamped[0], 2);
    assert_eq!(e.row(0)[0], 0.0);
    assert_eq!(e.row(2)[0], 1.0);
}

#[test]
fn sampling_decode_follows_the_scores() {
    let t = parse_csv_bytes(b"c\na\nb\nc\na\n".to_vec(), "t", &LoadOptions::default()).unwrap();
    let schema = infer_schema(&t).unwrap().schema;
    assert_eq!(schema.columns[0].kind, Kind::Categorical);
    let enc = Encoding::new(&schema).unwrap();
    let n = 20_000;
    let scores: Vec<f32> = (0..n).flat_map(|_| [0.2f32, 0.3, 0.5]).collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let back = enc.decode(&scores, DecodeMode::Sample, &mut rng).unwrap();
    let count = |v: &str| {
        (0..n)
            .filter(|&r| back.columns[0].text(r).as_deref() == Some(v))
            .count() as f64
            / n as f64
    };
    assert!((count("a") - 0.2).abs() < 0.02);
    assert!((count("c") - 0.5).abs() < 0.02);
}

#[test]
fn exported_csv_reads_back_identical() {
    let t = load_csv(
        &common::repo("assets/adult/adult_test.csv"),
        &LoadOptions::default(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("export.csv");
    export::write_csv(&t, &out).unwrap();
    let back = load_csv(&out, &LoadOptions::default()).unwrap();
    assert_tables_match(&t, &back, 0.0);
    // No temporary files are left beside the export.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn text_with_delimiters_and_quotes_survives_export() {
    let t = parse_csv_bytes(
        b"name,n\n\"Smith, J.\",1\n\"say \"\"hi\"\"\",2\nplain,3\n".to_vec(),
        "t",
        &LoadOptions::default(),
    )
    .unwrap();
    let bytes = export::to_csv_bytes(&t).unwrap();
    let back = parse_csv_bytes(bytes, "back", &LoadOptions::default()).unwrap();
    assert_tables_match(&t, &back, 0.0);
}

/// A number column of fractions writes its whole values as a person does ("0", not
/// "0.0"), so a reader comparing text sees the point mass the model kept.
#[test]
fn whole_values_beside_fractions_are_written_without_a_point() {
    let t = parse_csv_bytes(
        b"wage,n\n0,1\n12.5,2\n0,3\n,4\n3.25,5\n".to_vec(),
        "t",
        &LoadOptions::default(),
    )
    .unwrap();
    let text = String::from_utf8(export::to_csv_bytes(&t).unwrap()).unwrap();
    let cells: Vec<&str> = text.lines().collect();
    assert_eq!(
        cells,
        ["wage,n", "0,1", "12.5,2", "0,3", ",4", "3.25,5"],
        "{text}"
    );
    let back = parse_csv_bytes(text.into_bytes(), "back", &LoadOptions::default()).unwrap();
    assert_tables_match(&t, &back, 0.0);
}

/// Dates and times encode as days on the public bounds and decode to the same text.
#[test]
fn dates_round_trip_in_their_own_format() {
    let csv = "d,t\n2020-02-29,2021-03-01 10:15:00\n1999-12-31,2021-03-02 23:59:59\n2020-01-01,2021-03-01 00:00:00\n2000-06-15,2021-03-03 12:00:30\n";
    let t = parse_csv_bytes(csv.as_bytes().to_vec(), "d.csv", &LoadOptions::default()).unwrap();
    let schema = infer_schema(&t).unwrap().schema;
    assert_eq!(schema.columns[0].kind_label(), "date/time");
    assert_eq!(
        schema.columns[1].time_format.as_deref(),
        Some("%Y-%m-%d %H:%M:%S")
    );
    let enc = Encoding::new(&schema).unwrap();
    let e = enc.encode(&t).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let back = enc.decode(&e.values, DecodeMode::Argmax, &mut rng).unwrap();
    assert_eq!(
        back.column("d").unwrap().values,
        t.column("d").unwrap().values
    );
    // Times come back within a second (f32 resolution over a two-day span).
    for r in 0..t.n_rows {
        let f = "%Y-%m-%d %H:%M:%S";
        let a = dpsynth::data::times::parse(&t.column("t").unwrap().text(r).unwrap(), f).unwrap();
        let b =
            dpsynth::data::times::parse(&back.column("t").unwrap().text(r).unwrap(), f).unwrap();
        assert!((a - b).abs() * 86_400.0 <= 1.0, "row {r}: {a} vs {b}");
    }
    // A cell that is no date in the format is an error naming it.
    let bad = parse_csv_bytes(
        b"d,t\n2020-02-28,2021-03-01 10:15:00\n2020-02-30,2021-03-01 10:15:00\n".to_vec(),
        "b.csv",
        &LoadOptions::default(),
    )
    .unwrap();
    let err = enc.encode(&bad).unwrap_err().to_string();
    assert!(
        err.contains("row 2") && err.contains("2020-02-30") && err.contains("%Y-%m-%d"),
        "{err}"
    );
}
