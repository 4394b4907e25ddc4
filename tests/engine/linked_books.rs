//! A linked pair is charged to its tables' books, not only its own: the same people never
//! get a second budget through a pair, and what cannot be estimated at the unit level is
//! refused before anything is reserved.

use crate::common;

fn asset(f: &str) -> String {
    common::repo(&format!("assets/gsoep/{f}"))
        .display()
        .to_string()
}

fn run(args: &[&str]) -> std::process::Output {
    common::dpsynth(args)
}

/// Persons trained alone at ε = 2.5 under a total of 3 leave no room for the pair at
/// ε = 2.5: refused before anything is spent, naming the parent table's book. A small
/// pair fits, and then every book holds it: `budget show --child` prints the three.
#[test]
fn a_pair_is_charged_to_the_parent_and_child_tables_books() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let book = common::repo("tests/data/formats/panel.xlsx");
    let (p, c) = (
        format!("{}#persons", book.display()),
        format!("{}#years", book.display()),
    );
    let ledger = d.join("ledger.sqlite3").display().to_string();
    let (ps, cs) = (asset("persons.schema.json"), asset("years.schema.json"));
    let out = |f: &str| d.join(f).display().to_string();
    let alone = out("alone.dpsynth");
    let o = run(&[
        "train",
        "--data",
        &p,
        "--schema",
        &ps,
        "--method",
        "aim",
        "--preset",
        "tiny",
        "--epsilon",
        "2.5",
        "--delta",
        "1e-6",
        "--seed",
        "1",
        "--ledger",
        &ledger,
        "--out",
        &alone,
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let pair = |epsilon: &str, file: &str| {
        run(&[
            "train",
            "--data",
            &p,
            "--schema",
            &ps,
            "--child",
            &c,
            "--child-schema",
            &cs,
            "--key",
            "id",
            "--max-children",
            "5",
            "--method",
            "aim",
            "--preset",
            "tiny",
            "--epsilon",
            epsilon,
            "--delta",
            "1e-6",
            "--seed",
            "2",
            "--ledger",
            &ledger,
            "--out",
            &out(file),
        ])
    };
    let o = pair("2.5", "pair.dpsynth");
    assert!(!o.status.success(), "the persons got a second budget");
    let e = common::stderr(&o);
    assert!(e.contains("the parent table's book"), "{e}");
    assert!(!d.join("pair.dpsynth").exists());
    let show = || {
        let o = run(&[
            "budget", "show", "--data", &p, "--child", &c, "--ledger", &ledger, "--json",
        ]);
        assert!(o.status.success(), "{}", common::stderr(&o));
        serde_json::from_str::<serde_json::Value>(&common::stdout(&o)).unwrap()
    };
    let before = show();
    assert_eq!(before["pair"]["entries"].as_array().map(Vec::len), Some(0));
    assert_eq!(before["child"]["entries"].as_array().map(Vec::len), Some(0));
    let o = pair("0.3", "small.dpsynth");
    assert!(o.status.success(), "{}", common::stderr(&o));
    let after = show();
    let spent = |j: &serde_json::Value, b: &str| j[b]["epsilon_spent"].as_f64().unwrap();
    for b in ["pair", "parent", "child"] {
        assert_eq!(
            after[b]["entries"].as_array().map(Vec::len),
            Some(1 + usize::from(b == "parent")),
            "{b}"
        );
    }
    assert!(spent(&after, "child") > 0.29 && spent(&after, "child") <= 0.3 + 1e-9);
    assert!(spent(&after, "parent") > spent(&before, "parent") + 0.01);
    // The child table's people are in the pair: its book carries the pair's charge.
    assert!((spent(&after, "child") - spent(&after, "pair")).abs() < 1e-9);
}

/// A column marked "estimate privately" in either schema is refused in a linked run even
/// under `--allow-data-domains`, before the ledger is opened.
#[test]
fn estimating_a_domain_inside_a_pair_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut child: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(asset("years.schema.json")).unwrap())
            .unwrap();
    let cols = child["columns"].as_array_mut().unwrap();
    let docvis = cols.iter_mut().find(|c| c["name"] == "docvis").unwrap();
    docvis["provenance"] = serde_json::json!("to_estimate");
    let cs = d.join("years.schema.json");
    std::fs::write(&cs, child.to_string()).unwrap();
    let ledger = d.join("ledger.sqlite3");
    let book = common::repo("tests/data/formats/panel.xlsx");
    let o = run(&[
        "train",
        "--data",
        &format!("{}#persons", book.display()),
        "--schema",
        &asset("persons.schema.json"),
        "--child",
        &format!("{}#years", book.display()),
        "--child-schema",
        cs.to_str().unwrap(),
        "--key",
        "id",
        "--max-children",
        "5",
        "--method",
        "mst",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--allow-data-domains",
        "--ledger",
        ledger.to_str().unwrap(),
        "--out",
        d.join("m.dpsynth").to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let e = common::stderr(&o);
    assert!(
        e.contains("'docvis' (child table) is marked to be estimated privately"),
        "{e}"
    );
    assert!(!ledger.exists(), "the ledger was opened");
}

/// A schema that calls a domain `dp_estimated` without an estimate on the table's book is
/// treated as read off the rows, and the pair is refused before anything is reserved.
#[test]
fn an_unrecorded_dp_estimated_claim_in_a_pair_is_refused_before_the_reservation() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut parent: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(asset("persons.schema.json")).unwrap())
            .unwrap();
    let cols = parent["columns"].as_array_mut().unwrap();
    let year = cols.iter_mut().find(|c| c["name"] == "birth_year").unwrap();
    year["provenance"] = serde_json::json!({"dp_estimated": {"epsilon": 0.01}});
    let ps = d.join("persons.schema.json");
    std::fs::write(&ps, parent.to_string()).unwrap();
    let ledger = d.join("ledger.sqlite3");
    let book = common::repo("tests/data/formats/panel.xlsx");
    let (p, c) = (
        format!("{}#persons", book.display()),
        format!("{}#years", book.display()),
    );
    let o = run(&[
        "train",
        "--data",
        &p,
        "--schema",
        ps.to_str().unwrap(),
        "--child",
        &c,
        "--child-schema",
        &asset("years.schema.json"),
        "--key",
        "id",
        "--max-children",
        "5",
        "--method",
        "mst",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--ledger",
        ledger.to_str().unwrap(),
        "--out",
        d.join("m.dpsynth").to_str().unwrap(),
    ]);
    assert!(!o.status.success(), "an unrecorded estimate was trusted");
    let e = common::stderr(&o);
    assert!(
        e.contains("birth_year") && e.contains("read off the rows"),
        "{e}"
    );
    let o = run(&[
        "budget",
        "show",
        "--data",
        &p,
        "--child",
        &c,
        "--ledger",
        ledger.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
    for b in ["pair", "parent", "child"] {
        assert_eq!(j[b]["entries"].as_array().map(Vec::len), Some(0), "{b}");
    }
}
