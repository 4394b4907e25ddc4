//! The tables the harness runs on: D and its neighbours (a record added, removed or
//! replaced at the end, the front and the middle of the file, and hostile records), digit
//! images in IDX files, and the linked pair of persons and their years.

use std::path::{Path, PathBuf};

use crate::common;

/// Rows of D.
pub const N: usize = 600;

/// One neighbour of D.
pub struct Near {
    pub what: &'static str,
    pub file: PathBuf,
    /// How many records apart (a replaced record is two).
    pub records: f64,
    /// A record the public schema forbids: refusing it before any release is right. An
    /// ordinary record must never be refused.
    pub hostile: bool,
    /// For each row, the index in D of the same record (`None`: the added one).
    pub map: Vec<Option<usize>>,
}

impl Near {
    /// Whether D and this neighbour have as many records (a replaced record): the only
    /// neighbours of a run that treats the record count as public, as the default path
    /// does (the statement says so).
    pub fn same_count(&self) -> bool {
        self.records == 2.0
    }
}

/// The identity map of D's `n` rows.
pub fn identity(n: usize) -> Vec<Option<usize>> {
    (0..n).map(Some).collect()
}

/// Where a neighbour's record goes.
#[derive(Clone, Copy)]
enum At {
    Front,
    Middle,
    End,
}

/// How D is edited into a neighbour.
#[derive(Clone, Copy)]
enum Edit {
    Add(At),
    Remove(At),
    Replace(At),
}

fn index(at: At, len: usize) -> usize {
    match at {
        At::Front => 0,
        At::Middle => len / 2,
        At::End => len,
    }
}

/// `rows` edited by `edit` with `record`, and for each row the index of its record in
/// `rows` (`None`: the new one).
fn edited<T: Clone>(rows: &[T], edit: Edit, record: &T) -> (Vec<T>, Vec<Option<usize>>) {
    let mut v = rows.to_vec();
    let mut map = identity(rows.len());
    match edit {
        Edit::Add(at) => {
            let i = index(at, v.len());
            v.insert(i, record.clone());
            map.insert(i, None);
        }
        Edit::Remove(at) => {
            let i = index(at, v.len()).min(v.len() - 1);
            v.remove(i);
            map.remove(i);
        }
        Edit::Replace(at) => {
            let i = index(at, v.len()).min(v.len() - 1);
            v[i] = record.clone();
            map[i] = None;
        }
    }
    (v, map)
}

/// The ordinary neighbours: (name, edit, records apart).
fn ordinary() -> [(&'static str, Edit, f64); 8] {
    [
        ("one added", Edit::Add(At::End), 1.0),
        ("one added at the front", Edit::Add(At::Front), 1.0),
        ("one added in the middle", Edit::Add(At::Middle), 1.0),
        ("one removed", Edit::Remove(At::End), 1.0),
        ("one removed from the front", Edit::Remove(At::Front), 1.0),
        ("one removed from the middle", Edit::Remove(At::Middle), 1.0),
        ("one replaced", Edit::Replace(At::End), 2.0),
        ("one replaced in the middle", Edit::Replace(At::Middle), 2.0),
    ]
}

fn adult_lines() -> Vec<String> {
    std::fs::read_to_string(common::repo("assets/adult/adult_train.csv"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn write_lines(dir: &Path, name: &str, header: &str, rows: &[String]) -> PathBuf {
    let path = dir.join(name);
    let mut text = String::from(header);
    text.push('\n');
    for r in rows {
        text.push_str(r);
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// D: the Adult sample's header and its first `N` rows.
pub fn table(dir: &Path) -> PathBuf {
    let lines = adult_lines();
    write_lines(dir, "d.csv", &lines[0], &lines[1..=N])
}

/// The neighbours of D.
pub fn neighbours(dir: &Path) -> Vec<Near> {
    let lines = adult_lines();
    let (header, rows, next) = (&lines[0], &lines[1..=N], lines[N + 1].clone());
    let mut out: Vec<Near> = ordinary()
        .into_iter()
        .enumerate()
        .map(|(i, (what, edit, records))| {
            let (rows, map) = edited(rows, edit, &next);
            Near {
                what,
                file: write_lines(dir, &format!("near{i}.csv"), header, &rows),
                records,
                hostile: false,
                map,
            }
        })
        .collect();
    let hostile = [
        (
            "an outlier added",
            "1000000000, Private, 1e12, Doctorate, 99, Never-married, Sales, Unmarried, White, Female, 99999999, -5, 1000, Mars, >50K",
        ),
        (
            "non-numbers added",
            "nan, Private, inf, Bachelors, -inf, Divorced, Sales, Unmarried, White, Male, NaN, 0, 40, United-States, <=50K",
        ),
        (
            "unseen categories added",
            "40, Starfleet, 100000, Academy, 13, Bonded, Captain, Partner, Vulcan, Other, 0, 0, 40, Vulcan, <=50K",
        ),
        ("blanks added", ", , , , , , , , , , , , , , "),
    ];
    for (i, (what, record)) in hostile.into_iter().enumerate() {
        let (rows, mut map) = edited(rows, Edit::Add(At::End), &record.to_string());
        if record.split(',').all(|c| c.trim().is_empty()) {
            // The reader drops a row with no value in any cell: the run's table is D's.
            map.pop();
        }
        out.push(Near {
            what,
            file: write_lines(dir, &format!("hostile{i}.csv"), header, &rows),
            records: 1.0,
            hostile: true,
            map,
        });
    }
    out
}

/// Digits in D's image set.
pub const DIGITS: usize = 200;

/// MNIST's first `DIGITS` digits as an uncompressed IDX pair in `dir/name/`, and their
/// neighbours (a digit added, removed or replaced at the end, front and middle): the
/// image file of each.
pub fn digits(dir: &Path) -> (PathBuf, Vec<Near>) {
    let set = dpsynth::data::image::load_idx_dataset(&common::repo(
        "assets/mnist/train-images-idx3-ubyte.gz",
    ))
    .unwrap();
    let side = set.width * set.height;
    let labels = set.labels.clone().unwrap();
    let digit = |i: usize| (set.pixels[i * side..(i + 1) * side].to_vec(), labels[i]);
    let d: Vec<(Vec<u8>, u8)> = (0..DIGITS).map(digit).collect();
    let next = digit(DIGITS);
    let write = |name: &str, v: &[(Vec<u8>, u8)]| -> PathBuf {
        let at = dir.join(name);
        std::fs::create_dir_all(&at).unwrap();
        let head = |magic: u32, dims: &[usize]| -> Vec<u8> {
            let mut h = magic.to_be_bytes().to_vec();
            for d in dims {
                h.extend((*d as u32).to_be_bytes());
            }
            h
        };
        let mut img = head(0x0803, &[v.len(), set.height, set.width]);
        let mut lab = head(0x0801, &[v.len()]);
        for (p, l) in v {
            img.extend(p);
            lab.push(*l);
        }
        std::fs::write(at.join("train-labels-idx1-ubyte"), lab).unwrap();
        let images = at.join("train-images-idx3-ubyte");
        std::fs::write(&images, img).unwrap();
        images
    };
    let base = write("digits-d", &d);
    let near = ordinary()
        .into_iter()
        .enumerate()
        .map(|(i, (what, edit, records))| {
            let (digits, map) = edited(&d, edit, &next);
            Near {
                what,
                file: write(&format!("digits-n{i}"), &digits),
                records,
                hostile: false,
                map,
            }
        })
        .collect();
    (base, near)
}

/// Parents of the linked pair's D, and the bound on children.
pub const PARENTS: usize = 300;
pub const K: usize = 5;

/// The bundled household-panel pair cut to its first `PARENTS` persons (and their years),
/// with `drop` left out and `extra` persons (each with its years) added at the end (both:
/// a person replaced).
pub fn pair(
    dir: &Path,
    tag: &str,
    drop: Option<&str>,
    extra: &[(&str, Vec<String>)],
) -> (PathBuf, PathBuf) {
    let read =
        |f: &str| std::fs::read_to_string(common::repo(&format!("assets/gsoep/{f}"))).unwrap();
    let (persons, years) = (read("persons_train.csv"), read("years_train.csv"));
    let id = |l: &str| l.split(',').next().unwrap_or("").to_string();
    let mut p: Vec<String> = persons
        .lines()
        .take(1 + PARENTS)
        .map(str::to_string)
        .collect();
    let keep: std::collections::HashSet<String> = p.iter().skip(1).map(|l| id(l)).collect();
    let mut c: Vec<String> = years
        .lines()
        .enumerate()
        .filter(|(i, l)| *i == 0 || keep.contains(&id(l)))
        .map(|(_, l)| l.to_string())
        .collect();
    if let Some(d) = drop {
        p.retain(|l| id(l) != d);
        c.retain(|l| id(l) != d);
    }
    for (parent, children) in extra {
        p.push(parent.to_string());
        c.extend(children.iter().cloned());
    }
    let (pp, cp) = (
        dir.join(format!("{tag}-p.csv")),
        dir.join(format!("{tag}-c.csv")),
    );
    std::fs::write(&pp, p.join("\n") + "\n").unwrap();
    std::fs::write(&cp, c.join("\n") + "\n").unwrap();
    (pp, cp)
}
