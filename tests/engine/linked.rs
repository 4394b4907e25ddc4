//! Linked tables from the command line, on the bundled persons-and-years panel: a pair
//! trains and samples with fresh consistent keys, the bound K truncates, the cross-table
//! evaluation runs and shows what the link is worth, and every bad link is refused before
//! the ledger is touched.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::common;

fn asset(f: &str) -> String {
    common::repo(&format!("assets/gsoep/{f}"))
        .display()
        .to_string()
}

/// `dpsynth train` on a pair; the extra flags last.
fn train(
    dir: &Path,
    parents: &str,
    children: &str,
    out: &str,
    extra: &[&str],
) -> std::process::Output {
    let ledger = dir.join("ledger.sqlite3");
    let out = dir.join(out);
    let parent_schema = asset("persons.schema.json");
    let mut args = vec!["train", "--data", parents, "--schema", &parent_schema];
    let (schema, ledger, out) = (
        asset("years.schema.json"),
        ledger.display().to_string(),
        out.display().to_string(),
    );
    args.extend([
        "--child",
        children,
        "--child-schema",
        &schema,
        "--key",
        "id",
        "--preset",
        "tiny",
        "--delta",
        "1e-6",
        "--seed",
        "4",
        "--ledger",
        &ledger,
        "--out",
        &out,
        "--json",
    ]);
    if !extra.contains(&"--method") {
        args.extend(["--method", "aim"]);
    }
    if !extra.contains(&"--epsilon") {
        args.extend(["--epsilon", "1"]);
    }
    args.extend(extra);
    common::dpsynth(&args)
}

fn ids(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().to_string())
        .collect()
}

fn sample(dir: &Path, model: &str, rows: &str, tag: &str) -> (PathBuf, PathBuf) {
    let (p, c) = (
        dir.join(format!("{tag}-p.csv")),
        dir.join(format!("{tag}-c.csv")),
    );
    let o = common::dpsynth(&[
        "sample",
        "--model",
        dir.join(model).to_str().unwrap(),
        "--rows",
        rows,
        "--out",
        p.to_str().unwrap(),
        "--child-out",
        c.to_str().unwrap(),
        "--seed",
        "9",
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    (p, c)
}

/// Half the summed absolute differences of two distributions over the same levels.
fn total_variation(a: &[f64], b: &[f64]) -> f64 {
    0.5 * a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum::<f64>()
}

/// The share of parents with 0…5 children.
fn sizes(parents: &[String], children: &[String]) -> Vec<f64> {
    let mut n: HashMap<&str, usize> = parents.iter().map(|p| (p.as_str(), 0)).collect();
    for c in children {
        *n.entry(c.as_str()).or_insert(0) += 1;
    }
    dpsynth::data::linked::size_shares(n.values().copied(), 5)
}

#[test]
fn a_pair_trains_samples_and_keeps_its_link() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = train(
        d,
        &asset("persons_train.csv"),
        &asset("years_train.csv"),
        "pair.dpsynth",
        &[
            "--max-children",
            "5",
            "--unique",
            "year",
            "--count-by",
            "outwork",
            "--min-children",
            "1",
        ],
    );
    assert!(o.status.success(), "{}", common::stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
    assert_eq!(j["parents"], 4902);
    assert_eq!(j["children"], 15687);
    assert_eq!(j["truncated_parents"], 0);
    assert_eq!(j["epsilon_spent"], 1.0);
    let (p, c) = sample(d, "pair.dpsynth", "2000", "s");
    let (pk, ck) = (ids(&p), ids(&c));
    assert_eq!(pk.len(), 2000);
    // Fresh keys 1…n, every child's among them, at most K per parent.
    assert_eq!(pk.first().map(String::as_str), Some("1"));
    let set: HashSet<&String> = pk.iter().collect();
    assert!(ck.iter().all(|k| set.contains(k)));
    // One row a year per person, in year order.
    let rows: Vec<(String, String)> = std::fs::read_to_string(&c)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let mut f = l.split(',');
            (f.next().unwrap().to_string(), f.next().unwrap().to_string())
        })
        .collect();
    assert!(
        rows.windows(2).all(|w| w[0].0 != w[1].0 || w[0].1 < w[1].1),
        "a person's years repeat or are out of order"
    );
    // Counted by outwork: how many of a person's years were out of work follows the real
    // persons' (the parent model learned each person's count).
    let out_of_work = |path: &Path| {
        let text = std::fs::read_to_string(path).unwrap();
        let mut per: HashMap<String, usize> = HashMap::new();
        for l in text.lines().skip(1) {
            let f: Vec<&str> = l.split(',').collect();
            *per.entry(f[0].to_string()).or_insert(0) += usize::from(f[4] == "1");
        }
        dpsynth::data::linked::size_shares(per.into_values(), 5)
    };
    let (real, syn) = (
        out_of_work(&common::repo("assets/gsoep/years_train.csv")),
        out_of_work(&c),
    );
    let tv = total_variation(&real, &syn);
    assert!(
        tv < 0.10,
        "years out of work per person: real {real:?}, synthetic {syn:?}"
    );
    let real = sizes(
        &ids(&common::repo("assets/gsoep/persons_train.csv")),
        &ids(&common::repo("assets/gsoep/years_train.csv")),
    );
    let syn = sizes(&pk, &ck);
    assert_eq!(
        syn[0], 0.0,
        "every person has at least one year (--min-children 1)"
    );
    let tv = total_variation(&real, &syn);
    assert!(
        tv < 0.10,
        "children per parent: real {real:?}, synthetic {syn:?}"
    );
    let header = std::fs::read_to_string(&c).unwrap();
    assert!(header.starts_with("id,year,docvis"), "{}", &header[..40]);
    let side = std::fs::read_to_string(c.with_file_name("s-c.csv.privacy.json")).unwrap();
    assert!(side.contains("one parent with all its children"), "{side}");
    // A linked model asks where its children go.
    let o = common::dpsynth(&[
        "sample",
        "--model",
        d.join("pair.dpsynth").to_str().unwrap(),
        "--rows",
        "5",
        "--out",
        d.join("x.csv").to_str().unwrap(),
    ]);
    assert!(
        !o.status.success() && common::stderr(&o).contains("--child-out"),
        "{}",
        common::stderr(&o)
    );
}

#[test]
fn k_truncates_and_the_link_beats_drawing_children_apart() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (pt, ct) = (asset("persons_train.csv"), asset("years_train.csv"));
    let o = train(d, &pt, &ct, "k2.dpsynth", &["--max-children", "2"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
    // Parents with 3, 4 or 5 years keep their first 2.
    let real = ids(&common::repo("assets/gsoep/years_train.csv"));
    let mut per: HashMap<&str, usize> = HashMap::new();
    for k in &real {
        *per.entry(k.as_str()).or_insert(0) += 1;
    }
    let over = per.values().filter(|n| **n > 2).count();
    let dropped: usize = per.values().map(|n| n.saturating_sub(2)).sum();
    assert_eq!(j["truncated_parents"], over);
    assert_eq!(j["dropped_children"], dropped);
    assert_eq!(j["children"], real.len() - dropped);
    let (p, c) = sample(d, "k2.dpsynth", "1000", "k2");
    let ck = ids(&c);
    let mut n: HashMap<&str, usize> = HashMap::new();
    for k in &ck {
        *n.entry(k.as_str()).or_insert(0) += 1;
    }
    assert!(n.values().all(|v| *v <= 2));
    assert_eq!(ids(&p).len(), 1000);

    // The same pair trained with and without the link: the two-table task (a person's sex
    // from their years) learns from the linked pair only.
    let task = |model: &str, tag: &str| {
        let o = train(
            d,
            &pt,
            &ct,
            model,
            &if tag == "apart" {
                vec!["--max-children", "5", "--independent"]
            } else {
                vec!["--max-children", "5"]
            },
        );
        assert!(o.status.success(), "{}", common::stderr(&o));
        let (p, c) = sample(d, model, "4902", tag);
        let o = common::dpsynth(&[
            "evaluate",
            "--real-train",
            &pt,
            "--real-test",
            &asset("persons_test.csv"),
            "--synthetic",
            p.to_str().unwrap(),
            "--schema",
            &asset("persons.schema.json"),
            "--real-train-child",
            &ct,
            "--real-test-child",
            &asset("years_test.csv"),
            "--synthetic-child",
            c.to_str().unwrap(),
            "--child-schema",
            &asset("years.schema.json"),
            "--key",
            "id",
            "--wasserstein-repeats",
            "2",
            "--json",
            "-",
        ]);
        assert!(o.status.success(), "{}", common::stderr(&o));
        let j: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
        assert_eq!(j["linked"]["keys_found"], 1.0);
        assert!(j["parents"]["sizes"].is_object() && j["children"]["sizes"].is_object());
        j["linked"]["task"]["synthetic"].as_f64().unwrap()
    };
    let (linked, apart) = (task("with.dpsynth", "with"), task("apart.dpsynth", "apart"));
    assert!(linked > apart + 0.05, "linked {linked}, apart {apart}");
}

#[test]
fn bad_links_are_refused_before_the_ledger_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let write = |name: &str, text: &str| {
        let p = d.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let parents = write(
        "p.csv",
        "id,female,edlevel,birth_year\n1,0,1,1950\n2,1,2,1960\n",
    );
    let children = write(
        "c.csv",
        "id,year,docvis,hospvis,outwork,married,kids,self,hhninc\n1,1984,0,0,0,1,0,0,3\n2,1985,1,0,1,1,1,0,2.5\n",
    );
    let dup = write(
        "dup.csv",
        "id,female,edlevel,birth_year\n1,0,1,1950\n1,1,2,1960\n",
    );
    let orphan = write(
        "orphan.csv",
        "id,year,docvis,hospvis,outwork,married,kids,self,hhninc\n1,1984,0,0,0,1,0,0,3\n7,1985,1,0,1,1,1,0,2.5\n",
    );
    let nokey = write(
        "nokey.csv",
        "person,year,docvis,hospvis,outwork,married,kids,self,hhninc\n1,1984,0,0,0,1,0,0,3\n2,1985,1,0,1,1,1,0,2.5\n",
    );
    let orphanless_one = write(
        "one-parent.csv",
        "id,year,docvis,hospvis,outwork,married,kids,self,hhninc\n1,1984,0,0,0,1,0,0,3\n1,1985,1,0,1,1,1,0,2.5\n",
    );
    let outside = write(
        "outside.csv",
        "id,year,docvis,hospvis,outwork,married,kids,self,hhninc\n1,1999,0,0,0,1,0,0,3\n2,1985,1,0,1,1,1,0,2.5\n",
    );
    let cases: [(&str, &str, &[&str], &str); 7] = [
        (
            &dup,
            &children,
            &["--max-children", "5"],
            "each parent must appear once",
        ),
        (
            &parents,
            &orphan,
            &["--max-children", "5"],
            "'7', which no parent has",
        ),
        (
            &parents,
            &nokey,
            &["--max-children", "5"],
            "child table has no column 'id'",
        ),
        (
            &parents,
            &orphanless_one,
            &["--max-children", "5", "--min-children", "1"],
            "fewer than the 1 every parent has",
        ),
        (
            &parents,
            &children,
            &["--max-children", "0"],
            "must be 1 to",
        ),
        (
            &parents,
            &outside,
            &["--max-children", "5"],
            "not in the column's categories",
        ),
        (
            &parents,
            &children,
            &["--max-children", "5", "--method", "dp-merf"],
            "linked tables train with aim or mst",
        ),
    ];
    for (p, c, extra, want) in cases {
        let o = train(d, p, c, "bad.dpsynth", extra);
        assert!(!o.status.success(), "{want}: trained");
        assert!(
            common::stderr(&o).contains(want),
            "{want}: {}",
            common::stderr(&o)
        );
        assert!(
            !d.join("ledger.sqlite3").exists(),
            "{want}: the ledger was opened"
        );
        assert!(!d.join("bad.dpsynth").exists());
    }
}

/// Two sheets of one workbook are a pair (`panel.xlsx#persons`, `panel.xlsx#years`), and
/// the pair is the same people as the same rows saved as two CSV files: the second
/// training draws on the budget the first spent and is refused for it.
#[test]
fn two_sheets_of_one_workbook_are_a_pair_with_the_csv_files_budget() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let book = common::repo("tests/data/formats/panel.xlsx");
    let (p, c) = (
        format!("{}#persons", book.display()),
        format!("{}#years", book.display()),
    );
    let o = train(
        d,
        &p,
        &c,
        "sheets.dpsynth",
        &["--max-children", "5", "--epsilon", "2.5"],
    );
    assert!(o.status.success(), "{}", common::stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
    assert_eq!(
        (j["parents"].as_u64(), j["children"].as_u64()),
        (Some(400), Some(1231))
    );
    let (sp, sc) = sample(d, "sheets.dpsynth", "300", "sheets");
    let set: HashSet<String> = ids(&sp).into_iter().collect();
    assert!(ids(&sc).iter().all(|k| set.contains(k)));
    // The same 400 persons and their years as CSV files.
    let read = |f: &str| std::fs::read_to_string(asset(f)).unwrap();
    let persons: Vec<String> = read("persons_train.csv")
        .lines()
        .take(401)
        .map(str::to_string)
        .collect();
    let keep: HashSet<&str> = persons
        .iter()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    let years_text = read("years_train.csv");
    let years: Vec<&str> = years_text
        .lines()
        .enumerate()
        .filter(|(i, l)| *i == 0 || keep.contains(l.split(',').next().unwrap()))
        .map(|(_, l)| l)
        .collect();
    let (pc, cc) = (d.join("persons.csv"), d.join("years.csv"));
    std::fs::write(&pc, persons.join("\n") + "\n").unwrap();
    std::fs::write(&cc, years.join("\n") + "\n").unwrap();
    let o = train(
        d,
        pc.to_str().unwrap(),
        cc.to_str().unwrap(),
        "csv.dpsynth",
        &["--max-children", "5", "--epsilon", "2.5"],
    );
    assert!(!o.status.success(), "the same people got a second budget");
    let e = common::stderr(&o);
    assert!(e.contains("left of its total"), "{e}");
}

/// "One per year" holds on a panel where almost everyone was interviewed in one year: the
/// few persons with five years need the rare ones, which the model's conditional all but
/// rules out, and no person is written with a year twice.
#[test]
fn a_unique_child_column_never_repeats_within_a_parent_even_when_its_values_are_rare() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (mut persons, mut years) = (
        String::from("id,female,edlevel,birth_year\n"),
        String::from("id,year,docvis,hospvis,outwork,married,kids,self,hhninc\n"),
    );
    for id in 1..=4000 {
        persons.push_str(&format!(
            "{id},{},{},{}\n",
            id % 2,
            1 + id % 4,
            1930 + id % 30
        ));
        let all = id % 20 == 0;
        for year in if all { 1984..=1988 } else { 1984..=1984 } {
            years.push_str(&format!("{id},{year},{},0,0,1,0,0,3.5\n", id % 3));
        }
    }
    let (p, c) = (d.join("persons.csv"), d.join("years.csv"));
    std::fs::write(&p, persons).unwrap();
    std::fs::write(&c, years).unwrap();
    let o = train(
        d,
        p.to_str().unwrap(),
        c.to_str().unwrap(),
        "rare.dpsynth",
        &["--max-children", "5", "--unique", "year", "--method", "mst"],
    );
    assert!(o.status.success(), "{}", common::stderr(&o));
    let (_, sc) = sample(d, "rare.dpsynth", "4000", "rare");
    let mut seen = HashSet::new();
    let mut repeats = 0;
    let mut five = HashMap::new();
    for l in std::fs::read_to_string(&sc).unwrap().lines().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        repeats += usize::from(!seen.insert((f[0].to_string(), f[1].to_string())));
        *five.entry(f[0].to_string()).or_insert(0) += 1;
    }
    let many = five.values().filter(|n| **n >= 4).count();
    assert!(many > 20, "too few persons with many years to test: {many}");
    assert_eq!(
        repeats, 0,
        "{repeats} (person, year) rows repeat ({many} persons with 4+ years)"
    );
}
