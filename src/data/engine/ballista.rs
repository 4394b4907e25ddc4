//! [`EngineTable`] on Apache DataFusion Ballista: a session on a cluster's scheduler (or
//! an in-process one), the table registered in it, and the queries of [`super::sql`].

use std::path::Path;

use ballista::prelude::SessionContextExt as _;
use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::prelude::{CsvReadOptions, ParquetReadOptions, SessionContext};

use super::arrays::{as_i64, first_row, floats, number_cell, text, text_cells};
use super::sql::{self, TABLE};
use super::witness::{continuous_witness, unrowed, witness_table};
use super::{EngineSource, EngineSurvey, Group, Grouping, STOPPED, Stop};
use crate::data::DataError;
use crate::data::cells::{Cell, RawColumn};
use crate::data::csv::LoadOptions;
use crate::data::digest::TableDigest;
use crate::data::schema::{Kind, Schema};

/// The tag of the engine's own fingerprint of a table (a row text of its own, computed
/// where the rows are): what the re-survey after counting compares, never a ledger key.
const FINGERPRINT_VERSION: &[u8] = b"dpsynth-engine-fingerprint/1";

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
    /// The survey's record count and the engine's fingerprint of the records
    /// ([`fingerprint`]), which the counting pass must find again.
    surveyed: Option<(usize, String)>,
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
            surveyed: None,
        })
    }

    /// Runs `q` to its batches (see [`Self::stream`]).
    fn query(&self, q: &str, stop: Stop<'_>) -> Result<Vec<RecordBatch>, DataError> {
        let mut out = Vec::new();
        self.stream(q, stop, &mut |b| {
            out.push(b.clone());
            Ok(())
        })?;
        Ok(out)
    }

    /// Runs `q` and hands each batch to `each` as it arrives, asking `stop` first, after
    /// every batch and five times a second while the engine works: a stop drops the query
    /// here (a cluster may finish the stage it was running).
    fn stream(
        &self,
        q: &str,
        stop: Stop<'_>,
        each: &mut dyn FnMut(&RecordBatch) -> Result<(), DataError>,
    ) -> Result<(), DataError> {
        use futures::StreamExt as _;
        let stopped = || DataError::file(&self.source.identity(), STOPPED);
        if stop() {
            return Err(stopped());
        }
        self.rt.block_on(async {
            let df = self.ctx.sql(q).await.map_err(|e| self.err(e))?;
            let mut batches = df.execute_stream().await.map_err(|e| self.err(e))?;
            loop {
                tokio::select! {
                    b = batches.next() => match b {
                        None => return Ok(()),
                        Some(b) => {
                            each(&b.map_err(|e| self.err(e))?)?;
                            if stop() {
                                return Err(stopped());
                            }
                        }
                    },
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

    /// Counts the records, checks every column against `schema` (a continuous column's
    /// cells are numbers, a categorical column's values are in its categories, missing
    /// cells only where the schema allows them), then computes the content key
    /// ([`Self::file_key`]), all before anything is reserved. The engine's own fingerprint
    /// of the records is kept for [`Self::check_unchanged`].
    pub fn survey(
        &mut self,
        schema: &Schema,
        opts: &LoadOptions,
        stop: Stop<'_>,
    ) -> Result<EngineSurvey, DataError> {
        self.tokens = opts.missing_tokens.clone();
        let id = self.source.identity();
        self.check_columns(schema)?;
        let continuous: Vec<&str> = schema
            .columns
            .iter()
            .filter(|c| c.kind == Kind::Continuous)
            .map(|c| c.name.as_str())
            .collect();
        let row = self.survey_row(&continuous, stop)?;
        let (rows, fingerprint) = self.fingerprint_of(&row);
        if rows == 0 {
            return Err(DataError::file(&id, "has a header but no data rows"));
        }
        if rows == 1 {
            return Err(DataError::file(
                &id,
                "has only one data row; synthetic data needs a table of many rows",
            ));
        }
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
        schema.check_fits(&t, &[]).map_err(|e| {
            DataError::file(&id, format!("does not fit the schema: {}", unrowed(&e)))
        })?;
        self.filler = witness
            .into_iter()
            .map(|(n, cells)| (n, cells.into_iter().next().unwrap_or(Cell::Missing)))
            .collect();
        let (keyed, content_key) = self.file_key(opts, stop)?;
        if keyed != rows {
            return Err(DataError::file(&id, super::CHANGED));
        }
        self.surveyed = Some((rows, fingerprint));
        Ok(EngineSurvey { rows, content_key })
    }

    /// The content key a file of these records gets ([`crate::data::digest::TableDigest`]),
    /// and how many records it covers. Every record streams through this client once, a
    /// batch at a time, and its cells are finished by the rules every format's cells go
    /// through ([`crate::data::cells`]), so the same rows share one budget whether a run
    /// reads them from the file or an engine counts them.
    ///
    /// Why not a digest the engine computes: the file digest writes each number in Rust's
    /// shortest round-trip form, which SQL does not reproduce exactly, and a key that
    /// differs by one character is a second budget for the same people. The records pass
    /// through the data owner's own process, as a file's do; the counts still come from
    /// the engine, and nothing read here is released.
    fn file_key(&self, opts: &LoadOptions, stop: Stop<'_>) -> Result<(usize, String), DataError> {
        let id = self.source.identity();
        let select: Vec<String> = self
            .columns
            .iter()
            .enumerate()
            .map(|(k, (name, number))| match number {
                true => format!("CAST({} AS DOUBLE) AS c{k}", sql::ident(name)),
                // As the engine holds it: a time is written here as a file's is.
                false => format!("{} AS c{k}", sql::ident(name)),
            })
            .collect();
        let q = format!("SELECT {} FROM {TABLE}", select.join(", "));
        let mut digest: Option<TableDigest> = None;
        let mut rows = 0usize;
        self.stream(&q, stop, &mut |b| {
            let raw = self
                .columns
                .iter()
                .zip(b.columns())
                .map(|((name, number), a)| {
                    let cells = if *number {
                        let f = floats(a)?;
                        (0..f.len()).map(|r| number_cell(&f, r)).collect()
                    } else {
                        text_cells(a)?
                    };
                    Ok(RawColumn {
                        name: name.clone(),
                        cells,
                        codebook: Vec::new(),
                    })
                })
                .collect::<Result<Vec<_>, String>>()
                .map_err(|e| self.err(e))?;
            let t = crate::data::cells::finish_part(&id, raw, opts)?;
            rows += t.n_rows;
            digest.get_or_insert_with(|| TableDigest::new(&t)).add(&t);
            Ok(())
        })?;
        match digest {
            Some(d) => Ok((rows, d.finish())),
            None => Err(DataError::file(&id, "has a header but no data rows")),
        }
    }

    /// Refuses a table whose records changed since [`Self::survey`] keyed the budget: the
    /// count and the engine's fingerprint, taken again where the records are, must be the
    /// survey's. Run after the counting pass, so rows changed before or while it counted
    /// are caught before anything is released.
    pub fn check_unchanged(&self, stop: Stop<'_>) -> Result<(), DataError> {
        let Some(surveyed) = &self.surveyed else {
            return Err(self.err("internal error: counted before its survey"));
        };
        let row = self.survey_row(&[], stop)?;
        if self.fingerprint_of(&row) == *surveyed {
            return Ok(());
        }
        Err(DataError::file(&self.source.identity(), super::CHANGED))
    }

    /// The record count and the fingerprint in a survey row.
    fn fingerprint_of(&self, row: &[ArrayRef]) -> (usize, String) {
        let rows = as_i64(&row[0]).unwrap_or(0).max(0) as usize;
        let words: Vec<u64> = row[1..17]
            .iter()
            .map(|a| as_i64(a).unwrap_or(0) as u64)
            .collect();
        (rows, fingerprint(&self.digest_order(), &words))
    }

    /// The columns in the digest's order (by canonical name).
    fn digest_order(&self) -> Vec<String> {
        let mut order: Vec<String> = self.names();
        order.sort_by_key(|n| crate::data::digest::canonical_name(n));
        order
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
    fn survey_row(&self, continuous: &[&str], stop: Stop<'_>) -> Result<Vec<ArrayRef>, DataError> {
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
            sql::digest_hex(&self.digest_order(), &self.tokens),
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

/// The engine's fingerprint of a table: SHA-256 over [`FINGERPRINT_VERSION`], the columns'
/// canonical names in order, and the sum mod 2²⁵⁶ of the records' SHA-256 hashes
/// ([`sql::digest_hex`]), which the engine sums where the rows are.
fn fingerprint(order: &[String], words: &[u64]) -> String {
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
    h.update(FINGERPRINT_VERSION);
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
