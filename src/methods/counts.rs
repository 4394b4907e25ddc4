//! The exact counts a marginal method (MST, AIM) measures, asked for at once: from the
//! rows in memory, or from a scan of the file in parts when the run streams
//! ([`crate::data::stream::EncodedScan`]), so a table of any length trains in the memory
//! of one part plus the count tables.
//!
//! Both sources discretise the same encoded values with the same [`Domain`], so they give
//! the same counts, hence (same seed) the same model. Nothing here adds noise or is
//! released: the methods measure these counts with the noise their plan charges
//! ([`super::marginal::measure`]).

use std::collections::HashMap;

use rayon::prelude::*;

use super::pgm::domain::{Coding, Domain};
use super::pgm::factor::{Projection, cells, count, count_weighted, project_sum};
use super::{Flow, MethodError, Progress, Result, TrainSetup};
use crate::data::cells::{Cell, RawColumn};
use crate::data::encode::{Encoding, SpanKind};
use crate::data::engine::{EngineTable, Group, Grouping};
use crate::data::schema::Kind;
use crate::data::stream::RowsFrom;

/// Marginals an engine counts in one query (one read of the table): each record is
/// grouped once per marginal, so a query's work grows with the batch, while each query
/// pays the engine's scheduling once.
const ENGINE_BATCH: usize = 32;

/// Why a streamed count ended early.
const STOPPED: &str = "stopped while counting the file; a stopped run is charged its whole plan";

/// Exact counts of the marginals asked for, by their attributes.
pub(crate) struct Counts {
    tables: HashMap<Vec<usize>, Vec<f64>>,
}

impl Counts {
    /// The counts over `attrs` (as asked for, in the same attribute order).
    pub(crate) fn get(&self, attrs: &[usize]) -> Result<&[f64]> {
        self.tables.get(attrs).map(Vec::as_slice).ok_or_else(|| {
            MethodError::Plan(format!(
                "internal error: the counts over attributes {attrs:?} were not asked for"
            ))
        })
    }
}

/// The run's rows as levels of a public discrete domain of at most `bins` levels a
/// continuous column (the domain depends on the schema only).
pub(crate) fn domain(s: &TrainSetup<'_>, bins: usize) -> Result<Domain> {
    let domain = Domain::of_encoding(s.encoding, bins).map_err(MethodError::Plan)?;
    let w = match s.parts {
        Some(p) => p.encoding.width,
        None => s.data.dims2()?.1,
    };
    if w != domain.width {
        return Err(MethodError::Plan(format!(
            "the data has {w} encoded columns but the schema encodes {}",
            domain.width
        )));
    }
    Ok(domain)
}

/// Counts every set of `sets` in one pass over the rows. A set that another set contains
/// is summed out of the smallest such table instead of counted again (exact: the counts
/// are integers, far below 2⁵³), so a pass costs one count per row for each set no other
/// set holds.
///
/// A streamed pass reports after every part (no figure: how many rows were read would
/// tell the row count, which a run given a public count keeps to itself), so the window
/// shows it alive and a stop is heard between parts.
pub(crate) fn count_all(
    s: &mut TrainSetup<'_>,
    private: bool,
    domain: &Domain,
    sets: &[Vec<usize>],
) -> Result<Counts> {
    let sizes = domain.sizes();
    let mut uniq: Vec<Vec<usize>> = sets.to_vec();
    uniq.sort();
    uniq.dedup();
    let holds = |big: &[usize], small: &[usize]| small.iter().all(|a| big.contains(a));
    let maximal: Vec<Vec<usize>> = uniq
        .iter()
        .filter(|a| !uniq.iter().any(|b| b.len() > a.len() && holds(b, a)))
        .cloned()
        .collect();
    let direct = match s.parts {
        None => count_in_memory(s, domain, &maximal)?,
        Some(parts) => match &parts.from {
            RowsFrom::File(_) => count_streamed(s, private, parts, domain, (&maximal, uniq.len()))?,
            RowsFrom::Engine(table) => {
                count_by_engine(s, private, (table, &parts.encoding), domain, &maximal)?
            }
        },
    };
    let mut tables: HashMap<Vec<usize>, Vec<f64>> = maximal.iter().cloned().zip(direct).collect();
    let mut derived = Vec::new();
    for set in uniq.iter().filter(|set| !tables.contains_key(*set)) {
        // Every set is maximal or held by a maximal one: the smallest holder.
        let sup = maximal
            .iter()
            .filter(|m| holds(m, set))
            .min_by_key(|m| cells(&sizes, m));
        if let Some(sup) = sup {
            let map = Projection::new(&sizes, sup, set);
            derived.push((
                set.clone(),
                project_sum(&tables[sup], &map, cells(&sizes, set)),
            ));
        }
    }
    tables.extend(derived);
    Ok(Counts { tables })
}

/// The tables over `maximal` from the encoded rows in memory.
fn count_in_memory(
    s: &TrainSetup<'_>,
    domain: &Domain,
    maximal: &[Vec<usize>],
) -> Result<Vec<Vec<f64>>> {
    let sizes = domain.sizes();
    let (n, _) = s.data.dims2()?;
    let values: Vec<f32> = s
        .data
        .to_device(&candle_core::Device::Cpu)?
        .flatten_all()?
        .to_vec1()?;
    let levels = domain.discretise(&values, n);
    drop(values);
    Ok(maximal
        .par_iter()
        .map(|m| count(&levels, &sizes, m))
        .collect())
}

/// The tables over `maximal` summed part by part over a streamed file, reporting after
/// each part (`marginals`: how many tables the run asked for, for the note).
fn count_streamed(
    s: &mut TrainSetup<'_>,
    private: bool,
    parts: &crate::data::stream::EncodedScan,
    domain: &Domain,
    (maximal, marginals): (&[Vec<usize>], usize),
) -> Result<Vec<Vec<f64>>> {
    let sizes = domain.sizes();
    let mut totals: Vec<Vec<f64>> = maximal
        .iter()
        .map(|m| vec![0.0; cells(&sizes, m)])
        .collect();
    let heard = |s: &mut TrainSetup<'_>| {
        let mut p = Progress::at(s, private, "counting the file in parts", (0, 1), vec![]);
        p.note = Some(format!(
            "one pass over the file for the exact counts of {marginals} marginals (noise comes after)"
        ));
        (s.observer)(p)
    };
    if heard(s) == Flow::Stop {
        return Err(MethodError::Plan(STOPPED.into()));
    }
    parts.for_each(&mut |e| {
        let levels = domain.discretise(&e.values, e.n_rows);
        totals.par_iter_mut().zip(maximal).for_each(|(t, m)| {
            for (x, y) in t.iter_mut().zip(count(&levels, &sizes, m)) {
                *x += y;
            }
        });
        if heard(s) == Flow::Stop {
            return Err(crate::data::DataError::file(&parts.name(), STOPPED));
        }
        Ok(())
    })?;
    Ok(totals)
}

/// The tables over `maximal` from an engine: one grouped query per table, the groups
/// encoded and discretised here by the run's own encoding and domain. Each group comes
/// back with its smallest and largest values; both must land in one level (a bin the
/// engine cut differently is an error, never a different count).
fn count_by_engine(
    s: &mut TrainSetup<'_>,
    private: bool,
    (table, enc): (&EngineTable, &Encoding),
    domain: &Domain,
    maximal: &[Vec<usize>],
) -> Result<Vec<Vec<f64>>> {
    if attribute_spans(enc).len() != domain.attributes.len() {
        return Err(MethodError::Plan(
            "internal error: the domain does not follow the encoding".into(),
        ));
    }
    let sizes = domain.sizes();
    let mut out = Vec::with_capacity(maximal.len());
    for (k, batch) in maximal.chunks(ENGINE_BATCH).enumerate() {
        let note = format!(
            "the engine counts marginals {}–{} of {} where the rows are (noise comes after)",
            k * ENGINE_BATCH + 1,
            k * ENGINE_BATCH + batch.len(),
            maximal.len()
        );
        // Asked before the query and while the engine works on it.
        let mut heard = || {
            let mut p = Progress::at(s, private, "counting in the engine", (0, 1), vec![]);
            p.note = Some(note.clone());
            (s.observer)(p) == Flow::Stop
        };
        if heard() {
            return Err(MethodError::Plan(STOPPED.into()));
        }
        let columns: Vec<Vec<(String, Grouping)>> =
            batch.iter().map(|m| groupings(enc, domain, m)).collect();
        let groups = table
            .groups(&columns, &mut heard)
            .map_err(|e| MethodError::Plan(e.to_string()))?;
        for ((m, columns), groups) in batch.iter().zip(&columns).zip(&groups) {
            let levels = group_levels(table, enc, domain, (columns, groups), m)?;
            let weights: Vec<f64> = groups.iter().map(|g| g.count as f64).collect();
            out.push(count_weighted(&levels, &sizes, m, &weights));
        }
    }
    // Records changed since the survey would be counted under another table's key.
    let mut heard = || {
        let mut p = Progress::at(s, private, "counting in the engine", (0, 1), vec![]);
        p.note = Some("the engine checks the table is the one surveyed".into());
        (s.observer)(p) == Flow::Stop
    };
    table
        .check_unchanged(&mut heard)
        .map_err(|e| MethodError::Plan(e.to_string()))?;
    Ok(out)
}

/// The schema columns behind the attributes of `m`, each with how the engine groups it:
/// text by its cell, a binned continuous column by its level (the public bounds and bin
/// count pushed into the query), a column whose only attribute here is its missing
/// indicator by whether it is missing.
fn groupings(enc: &Encoding, domain: &Domain, m: &[usize]) -> Vec<(String, Grouping)> {
    let spans = attribute_spans(enc);
    let mut columns: Vec<(usize, Grouping)> = Vec::new();
    for &a in m {
        let span = spans[a];
        let spec = &enc.schema.columns[span.column];
        let g = match (&span.kind, &domain.attributes[a].coding) {
            (SpanKind::Binary | SpanKind::Categorical, _) => Grouping::Text,
            (SpanKind::Continuous, coding) => {
                let (lo, hi) = spec.bounds().unwrap_or((0.0, 1.0));
                // A binned column's point masses are levels after its bins; a column with
                // a level per whole number holds them among its levels already.
                let (integers, points) = match coding {
                    Coding::Integers { first, .. } => (Some(*first), Vec::new()),
                    Coding::Bins {
                        points: Some(_), ..
                    } => (None, spec.point_masses.clone()),
                    _ => (None, Vec::new()),
                };
                Grouping::Bins {
                    lo,
                    hi,
                    size: domain.attributes[a].size - points.len(),
                    integers,
                    points,
                }
            }
            (SpanKind::MissingIndicator, _) => Grouping::Missing,
            // Not an attribute: folded into the continuous column's (`attribute_spans`).
            (SpanKind::PointMass, _) => Grouping::Missing,
        };
        match columns.iter_mut().find(|(c, _)| *c == span.column) {
            // A continuous column's bins hold its missing cells apart: they serve both.
            Some((_, have)) => {
                if *have == Grouping::Missing {
                    *have = g;
                }
            }
            None => columns.push((span.column, g)),
        }
    }
    columns
        .into_iter()
        .map(|(c, g)| (enc.schema.columns[c].name.clone(), g))
        .collect()
}

/// The span behind each attribute of the domain, in order: every span but the point-mass
/// blocks, which the continuous column's own attribute holds ([`Domain::of_encoding`]).
fn attribute_spans(enc: &Encoding) -> Vec<&crate::data::encode::Span> {
    enc.spans
        .iter()
        .filter(|s| s.kind != SpanKind::PointMass)
        .collect()
}

/// The levels of every attribute for each group (its first row: the smallest values),
/// after checking that its largest values land in the same levels of `m`.
fn group_levels(
    table: &EngineTable,
    enc: &Encoding,
    domain: &Domain,
    (columns, groups): (&[(String, Grouping)], &[Group]),
    m: &[usize],
) -> Result<Vec<Vec<u32>>> {
    let n = groups.len();
    let raw: Vec<RawColumn> = enc
        .schema
        .columns
        .iter()
        .map(|spec| {
            let cells = match columns.iter().position(|(c, _)| *c == spec.name) {
                Some(i) => groups
                    .iter()
                    .flat_map(|g| [g.cells[i].0.clone(), g.cells[i].1.clone()])
                    .collect(),
                None => {
                    let fill = table
                        .filler()
                        .iter()
                        .find(|(c, _)| *c == spec.name)
                        .map_or(Cell::Missing, |(_, c)| c.clone());
                    let fill = if spec.kind == Kind::Ignored && fill == Cell::Missing {
                        Cell::Text("-".into())
                    } else {
                        fill
                    };
                    vec![fill; 2 * n]
                }
            };
            RawColumn {
                name: spec.name.clone(),
                cells,
                codebook: Vec::new(),
            }
        })
        .collect();
    let plan = |e: &dyn std::fmt::Display| MethodError::Plan(e.to_string());
    let t = crate::data::cells::finish_part(&table.source.identity(), raw, &Default::default())
        .map_err(|e| plan(&e))?;
    if t.n_rows != 2 * n {
        return Err(MethodError::Plan(
            "internal error: a group of the engine's counts has no value at all".into(),
        ));
    }
    let e = enc.encode(&t).map_err(|e| plan(&e))?;
    let levels = domain.discretise(&e.values, e.n_rows);
    for &a in m {
        if let Some(g) = (0..n).find(|g| levels[a][2 * g] != levels[a][2 * g + 1]) {
            return Err(MethodError::Plan(format!(
                "the engine's bins of '{}' disagree with dpsynth's (one group spans levels {} and {}); nothing was measured",
                domain.attributes[a].name,
                levels[a][2 * g],
                levels[a][2 * g + 1]
            )));
        }
    }
    Ok(levels
        .into_iter()
        .map(|l| l.into_iter().step_by(2).collect())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Summing a superset's table out gives the directly counted table (the obviously
    /// correct reference: count the rows again).
    #[test]
    fn derived_tables_equal_direct_counts() {
        let sizes = [3usize, 4, 2, 5];
        let data: Vec<Vec<u32>> = sizes
            .iter()
            .enumerate()
            .map(|(k, s)| {
                (0..500u32)
                    .map(|r| (r * (k as u32 + 3) / 7) % *s as u32)
                    .collect()
            })
            .collect();
        for (big, small) in [
            (vec![0, 1, 3], vec![1]),
            (vec![0, 1, 3], vec![0, 3]),
            (vec![1, 2], vec![2]),
            (vec![0, 1, 2, 3], vec![1, 3]),
        ] {
            let t = count(&data, &sizes, &big);
            let map = Projection::new(&sizes, &big, &small);
            let got = project_sum(&t, &map, cells(&sizes, &small));
            assert_eq!(got, count(&data, &sizes, &small), "{big:?} → {small:?}");
        }
    }
}
