//! [`EngineTable`] on Apache DataFusion Ballista: a session on a cluster's scheduler (or
//! an in-process one), the table registered in it, and the queries of [`super::sql`].

use std::path::Path;

use ballista::prelude::SessionContextExt as _;
use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::prelude::{CsvReadOptions, ParquetReadOptions, SessionContext};

use super::arrays::{as_f64, as_i64, first_row, text};
use super::sql::{self, TABLE};
use super::{EngineSource, EngineSurvey, Group, Grouping, STOPPED, Stop};
use crate::data::DataError;
use crate::data::cells::{Cell, RawColumn};
use crate::data::csv::LoadOptions;
use crate::data::schema::{Kind, Schema};

/// The tag of an engine table's content digest (a different row text from a file's
/// [`crate::data::digest`], so its own namespace).
const ENGINE_VERSION: &[u8] = b"dpsynth-engine/1";

/// Most distinct values a categorical column may show the survey (its witness): more
/// than any public category list a marginal method can take.
const MAX_DISTINCT: usize = 1 << 20;

/// A table in an engine session.
pub struct EngineTable {
    pub source: EngineSource,
    rt: tokio::runtime::Runtime,
    ctx: SessionContext,
    /// The table's columns, and whether the engine holds each as numbers.
    columns: Vec<(String, bool)>,
    tokens: Vec<String>,
    filler: Vec<(String, Cell)>,
}

impl std::fmt::Debug for EngineTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineTable")
            .field("source", &self.source)
            .field("columns", &self.columns)
            .finish()
    }
}

impl EngineTable {
    fn err(&self, e: impl std::fmt::Display) -> DataError {
        DataError::file(&self.source.identity(), format!("the engine said: {e}"))
    }

    /// Connects (or starts an in-process scheduler and executor) and registers the table:
    /// a Parquet file or folder, or a CSV file (all columns read as text, so the cells go
    /// through dpsynth's rules). This client reads the path too, for the columns' names.
    pub fn connect(source: EngineSource) -> Result<Self, DataError> {
        let id = source.identity();
        let at = |e: &dyn std::fmt::Display| DataError::file(&id, e.to_string());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| at(&e))?;
        let ctx = rt
            .block_on(async {
                match &source.scheduler {
                    None => SessionContext::standalone().await,
                    Some((h, p)) => SessionContext::remote(&format!("df://{h}:{p}")).await,
                }
            })
            .map_err(|e| at(&format!("could not reach the engine: {e}")))?;
        let ext = Path::new(&source.path)
            .extension()
            .map(|e| e.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        let columns = rt
            .block_on(register(&ctx, &source.path, &ext))
            .map_err(|e| at(&e))?;
        Ok(Self {
            source,
            rt,
            ctx,
            columns,
            tokens: Vec::new(),
            filler: Vec::new(),
        })
    }

    /// Runs `q` to its batches, asking `stop` first and five times a second while the
    /// engine works: a stop drops the query here (a cluster may finish the stage it was
    /// running).
    fn query(&self, q: &str, stop: Stop<'_>) -> Result<Vec<RecordBatch>, DataError> {
        let stopped = || DataError::file(&self.source.identity(), STOPPED);
        if stop() {
            return Err(stopped());
        }
        self.rt.block_on(async {
            let run = async { self.ctx.sql(q).await?.collect().await };
            tokio::pin!(run);
            loop {
                tokio::select! {
                    r = &mut run => return r.map_err(|e| self.err(e)),
                    _ = tokio::time::sleep(std::time::Duration::from_millis(200)) => {
                        if stop() {
                            return Err(stopped());
                        }
                    }
                }
            }
        })
    }

    fn names(&self) -> Vec<String> {
        self.columns.iter().map(|(n, _)| n.clone()).collect()
    }

    fn is_number(&self, column: &str) -> bool {
        self.columns.iter().any(|(n, num)| n == column && *num)
    }

    fn filter(&self) -> String {
        sql::is_record(&self.names(), &self.tokens)
    }

    /// Counts the records, computes the content key and checks every column against
    /// `schema` (a continuous column's cells are numbers, a categorical column's values
    /// are in its categories, missing cells only where the schema allows them) before
    /// anything is reserved. The key: SHA-256 over [`ENGINE_VERSION`], the columns'
    /// canonical names in order, and the sum mod 2²⁵⁶ of the records' SHA-256 hashes
    /// ([`sql::digest_hex`]), computed by the engine where the rows are.
    pub fn survey(
        &mut self,
        schema: &Schema,
        opts: &LoadOptions,
        stop: Stop<'_>,
    ) -> Result<EngineSurvey, DataError> {
        self.tokens = opts.missing_tokens.clone();
        let id = self.source.identity();
        self.check_columns(schema)?;
        let mut order: Vec<String> = self.names();
        order.sort_by_key(|n| crate::data::digest::canonical_name(n));
        let continuous: Vec<&str> = schema
            .columns
            .iter()
            .filter(|c| c.kind == Kind::Continuous)
            .map(|c| c.name.as_str())
            .collect();
        let row = self.survey_row(&order, &continuous, stop)?;
        let rows = as_i64(&row[0]).unwrap_or(0).max(0) as usize;
        if rows == 0 {
            return Err(DataError::file(&id, "has a header but no data rows"));
        }
        if rows == 1 {
            return Err(DataError::file(
                &id,
                "has only one data row; synthetic data needs a table of many rows",
            ));
        }
        let words: Vec<u64> = row[1..17]
            .iter()
            .map(|a| as_i64(a).unwrap_or(0) as u64)
            .collect();
        let mut witness = continuous_witness(&row[17..], &continuous)?;
        for spec in schema.columns.iter().filter(|c| c.kind != Kind::Continuous) {
            let cells = if spec.kind == Kind::Ignored {
                vec![Cell::Text("-".into())]
            } else {
                self.distinct(&spec.name, stop)?
            };
            witness.push((spec.name.clone(), cells));
        }
        let t = witness_table(&id, &witness, opts)?;
        schema
            .check_fits(&t, &[])
            .map_err(|e| DataError::file(&id, format!("does not fit the schema: {e}")))?;
        self.filler = witness
            .into_iter()
            .map(|(n, cells)| (n, cells.into_iter().next().unwrap_or(Cell::Missing)))
            .collect();
        Ok(EngineSurvey {
            rows,
            content_key: content_key(&order, &words),
        })
    }

    /// The table's columns are the schema's, by name (as a file's must be).
    fn check_columns(&self, schema: &Schema) -> Result<(), DataError> {
        for (name, _) in &self.columns {
            if schema.column(name).is_none() {
                return Err(DataError::column(
                    name,
                    "is in the data but not in the schema; add it (kind \"ignored\" drops it)",
                ));
            }
        }
        for spec in &schema.columns {
            if !self.columns.iter().any(|(n, _)| *n == spec.name) {
                return Err(DataError::column(
                    &spec.name,
                    "is in the schema but not in the data",
                ));
            }
        }
        Ok(())
    }

    /// The survey's one row: the record count, the sixteen digest sums, and per
    /// continuous column its non-numbers, smallest, largest and missing count.
    fn survey_row(
        &self,
        order: &[String],
        continuous: &[&str],
        stop: Stop<'_>,
    ) -> Result<Vec<ArrayRef>, DataError> {
        let mut select = vec!["COUNT(*)".to_string()];
        select.extend(sql::digest_words("dpsynth_h"));
        for c in continuous {
            select.push(sql::not_numbers(c, &self.tokens));
            let x = sql::numeric(c, self.is_number(c), &self.tokens);
            select.push(format!("MIN({x})"));
            select.push(format!("MAX({x})"));
            select.push(format!("SUM(CASE WHEN {x} IS NULL THEN 1 ELSE 0 END)"));
        }
        let q = format!(
            "SELECT {} FROM (SELECT *, {} AS dpsynth_h FROM {TABLE} WHERE {})",
            select.join(", "),
            sql::digest_hex(order, &self.tokens),
            self.filter()
        );
        let batches = self.query(&q, stop)?;
        let row = first_row(&batches).map_err(|e| self.err(e))?;
        if row.len() != select.len() {
            return Err(self.err(format!(
                "a survey of {} values, not the {} asked for",
                row.len(),
                select.len()
            )));
        }
        Ok(row)
    }

    /// The distinct cells of a text column (missing last).
    fn distinct(&self, column: &str, stop: Stop<'_>) -> Result<Vec<Cell>, DataError> {
        let c = sql::cell(column, &self.tokens);
        let q = format!(
            "SELECT DISTINCT {c} AS v FROM {TABLE} WHERE {} LIMIT {}",
            self.filter(),
            MAX_DISTINCT + 1
        );
        let mut cells = Vec::new();
        let mut missing = false;
        for b in self.query(&q, stop)? {
            let a = text(b.column(0)).map_err(|e| self.err(e))?;
            for i in 0..a.len() {
                if a.is_null(i) {
                    missing = true;
                } else {
                    cells.push(Cell::Text(a.value(i).to_string()));
                }
            }
        }
        if cells.len() > MAX_DISTINCT {
            return Err(DataError::column(
                column,
                format!(
                    "has more than {MAX_DISTINCT} distinct values; mark it continuous or ignored"
                ),
            ));
        }
        if missing {
            cells.push(Cell::Missing);
        }
        Ok(cells)
    }

    /// The records grouped by each of `sets` (a set: columns, each by its [`Grouping`]),
    /// with each group's smallest and largest cell per column and its count: one query
    /// (`GROUP BY GROUPING SETS`), so the engine reads the table once for all of them.
    pub fn groups(
        &self,
        sets: &[Vec<(String, Grouping)>],
        stop: Stop<'_>,
    ) -> Result<Vec<Vec<Group>>, DataError> {
        let q = super::grouping::GroupingQuery::new(sets);
        let mut out: Vec<Vec<Group>> = vec![Vec::new(); sets.len()];
        let sql = q.sql(&self.tokens, &|c| self.is_number(c), &self.filter());
        for b in self.query(&sql, stop)? {
            q.read(&b, sets, &mut out).map_err(|e| self.err(e))?;
        }
        Ok(out)
    }

    /// A valid cell of each schema column (the survey's), to fill the columns a count
    /// query did not ask for before encoding.
    pub fn filler(&self) -> &[(String, Cell)] {
        &self.filler
    }
}

/// Registers the table; its columns and whether each is held as numbers.
async fn register(
    ctx: &SessionContext,
    path: &str,
    ext: &str,
) -> Result<Vec<(String, bool)>, String> {
    let fields = |s: &datafusion::common::DFSchema| -> Vec<(String, bool)> {
        s.fields()
            .iter()
            .map(|f| (f.name().clone(), f.data_type().is_numeric()))
            .collect()
    };
    match ext {
        "parquet" | "pq" => {
            ctx.register_parquet(TABLE, path, ParquetReadOptions::default())
                .await
                .map_err(|e| format!("could not open it as Parquet: {e}"))?;
            let df = ctx.table(TABLE).await.map_err(|e| e.to_string())?;
            Ok(fields(df.schema()))
        }
        "csv" | "tsv" | "txt" => {
            let head = read_head(path)?;
            let delimiter = crate::data::csv::delimiter_of(&head, &LoadOptions::default());
            let dot_ext = format!(".{ext}");
            let opts = || {
                CsvReadOptions::new()
                    .has_header(true)
                    .delimiter(delimiter)
                    .file_extension(&dot_ext)
            };
            ctx.register_csv(TABLE, path, opts())
                .await
                .map_err(|e| format!("could not open it as CSV: {e}"))?;
            let df = ctx.table(TABLE).await.map_err(|e| e.to_string())?;
            let names: Vec<String> = fields(df.schema()).into_iter().map(|(n, _)| n).collect();
            // Every column as text: the cells then go through dpsynth's rules.
            let text = ArrowSchema::new(
                names
                    .iter()
                    .map(|n| Field::new(n, DataType::Utf8, true))
                    .collect::<Vec<_>>(),
            );
            ctx.deregister_table(TABLE).map_err(|e| e.to_string())?;
            ctx.register_csv(TABLE, path, opts().schema(&text))
                .await
                .map_err(|e| format!("could not open it as CSV: {e}"))?;
            Ok(names.into_iter().map(|n| (n, false)).collect())
        }
        _ => Err("name a .parquet or .csv table (file or folder of them)".into()),
    }
}

/// The first bytes of a file, to tell its delimiter.
fn read_head(path: &str) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    let mut f = std::fs::File::open(path)
        .map_err(|e| format!("this client reads the file for its columns and could not: {e}"))?;
    let mut head = vec![0u8; 64 << 10];
    let n = f.read(&mut head).map_err(|e| e.to_string())?;
    head.truncate(n);
    Ok(head)
}

/// Each continuous column's witness cells (its smallest and largest numbers, and a missing
/// cell when it has any) from the survey's four figures per column; text that is not a
/// number is refused, as a file's continuous column would be.
fn continuous_witness(
    figures: &[ArrayRef],
    continuous: &[&str],
) -> Result<Vec<(String, Vec<Cell>)>, DataError> {
    let mut witness = Vec::new();
    for (c, f) in continuous.iter().zip(figures.chunks(4)) {
        let bad = f.first().and_then(as_i64).unwrap_or(0);
        if bad > 0 {
            return Err(DataError::column(
                c,
                format!(
                    "holds text that is not a number in {bad} records; a continuous column needs numbers (convert dates or codes before the engine reads them)"
                ),
            ));
        }
        let mut cells: Vec<Cell> = f
            .iter()
            .skip(1)
            .take(2)
            .filter_map(|a| as_f64(a).map(Cell::Number))
            .collect();
        if f.get(3).and_then(as_i64).unwrap_or(0) > 0 {
            cells.push(Cell::Missing);
        }
        witness.push((c.to_string(), cells));
    }
    Ok(witness)
}

/// A table whose every column holds each of its witness cells at least once (shorter
/// columns repeat their first cell): it fits a schema exactly when the whole table does.
fn witness_table(
    name: &str,
    witness: &[(String, Vec<Cell>)],
    opts: &LoadOptions,
) -> Result<crate::data::Table, DataError> {
    let rows = witness
        .iter()
        .map(|(_, c)| c.len())
        .max()
        .unwrap_or(0)
        .max(1);
    let raw = witness
        .iter()
        .map(|(n, cells)| {
            let first = cells.first().cloned().unwrap_or(Cell::Missing);
            let mut cells = cells.clone();
            cells.resize(rows, first);
            RawColumn {
                name: n.clone(),
                cells,
                codebook: Vec::new(),
            }
        })
        .collect();
    crate::data::cells::finish_part(name, raw, opts)
}

/// The key of an engine table (see [`EngineTable::survey`]).
fn content_key(order: &[String], words: &[u64]) -> String {
    use sha2::{Digest as _, Sha256};
    // words[k] sums the records' 16-bit words at bits 240 − 16k (big-endian hex).
    let mut sum = [0u64; 4];
    for (k, w) in words.iter().enumerate() {
        let shift = 16 * (15 - k);
        let (limb, off) = (shift / 64, shift % 64);
        let mut add = [0u64; 4];
        add[limb] = w << off;
        if off > 0 && limb + 1 < 4 {
            add[limb + 1] = w >> (64 - off);
        }
        let mut carry = false;
        for (x, y) in sum.iter_mut().zip(add) {
            let (s, c1) = x.overflowing_add(y);
            let (s, c2) = s.overflowing_add(u64::from(carry));
            *x = s;
            carry = c1 || c2;
        }
    }
    let mut h = Sha256::new();
    h.update(ENGINE_VERSION);
    for n in order {
        let n = crate::data::digest::canonical_name(n);
        h.update((n.len() as u64).to_le_bytes());
        h.update(n.as_bytes());
    }
    for limb in sum {
        h.update(limb.to_le_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}
