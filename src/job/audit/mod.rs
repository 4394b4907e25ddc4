//! Privacy audits: empirical lower bounds on ε beside the claimed ε.
//!
//! - [`mechanisms`]: distinguishing tests of every noise primitive (CI runs them).
//! - [`run_audit`]: the one-run canary audit of a whole method (Steinke, Nasr & Jagielski
//!   2023). m canary rows are drawn uniformly from the schema's *public* domain (so they
//!   are outliers no real row resembles), each is added to a copy of the data
//!   independently with probability ½, one run trains on the copy, and each canary gets
//!   two scores from what an adversary sees:
//!   - **black-box**: minus the distance from the canary to its nearest synthetic row
//!     (what anyone holding the released file can compute);
//!   - **white-box**: the final critic's output on the canary (the critic is never
//!     released, but an auditor may look at it: it has touched every row, so it leaks at
//!     least as much as the generator).
//!
//!   [`crate::privacy::audit::one_run_audit`] turns each score's guesses into a lower bound
//!   on ε at 95 % confidence. The bound is evidence, not proof: it says this attack could
//!   not show more, never that no attack could.
//!
//! Budget: the audit is a training run. On data the user declares public (the bundled
//! samples) it runs against a scratch ledger and charges nothing, and says so; otherwise
//! it is charged to the original dataset's ledger entry like any run (the canaries are
//! the auditor's own rows, so charging the whole run is conservative).

pub mod mechanisms;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use super::{Event, JobError, RunConfig};
use crate::data::encode::Encoding;
use crate::data::schema::{Domain, Kind, Schema};
use crate::data::table::{Column, TextColumn, Values};
use crate::data::{self, Table};
use crate::methods::released::{ReleasedModel, load_net};
use crate::privacy::audit::{OneRunAudit, one_run_audit};

/// Confidence of the reported bounds is 1 − this.
pub const AUDIT_BETA: f64 = 0.05;

/// What an audit runs.
#[derive(Debug, Clone)]
pub struct AuditConfig {
    /// The run to audit (its `data` is the original file; the audit trains on a copy).
    pub run: RunConfig,
    /// Canary rows m.
    pub canaries: usize,
    /// The data is public (e.g. a bundled sample): charge nothing.
    pub public: bool,
    /// Audit on this many rows drawn at random from the data (`None`: all). A smaller
    /// table makes each canary weigh more: a stronger test of the same guarantee.
    pub rows: Option<usize>,
}

/// An audit's result.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AuditReport {
    pub method: String,
    pub preset: String,
    /// The ε the trained model's statement claims (`None`: not private, ε = ∞).
    pub claimed_epsilon: Option<f64>,
    pub delta: f64,
    pub canaries: usize,
    /// Canaries that were in fact added.
    pub included: usize,
    pub rows: usize,
    /// Nearest synthetic row (what the released file alone shows).
    pub black_box: OneRunAudit,
    /// The final critic's score (`None`: the method trains no critic).
    pub white_box: Option<OneRunAudit>,
    /// The larger of the two bounds.
    pub lower_bound: f64,
    pub confidence: f64,
    /// Whether the run was charged to the dataset's ledger.
    pub charged: bool,
    pub seconds: f64,
    /// One plain sentence for a person who does not read papers.
    pub verdict: String,
}

impl AuditReport {
    /// Each attack's measured operating point (name, FPR, TPR): of its k₊ "in" guesses,
    /// the right ones over the canaries that were added, and the wrong ones over those
    /// that were not. A point estimate with no confidence attached, for drawing beside the
    /// trade-off curve; the bound is what the audit proves.
    pub fn measured_points(&self) -> Vec<(String, f64, f64)> {
        let out = self.canaries.saturating_sub(self.included);
        let point = |a: &OneRunAudit| {
            (a.k_plus > 0 && self.included > 0 && out > 0).then(|| {
                (
                    (a.k_plus - a.right_in) as f64 / out as f64,
                    a.right_in as f64 / self.included as f64,
                )
            })
        };
        let mut v = Vec::new();
        if let Some((f, t)) = self.white_box.as_ref().and_then(point) {
            v.push(("white-box attack (critic)".to_string(), f, t));
        }
        if let Some((f, t)) = point(&self.black_box) {
            v.push(("black-box attack (synthetic rows)".to_string(), f, t));
        }
        v
    }
}

/// Runs an audit; `send` receives the training run's events (progress for the window or
/// the terminal).
pub fn run_audit(
    cfg: &AuditConfig,
    ledger: &Path,
    send: &(dyn Fn(Event) + Sync),
    cancel: &AtomicBool,
) -> Result<AuditReport, JobError> {
    let t0 = Instant::now();
    if cfg.canaries < 10 {
        return Err(JobError::Usage(format!(
            "an audit needs at least 10 canaries, got {}",
            cfg.canaries
        )));
    }
    let original = &cfg.run.data;
    let (table, schema) = super::evaluation::open_table(
        original,
        cfg.run.schema.as_deref(),
        "the canary audit runs on tables; image sets are not supported yet",
    )?;
    let mut rng = match cfg.run.seed {
        Some(s) => StdRng::seed_from_u64(s ^ 0xa0d1),
        None => StdRng::from_os_rng(),
    };
    let table = subsample(table, cfg.rows, &mut rng);
    let canaries = canary_rows(&table, &schema, cfg.canaries, &mut rng)?;
    let included: Vec<bool> = (0..cfg.canaries).map(|_| rng.random::<bool>()).collect();
    let keep: Vec<usize> = (0..cfg.canaries).filter(|i| included[*i]).collect();
    let copy = append_rows(&table, &canaries.rows(&keep))?;

    let work = tempfile::tempdir().map_err(|e| JobError::Training(e.to_string()))?;
    let copy_path = work.path().join("data-with-canaries.csv");
    data::export::write_csv(&copy, &copy_path).map_err(|e| JobError::file(&copy_path, e))?;
    let checkpoints = work.path().join("checkpoints");
    std::fs::create_dir_all(&checkpoints).map_err(|e| JobError::file(&checkpoints, e))?;
    let mut run = cfg.run.clone();
    run.data = copy_path;
    run.out = work.path().join("audited.dpsynth");
    run.checkpoints = Some(checkpoints.clone());
    run.boost = None;
    run.public_rows = None;
    let ledger_path = audit_ledger(cfg.public, &mut run, (work.path(), original), ledger)?;
    let summary = super::run::run(&run, &ledger_path, send, cancel)?;

    let model = ReleasedModel::load(&summary.model, &candle_core::Device::Cpu)?;
    let (enc_canaries, black_scores) =
        black_box_scores(&model, &canaries, copy.n_rows, cfg.run.seed)?;
    let delta = cfg.run.delta;
    let black_box = one_run_audit(&black_scores, &included, delta, AUDIT_BETA);
    let white_box = critic_scores(&checkpoints, &enc_canaries)?
        .map(|s| one_run_audit(&s, &included, delta, AUDIT_BETA));
    let lower_bound = white_box.as_ref().map_or(black_box.lower_bound, |w| {
        w.lower_bound.max(black_box.lower_bound)
    });
    let claimed = model.header.privacy.epsilon;
    Ok(AuditReport {
        method: model.header.method.clone(),
        preset: cfg.run.preset.clone(),
        claimed_epsilon: claimed,
        delta,
        canaries: cfg.canaries,
        included: keep.len(),
        rows: table.n_rows,
        verdict: verdict(lower_bound, claimed),
        black_box,
        white_box,
        lower_bound,
        confidence: 1.0 - AUDIT_BETA,
        charged: !cfg.public,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// `rows` of `table` drawn at random without replacement (in their order), or the whole
/// table.
fn subsample(table: Table, rows: Option<usize>, rng: &mut StdRng) -> Table {
    match rows {
        Some(n) if n < table.n_rows => {
            let mut idx: Vec<usize> = (0..table.n_rows).collect();
            idx.shuffle(rng);
            idx.truncate(n.max(1));
            idx.sort_unstable();
            table.rows(&idx)
        }
        _ => table,
    }
}

/// The ledger the audited run is charged to: the original data's (the working copy with
/// canaries is charged as it), or on data the user declares public a scratch book in
/// `work` whose total is the run's own (public data has nothing to spend).
fn audit_ledger(
    public: bool,
    run: &mut RunConfig,
    (work, original): (&Path, &Path),
    ledger: &Path,
) -> Result<PathBuf, JobError> {
    if !public {
        run.charge_to = Some(original.to_path_buf());
        return Ok(ledger.to_path_buf());
    }
    run.charge_to = None;
    let scratch = work.join("scratch-ledger.sqlite3");
    if run.epsilon.is_finite() {
        let key = super::cost::dataset_key(&run.data, &scratch)?;
        crate::privacy::ledger::Ledger::open(&scratch)?.set_budget(
            &key,
            crate::privacy::Budget {
                epsilon: run.epsilon,
                delta: run.delta,
            },
        )?;
    }
    Ok(scratch)
}

/// The black-box attack: each canary scored by minus its distance to the nearest of the
/// model's synthetic rows (as many as the audited table has, within 1,000–20,000); with
/// the canaries encoded, for the white-box attack.
fn black_box_scores(
    model: &ReleasedModel,
    canaries: &Table,
    rows: usize,
    seed: Option<u64>,
) -> Result<(crate::data::encode::EncodedData, Vec<f64>), JobError> {
    // The synthetic rows carry no ignored columns: encode both sides without them (they
    // have no encoded span either way).
    let released = Schema::new(
        model
            .header
            .schema
            .columns
            .iter()
            .filter(|c| c.kind != Kind::Ignored)
            .cloned()
            .collect(),
    );
    let encoding = Encoding::new(&released).map_err(|e| JobError::Training(e.to_string()))?;
    let enc_canaries = encoding
        .encode(&canaries.keep_columns(|n| released.column(n).is_some()))
        .map_err(|e| JobError::Training(e.to_string()))?;
    let synthetic = model.sample(rows.clamp(1_000, 20_000), seed)?;
    let enc_syn = encoding
        .encode(&synthetic.keep_columns(|n| released.column(n).is_some()))
        .map_err(|e| JobError::Training(e.to_string()))?;
    let nearest = nearest_distances(&enc_canaries, &enc_syn);
    Ok((enc_canaries, nearest.iter().map(|d| -d).collect()))
}

/// The plain sentence of an audit.
pub fn verdict(lower: f64, claimed: Option<f64>) -> String {
    match claimed {
        Some(c) if lower > c => format!(
            "The attack proved ε ≥ {lower:.2}, more than the guarantee's ε ≤ {c:.2}: the guarantee does not hold for this code. Please report it."
        ),
        Some(c) if lower <= 0.0 => format!(
            "The strongest attack we tried could not prove any leak (ε ≥ 0); the guarantee says ε ≤ {c:.2}. That is consistent: an attack can only show a lower bound."
        ),
        Some(c) => format!(
            "The strongest attack we tried could prove at most ε ≥ {lower:.2}; the guarantee says ε ≤ {c:.2}. That is consistent: an attack can only show a lower bound."
        ),
        None => {
            format!("This run was not private (ε = ∞); the attack proved ε ≥ {lower:.2} from it.")
        }
    }
}

/// m rows drawn uniformly from each column's public domain: categories and binaries
/// uniformly over their list, numbers uniformly within their bounds (whole numbers when
/// the column is integer). Columns the schema ignores or gives no domain take a value of
/// a random real row (they are not synthesized, so they cannot carry the canary).
fn canary_rows(
    table: &Table,
    schema: &Schema,
    m: usize,
    rng: &mut StdRng,
) -> Result<Table, JobError> {
    let donor: Vec<usize> = (0..m)
        .map(|_| rng.random_range(0..table.n_rows.max(1)))
        .collect();
    let mut columns = Vec::with_capacity(table.columns.len());
    for col in &table.columns {
        let spec = schema.column(&col.name).filter(|s| s.kind != Kind::Ignored);
        let values = match (
            &col.values,
            spec.and_then(|s| s.domain.as_ref().map(|d| (s, d))),
        ) {
            (Values::Number(_), Some((s, Domain::Bounds { lower, upper }))) => Values::Number(
                (0..m)
                    .map(|_| {
                        let x = rng.random_range(*lower..=*upper);
                        Some(if s.integer { x.round() } else { x })
                    })
                    .collect(),
            ),
            (Values::Number(v), Some((_, Domain::Categories(c)))) if !c.is_empty() => {
                Values::Number(
                    (0..m)
                        .enumerate()
                        .map(|(i, _)| {
                            let pick = &c[rng.random_range(0..c.len())];
                            pick.trim()
                                .parse::<f64>()
                                .ok()
                                .or(v.get(donor[i]).copied().flatten())
                        })
                        .collect(),
                )
            }
            (Values::Text(_), Some((_, Domain::Categories(c)))) if !c.is_empty() => {
                Values::Text(TextColumn::from_cells(
                    (0..m).map(|_| Some(c[rng.random_range(0..c.len())].as_str())),
                ))
            }
            (Values::Number(v), _) => {
                Values::Number(donor.iter().map(|d| v.get(*d).copied().flatten()).collect())
            }
            (Values::Text(t), _) => Values::Text(t.select(&donor)),
        };
        columns.push(Column {
            name: col.name.clone(),
            values,
        });
    }
    Ok(Table { columns, n_rows: m })
}

/// `a` with the rows of `b` (same columns) after it.
fn append_rows(a: &Table, b: &Table) -> Result<Table, JobError> {
    let mut columns = Vec::with_capacity(a.columns.len());
    for (x, y) in a.columns.iter().zip(&b.columns) {
        let values = match (&x.values, &y.values) {
            (Values::Number(p), Values::Number(q)) => {
                Values::Number(p.iter().chain(q).copied().collect())
            }
            (Values::Text(p), Values::Text(q)) => {
                Values::Text(TextColumn::from_cells(p.iter().chain(q.iter())))
            }
            _ => {
                return Err(JobError::Training(format!(
                    "column '{}': canaries of another type than the data",
                    x.name
                )));
            }
        };
        columns.push(Column {
            name: x.name.clone(),
            values,
        });
    }
    Ok(Table {
        columns,
        n_rows: a.n_rows + b.n_rows,
    })
}

/// For each row of `a`, the Euclidean distance to its nearest row of `b` (encoded space).
fn nearest_distances(
    a: &crate::data::encode::EncodedData,
    b: &crate::data::encode::EncodedData,
) -> Vec<f64> {
    use rayon::prelude::*;
    (0..a.n_rows)
        .into_par_iter()
        .map(|i| {
            let x = a.row(i);
            (0..b.n_rows)
                .map(|j| {
                    b.row(j)
                        .iter()
                        .zip(x)
                        .map(|(p, q)| ((p - q) as f64).powi(2))
                        .sum::<f64>()
                })
                .fold(f64::INFINITY, f64::min)
                .sqrt()
        })
        .collect()
}

/// The mean output of the last epochs' critics (up to five) on each canary, when the run
/// left critics whose input is the encoded row: averaging the last few critics steadies a
/// score that each critic step moves.
fn critic_scores(
    dir: &Path,
    canaries: &crate::data::encode::EncodedData,
) -> Result<Option<Vec<f64>>, JobError> {
    let mut critics: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| JobError::file(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".critic.safetensors"))
        .collect();
    critics.sort();
    let last: Vec<&PathBuf> = critics.iter().rev().take(5).collect();
    if last.is_empty() {
        return Ok(None);
    }
    let dev = candle_core::Device::Cpu;
    let x = candle_core::Tensor::from_vec(
        canaries.values.clone(),
        (canaries.n_rows, canaries.width),
        &dev,
    )
    .map_err(|e| JobError::Training(e.to_string()))?;
    let mut sum = vec![0.0; canaries.n_rows];
    for path in &last {
        let net = load_net(path, &dev)?;
        let Ok(y) = net.forward(&x, None) else {
            // A critic on another space (a latent code): no white-box score.
            return Ok(None);
        };
        let y = y
            .flatten_all()
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(|e| JobError::Training(e.to_string()))?;
        if y.len() != canaries.n_rows {
            return Ok(None);
        }
        for (s, v) in sum.iter_mut().zip(y) {
            *s += f64::from(v);
        }
    }
    Ok(Some(sum))
}

/// What an audit on a worker thread reports: the audited run's events (no `Finished`),
/// then the report.
pub enum AuditEvent {
    Run(Event),
    Done(Result<AuditReport, JobError>),
}

/// An audit on a worker thread.
pub type AuditHandle = super::Worker<AuditEvent>;

/// Starts `cfg` on a worker thread; `wake` is called after each event and at the end.
pub fn spawn_audit(cfg: AuditConfig, ledger: PathBuf, wake: Option<super::Waker>) -> AuditHandle {
    let threads = cfg.run.threads;
    super::spawn_worker(
        threads,
        wake,
        move |cancel, send| {
            let r = run_audit(&cfg, &ledger, &|e| send(AuditEvent::Run(e)), cancel)?;
            if cancel.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(JobError::Training(
                    "the audit was stopped before its run finished: a partial run proves nothing"
                        .into(),
                ));
            }
            Ok(r)
        },
        |result, send| send(AuditEvent::Done(result)),
    )
}
