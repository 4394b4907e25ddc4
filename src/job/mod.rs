//! Brief overview: a run, and every service the window and the CLI share.
//!
//! A serde [`RunConfig`] (everything needed to reproduce a run) goes to a worker thread;
//! the thread sends typed [`Event`]s (started, progress, budget, checkpoints, samples,
//! finished) and honours cancellation. Beside runs, the job owns what both front ends need
//! and neither may do itself (DESIGN.md §1): the cost preview ([`cost`]), export and model
//! reading ([`services`]), and evaluation ([`evaluation`]). The window only draws what
//! these return; it never touches a method, the accountant, the ledger or candle.
//!
//! Budget discipline (DESIGN.md §2): the run's whole planned RDP curve is reserved in the
//! dataset's ledger before training reads a row, and training consumes *that* plan (σ is
//! calibrated once); when the run ends — finished, cancelled or failed — the reservation is
//! settled to what the accountant actually charged. A crash leaves the reservation counted.

pub mod audit;
pub mod cost;
mod error;
pub mod eta;
pub mod evaluation;
pub mod linked;
pub mod paths;
mod plan;
pub mod priority;
pub mod report_store;
pub mod resources;
pub mod risk;
mod run;
pub mod run_store;
pub mod services;
pub mod sweep;
pub mod workspace;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, channel};

use serde::{Deserialize, Serialize};

pub use crate::methods::method::{DEFAULT_PRESET, DIGITS_PRESET, SMOKE_PRESET};
pub use crate::methods::post_gan_boosting::BoostConfig;
pub use crate::methods::registry::{DataKind, MethodInfo, Preset};
pub use crate::methods::released::{Draw, Jitter, PrivacyStatement};
pub use crate::nn::device::DeviceChoice;
pub use error::JobError;

/// Everything needed to reproduce a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    pub data: PathBuf,
    #[serde(default)]
    pub schema: Option<PathBuf>,
    /// The schema itself (the window's, as the user edited it): used instead of `schema`
    /// and kept in the run's record, so no schema file is written for a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline_schema: Option<crate::data::schema::Schema>,
    /// `data` as already opened (the window's): the run trains on these rows and keys
    /// instead of reading the file again. Not part of the record: `data` names the file.
    #[serde(skip)]
    pub opened: Option<workspace::Shared>,
    pub method: String,
    #[serde(default = "default_preset")]
    pub preset: String,
    /// `f64::INFINITY` for the non-private reference.
    pub epsilon: f64,
    pub delta: f64,
    #[serde(default)]
    pub seed: Option<u64>,
    pub out: PathBuf,
    #[serde(default)]
    pub device: DeviceChoice,
    /// Training threads (default: all cores).
    #[serde(default)]
    pub threads: Option<usize>,
    /// Ledger file. Not read by the run (the ledger is passed beside the settings); kept
    /// because kept run records written by earlier versions hold it and this type refuses
    /// unknown fields.
    #[serde(default)]
    pub ledger: Option<PathBuf>,
    /// Advanced settings overriding the preset's, by field name (e.g. `{"gan_lr": 0.001}`).
    #[serde(default)]
    pub overrides: serde_json::Map<String, serde_json::Value>,
    /// Folder for per-epoch checkpoints (`epoch-NNN.dpsynth` generator,
    /// `epoch-NNN.critic.safetensors` critic); none are written when absent.
    #[serde(default)]
    pub checkpoints: Option<PathBuf>,
    /// What a private run does with columns whose domain was read off the rows.
    #[serde(default)]
    pub domains: DomainPolicy,
    /// Train even when δ ≥ 1/n (refused otherwise: such a δ permits releasing a record).
    #[serde(default)]
    pub force_delta: bool,
    /// Train even when the memory estimate exceeds the memory available.
    pub force_memory: bool,
    /// The number of records as a public fact the user gives (e.g. from a census count):
    /// sampling rates, steps and σ are then computed from it, so nothing in the release
    /// depends on the exact row count. `None`: the data's row count is treated as public.
    #[serde(default)]
    pub public_rows: Option<usize>,
    /// Private post-GAN boosting over the run's last generators (GAN methods only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boost: Option<BoostConfig>,
    /// The file whose ledger entry pays for the run when `data` is a working copy of it
    /// (an audit trains on a copy with canary rows added): the budget is the original
    /// dataset's. `None`: `data`'s own entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub charge_to: Option<PathBuf>,
    /// The user states that the column kinds (and date formats) are public facts — a
    /// codebook's — so kinds guessed from the rows are covered. `false`: guessed kinds are
    /// named in the statement as not covered (`non_private_kinds`).
    #[serde(default)]
    pub public_kinds: bool,
    /// The user states that the file's codebook (SPSS/Stata value labels) is public: the
    /// columns whose categories came from it are covered ([`crate::data::schema::Schema::confirm_codebook`]).
    #[serde(default)]
    pub public_codebook: bool,
    /// Read the file in parts instead of into memory (MST and AIM, which need only counts
    /// of its rows): any number of rows in the memory of one part. Needs a schema whose
    /// domains are all public ([`crate::data::stream`]).
    #[serde(default)]
    pub stream: bool,
    /// Rows per part of a streamed run (default [`crate::data::stream::PART_ROWS`]): fewer
    /// use less memory, more read faster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part_rows: Option<usize>,
    /// Find privately the exact values of public number columns that name none, and
    /// measure the maps of `->` rules that give none (in the domain step:
    /// [`crate::data::estimate::masses_to_find`], [`crate::data::measured_map`]). Off for a
    /// linked pair's parts, where one unit's k children would count k times.
    #[serde(default = "yes")]
    pub exact_values: bool,
}

fn yes() -> bool {
    true
}

impl RunConfig {
    /// A run of `method` on `data` at (ε, δ) with every other setting at its default
    /// (the `quick` preset, the CPU, the default ledger, domains refused unless public).
    pub fn new(data: PathBuf, method: &str, epsilon: f64, delta: f64) -> Self {
        Self {
            data,
            schema: None,
            inline_schema: None,
            opened: None,
            method: method.into(),
            preset: default_preset(),
            epsilon,
            delta,
            seed: None,
            out: PathBuf::new(),
            device: DeviceChoice::default(),
            threads: None,
            ledger: None,
            overrides: Default::default(),
            checkpoints: None,
            domains: DomainPolicy::default(),
            force_delta: false,
            force_memory: false,
            public_rows: None,
            boost: None,
            charge_to: None,
            public_kinds: false,
            public_codebook: false,
            stream: false,
            part_rows: None,
            exact_values: true,
        }
    }

    /// The file whose ledger entry this run is charged to.
    pub fn ledger_data(&self) -> &std::path::Path {
        self.charge_to.as_deref().unwrap_or(&self.data)
    }
}

/// What a private run does with domains read off the rows (`from_data` in the schema).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum DomainPolicy {
    /// Refuse to train, naming the columns (exit 2): nothing leaves silently.
    #[default]
    Refuse,
    /// Estimate them privately with `share` of the run's ε, charged like training.
    Estimate { share: f64 },
    /// Keep them as read, and say in the model's statement that they are not covered.
    AllowData,
    /// As `AllowData`, with the columns marked `to_estimate` estimated at `share` of the
    /// run's ε instead of the default share (the window's "domain share of ε").
    AllowDataWithShare { share: f64 },
}

fn default_preset() -> String {
    DEFAULT_PRESET.into()
}

/// Every method the product offers (the registry), in the order the window shows them.
/// What a private release says about N, the number of records: one sentence for the CLI,
/// the window's statement and the export's sidecar.
pub fn records_statement(public_rows: Option<usize>) -> String {
    match public_rows {
        Some(n) => format!(
            "The number of records was given as a public fact (N = {n}): sampling rates and noise were computed from it, not from the file."
        ),
        None => "The number of records is treated as public (the usual convention): the sampling rate in the statement reveals it. Give a public count instead with --public-rows N (window: Advanced settings).".into(),
    }
}

/// [`records_statement`] in the window's words (no command-line flag).
pub fn records_statement_in_window(public_rows: Option<usize>) -> String {
    match public_rows {
        Some(_) => records_statement(public_rows),
        None => "The number of records is treated as public (the usual convention): the sampling rate in the statement reveals it. A count known from a public source can be given instead (Train tab, Advanced settings, \"public number of records\").".into(),
    }
}

/// What a release counted by a query engine says about where its records were read.
pub fn counted_by_statement(at: &str) -> String {
    format!(
        "The records were counted where they lie, by a query engine ({at}): it sent exact counts, and the records once to key the budget as the same rows in a file are; the noise was added here."
    )
}

pub fn methods() -> &'static [&'static MethodInfo] {
    crate::methods::registry::METHODS
}

/// The method and preset a newcomer should start from on `kind` of data (see
/// [`crate::methods::registry::recommended`] for the measurements behind it).
pub fn recommended(kind: DataKind) -> (&'static str, &'static str) {
    crate::methods::registry::recommended(kind)
}

/// The method called `id`, or an error that lists those there are.
pub fn method(id: &str) -> Result<&'static MethodInfo, JobError> {
    Ok(crate::methods::registry::find(id)?)
}

/// A preset's settings by name, as [`RunConfig::overrides`] names them (the window's
/// advanced settings list these).
pub fn preset_settings(
    method: &str,
    preset: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, JobError> {
    Ok(self::method(method)?.preset_settings(preset)?)
}

/// A finished run.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// `None` for a non-private run (ε = ∞).
    pub epsilon_spent: Option<f64>,
    /// Columns whose domain was read off the rows and released as read (not covered).
    pub non_private_domains: Vec<String>,
    /// Columns whose kind was guessed from the rows (not covered).
    pub non_private_kinds: Vec<String>,
    /// Columns whose domain was estimated privately in this run.
    pub estimated_domains: Vec<String>,
    pub delta: f64,
    pub accountant: String,
    pub steps: u64,
    pub model: PathBuf,
    pub seconds: f64,
    pub cancelled: bool,
    pub not_for_release: bool,
    /// Whether the model carries a post-GAN-boosted mixture (boosting is skipped when the
    /// run was cancelled or took no snapshot).
    pub boosted: bool,
    /// Where the networks trained (`cpu`, `cuda`, `metal`): what `--device auto` chose.
    pub device: String,
    /// Column pairs a marginal method found one-to-one in its noisy counts and kept so
    /// (post-processing; the model file's `graphical.one_to_one`).
    pub one_to_one: Vec<[String; 2]>,
    /// Exact values this run found privately for columns whose bounds are public (a DP
    /// output): the window shows them in the column editor, and a next run reuses them.
    pub found_exact_values: Vec<(String, Vec<f64>)>,
}

/// A loss or ε report of a running method. Only post-processing-safe figures: losses on
/// generated data, ε spent — never a statistic of the private rows.
pub use crate::methods::Progress;

/// What a running job reports.
#[derive(Debug, Clone)]
pub enum Event {
    Started {
        /// The plan in words (steps, sampling rate, σ, clip).
        summary: String,
        /// ε the reserved plan spends at the run's δ.
        planned_epsilon: f64,
        rows: usize,
        width: usize,
        /// The estimated peak memory and time.
        resources: resources::Resources,
    },
    Progress(Progress),
    /// The budget as it stands, at one δ: the dataset ledger's (the figure both
    /// `dataset` values use). `run` is this run's ε so far; `dataset` all runs' on this
    /// file together (None for a non-private run, which the ledger does not see).
    Budget {
        run: f64,
        dataset: Option<DatasetBudget>,
    },
    /// The end of a GAN epoch, and where its files went when the run keeps checkpoints.
    Checkpoint {
        epoch: u64,
        step: u64,
        saved: Option<PathBuf>,
    },
    /// Rows sampled from the generator as it stands at the end of an epoch (image runs:
    /// 100 images, 10 a row, for the live preview).
    Samples {
        epoch: u64,
        table: Arc<crate::data::Table>,
    },
    /// Something the user should know that does not stop the run (shown in the log).
    Notice(String),
    Finished(Result<RunSummary, JobError>),
}

/// The dataset's ledger while a run spends: ε at the ledger's δ.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DatasetBudget {
    /// ε used by every settled run plus this one so far.
    pub used: f64,
    /// ε used before this run started.
    pub before: f64,
    pub total: f64,
    pub delta: f64,
    /// This run's ε so far at the ledger's δ.
    pub run: f64,
}

/// Work on a worker thread (a run, a sweep, an audit): its events, the flag that asks it
/// to stop, and the thread to wait for. One type for every kind of work, so the window and
/// the CLI stop and wait for each the same way.
pub struct Worker<E> {
    pub events: Receiver<E>,
    cancel: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl<E> Worker<E> {
    /// Asks the work to stop after its current step: a run still settles the ledger and
    /// saves the model trained so far; a sweep keeps the runs it finished, charged and
    /// listed; an audit fails (a partial run proves nothing about the method).
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::SeqCst);
    }

    /// Waits for the worker thread to end.
    pub fn join(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A running training job.
pub type JobHandle = Worker<Event>;

/// Called after each event (the window passes a repaint request).
pub type Waker = Box<dyn Fn() + Send + Sync>;

/// Runs `work` on a worker thread with `threads` CPU threads (default: all cores) for
/// training, and returns its [`Worker`]. `work` gets the flag and a `send` that passes an
/// event to the receiver and wakes the window; its result goes last, through `finish`,
/// and the window is woken once more.
pub(crate) fn spawn_worker<E, T>(
    threads: Option<usize>,
    wake: Option<Waker>,
    work: impl FnOnce(&AtomicBool, &(dyn Fn(E) + Sync)) -> Result<T, JobError> + Send + 'static,
    finish: impl FnOnce(Result<T, JobError>, &(dyn Fn(E) + Sync)) + Send + 'static,
) -> Worker<E>
where
    E: Send + 'static,
    T: Send + 'static,
{
    let (events, received) = channel();
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    let thread = std::thread::spawn(move || {
        if wake.is_some() {
            // A window's worker: it and the pool it starts yield to the window's thread.
            priority::yield_to_window();
        }
        let send = |e: E| {
            let _ = events.send(e);
            if let Some(w) = &wake {
                w();
            }
        };
        let threads =
            threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let result = crate::nn::device::with_cpu_threads(threads, || work(&flag, &send))
            .map_err(|e| JobError::Training(e.to_string()))
            .and_then(|r| r);
        finish(result, &send);
        if let Some(w) = &wake {
            w();
        }
    });
    Worker {
        events: received,
        cancel,
        thread: Some(thread),
    }
}

/// Starts `cfg` on a worker thread; `wake` is called after each event. The run's result
/// comes last, as [`Event::Finished`].
/// One run on this thread (a part of a linked run, which spawns the worker itself).
pub(crate) fn run_part(
    cfg: &RunConfig,
    ledger_path: &std::path::Path,
    send: &(dyn Fn(Event) + Sync),
    cancel: &std::sync::atomic::AtomicBool,
) -> Result<RunSummary, JobError> {
    run::run(cfg, ledger_path, send, cancel)
}

pub fn spawn(cfg: RunConfig, ledger_path: PathBuf, wake: Option<Waker>) -> JobHandle {
    let threads = cfg.threads;
    spawn_worker(
        threads,
        wake,
        move |cancel, send| run::run(&cfg, &ledger_path, send, cancel),
        |result, send| send(Event::Finished(result)),
    )
}
