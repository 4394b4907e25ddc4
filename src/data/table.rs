//! An in-memory table, column by column. Cells are `None` when missing.
//!
//! Numbers and text are kept apart so a numeric column costs 16 bytes a cell, and so a
//! decoded synthetic table prints numbers as numbers. Text is dictionary-encoded
//! ([`TextColumn`]): each distinct string is stored once and a cell costs 4 bytes, so a
//! tall table of categories costs about what its codes do, not its strings.

use std::collections::{HashMap, HashSet};

/// A named table; every column has `n_rows` cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub columns: Vec<Column>,
    pub n_rows: usize,
}

/// One column's cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub values: Values,
}

/// Cells of one column: all numbers, or text.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    Number(Vec<Option<f64>>),
    Text(TextColumn),
}

/// Text cells, dictionary-encoded: the distinct strings once, a code per cell.
#[derive(Debug, Clone, Default)]
pub struct TextColumn {
    levels: Vec<String>,
    codes: Vec<u32>,
    /// The first `codebook` levels are the file's value labels (SPSS/Stata), in its order,
    /// whether or not a cell uses them; 0 for a column without a codebook.
    codebook: usize,
}

/// The code of a missing cell.
const MISSING: u32 = u32::MAX;

impl TextColumn {
    /// The cell at `i` (`None` when missing or out of range).
    pub fn get(&self, i: usize) -> Option<&str> {
        match self.codes.get(i) {
            Some(&c) if c != MISSING => Some(self.levels[c as usize].as_str()),
            _ => None,
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = Option<&str>> + '_ {
        self.codes
            .iter()
            .map(move |&c| (c != MISSING).then(|| self.levels[c as usize].as_str()))
    }

    pub fn len(&self) -> usize {
        self.codes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }

    /// The distinct strings the cells point into (possibly some no cell uses any more).
    pub fn dictionary(&self) -> &[String] {
        &self.levels
    }

    /// Each cell's index into [`Self::dictionary`], `None` when missing.
    pub fn codes(&self) -> impl Iterator<Item = Option<usize>> + '_ {
        self.codes
            .iter()
            .map(|&c| (c != MISSING).then_some(c as usize))
    }

    /// Builds a column cell by cell (see [`TextBuilder`]).
    pub fn from_cells<'a>(cells: impl IntoIterator<Item = Option<&'a str>>) -> Self {
        let mut b = TextBuilder::default();
        for c in cells {
            b.push(c);
        }
        b.finish()
    }

    /// The cells at `idx`, in that order (same dictionary).
    pub fn select(&self, idx: &[usize]) -> Self {
        Self {
            levels: self.levels.clone(),
            codes: idx.iter().map(|&i| self.codes[i]).collect(),
            codebook: self.codebook,
        }
    }

    /// A column whose dictionary starts with `codebook` (the file's value labels, kept even
    /// when no cell uses one: they are the file's category list, not the rows').
    pub fn with_codebook<'a>(
        codebook: &[String],
        cells: impl IntoIterator<Item = Option<&'a str>>,
    ) -> Self {
        let mut b = TextBuilder::default();
        for l in codebook {
            b.intern(l);
        }
        let n = b.col.levels.len();
        for c in cells {
            b.push(c);
        }
        let mut col = b.finish();
        col.codebook = n;
        col
    }

    /// The file's value labels for this column (empty without a codebook).
    pub fn codebook(&self) -> &[String] {
        &self.levels[..self.codebook]
    }
}

impl PartialEq for TextColumn {
    /// Equal when the cells are (dictionaries may differ in order or unused entries).
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl FromIterator<Option<String>> for TextColumn {
    fn from_iter<I: IntoIterator<Item = Option<String>>>(iter: I) -> Self {
        let mut b = TextBuilder::default();
        for c in iter {
            b.push(c.as_deref());
        }
        b.finish()
    }
}

/// Builds a [`TextColumn`] one cell at a time.
#[derive(Debug, Default)]
pub struct TextBuilder {
    index: HashMap<String, u32>,
    col: TextColumn,
}

impl TextBuilder {
    pub fn push(&mut self, cell: Option<&str>) {
        let code = match cell {
            None => MISSING,
            Some(s) => self.intern(s),
        };
        self.col.codes.push(code);
    }

    /// The code of `s`, adding it to the dictionary when new.
    fn intern(&mut self, s: &str) -> u32 {
        match self.index.get(s) {
            Some(&c) => c,
            None => {
                let c = self.col.levels.len() as u32;
                self.col.levels.push(s.to_string());
                self.index.insert(s.to_string(), c);
                c
            }
        }
    }

    pub fn finish(self) -> TextColumn {
        self.col
    }
}

impl Values {
    pub fn len(&self) -> usize {
        match self {
            Values::Number(v) => v.len(),
            Values::Text(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Column {
    /// The cell as text (numbers in canonical form), or `None` when missing.
    pub fn text(&self, row: usize) -> Option<String> {
        match &self.values {
            Values::Number(v) => v.get(row).copied().flatten().map(crate::util::fmt::number),
            Values::Text(v) => v.get(row).map(str::to_string),
        }
    }

    pub fn is_numeric(&self) -> bool {
        matches!(self.values, Values::Number(_))
    }

    pub fn missing_count(&self) -> usize {
        match &self.values {
            Values::Number(v) => v.iter().filter(|c| c.is_none()).count(),
            Values::Text(v) => v.iter().filter(|c| c.is_none()).count(),
        }
    }

    /// Number of distinct non-missing values.
    pub fn distinct_count(&self) -> usize {
        match &self.values {
            Values::Number(v) => v
                .iter()
                .flatten()
                .map(|x| x.to_bits())
                .collect::<HashSet<_>>()
                .len(),
            Values::Text(v) => v.codes().flatten().collect::<HashSet<_>>().len(),
        }
    }

    /// Distinct non-missing values as canonical text, sorted (numerically for numbers).
    pub fn levels(&self) -> Vec<String> {
        match &self.values {
            Values::Number(v) => {
                let mut xs: Vec<f64> = v
                    .iter()
                    .flatten()
                    .map(|x| x.to_bits())
                    .collect::<HashSet<_>>()
                    .into_iter()
                    .map(f64::from_bits)
                    .collect();
                xs.sort_by(f64::total_cmp);
                xs.into_iter().map(crate::util::fmt::number).collect()
            }
            Values::Text(v) => {
                let used: HashSet<usize> = v.codes().flatten().collect();
                let mut s: Vec<String> = used
                    .into_iter()
                    .map(|c| v.dictionary()[c].clone())
                    .collect();
                s.sort();
                s
            }
        }
    }
}

impl Table {
    /// A table of these columns and no rows (a part of a file that held none).
    pub fn empty(names: Vec<String>) -> Table {
        let columns = names
            .into_iter()
            .map(|name| Column {
                name,
                values: Values::Number(Vec::new()),
            })
            .collect();
        Table { columns, n_rows: 0 }
    }

    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    pub fn n_cols(&self) -> usize {
        self.columns.len()
    }

    /// The columns `keep` accepts by name, in order (e.g. those a schema knows).
    pub fn keep_columns(&self, keep: impl Fn(&str) -> bool) -> Table {
        Table {
            columns: self
                .columns
                .iter()
                .filter(|c| keep(&c.name))
                .cloned()
                .collect(),
            n_rows: self.n_rows,
        }
    }

    /// The rows at `idx`, in that order (indices must be < `n_rows`).
    pub fn rows(&self, idx: &[usize]) -> Table {
        let columns = self
            .columns
            .iter()
            .map(|c| Column {
                name: c.name.clone(),
                values: match &c.values {
                    Values::Number(v) => Values::Number(idx.iter().map(|&i| v[i]).collect()),
                    Values::Text(v) => Values::Text(v.select(idx)),
                },
            })
            .collect();
        Table {
            columns,
            n_rows: idx.len(),
        }
    }

    /// At most `n` rows drawn without replacement by a seeded shuffle (all rows, in
    /// order, when there are no more than `n`).
    pub fn sample_rows(&self, n: usize, seed: u64) -> Table {
        if self.n_rows <= n {
            return self.clone();
        }
        use rand::SeedableRng as _;
        use rand::seq::SliceRandom as _;
        let mut idx: Vec<usize> = (0..self.n_rows).collect();
        idx.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed));
        idx.truncate(n);
        self.rows(&idx)
    }

    /// A seeded split into (the rest, `share` of the rows held out), each in file order:
    /// for scoring on rows a classifier did not train on when no held-out file exists.
    pub fn split_off(&self, share: f64, seed: u64) -> (Table, Table) {
        use rand::SeedableRng as _;
        use rand::seq::SliceRandom as _;
        let held = ((self.n_rows as f64 * share).round() as usize).min(self.n_rows);
        let mut idx: Vec<usize> = (0..self.n_rows).collect();
        idx.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed));
        let (out, rest) = idx.split_at_mut(held);
        out.sort_unstable();
        rest.sort_unstable();
        (self.rows(rest), self.rows(out))
    }

    /// The first `n` rows (for previews and quick tests).
    pub fn head(&self, n: usize) -> Table {
        let idx: Vec<usize> = (0..n.min(self.n_rows)).collect();
        self.rows(&idx)
    }
}

impl Table {
    /// Stacks tables with the same column names (any order) into one, in `self`'s column
    /// order; a column numeric in one and text in another becomes text.
    pub fn concat(parts: &[&Table]) -> Result<Table, String> {
        let Some(first) = parts.first() else {
            return Ok(Table {
                columns: vec![],
                n_rows: 0,
            });
        };
        let mut columns = Vec::with_capacity(first.columns.len());
        for col in &first.columns {
            let cols: Vec<&Column> = parts
                .iter()
                .map(|t| {
                    t.column(&col.name).ok_or_else(|| {
                        format!("column '{}' is missing from one of the tables", col.name)
                    })
                })
                .collect::<Result<_, _>>()?;
            let values = if cols.iter().all(|c| c.is_numeric()) {
                let mut v = Vec::new();
                for c in &cols {
                    if let Values::Number(x) = &c.values {
                        v.extend_from_slice(x);
                    }
                }
                Values::Number(v)
            } else {
                let mut v = TextBuilder::default();
                for (c, t) in cols.iter().zip(parts) {
                    for r in 0..t.n_rows {
                        v.push(c.text(r).as_deref());
                    }
                }
                Values::Text(v.finish())
            };
            columns.push(Column {
                name: col.name.clone(),
                values,
            });
        }
        Ok(Table {
            columns,
            n_rows: parts.iter().map(|t| t.n_rows).sum(),
        })
    }
}
