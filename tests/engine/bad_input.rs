//! Every malformed file in `tests/data/bad/` must give exit status 1 and a message naming
//! the file and the fault — never a panic.

use crate::common;

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
    // Each message names the file, and says what happened, once.
    let m = "/nonexistent/dir/m.dpsynth";
    for args in [
        &["inspect", "/nonexistent/dir/data.csv"][..],
        &["sample", "--model", m, "--rows", "5", "--out", "/tmp/x.csv"][..],
        &[
            "train",
            "--data",
            "/nonexistent/dir/data.csv",
            "--method",
            "dp-gan",
            "--epsilon",
            "1",
            "--delta",
            "1e-5",
        ][..],
    ] {
        let err = stderr(&dpsynth(args));
        assert_eq!(err.matches("/nonexistent/dir/").count(), 1, "{err}");
        assert_eq!(err.matches("No such file").count(), 1, "{err}");
    }
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

/// A typo in a device or a path fails before the ledger reserves anything: no budget is
/// spent by a run that could never have trained.
#[test]
fn runs_that_cannot_finish_reserve_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    let data = repo("assets/adult/adult_test.csv");
    let schema = repo("assets/adult/adult.schema.json");
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, "not a folder").unwrap();
    let run = |extra: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_dpsynth"));
        cmd.args(["train", "--data"])
            .arg(&data)
            .arg("--schema")
            .arg(&schema)
            .args(["--method", "dp-gan", "--preset", "quick"])
            .args(["--epsilon", "1", "--delta", "1e-6"])
            .args(extra)
            .env("DPSYNTH_LEDGER", &ledger)
            .current_dir(dir.path());
        cmd.output().unwrap()
    };
    let missing_out = format!("{}/no/such/dir/m.dpsynth", dir.path().display());
    let blocked_ckpt = format!("{}/sub", blocker.display());
    for (extra, says) in [
        (&["--device", "cuda", "--out", "m.dpsynth"][..], "CUDA"),
        (&["--device", "metal", "--out", "m.dpsynth"][..], "Metal"),
        (&["--out", missing_out.as_str()][..], "does not exist"),
        (&["--out", "."][..], "folder"),
        (
            &["--out", "m.dpsynth", "--checkpoints", blocked_ckpt.as_str()][..],
            "could not write",
        ),
    ] {
        let out = run(extra);
        assert_ne!(out.status.code(), Some(0), "{extra:?}");
        let err = stderr(&out);
        assert!(err.contains(says), "{extra:?}: {err}");
    }
    // Nothing was reserved or spent on the dataset.
    let out = dpsynth_with_ledger(&ledger, &["budget", "show", "--json", "--data"], &data);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["entries"].as_array().map(Vec::len), Some(0), "{v}");
    assert_eq!(v["epsilon_spent"].as_f64(), Some(0.0), "{v}");
}

fn dpsynth_with_ledger(
    ledger: &std::path::Path,
    args: &[&str],
    last: &std::path::Path,
) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_dpsynth"))
        .args(args)
        .arg(last)
        .env("DPSYNTH_LEDGER", ledger)
        .output()
        .unwrap()
}

/// A gzip bomb and a header that declares more than dpsynth reads are refused after a few
/// bytes: decompression stops at the size the header declares.
#[test]
fn idx_decompression_is_bounded_by_the_header() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let gz = |name: &str, header: &[u8], zeros: usize| {
        let path = dir.path().join(name);
        let f = std::fs::File::create(&path).unwrap();
        let mut e = flate2::write::GzEncoder::new(f, flate2::Compression::best());
        e.write_all(header).unwrap();
        let block = vec![0u8; 1 << 20];
        let mut left = zeros;
        while left > 0 {
            let k = left.min(block.len());
            e.write_all(&block[..k]).unwrap();
            left -= k;
        }
        e.finish().unwrap();
        path
    };
    let header = |n: u32, side: u32| {
        let mut h = vec![0, 0, 8, 3];
        for d in [n, side, side] {
            h.extend_from_slice(&d.to_be_bytes());
        }
        h
    };
    // 10 digits declared, 512 MB of zeros after them.
    let bomb = gz("bomb-images-idx3-ubyte.gz", &header(10, 28), 512 << 20);
    // 20,000 images of 256×256: 1.3 GB declared, a few bytes present.
    let huge = gz("huge-images-idx3-ubyte.gz", &header(20_000, 256), 16);
    for (path, says) in [(&bomb, "more than"), (&huge, "at most")] {
        let out = dpsynth(&["inspect", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }
}
