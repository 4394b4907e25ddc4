//! What only a linked pair can be judged on: how many children each parent has, how a
//! parent's columns go with its children's (2-way tables on the joined rows), and a task
//! that needs both tables (predict a parent's column from the parent's other columns and
//! its children's). Each figure is computed for the synthetic pair against the real one;
//! the task trains on the synthetic pair and tests on the real held-out parents, as the
//! papers' train-on-synthetic / test-on-real scores do.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::data::schema::{ColumnSpec, Domain, Kind, Schema};
use crate::data::table::Table;

/// A parent table and its children, with the schemas their columns are read by.
pub struct Pair<'a> {
    pub parents: &'a Table,
    pub children: &'a Table,
}

/// The cross-table figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkedReport {
    /// Share of synthetic children whose key is a synthetic parent's.
    pub keys_found: f64,
    /// Shares of parents with 0, 1, … children (the last: that many or more).
    pub children_real: Vec<f64>,
    pub children_synthetic: Vec<f64>,
    /// Total variation between the two.
    pub children_tv: f64,
    /// Mean total variation of the parent-column × child-column tables on joined rows.
    pub cross_mean_tv: f64,
    /// Every such table's total variation, worst first.
    pub cross: Vec<CrossPair>,
    /// The two-table task: the parent column predicted, AUROC (binary) or accuracy.
    pub task: Option<Task>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrossPair {
    pub parent: String,
    pub child: String,
    pub tv: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub label: String,
    /// "auroc" for a binary label, else "accuracy".
    pub score: String,
    /// Trained on the real training pair (the ceiling).
    pub real: f64,
    /// Trained on the synthetic pair.
    pub synthetic: f64,
}

/// A cell's level for counting: its category, a point mass, or one of ten equal bins over
/// the schema's bounds (the real rows' range when the schema gives none).
struct Levels {
    spec: ColumnSpec,
    range: (f64, f64),
}

impl Levels {
    fn of(spec: &ColumnSpec, real: &Table) -> Self {
        let range = match &spec.domain {
            Some(Domain::Bounds { lower, upper }) => (*lower, *upper),
            _ => {
                let c = real.column(&spec.name);
                let v: Vec<f64> = (0..real.n_rows)
                    .filter_map(|r| c.and_then(|c| c.text(r)).and_then(|t| t.parse().ok()))
                    .collect();
                let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                (lo, hi)
            }
        };
        Self {
            spec: spec.clone(),
            range,
        }
    }

    fn level(&self, t: &Table, r: usize) -> String {
        let Some(text) = t.column(&self.spec.name).and_then(|c| c.text(r)) else {
            return "∅".into();
        };
        if self.spec.kind != Kind::Continuous {
            return text.trim().to_string();
        }
        let Ok(x) = text.trim().parse::<f64>() else {
            return text;
        };
        if self.spec.point_masses.iter().any(|p| (p - x).abs() < 1e-9) {
            return format!("={x}");
        }
        let (lo, hi) = self.range;
        let u = if hi > lo { (x - lo) / (hi - lo) } else { 0.0 };
        format!("bin {}", ((u * 10.0).floor() as i64).clamp(0, 9))
    }
}

fn key(t: &Table, key: &str, r: usize) -> Option<String> {
    t.column(key)
        .and_then(|c| crate::data::linked::key_text(c, r))
}

/// A pair split by parent: `share` of the parents (seeded) with all their children held
/// out, the rest kept — (kept parents, kept children), (held parents, held children). The
/// window scores its two-table task on the held-out pair, as `evaluate` does on a test
/// file.
pub fn split_pair(
    p: &Pair<'_>,
    k: &str,
    share: f64,
    seed: u64,
) -> ((Table, Table), (Table, Table)) {
    let (kept, held) = p.parents.split_off(share, seed);
    let keys = |t: &Table| -> std::collections::HashSet<String> {
        (0..t.n_rows).filter_map(|r| key(t, k, r)).collect()
    };
    let held_keys = keys(&held);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for r in 0..p.children.n_rows {
        match key(p.children, k, r) {
            Some(x) if held_keys.contains(&x) => b.push(r),
            _ => a.push(r),
        }
    }
    ((kept, p.children.rows(&a)), (held, p.children.rows(&b)))
}

/// Each parent row's children (row indices), by key.
fn children_of(p: &Pair<'_>, k: &str) -> Vec<Vec<usize>> {
    let index: HashMap<String, usize> = (0..p.parents.n_rows)
        .filter_map(|r| key(p.parents, k, r).map(|x| (x, r)))
        .collect();
    let mut out = vec![Vec::new(); p.parents.n_rows];
    for r in 0..p.children.n_rows {
        if let Some(&i) = key(p.children, k, r).and_then(|x| index.get(&x)) {
            out[i].push(r);
        }
    }
    out
}

fn tv(a: &HashMap<(String, String), f64>, b: &HashMap<(String, String), f64>) -> f64 {
    let (na, nb) = (
        a.values().sum::<f64>().max(1.0),
        b.values().sum::<f64>().max(1.0),
    );
    let mut d = 0.0;
    for (k, x) in a {
        d += (x / na - b.get(k).copied().unwrap_or(0.0) / nb).abs();
    }
    for (k, y) in b {
        if !a.contains_key(k) {
            d += y / nb;
        }
    }
    d / 2.0
}

fn used<'a>(s: &'a Schema, k: &str) -> Vec<&'a ColumnSpec> {
    s.columns
        .iter()
        .filter(|c| c.name != k && c.kind != Kind::Ignored)
        .collect()
}

/// The cross-table figures of `synthetic` against `real` (and `test`, the held-out real
/// pair, for the task). `label`: the parent column the task predicts (default: the
/// parent schema's target, else its first binary column).
pub fn evaluate(
    (real, test, synthetic): (&Pair<'_>, &Pair<'_>, &Pair<'_>),
    (parent_schema, child_schema): (&Schema, &Schema),
    k: &str,
    label: Option<&str>,
    seed: u64,
) -> Result<LinkedReport, String> {
    let (rc, sc) = (children_of(real, k), children_of(synthetic, k));
    let parent_keys: std::collections::HashSet<String> = (0..synthetic.parents.n_rows)
        .filter_map(|r| key(synthetic.parents, k, r))
        .collect();
    let matched = (0..synthetic.children.n_rows)
        .filter(|r| key(synthetic.children, k, *r).is_some_and(|x| parent_keys.contains(&x)))
        .count();
    let most = rc.iter().chain(&sc).map(Vec::len).max().unwrap_or(0);
    let shares = |c: &[Vec<usize>]| crate::data::linked::size_shares(c.iter().map(Vec::len), most);
    let (children_real, children_synthetic) = (shares(&rc), shares(&sc));
    let children_tv = 0.5
        * children_real
            .iter()
            .zip(&children_synthetic)
            .map(|(a, b)| (a - b).abs())
            .sum::<f64>();
    let pl: Vec<Levels> = used(parent_schema, k)
        .into_iter()
        .map(|c| Levels::of(c, real.parents))
        .collect();
    let cl: Vec<Levels> = used(child_schema, k)
        .into_iter()
        .map(|c| Levels::of(c, real.children))
        .collect();
    let mut cross = Vec::new();
    for a in &pl {
        for b in &cl {
            let table = |p: &Pair<'_>, kids: &[Vec<usize>]| {
                let mut m: HashMap<(String, String), f64> = HashMap::new();
                for (r, ks) in kids.iter().enumerate() {
                    let la = a.level(p.parents, r);
                    for &c in ks {
                        *m.entry((la.clone(), b.level(p.children, c))).or_insert(0.0) += 1.0;
                    }
                }
                m
            };
            cross.push(CrossPair {
                parent: a.spec.name.clone(),
                child: b.spec.name.clone(),
                tv: tv(&table(real, &rc), &table(synthetic, &sc)),
            });
        }
    }
    let cross_mean_tv = cross.iter().map(|c| c.tv).sum::<f64>() / cross.len().max(1) as f64;
    cross.sort_by(|a, b| b.tv.total_cmp(&a.tv));
    let task = task((real, test, synthetic), (&pl, &cl), k, label, seed)?;
    Ok(LinkedReport {
        keys_found: matched as f64 / synthetic.children.n_rows.max(1) as f64,
        children_real,
        children_synthetic,
        children_tv,
        cross_mean_tv,
        cross,
        task,
    })
}

/// Per parent: its other columns (a number, or a category's index among the real
/// rows' levels), its number of children, and per child column the mean (continuous) or
/// each level's share (categorical, the ten most common levels).
struct Features<'a> {
    parent: Vec<(&'a Levels, Vec<String>)>,
    child: Vec<(&'a Levels, Vec<String>)>,
}

impl<'a> Features<'a> {
    fn of(pl: &'a [Levels], cl: &'a [Levels], label: &str, real: &Pair<'_>) -> Self {
        let levels = |l: &Levels, t: &Table| {
            let mut count: HashMap<String, usize> = HashMap::new();
            for r in 0..t.n_rows {
                *count.entry(l.level(t, r)).or_insert(0) += 1;
            }
            let mut v: Vec<(String, usize)> = count.into_iter().collect();
            v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            v.into_iter().take(10).map(|x| x.0).collect::<Vec<_>>()
        };
        Self {
            parent: pl
                .iter()
                .filter(|l| l.spec.name != label)
                .map(|l| (l, levels(l, real.parents)))
                .collect(),
            child: cl.iter().map(|l| (l, levels(l, real.children))).collect(),
        }
    }

    fn number(t: &Table, name: &str, r: usize) -> Option<f64> {
        t.column(name)
            .and_then(|c| c.text(r))
            .and_then(|x| x.trim().parse().ok())
    }

    fn rows(&self, p: &Pair<'_>, k: &str) -> (Vec<f64>, usize) {
        let kids = children_of(p, k);
        let mut x = Vec::new();
        for (r, ks) in kids.iter().enumerate() {
            for (l, lv) in &self.parent {
                x.push(if l.spec.kind == Kind::Continuous {
                    Self::number(p.parents, &l.spec.name, r).unwrap_or(-1.0)
                } else {
                    let v = l.level(p.parents, r);
                    lv.iter().position(|s| *s == v).map_or(-1.0, |i| i as f64)
                });
            }
            x.push(ks.len() as f64);
            let n = ks.len().max(1) as f64;
            for (l, lv) in &self.child {
                if l.spec.kind == Kind::Continuous {
                    let s: f64 = ks
                        .iter()
                        .filter_map(|c| Self::number(p.children, &l.spec.name, *c))
                        .sum();
                    x.push(s / n);
                } else {
                    let got: Vec<String> = ks.iter().map(|c| l.level(p.children, *c)).collect();
                    for v in lv {
                        x.push(got.iter().filter(|g| *g == v).count() as f64 / n);
                    }
                }
            }
        }
        let p_len = if kids.is_empty() {
            0
        } else {
            x.len() / kids.len()
        };
        (x, p_len)
    }
}

fn task(
    (real, test, synthetic): (&Pair<'_>, &Pair<'_>, &Pair<'_>),
    (pl, cl): (&[Levels], &[Levels]),
    k: &str,
    label: Option<&str>,
    seed: u64,
) -> Result<Option<Task>, String> {
    let pick = label.map(str::to_string).or_else(|| {
        pl.iter()
            .find(|l| l.spec.kind == Kind::Binary)
            .map(|l| l.spec.name.clone())
    });
    let Some(name) = pick else {
        return Ok(None);
    };
    let Some(lab) = pl.iter().find(|l| l.spec.name == name) else {
        return Err(format!("--parent-label '{name}' is not a parent column"));
    };
    if lab.spec.kind == Kind::Continuous {
        return Err(format!(
            "--parent-label '{name}' is continuous; pick a binary or categorical parent column"
        ));
    }
    let mut classes: Vec<String> = (0..real.parents.n_rows)
        .map(|r| lab.level(real.parents, r))
        .collect();
    classes.sort();
    classes.dedup();
    let f = Features::of(pl, cl, &name, real);
    let ys = |p: &Pair<'_>| -> Vec<u32> {
        (0..p.parents.n_rows)
            .map(|r| {
                let v = lab.level(p.parents, r);
                classes.iter().position(|c| *c == v).unwrap_or(0) as u32
            })
            .collect()
    };
    let (tx, p) = f.rows(test, k);
    let ty = ys(test);
    let fit = |train: &Pair<'_>| -> Result<f64, String> {
        let (x, width) = f.rows(train, k);
        if width != p || train.parents.n_rows == 0 {
            return Err("the synthetic parents have no rows to learn from".into());
        }
        let xy = crate::eval::xy::Xy {
            x,
            n: train.parents.n_rows,
            p,
            y: ys(train),
        };
        let kk = classes.len().max(2);
        let proba = crate::eval::forest::forest_proba(&xy, &tx, kk, 100, seed)?;
        Ok(if classes.len() == 2 {
            let truth: Vec<bool> = ty.iter().map(|y| *y == 1).collect();
            let score: Vec<f64> = proba.chunks(kk).map(|c| c[1]).collect();
            crate::eval::scores::roc_auc(&truth, &score).unwrap_or(f64::NAN)
        } else {
            let pred: Vec<u32> = proba
                .chunks(kk)
                .map(|c| (0..kk).max_by(|a, b| c[*a].total_cmp(&c[*b])).unwrap_or(0) as u32)
                .collect();
            crate::eval::scores::accuracy(&ty, &pred)
        })
    };
    Ok(Some(Task {
        label: name,
        score: if classes.len() == 2 {
            "auroc"
        } else {
            "accuracy"
        }
        .into(),
        real: fit(real)?,
        synthetic: fit(synthetic)?,
    }))
}
