//! The linked model file and its sampling.
//!
//! One file holds both released models whole (each with its own header and checksum) as
//! byte tensors of a safetensors file whose metadata is the [`LinkedHeader`]: the pair
//! travels, is checked and is audited as one release. Sampling draws the parents, then
//! each parent's children given that parent's columns, from the child model's
//! conditional ([`crate::methods::pgm::conditional`]); keys are fresh numbers 1…n.

use std::collections::HashMap;
use std::path::Path;

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::{Deserialize, Serialize};

use crate::data::encode::{DecodeMode, Encoding};
use crate::data::linked::{COUNT_COLUMN, PARENT_PREFIX};
use crate::data::table::{Column, Table, Values};
use crate::job::JobError;
use crate::methods::pgm::GraphicalModel;
use crate::methods::released::ReleasedModel;

/// The metadata key of a linked model file.
const LINKED_KEY: &str = "dpsynth-linked";
pub const LINKED_FORMAT: &str = "dpsynth-linked/1";

/// What a linked model file says about itself: settings and public facts only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkedHeader {
    pub format: String,
    /// The key column's name (its values are never released; synthetic keys are fresh).
    pub key: String,
    pub max_children: usize,
    /// The fewest children a parent has (a public fact; 0: none).
    #[serde(default)]
    pub min_children: usize,
    pub parent_share: f64,
    /// The baseline without the link (children drawn without their parent's columns).
    pub independent: bool,
    pub method: String,
    pub preset: String,
    /// `None`: not private (ε = ∞).
    pub epsilon: Option<f64>,
    pub delta: f64,
    /// The statement in words: the unit, K, the split, what is treated as public.
    pub statement: String,
    /// A fixed seed made the run reproducible: not for release.
    pub not_for_release: bool,
    /// Child columns no two children of one parent share (a person's years): a public
    /// fact, kept by sampling (post-processing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unique: Vec<String>,
    /// The child column each parent counts its children by, with its public levels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count_by: Option<(String, Vec<String>)>,
}

impl LinkedHeader {
    pub fn new(cfg: &super::LinkedConfig, split: Option<&super::Split>) -> Self {
        let p = &cfg.parent;
        let split_text = match split {
            Some(s) => format!(
                " The budget is split in zCDP: ρ = {:.5} for each of the two record counts, released with noise (no exact count is in the release), {:.5} for the parent table ({:.0} % of the rest) and {:.5} for the child table, whose counts carry noise K = {} times larger because one unit is up to K of its rows.",
                s.count_rho,
                s.parent_rho,
                100.0 * cfg.parent_share,
                s.child_unit_rho(),
                s.k
            ),
            None => " Trained without privacy (ε = ∞): a reference only.".into(),
        };
        // What the guarantee leaves out, said in the sentence a reader sees.
        let mut uncovered = String::new();
        if matches!(p.domains, crate::job::DomainPolicy::AllowData) {
            uncovered.push_str(" Domains read off the rows (--allow-data-domains) are NOT covered by the guarantee; the two models' headers name their columns.");
        }
        let schema_given = p.inline_schema.is_some() || p.schema.is_some();
        if !(schema_given && cfg.child_schema.is_some()) && !p.public_kinds {
            uncovered.push_str(" Column kinds guessed from the rows are NOT covered.");
        }
        Self {
            format: LINKED_FORMAT.into(),
            key: cfg.link.key.clone(),
            max_children: cfg.link.max_children,
            min_children: cfg.link.min_children,
            parent_share: cfg.parent_share,
            independent: cfg.independent,
            method: p.method.clone(),
            preset: p.preset.clone(),
            epsilon: p.epsilon.is_finite().then_some(p.epsilon),
            delta: p.delta,
            statement: format!(
                "{}{split_text}{uncovered}",
                super::unit_statement(&cfg.link.key, cfg.link.max_children)
            ),
            not_for_release: p.seed.is_some(),
            unique: cfg.unique.clone(),
            count_by: cfg
                .count_by
                .clone()
                .zip(super::count_levels(cfg).ok().flatten()),
        }
    }
}

fn write_err(path: &Path, e: impl std::fmt::Display) -> JobError {
    JobError::Write {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// Writes the linked model file from the two runs' model files, atomically.
pub fn pack(
    parent: &Path,
    child: &Path,
    header: &LinkedHeader,
    out: &Path,
) -> Result<(), JobError> {
    use safetensors::tensor::{Dtype, TensorView};
    let read = |p: &Path| std::fs::read(p).map_err(|e| JobError::file(p, e));
    let (pb, cb) = (read(parent)?, read(child)?);
    fn view<'a>(b: &'a [u8], out: &Path) -> Result<TensorView<'a>, JobError> {
        TensorView::new(Dtype::U8, vec![b.len()], b).map_err(|e| write_err(out, e))
    }
    let tensors = [("child", view(&cb, out)?), ("parent", view(&pb, out)?)];
    let meta: HashMap<String, String> = [(
        LINKED_KEY.to_string(),
        serde_json::to_string(header).map_err(|e| write_err(out, e))?,
    )]
    .into_iter()
    .collect();
    let bytes = safetensors::serialize(tensors.iter().map(|(k, v)| (*k, v)), Some(meta))
        .map_err(|e| write_err(out, e))?;
    crate::util::atomic::write_atomic(out, &bytes).map_err(|e| write_err(out, e))
}

/// Whether `path` is a linked model file (a cheap look at its header).
pub fn is_linked(path: &Path) -> bool {
    std::fs::read(path)
        .ok()
        .and_then(|b| {
            safetensors::SafeTensors::read_metadata(&b)
                .ok()
                .map(|(_, m)| m)
        })
        .and_then(|m| m.metadata().as_ref().map(|x| x.contains_key(LINKED_KEY)))
        .unwrap_or(false)
}

/// A loaded linked model.
pub struct LinkedModel {
    pub header: LinkedHeader,
    pub parent: ReleasedModel,
    pub child: ReleasedModel,
}

/// A linked draw: the parents and their children, each with the fresh key.
pub struct LinkedRows {
    pub parents: Table,
    pub children: Table,
    /// Groups of parents whose columns the child model gives no mass to: their children
    /// were drawn without them (post-processing either way; a diagnostic of the model).
    pub unmatched_groups: usize,
}

impl LinkedModel {
    pub fn load(path: &Path) -> Result<Self, JobError> {
        let bad = |m: String| JobError::file(path, m);
        let bytes = std::fs::read(path).map_err(|e| JobError::file(path, e))?;
        let st = safetensors::SafeTensors::deserialize(&bytes)
            .map_err(|e| bad(format!("not a dpsynth model file ({e})")))?;
        let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes)
            .map_err(|e| bad(format!("not a dpsynth model file ({e})")))?;
        let text = meta
            .metadata()
            .as_ref()
            .and_then(|m| m.get(LINKED_KEY).cloned())
            .ok_or_else(|| bad("not a linked model file (train one with --child)".into()))?;
        let header: LinkedHeader = serde_json::from_str(&text)
            .map_err(|e| bad(format!("the linked header is damaged: {e}")))?;
        if header.format != LINKED_FORMAT {
            return Err(bad(format!(
                "format '{}' is not {LINKED_FORMAT}",
                header.format
            )));
        }
        let part = |name: &str| -> Result<ReleasedModel, JobError> {
            let t = st
                .tensor(name)
                .map_err(|_| bad(format!("the {name} model is missing")))?;
            let label = format!("{} ({name} model)", path.display());
            Ok(ReleasedModel::from_bytes(
                t.data(),
                &label,
                &candle_core::Device::Cpu,
            )?)
        };
        let m = Self {
            parent: part("parent")?,
            child: part("child")?,
            header,
        };
        m.graphs()?;
        Ok(m)
    }

    /// With a counted child column: its attribute in the child model, and each synthetic
    /// parent's counts by level (cut to K in level order).
    fn counted(
        &self,
        gc: &GraphicalModel,
        parents: &Table,
    ) -> Result<Option<(usize, Vec<Vec<usize>>)>, JobError> {
        let Some((column, levels)) = &self.header.count_by else {
            return Ok(None);
        };
        let attr = gc
            .header
            .domain
            .attributes
            .iter()
            .position(|a| a.name == *column && a.size == levels.len())
            .ok_or_else(|| {
                JobError::Training(format!(
                    "the child model has no column '{column}' of {} levels; the file is damaged",
                    levels.len()
                ))
            })?;
        let cols: Vec<Vec<usize>> = levels
            .iter()
            .map(|l| {
                child_counts_in(
                    parents,
                    &crate::data::linked::count_column(column, l),
                    self.header.max_children,
                )
            })
            .collect::<Result<_, _>>()?;
        let k = self.header.max_children;
        let per = (0..parents.n_rows)
            .map(|r| {
                let mut left = k;
                cols.iter()
                    .map(|c| {
                        let n = c[r].min(left);
                        left -= n;
                        n
                    })
                    .collect()
            })
            .collect();
        Ok(Some((attr, per)))
    }

    fn graphs(&self) -> Result<(&GraphicalModel, &GraphicalModel), JobError> {
        match (&self.parent.graphical, &self.child.graphical) {
            (Some(p), Some(c)) => Ok((p, c)),
            _ => Err(JobError::Training(
                "a linked model holds two graphical models; this one does not".into(),
            )),
        }
    }

    /// `rows` parents and their children (a fixed `seed` reproduces them).
    pub fn sample(&self, rows: usize, seed: Option<u64>) -> Result<LinkedRows, JobError> {
        let (gp, gc) = self.graphs()?;
        let mut rng = match seed {
            Some(s) => StdRng::seed_from_u64(s),
            None => StdRng::from_os_rng(),
        };
        let levels = gp.sample_levels(rows, &mut rng);
        let parents = decode(&self.parent, gp, &levels, &mut rng)?;
        let by = self.counted(gc, &parents)?;
        let counts = match &by {
            Some((_, per)) => per.iter().map(|c| c.iter().sum()).collect(),
            None => child_counts(&parents, self.header.max_children)?,
        };
        let map = parent_attributes(gp, gc)?;
        let relevant = relevant(gc, &map);
        // Parents that share their relevant columns (and a counted level) draw their
        // children together.
        let mut index: HashMap<Vec<Option<u32>>, usize> = HashMap::new();
        let mut groups: Vec<(Vec<Option<u32>>, usize)> = Vec::new();
        let mut members: Vec<Vec<(usize, usize)>> = Vec::new();
        for (r, &n) in counts.iter().enumerate() {
            let mut ev = vec![None; map.len()];
            for &j in &relevant {
                ev[j] = map[j].map(|i| levels[i][r]);
            }
            let parts: Vec<(Option<u32>, usize)> = match &by {
                Some((_, per)) => per[r]
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| **c > 0)
                    .map(|(v, c)| (Some(v as u32), *c))
                    .collect(),
                None => vec![(None, n)],
            };
            // Counts by level that sum below the fewest children: the rest unconstrained.
            let mut parts = parts;
            let have: usize = parts.iter().map(|p| p.1).sum();
            if have < self.header.min_children {
                parts.push((None, self.header.min_children - have));
            }
            for (level, n) in parts.into_iter().filter(|p| p.1 > 0) {
                let mut ev = ev.clone();
                if let (Some((attr, _)), Some(v)) = (&by, level) {
                    ev[*attr] = Some(v);
                }
                let g = *index.entry(ev.clone()).or_insert_with(|| {
                    groups.push((ev, 0));
                    members.push(Vec::new());
                    groups.len() - 1
                });
                groups[g].1 += n;
                members[g].push((r, n));
            }
        }
        let unique = self.header.unique.first().and_then(|u| {
            gc.header
                .domain
                .attributes
                .iter()
                .position(|a| a.name == *u)
        });
        let (drawn, child_keys, unmatched) =
            draw_children(gc, (&groups, &members), counts.len(), unique, &mut rng)?;
        let children = decode(&self.child, gc, &drawn, &mut rng)?
            .keep_columns(|n| !n.starts_with(PARENT_PREFIX));
        Ok(LinkedRows {
            parents: with_key(
                &parents.keep_columns(|n| !n.starts_with(COUNT_COLUMN)),
                &self.header.key,
                &(0..rows).collect::<Vec<_>>(),
            ),
            children: with_key(&children, &self.header.key, &child_keys),
            unmatched_groups: unmatched,
        })
    }
}

/// Each parent's children drawn given its evidence, parents in order: the levels column
/// by column, each row's parent, and how many groups' evidence had no mass. With a
/// `unique` attribute (a person's year), a parent's children take distinct values of it,
/// drawn in turn from the conditional until a new one comes up, and are sorted by it.
fn draw_children(
    gc: &GraphicalModel,
    (groups, members): (&[(Vec<Option<u32>>, usize)], &[Vec<(usize, usize)>]),
    parents: usize,
    unique: Option<usize>,
    rng: &mut StdRng,
) -> Result<(Vec<Vec<u32>>, Vec<usize>, usize), JobError> {
    let mut per_parent: Vec<Vec<Vec<u32>>> = vec![Vec::new(); parents];
    let mut used: Vec<std::collections::HashSet<u32>> = vec![Default::default(); parents];
    let mut unmatched = 0;
    let mut draw = |ev: &Vec<Option<u32>>, n: usize, rng: &mut StdRng| {
        let (rows, bad) = rows_given(gc, ev, n, rng)?;
        unmatched += bad.min(1);
        Ok::<_, JobError>(rows)
    };
    for ((ev, need), who) in groups.iter().zip(members) {
        let extra = if unique.is_some() { need * 2 + 8 } else { 0 };
        let mut pool: std::collections::VecDeque<Vec<u32>> = draw(ev, need + extra, rng)?.into();
        for &(r, n) in who {
            let target = per_parent[r].len() + n;
            let (mut skipped, mut tries) = (Vec::new(), 0);
            while per_parent[r].len() < target {
                let row = match pool.pop_front() {
                    Some(row) => row,
                    None => {
                        tries += 1;
                        draw(ev, 1, rng)?.remove(0)
                    }
                };
                if unique.is_none_or(|u| used[r].insert(row[u])) {
                    per_parent[r].push(row);
                } else if let (Some(u), true) = (unique, tries > 64) {
                    // The conditional all but rules out a new value: the row drawn given
                    // one this parent has not used; a repeat only when every value is.
                    let row = match unused_row(gc, ev, (u, &used[r]), rng)? {
                        Some(fresh) => fresh,
                        None => row,
                    };
                    used[r].insert(row[u]);
                    per_parent[r].push(row);
                } else {
                    skipped.push(row);
                }
            }
            // Rows this parent could not use go to the next one.
            for row in skipped.into_iter().rev() {
                pool.push_front(row);
            }
        }
    }
    if let Some(u) = unique {
        for rows in &mut per_parent {
            rows.sort_by_key(|row| row[u]);
        }
    }
    let d = gc.header.domain.len();
    let mut cols = vec![Vec::new(); d];
    let mut owner = Vec::new();
    for (r, rows) in per_parent.into_iter().enumerate() {
        for row in rows {
            for (c, v) in cols.iter_mut().zip(row) {
                c.push(v);
            }
            owner.push(r);
        }
    }
    Ok((cols, owner, unmatched))
}

/// `n` rows drawn given `ev`, and how many of the draws' evidence had no mass.
fn rows_given(
    gc: &GraphicalModel,
    ev: &[Option<u32>],
    n: usize,
    rng: &mut StdRng,
) -> Result<(Vec<Vec<u32>>, usize), JobError> {
    let (cols, bad) = gc
        .sample_levels_given(&[(ev.to_vec(), n)], rng)
        .map_err(JobError::Training)?;
    let rows = (0..n)
        .map(|i| cols.iter().map(|c| c[i]).collect::<Vec<u32>>())
        .collect();
    Ok((rows, bad))
}

/// A row drawn given `ev` and a value of attribute `u` not in `used`, the values tried in
/// random order until one has mass; `None` when none has.
fn unused_row(
    gc: &GraphicalModel,
    ev: &[Option<u32>],
    (u, used): (usize, &std::collections::HashSet<u32>),
    rng: &mut StdRng,
) -> Result<Option<Vec<u32>>, JobError> {
    use rand::seq::SliceRandom as _;
    let size = gc.header.domain.attributes[u].size as u32;
    let mut free: Vec<u32> = (0..size).filter(|v| !used.contains(v)).collect();
    free.shuffle(rng);
    for v in free {
        let mut given = ev.to_vec();
        given[u] = Some(v);
        let (mut rows, bad) = rows_given(gc, &given, 1, rng)?;
        if bad == 0 && rows[0][u] == v {
            return Ok(rows.pop());
        }
    }
    Ok(None)
}

/// Levels drawn from a model's graph, decoded to its schema's values.
fn decode(
    m: &ReleasedModel,
    g: &GraphicalModel,
    levels: &[Vec<u32>],
    rng: &mut StdRng,
) -> Result<Table, JobError> {
    let enc = Encoding::new(&m.header.schema).map_err(|e| JobError::Training(e.to_string()))?;
    let values = g.header.domain.encode(levels, rng);
    enc.decode(&values, DecodeMode::Sample, rng)
        .map_err(|e| JobError::Training(e.to_string()))
}

/// Each synthetic parent's number of children, from its count column.
fn child_counts(parents: &Table, k: usize) -> Result<Vec<usize>, JobError> {
    child_counts_in(parents, COUNT_COLUMN, k)
}

/// Each synthetic parent's value of the count column `name` (0–K).
fn child_counts_in(parents: &Table, name: &str, k: usize) -> Result<Vec<usize>, JobError> {
    let c = parents
        .column(name)
        .ok_or_else(|| JobError::Training(format!("the parent model has no '{name}' column")))?;
    Ok((0..parents.n_rows)
        .map(|r| {
            c.text(r)
                .and_then(|t| t.trim().parse::<f64>().ok())
                .map_or(0, |x| (x.max(0.0) as usize).min(k))
        })
        .collect())
}

/// For each attribute of the child model, the parent model's attribute it copies (same
/// name without the prefix, same levels), if any.
fn parent_attributes(
    gp: &GraphicalModel,
    gc: &GraphicalModel,
) -> Result<Vec<Option<usize>>, JobError> {
    let pa = &gp.header.domain.attributes;
    gc.header
        .domain
        .attributes
        .iter()
        .map(|a| {
            let Some(name) = a.name.strip_prefix(PARENT_PREFIX) else {
                return Ok(None);
            };
            match pa.iter().position(|p| p.name == name) {
                Some(i) if pa[i].size == a.size => Ok(Some(i)),
                Some(_) => Err(JobError::Training(format!(
                    "the parent column '{name}' has different levels in the two models; the file is damaged"
                ))),
                None => Ok(None),
            }
        })
        .collect()
}

/// The parent attributes that share a node with a child attribute: given those, a child
/// is independent of the parent's other columns, so only they need fixing.
fn relevant(gc: &GraphicalModel, map: &[Option<usize>]) -> Vec<usize> {
    let mut out = vec![false; map.len()];
    for clique in &gc.header.cliques {
        if clique.iter().any(|a| map[*a].is_none()) {
            for a in clique {
                if map[*a].is_some() {
                    out[*a] = true;
                }
            }
        }
    }
    (0..map.len()).filter(|a| out[*a]).collect()
}

/// `t` with the key column first: fresh numbers, 1 for the first parent.
fn with_key(t: &Table, key: &str, owners: &[usize]) -> Table {
    let mut columns = vec![Column {
        name: key.to_string(),
        values: Values::Number(owners.iter().map(|o| Some((*o + 1) as f64)).collect()),
    }];
    columns.extend(t.columns.iter().cloned());
    Table {
        columns,
        n_rows: t.n_rows,
    }
}

/// Writes the parents to `out` and the children to `child_out`, each with its statement
/// beside it (`<file>.privacy.json`: the linked header, which file of the pair it is),
/// all atomically.
pub fn write(
    m: &LinkedModel,
    rows: &LinkedRows,
    out: &Path,
    child_out: &Path,
) -> Result<(), JobError> {
    if out == child_out {
        return Err(JobError::Usage(
            "--out and --child-out name the same file; give the children a file of their own"
                .into(),
        ));
    }
    for (t, path, which, other) in [
        (&rows.parents, out, "parents", child_out),
        (&rows.children, child_out, "children", out),
    ] {
        crate::data::export::write_csv(t, path).map_err(|e| write_err(path, e))?;
        let side = serde_json::json!({
            "linked_model": m.header,
            "file": which,
            "rows": t.n_rows,
            "linked_to": other.file_name().map(|n| n.to_string_lossy().into_owned()),
            "key": m.header.key,
            "note": "Synthetic keys are fresh numbers: each child's key is its synthetic parent's, and no key is a real one.",
        });
        let text = serde_json::to_string_pretty(&side).map_err(|e| write_err(path, e))?;
        let side_path = crate::job::services::sidecar_path(path);
        crate::util::atomic::write_atomic(&side_path, text.as_bytes())
            .map_err(|e| write_err(&side_path, e))?;
    }
    Ok(())
}
