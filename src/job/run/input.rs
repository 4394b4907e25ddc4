//! A run's input, checked before anything is spent: the data opened once with its ledger
//! keys, the method and device it asks for, the record count, the domain policy, and the
//! memory estimate.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::data;
use crate::data::encode::{EncodedData, Encoding};
use crate::data::engine::{EngineSource, EngineTable};
use crate::data::estimate::{self, DomainPlan};
use crate::data::schema::Provenance;
use crate::data::schema::Schema;
use crate::data::stream::{EncodedScan, RowsFrom, Scan};
use crate::data::table::Table;
use crate::job::workspace::Rows;
use crate::job::{Event, JobError, RunConfig};
use crate::methods::registry::{DataKind, MethodInfo};
use crate::privacy::Budget;
use crate::privacy::ledger::Ledger;

/// What a survey stopped by the run's cancel says: nothing was spent.
const SURVEY_STOPPED: &str = "stopped while checking the rows, before anything was spent";

/// The private data, encoded, and what kind it is.
pub(super) struct Encoded {
    pub(super) encoding: Encoding,
    /// The rows in memory (none when they are streamed).
    pub(super) data: EncodedData,
    pub(super) kind: DataKind,
    /// The rows read in parts, for a streamed run (`data` is then empty).
    pub(super) parts: Option<EncodedScan>,
}

impl Encoded {
    /// The rows the run trains on, in memory or streamed.
    pub(super) fn rows(&self) -> usize {
        self.parts.as_ref().map_or(self.data.n_rows, |p| p.rows)
    }
}

/// The private data as opened: a table with its schema (given, else guessed), or an
/// image set already encoded under its fixed, public image schema.
pub(super) enum Loaded {
    Table {
        table: Arc<Table>,
        schema: Schema,
    },
    Images(Encoded),
    /// A table too long for memory, checked and keyed by one pass and read again in parts
    /// by the method (`train --stream`); its schema is the encoding's.
    Streamed(EncodedScan),
}

impl Loaded {
    pub(super) fn kind(&self) -> DataKind {
        match self {
            Loaded::Table { .. } | Loaded::Streamed(_) => DataKind::Table,
            Loaded::Images(_) => DataKind::Images,
        }
    }

    /// The table's schema (`None` for images, whose schema is fixed).
    pub(super) fn schema_mut(&mut self) -> Option<&mut Schema> {
        match self {
            Loaded::Table { schema, .. } => Some(schema),
            Loaded::Streamed(s) => Some(&mut s.encoding.schema),
            Loaded::Images(_) => None,
        }
    }

    pub(super) fn rows(&self) -> usize {
        match self {
            Loaded::Table { table, .. } => table.n_rows,
            Loaded::Images(e) => e.data.n_rows,
            Loaded::Streamed(s) => s.rows,
        }
    }
}

/// The ledger's two keys for the run's dataset: the content key its budget is kept under,
/// and the file's byte key recorded as an alias of it.
pub(super) struct Keys {
    pub(super) content: String,
    pub(super) bytes: String,
}

/// The run's data: the rows the window already opened when it handed them over for this
/// very file, else the file read once now ([`crate::job::workspace::open`]).
pub(super) fn opened(cfg: &RunConfig) -> Result<Arc<crate::job::workspace::Opened>, JobError> {
    match &cfg.opened {
        Some(s) if s.0.path == cfg.data => Ok(s.0.clone()),
        _ => Ok(Arc::new(crate::job::workspace::open(
            &cfg.data,
            &mut |_, _| {},
        )?)),
    }
}

/// Opens the data, with its ledger keys ([`crate::data::digest`]): those of `charge_to`
/// when the run is paid by another file (an audit's working copy).
pub(super) fn load(cfg: &RunConfig, cancel: &AtomicBool) -> Result<(Loaded, Keys), JobError> {
    if let Some(source) = EngineSource::parse(&cfg.data) {
        return load_engine(
            cfg,
            source.map_err(|e| JobError::Usage(e.to_string()))?,
            cancel,
        );
    }
    if cfg.stream {
        return load_streamed(cfg, cancel);
    }
    let at = |e: &dyn std::fmt::Display| JobError::file(&cfg.data, e);
    let opened = opened(cfg)?;
    let keys = match &cfg.charge_to {
        None => Keys {
            content: opened.content_key.clone(),
            bytes: opened.byte_key.clone(),
        },
        Some(original) => {
            let o = crate::job::workspace::open(original, &mut |_, _| {})?;
            Keys {
                content: o.content_key,
                bytes: o.byte_key,
            }
        }
    };
    let loaded = match &opened.rows {
        Rows::Table(table) => {
            let mut schema = match (&cfg.inline_schema, &cfg.schema) {
                (Some(s), _) => s.clone(),
                (None, Some(p)) => Schema::load(p).map_err(|e| JobError::file(p, e))?,
                (None, None) => data::infer::infer_schema(table).map_err(|e| at(&e))?.schema,
            };
            if cfg.public_kinds {
                schema.confirm_kinds();
            }
            if cfg.public_codebook {
                schema.confirm_codebook();
            }
            Loaded::Table {
                table: table.clone(),
                schema,
            }
        }
        Rows::Images(set) => {
            if cfg.schema.is_some() || cfg.inline_schema.is_some() {
                return Err(at(
                    &"image sets have a fixed schema (label 0–9, pixels 0–255); run without a schema file",
                ));
            }
            let encoding = Encoding::new(&set.schema()).map_err(|e| at(&e))?;
            let data = set.encode().map_err(|e| at(&e))?;
            Loaded::Images(Encoded {
                encoding,
                data,
                kind: DataKind::Images,
                parts: None,
            })
        }
    };
    Ok((loaded, keys))
}

/// Opens the ledger and records that the file's bytes are the dataset `keys.content`.
pub(super) fn open_ledger(ledger_path: &Path, keys: &Keys) -> Result<Ledger, JobError> {
    let mut ledger = Ledger::open(ledger_path)?;
    ledger.adopt_key(&keys.bytes, &keys.content)?;
    Ok(ledger)
}

/// Encodes the rows under `schema` with the exact values its rules name held as point
/// masses ([`data::rules::hold_named_values`]: public by the rules, no charge), so a rule
/// such as `participation = "no" => hours = 0` is a structural zero of the model rather
/// than a filter that drops every "no" row a bin decoded away from 0.
pub(super) fn encode(cfg: &RunConfig, table: &Table, schema: &Schema) -> Result<Encoded, JobError> {
    let at = |e: &dyn std::fmt::Display| JobError::file(&cfg.data, e);
    let mut schema = schema.clone();
    data::rules::hold_named_values(&mut schema).map_err(|e| at(&e))?;
    let encoding = Encoding::new(&schema).map_err(|e| at(&e))?;
    let data = encoding.encode(table).map_err(|e| at(&e))?;
    Ok(Encoded {
        encoding,
        data,
        kind: DataKind::Table,
        parts: None,
    })
}

/// A streamed run's input: the schema (given: a streamed run reads no domain off the
/// rows), one pass over every column that checks each part against it, counts the
/// records and computes the content key ([`crate::data::stream::Scan::survey`]), and
/// the file's byte key. The method reads the file again, in parts, for its counts.
fn load_streamed(cfg: &RunConfig, cancel: &AtomicBool) -> Result<(Loaded, Keys), JobError> {
    let at = |e: &dyn std::fmt::Display| JobError::file(&cfg.data, e);
    let schema = given_schema(cfg)?;
    let encoding = Encoding::new(&schema).map_err(|e| at(&e))?;
    let mut scan = Scan::open(&cfg.data, Default::default()).map_err(|e| at(&e))?;
    if let Some(rows) = cfg.part_rows {
        scan.part_rows = rows.max(1);
    }
    let survey = scan
        .survey(&mut |part, before| {
            if cancel.load(Ordering::SeqCst) {
                return Err(data::DataError::file(
                    &cfg.data.display().to_string(),
                    SURVEY_STOPPED,
                ));
            }
            schema.check_fits_at(part, &[], before)
        })
        .map_err(|e| at(&e))?;
    let bytes = crate::job::workspace::byte_key(&cfg.data).map_err(|e| at(&e))?;
    Ok((
        Loaded::Streamed(EncodedScan {
            from: RowsFrom::File(scan),
            encoding,
            rows: survey.rows,
            stamp: Some(survey.stamp),
        }),
        Keys {
            content: survey.content_key,
            bytes,
        },
    ))
}

/// The schema of a run that does not hold its rows (streamed, or counted by an engine):
/// given, since such a run reads no kind or domain off the rows.
fn given_schema(cfg: &RunConfig) -> Result<Schema, JobError> {
    if cfg.charge_to.is_some() {
        return Err(JobError::Usage(
            "a streamed or engine run is paid by its own data; train it without --stream to charge another"
                .into(),
        ));
    }
    let mut schema = match (&cfg.inline_schema, &cfg.schema) {
        (Some(s), _) => s.clone(),
        (None, Some(p)) => Schema::load(p).map_err(|e| JobError::file(p, e))?,
        (None, None) => {
            return Err(JobError::Usage(
                "a streamed or engine run needs a schema (--schema) with every column's domain public: it never reads kinds or domains off the rows. `dpsynth inspect` on a sample of the table writes one to edit".into(),
            ));
        }
    };
    if cfg.public_kinds {
        schema.confirm_kinds();
    }
    if cfg.public_codebook {
        schema.confirm_codebook();
    }
    data::rules::hold_named_values(&mut schema).map_err(|e| JobError::file(&cfg.data, e))?;
    Ok(schema)
}

/// Whether `--data` names a table a query engine holds (`ballista://…`).
pub(super) fn is_engine(cfg: &RunConfig) -> bool {
    EngineSource::parse(&cfg.data).is_some()
}

/// A run counted by a query engine: the schema (given), one survey query that counts the
/// records, checks every column against the schema and computes the content key where
/// the rows are ([`EngineTable::survey`]). The byte-key slot holds the table's identity:
/// the same URL keeps its spend even when its rows change (a key shared too widely only
/// charges more).
fn load_engine(
    cfg: &RunConfig,
    source: EngineSource,
    cancel: &AtomicBool,
) -> Result<(Loaded, Keys), JobError> {
    let at = |e: &dyn std::fmt::Display| JobError::file(&cfg.data, e);
    if !crate::data::engine::AVAILABLE {
        return Err(JobError::Usage(format!(
            "{}: {}",
            source.identity(),
            crate::data::engine::ABSENT
        )));
    }
    let schema = given_schema(cfg)?;
    let encoding = Encoding::new(&schema).map_err(|e| at(&e))?;
    let identity = source.identity();
    let mut table = EngineTable::connect(source).map_err(|e| at(&e))?;
    let survey = table
        .survey(&schema, &Default::default(), &mut || {
            cancel.load(Ordering::SeqCst)
        })
        .map_err(|e| at(&e))?;
    Ok((
        Loaded::Streamed(EncodedScan {
            from: RowsFrom::Engine(std::sync::Arc::new(table)),
            encoding,
            rows: survey.rows,
            stamp: None,
        }),
        Keys {
            content: survey.content_key,
            bytes: format!("engine:{identity}"),
        },
    ))
}

/// Applies the run's [`DomainPolicy`] to domains read off the rows ([`crate::job::plan::domains`]):
/// refuses (naming them), plans their private estimate, or lets them through (the
/// statement then says they are not covered). Non-private runs guarantee nothing and are
/// let through.
pub(super) fn domain_step(
    cfg: &RunConfig,
    loaded: &Loaded,
    private: bool,
    budget: Budget,
) -> Result<Option<DomainPlan>, JobError> {
    let (schema, streamed) = match loaded {
        Loaded::Table { schema, .. } => (schema, false),
        Loaded::Streamed(s) => (&s.encoding.schema, true),
        Loaded::Images(_) => return Ok(None),
    };
    if !private {
        return Ok(None);
    }
    let plan = crate::job::plan::domains(
        schema,
        cfg.domains,
        crate::job::plan::Uncovered::Refuse,
        budget,
        (
            cfg.public_rows,
            cfg.exact_values && !streamed,
            // MST and AIM measure a `->` rule's pair themselves.
            cfg.exact_values && !streamed && !crate::job::method(&cfg.method)?.streams,
        ),
    )?;
    match plan {
        Some(d) if streamed => Err(JobError::Usage(format!(
            "a streamed or engine run cannot estimate domains from the rows: give the domains of {} in the schema (public bounds or categories), or train on a file in memory",
            d.columns.join(", ")
        ))),
        plan => Ok(plan),
    }
}

/// Everything a run needs besides the data, checked before the data is read and before
/// the ledger reserves anything: a typo in a device or a path costs no budget.
pub(super) fn preflight(cfg: &RunConfig) -> Result<candle_core::Device, JobError> {
    // The file itself: `data` may name a sheet of it (`book.xlsx#sheet`).
    if !is_engine(cfg) {
        let file = crate::data::source::Source::parse(&cfg.data).file;
        std::fs::metadata(&file).map_err(|e| JobError::file(&cfg.data, e))?;
    }
    let device = cfg
        .device
        .open()
        .map_err(|e| JobError::Usage(e.to_string()))?;
    if let Some(dir) = &cfg.checkpoints {
        std::fs::create_dir_all(dir).map_err(|e| JobError::write(dir, e))?;
        probe_writable(dir).map_err(|e| JobError::write(dir, e))?;
    }
    if cfg.out.is_dir() {
        return Err(JobError::Usage(format!(
            "--out {} is a folder; give the model file's name (e.g. {}/model.dpsynth)",
            cfg.out.display(),
            cfg.out.display()
        )));
    }
    let parent = match cfg.out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    if !parent.is_dir() {
        return Err(JobError::write(
            &cfg.out,
            format!("its folder {} does not exist", parent.display()),
        ));
    }
    probe_writable(&parent).map_err(|e| JobError::write(&cfg.out, e))?;
    Ok(device)
}

/// Whether a file can be created in `dir` (the way the atomic writes will create theirs).
pub(super) fn probe_writable(dir: &Path) -> std::io::Result<()> {
    tempfile::Builder::new()
        .prefix(".dpsynth-probe")
        .tempfile_in(dir)
        .map(drop)
}

/// The run's memory and time estimate; refused (before anything is reserved) when the
/// memory is not there, unless the user forces it.
pub(super) fn estimate_resources(
    cfg: &RunConfig,
    loaded: &Loaded,
    method: &(dyn crate::methods::Synthesizer + Send),
) -> Result<crate::job::resources::Resources, JobError> {
    // Rows held in memory at once: all of them, or one part of a streamed file.
    let (rows, held, columns, width) = match loaded {
        Loaded::Table { table, schema } => {
            let width = Encoding::new(schema)
                .map_err(|e| JobError::file(&cfg.data, e))?
                .width;
            (table.n_rows, table.n_rows, table.n_cols(), width)
        }
        Loaded::Images(e) => (e.data.n_rows, e.data.n_rows, 0, e.data.width),
        Loaded::Streamed(s) => (
            s.rows,
            s.rows_held(),
            s.encoding.schema.columns.len(),
            s.encoding.width,
        ),
    };
    let r = crate::job::plan::resources(
        method,
        (rows, held),
        columns,
        width,
        cfg.device.resolves_to_cpu(),
    );
    if let Some(why) = r.refusal().filter(|_| !cfg.force_memory) {
        return Err(JobError::CannotPlan(why));
    }
    Ok(r)
}

/// The method a run asks for, after checking that it fits the request.
pub(super) fn method_for(cfg: &RunConfig) -> Result<(&'static MethodInfo, bool), JobError> {
    let info = crate::job::method(&cfg.method)?;
    let private = info.is_private_at(cfg.epsilon);
    if private && !(cfg.epsilon > 0.0 && cfg.delta > 0.0 && cfg.delta < 1.0) {
        return Err(JobError::Usage(format!(
            "need ε > 0 and 0 < δ < 1, got ε = {}, δ = {}",
            cfg.epsilon, cfg.delta
        )));
    }
    Ok((info, private))
}

/// Opens the data and checks that the method takes it and that δ is below 1/n.
pub(super) fn checked_input(
    cfg: &RunConfig,
    info: &MethodInfo,
    private: bool,
    cancel: &AtomicBool,
) -> Result<(Loaded, Keys), JobError> {
    if (cfg.stream || is_engine(cfg)) && !info.streams {
        return Err(JobError::Usage(format!(
            "{} needs the rows in memory; --stream and engine tables are for the methods that need only counts of them (mst, aim)",
            info.id
        )));
    }
    let (loaded, key) = load(cfg, cancel)?;
    if !info.accepts(loaded.kind()) {
        return Err(JobError::Usage(format!(
            "{} cannot train on {}; pick a method that accepts them (`dpsynth methods`)",
            info.id,
            match loaded.kind() {
                DataKind::Table => "tables",
                DataKind::Images => "images",
            }
        )));
    }
    let n = records(cfg, loaded.rows())?;
    if private && cfg.delta * n as f64 >= 1.0 && !cfg.force_delta {
        return Err(JobError::Usage(format!(
            "δ = {} is at least 1/n = 1/{n}: a mechanism may then publish one record outright and still meet (ε, δ). Use δ well below 1/n (e.g. {:.0e}), or --force",
            cfg.delta,
            0.1 / n as f64
        )));
    }
    Ok((loaded, key))
}

/// N as the run plans with it: the public number of records the user gave, else the
/// rows' count (then treated as public, the usual convention; the statement says which).
pub(super) fn records(cfg: &RunConfig, rows: usize) -> Result<usize, JobError> {
    match cfg.public_rows {
        Some(0) => Err(JobError::Usage(
            "the public number of records must be at least 1".into(),
        )),
        Some(p) => Ok(p),
        None => Ok(rows),
    }
}

/// A schema file can call any domain `dp_estimated`; only estimates this dataset's
/// ledger recorded stay so, the others are treated as read off the data.
pub(super) fn distrust_claims(
    ledger_path: &Path,
    keys: &Keys,
    loaded: &mut Loaded,
    send: &(dyn Fn(Event) + Sync),
) -> Result<(), JobError> {
    let key = keys.content.as_str();
    let Some(schema) = loaded.schema_mut() else {
        return Ok(());
    };
    let claims = schema
        .columns
        .iter()
        .any(|c| matches!(c.provenance, Provenance::DpEstimated { .. }));
    if !claims {
        return Ok(());
    }
    let ledger = open_ledger(ledger_path, keys)?;
    let demoted =
        estimate::distrust_unrecorded(schema, |d| ledger.has_estimate(key, d).unwrap_or(false));
    if !demoted.is_empty() {
        send(Event::Notice(format!(
            "the schema calls the domains of {} DP-estimated, but this dataset's ledger has no such estimate: they are treated as read off the data",
            demoted.join(", ")
        )));
    }
    Ok(())
}
