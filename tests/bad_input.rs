//! Every malformed file in `tests/data/bad/` must give exit status 1 and a message naming
//! the file and the fault — never a panic.

mod common;

use common::{dpsynth, repo, stderr};

#[test]
fn every_bad_file_is_refused_with_a_clear_message() {
    let dir = repo("tests/data/bad");
    let expected = std::fs::read_to_string(dir.join("expected.tsv")).unwrap();
    let mut checked = 0;
    let mut failures = Vec::new();
    for line in expected
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (name, want) = line.split_once('\t').unwrap();
        let path = dir.join(name);
        let out = dpsynth(&["inspect", path.to_str().unwrap()]);
        let err = stderr(&out);
        let code = out.status.code();
        if code != Some(1) {
            failures.push(format!("{name}: exit {code:?}, stderr: {err}"));
        } else if !err.contains(name) {
            failures.push(format!("{name}: message does not name the file: {err}"));
        } else if !err.contains(want) {
            failures.push(format!("{name}: message lacks '{want}': {err}"));
        } else if err.contains("panicked") {
            failures.push(format!("{name}: panicked: {err}"));
        }
        checked += 1;
    }
    assert!(
        checked >= 25,
        "the corpus must hold at least 25 files, has {checked}"
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn bad_usage_exits_with_2() {
    let out = dpsynth(&["inspect"]);
    assert_eq!(out.status.code(), Some(2));
    let out = dpsynth(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    // No empty exports, and a negative count is named as such (not taken for a flag).
    for rows in ["0", "-1"] {
        let out = dpsynth(&[
            "sample",
            "--model",
            "m.dpsynth",
            "--rows",
            rows,
            "--out",
            "s.csv",
        ]);
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains("rows"), "{}", stderr(&out));
    }
    // Semantic usage errors of `train` too: a device or a setting that does not parse.
    let data = repo("assets/adult/adult_test.csv");
    let schema = repo("assets/adult/adult.schema.json");
    let (data, schema) = (data.to_str().unwrap(), schema.to_str().unwrap());
    let train = |extra: &[&str]| {
        let mut a = vec![
            "train", "--data", data, "--schema", schema, "--method", "dp-gan",
        ];
        a.extend(["--epsilon", "1", "--delta", "1e-5"]);
        a.extend(extra);
        dpsynth(&a)
    };
    for extra in [
        &["--device", "nope"][..],
        &["--set", "no-equals-sign"][..],
        &["--boost", "--boost-share", "1.5"][..],
        &["--boost", "--boost-rounds", "0"][..],
    ] {
        let out = train(extra);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{extra:?}: {}",
            common::stderr(&out)
        );
    }
    // Boosting a method that trains no discriminator is bad usage, said before any data
    // is read or budget reserved.
    let out = dpsynth(&[
        "train",
        "--data",
        data,
        "--schema",
        schema,
        "--method",
        "dp-merf",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--boost",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(common::stderr(&out).contains("trains no discriminator"));
}

#[test]
fn a_missing_file_names_itself() {
    let out = dpsynth(&["inspect", "/nonexistent/dir/data.csv"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("/nonexistent/dir/data.csv"));
}

#[test]
fn bad_schema_files_name_the_column() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d.csv");
    std::fs::write(&data, "a,b\n1,x\n2,y\n3,x\n").unwrap();
    let schema = dir.path().join("s.json");
    std::fs::write(
        &schema,
        r#"{"columns":[{"name":"a","kind":"continuous","domain":{"bounds":{"lower":0,"upper":5}}},{"name":"b","kind":"continuous","domain":{"bounds":{"lower":0,"upper":1}}}]}"#,
    )
    .unwrap();
    let out = dpsynth(&[
        "inspect",
        data.to_str().unwrap(),
        "--schema",
        schema.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("'b'") && err.contains("not a number"), "{err}");
    std::fs::write(
        &schema,
        r#"{"columns":[{"name":"a","kind":"binary","domain":{"categories":["1"]}, "oops": 1}]}"#,
    )
    .unwrap();
    let out = dpsynth(&[
        "inspect",
        data.to_str().unwrap(),
        "--schema",
        schema.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("s.json"), "{}", stderr(&out));
}
