//! One grouped query for many marginals (`GROUP BY GROUPING SETS`), and reading its
//! result back into each marginal's groups.

use datafusion::arrow::array::{Float64Array, Int64Array, StringArray};
use datafusion::arrow::record_batch::RecordBatch;

use super::arrays::{floats, ints, number_cell, text, text_cell};
use super::sql::{self, TABLE};
use super::{Group, Grouping};
use crate::data::cells::Cell;

/// One grouped query over many sets: every (column, grouping) any set asks for is one
/// group key `g<k>`, every numeric column one value `x<j>` whose smallest and largest
/// each group returns, and `grouping(g<k>)` tells which set a result row belongs to.
pub(super) struct GroupingQuery {
    keys: Vec<(String, Grouping)>,
    numbers: Vec<String>,
    /// Per set, its keys' indices, sorted.
    index: Vec<Vec<usize>>,
}

impl GroupingQuery {
    pub(super) fn new(sets: &[Vec<(String, Grouping)>]) -> Self {
        let mut keys: Vec<(String, Grouping)> = Vec::new();
        let mut numbers: Vec<String> = Vec::new();
        for (c, g) in sets.iter().flatten() {
            if !keys.iter().any(|k| k.0 == *c && k.1 == *g) {
                keys.push((c.clone(), g.clone()));
            }
            if *g != Grouping::Text && !numbers.contains(c) {
                numbers.push(c.clone());
            }
        }
        let mut q = Self {
            keys,
            numbers,
            index: Vec::new(),
        };
        q.index = sets
            .iter()
            .map(|set| {
                let mut ks: Vec<usize> = set.iter().filter_map(|(c, g)| q.key(c, g)).collect();
                ks.sort_unstable();
                ks
            })
            .collect();
        q
    }

    fn key(&self, c: &str, g: &Grouping) -> Option<usize> {
        self.keys.iter().position(|k| k.0 == c && k.1 == *g)
    }

    /// The query, given the reader's missing-value tokens, which columns the engine holds
    /// as numbers, and the record filter.
    pub(super) fn sql(
        &self,
        tokens: &[String],
        is_number: &dyn Fn(&str) -> bool,
        filter: &str,
    ) -> String {
        let mut inner = Vec::new();
        for (k, (c, g)) in self.keys.iter().enumerate() {
            let e = match g {
                Grouping::Text => sql::cell(c, tokens),
                g => sql::level(&sql::numeric(c, is_number(c), tokens), g),
            };
            inner.push(format!("{e} AS g{k}"));
        }
        for (j, c) in self.numbers.iter().enumerate() {
            inner.push(format!("{} AS x{j}", sql::numeric(c, is_number(c), tokens)));
        }
        let nk = self.keys.len();
        let mut outer: Vec<String> = (0..nk).map(|k| format!("g{k}")).collect();
        for j in 0..self.numbers.len() {
            outer.push(format!("MIN(x{j})"));
            outer.push(format!("MAX(x{j})"));
        }
        outer.push("COUNT(*)".into());
        outer.extend((0..nk).map(|k| format!("grouping(g{k})")));
        let sets: Vec<String> = self
            .index
            .iter()
            .map(|ks| {
                let g: Vec<String> = ks.iter().map(|k| format!("g{k}")).collect();
                format!("({})", g.join(", "))
            })
            .collect();
        format!(
            "SELECT {} FROM (SELECT {} FROM {TABLE} WHERE {}) GROUP BY GROUPING SETS ({})",
            outer.join(", "),
            inner.join(", "),
            filter,
            sets.join(", ")
        )
    }

    /// Adds a result batch's groups to the sets they belong to.
    pub(super) fn read(
        &self,
        b: &RecordBatch,
        sets: &[Vec<(String, Grouping)>],
        out: &mut [Vec<Group>],
    ) -> Result<(), String> {
        let (nk, nn) = (self.keys.len(), self.numbers.len());
        if b.num_columns() != 2 * nk + 2 * nn + 1 {
            return Err(format!(
                "a grouped result of {} columns, not the {} asked for",
                b.num_columns(),
                2 * nk + 2 * nn + 1
            ));
        }
        let g: Vec<StringArray> = (0..nk)
            .map(|k| text(b.column(k)))
            .collect::<Result<_, _>>()?;
        let x: Vec<(Float64Array, Float64Array)> = (0..nn)
            .map(|j| {
                Ok((
                    floats(b.column(nk + 2 * j))?,
                    floats(b.column(nk + 2 * j + 1))?,
                ))
            })
            .collect::<Result<_, String>>()?;
        let counts = ints(b.column(nk + 2 * nn))?;
        let flags: Vec<Int64Array> = (0..nk)
            .map(|k| ints(b.column(nk + 2 * nn + 1 + k)))
            .collect::<Result<_, _>>()?;
        for r in 0..b.num_rows() {
            let grouped: Vec<usize> = (0..nk).filter(|k| flags[*k].value(r) == 0).collect();
            for (s, _) in self
                .index
                .iter()
                .enumerate()
                .filter(|(_, ks)| **ks == grouped)
            {
                let cells = sets[s]
                    .iter()
                    .map(|(c, gr)| match gr {
                        Grouping::Text => {
                            let v = self
                                .key(c, gr)
                                .map_or(Cell::Missing, |k| text_cell(&g[k], r));
                            (v.clone(), v)
                        }
                        _ => match self.numbers.iter().position(|n| n == c) {
                            Some(j) => (number_cell(&x[j].0, r), number_cell(&x[j].1, r)),
                            None => (Cell::Missing, Cell::Missing),
                        },
                    })
                    .collect();
                out[s].push(Group {
                    cells,
                    count: counts.value(r).max(0) as u64,
                });
            }
        }
        Ok(())
    }
}
