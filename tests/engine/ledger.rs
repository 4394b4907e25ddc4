//! The budget ledger never loses a charge: SIGKILL at random points, and two processes
//! racing for the same budget.

use crate::common;

use std::io::BufRead as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use dpsynth::privacy::Budget;
use dpsynth::privacy::ledger::Ledger;
use rand::Rng as _;

fn torture(ledger: &std::path::Path, dataset: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dpsynth"));
    c.args([
        "budget",
        "torture",
        "--ledger",
        ledger.to_str().unwrap(),
        "--dataset",
        dataset,
    ])
    .args(extra)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    c
}

#[test]
fn sigkill_never_loses_a_reservation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite3");
    let mut l = Ledger::open(&path).unwrap();
    l.set_budget(
        "d",
        Budget {
            epsilon: 1e6,
            delta: 1e-5,
        },
    )
    .unwrap();
    drop(l);
    let mut rng = rand::rng();
    let mut seen_reserved = std::collections::BTreeSet::new();
    let mut seen_settled = std::collections::BTreeSet::new();
    for round in 0..50 {
        let mut child = torture(&path, "d", &["--iterations", "100000"])
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut lines = Vec::new();
            for line in std::io::BufReader::new(stdout).lines() {
                match line {
                    Ok(l) => lines.push(l),
                    Err(_) => break,
                }
            }
            lines
        });
        std::thread::sleep(Duration::from_millis(rng.random_range(20..150)));
        child.kill().unwrap(); // SIGKILL
        let _ = child.wait();
        for line in reader.join().unwrap() {
            if let Some(id) = line.strip_prefix("reserved ") {
                seen_reserved.insert(id.parse::<i64>().unwrap());
            } else if let Some(id) = line.strip_prefix("settled ") {
                seen_settled.insert(id.parse::<i64>().unwrap());
            }
        }
        let l =
            Ledger::open(&path).unwrap_or_else(|e| panic!("round {round}: reopening failed: {e}"));
        let st = l.standing("d").unwrap();
        let by_id: std::collections::HashMap<i64, &str> = st
            .entries
            .iter()
            .map(|e| (e.id, e.state.as_str()))
            .collect();
        for id in &seen_reserved {
            assert!(
                by_id.contains_key(id),
                "round {round}: reservation {id} was lost"
            );
        }
        for id in &seen_settled {
            assert_eq!(
                by_id.get(id),
                Some(&"settled"),
                "round {round}: settlement of {id} was lost"
            );
        }
        // Every kill leaves at most one open reservation behind (the step in flight).
        assert!(st.reserved_entries <= round + 1);
        // Spent ε counts every open reservation in full (once there is one: a kill may
        // land before the first).
        if !seen_reserved.is_empty() {
            assert!(st.spent > 0.0);
        }
    }
    assert!(
        seen_settled.len() > 50,
        "the torture loop made too little progress to test anything"
    );
}

#[test]
fn two_processes_cannot_overspend_together() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite3");
    let mut l = Ledger::open(&path).unwrap();
    let budget = Budget {
        epsilon: 0.5,
        delta: 1e-5,
    };
    l.set_budget("alone", budget).unwrap();
    l.set_budget("shared", budget).unwrap();
    drop(l);
    // How many reservations fit for one process alone.
    let out = torture(
        &path,
        "alone",
        &["--no-settle", "--steps", "20", "--iterations", "100000"],
    )
    .output()
    .unwrap();
    let alone = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("reserved"))
        .count();
    assert!(alone > 5, "{alone}");
    let a = torture(
        &path,
        "shared",
        &["--no-settle", "--steps", "20", "--iterations", "100000"],
    )
    .spawn()
    .unwrap();
    let b = torture(
        &path,
        "shared",
        &["--no-settle", "--steps", "20", "--iterations", "100000"],
    )
    .spawn()
    .unwrap();
    let (oa, ob) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(
        oa.status.success(),
        "{}",
        String::from_utf8_lossy(&oa.stderr)
    );
    assert!(
        ob.status.success(),
        "{}",
        String::from_utf8_lossy(&ob.stderr)
    );
    let count = |o: &std::process::Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| l.starts_with("reserved"))
            .count()
    };
    assert_eq!(
        count(&oa) + count(&ob),
        alone,
        "together they reserved a different number than one alone"
    );
    let l = Ledger::open(&path).unwrap();
    let st = l.standing("shared").unwrap();
    assert!(st.spent <= budget.epsilon, "overspent: {}", st.spent);
}

#[test]
fn budget_cli_set_and_show() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.sqlite3");
    let data = common::repo("assets/adult/adult_train.csv");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_dpsynth"))
            .args(args)
            .env("DPSYNTH_LEDGER", &ledger)
            .output()
            .unwrap()
    };
    let out = run(&["budget", "show", "--data", data.to_str().unwrap(), "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["budget_is_default"], true);
    let out = run(&[
        "budget",
        "set",
        "--data",
        data.to_str().unwrap(),
        "--epsilon",
        "2.5",
        "--delta",
        "1e-6",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let out = run(&["budget", "show", "--data", data.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["epsilon_total"], 2.5);
    assert_eq!(v["delta"], 1e-6);
    assert_eq!(v["epsilon_spent"], 0.0);
    // The key is the content: a copy elsewhere shares the budget.
    let copy = dir.path().join("renamed.csv");
    std::fs::copy(&data, &copy).unwrap();
    let out = run(&["budget", "show", "--data", copy.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["epsilon_total"], 2.5);
    // …and so does the same table under another byte layout: one budget for one set of
    // people (the key is a digest of the parsed rows as a multiset).
    let text = std::fs::read_to_string(&data).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let header = lines.remove(0);
    lines.reverse();
    let variants = [
        ("newline.csv", format!("{text}\n")),
        ("crlf.csv", text.replace('\n', "\r\n")),
        ("shuffled.csv", format!("{header}\n{}\n", lines.join("\n"))),
    ];
    for (name, body) in &variants {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        let out = run(&["budget", "show", "--data", p.to_str().unwrap(), "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["epsilon_total"], 2.5, "{name}: {v}");
        assert_eq!(v["budget_is_default"], false, "{name}");
    }
    // A different set of people (one row fewer) is a different dataset.
    let fewer = dir.path().join("fewer.csv");
    std::fs::write(&fewer, format!("{header}\n{}\n", lines[1..].join("\n"))).unwrap();
    let out = run(&[
        "budget",
        "show",
        "--data",
        fewer.to_str().unwrap(),
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["budget_is_default"], true);
    let out = run(&[
        "budget",
        "set",
        "--data",
        data.to_str().unwrap(),
        "--epsilon=-1",
        "--delta",
        "1e-6",
    ]);
    assert_eq!(out.status.code(), Some(1));
}
