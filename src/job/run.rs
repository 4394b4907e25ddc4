//! One training run on the worker thread: load → plan → reserve → train → settle → save.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use candle_core::Tensor;

use super::workspace::Rows;
use super::{DatasetBudget, DomainPolicy, Event, JobError, RunConfig, RunSummary};
use crate::data;
use crate::data::encode::{EncodedData, Encoding};
use crate::data::estimate::{self, DomainPlan};
use crate::data::schema::Provenance;
use crate::data::schema::Schema;
use crate::data::table::Table;
use crate::methods::registry::{DataKind, MethodInfo};
use crate::methods::released::save_net;
use crate::methods::{Checkpoint, Flow, Progress, TrainSetup};
use crate::nn::dpsgd::NoiseSource;
use crate::privacy::accountant::PLAN_MARKS;
use crate::privacy::compose::{compose, covered_by, plan_prefix};
use crate::privacy::convert::to_epsilon;
use crate::privacy::ledger::{DEFAULT_BUDGET, Ledger};
use crate::privacy::{Accountant, Budget, Charge, charges_curve};

/// The private data, encoded, and what kind it is.
struct Encoded {
    encoding: Encoding,
    data: EncodedData,
    kind: DataKind,
}

/// The private data as opened: a table with its schema (given, else guessed), or an
/// image set already encoded under its fixed, public image schema.
enum Loaded {
    Table { table: Arc<Table>, schema: Schema },
    Images(Encoded),
}

impl Loaded {
    fn kind(&self) -> DataKind {
        match self {
            Loaded::Table { .. } => DataKind::Table,
            Loaded::Images(_) => DataKind::Images,
        }
    }

    fn rows(&self) -> usize {
        match self {
            Loaded::Table { table, .. } => table.n_rows,
            Loaded::Images(e) => e.data.n_rows,
        }
    }
}

/// The ledger's two keys for the run's dataset: the content key its budget is kept under,
/// and the file's byte key recorded as an alias of it.
struct Keys {
    content: String,
    bytes: String,
}

/// The run's data: the rows the window already opened when it handed them over for this
/// very file, else the file read once now ([`super::workspace::open`]).
fn opened(cfg: &RunConfig) -> Result<Arc<super::workspace::Opened>, JobError> {
    match &cfg.opened {
        Some(s) if s.0.path == cfg.data => Ok(s.0.clone()),
        _ => Ok(Arc::new(super::workspace::open(&cfg.data, &mut |_, _| {})?)),
    }
}

/// Opens the data, with its ledger keys ([`crate::data::digest`]): those of `charge_to`
/// when the run is paid by another file (an audit's working copy).
fn load(cfg: &RunConfig) -> Result<(Loaded, Keys), JobError> {
    let at = |e: &dyn std::fmt::Display| JobError::file(&cfg.data, e);
    let opened = opened(cfg)?;
    let keys = match &cfg.charge_to {
        None => Keys {
            content: opened.content_key.clone(),
            bytes: opened.byte_key.clone(),
        },
        Some(original) => {
            let o = super::workspace::open(original, &mut |_, _| {})?;
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
            })
        }
    };
    Ok((loaded, keys))
}

/// Opens the ledger and records that the file's bytes are the dataset `keys.content`.
fn open_ledger(ledger_path: &Path, keys: &Keys) -> Result<Ledger, JobError> {
    let mut ledger = Ledger::open(ledger_path)?;
    ledger.adopt_key(&keys.bytes, &keys.content)?;
    Ok(ledger)
}

fn encode(cfg: &RunConfig, table: &Table, schema: &Schema) -> Result<Encoded, JobError> {
    let at = |e: &dyn std::fmt::Display| JobError::file(&cfg.data, e);
    let encoding = Encoding::new(schema).map_err(|e| at(&e))?;
    let data = encoding.encode(table).map_err(|e| at(&e))?;
    Ok(Encoded {
        encoding,
        data,
        kind: DataKind::Table,
    })
}

/// Applies the run's [`DomainPolicy`] to domains read off the rows: refuses (naming
/// them), plans their private estimate, or lets them through (the statement then says
/// they are not covered). Non-private runs guarantee nothing and are let through.
fn domain_step(
    cfg: &RunConfig,
    loaded: &Loaded,
    private: bool,
    budget: Budget,
) -> Result<Option<DomainPlan>, JobError> {
    let Loaded::Table { schema, .. } = loaded else {
        return Ok(None);
    };
    if !private {
        return Ok(None);
    }
    let uncovered = estimate::uncovered(schema);
    let (share, all) = match cfg.domains {
        DomainPolicy::Refuse if !uncovered.is_empty() => {
            return Err(JobError::Usage(format!(
                "{} column(s) have domains read off the private rows, which would leave in the model file unprotected: {}. Give a schema with public domains (--schema; `dpsynth inspect --schema-out` writes a draft to edit), or estimate them privately (--estimate-domains), or release them as read, outside the guarantee (--allow-data-domains)",
                uncovered.len(),
                uncovered.join(", ")
            )));
        }
        DomainPolicy::Estimate { share } => (share, true),
        _ => (data::estimate::DEFAULT_SHARE, false),
    };
    // Columns marked `to_estimate` are estimated under every policy.
    let plan = estimate::plan_domains(schema, budget, share, all)
        .map_err(|e| JobError::Usage(e.to_string()))?;
    Ok(plan.map(|p| DomainPlan {
        public_rows: cfg.public_rows,
        ..p
    }))
}

/// The dataset's ledger entry for this run: the reservation, and what the ledger held
/// before it (for the live [`DatasetBudget`]).
struct Reservation {
    ledger: Ledger,
    key: String,
    /// This reservation created the dataset's record with the default total.
    created_default: bool,
    /// The dataset's δ before this run set it to the run's (nothing had been spent).
    adopted_from: Option<f64>,
    id: i64,
    plan: Vec<Charge>,
    before: Vec<f64>,
    before_charges: Option<Vec<Charge>>,
    budget: Budget,
    /// Per plan mark ([`PLAN_MARKS`]): (the run alone, the dataset with it), by the
    /// tighter accountant at the ledger's δ. Filled when the run first reaches a mark.
    marks: Vec<OnceLock<(f64, f64)>>,
}

impl Reservation {
    /// Reserves the plan's charges before training reads a row.
    fn make(
        cfg: &RunConfig,
        ledger_path: &Path,
        keys: &Keys,
        charges: &[Charge],
    ) -> Result<Self, JobError> {
        let mut ledger = open_ledger(ledger_path, keys)?;
        let key = keys.content.clone();
        let before = ledger.spent_curve(&key)?;
        let before_charges = ledger.spent_charges(&key)?;
        let (was, created_default) = ledger.budget(&key)?;
        let rule = super::cost::DeltaRule::of(&ledger, &key, cfg.delta)?;
        if let Some(why) = rule.refusal(cfg.delta) {
            return Err(JobError::Usage(why));
        }
        let adopted_from = match rule {
            super::cost::DeltaRule::Adopt { was: old } => {
                let b = Budget {
                    epsilon: was.epsilon,
                    delta: cfg.delta,
                };
                ledger.set_budget(&key, b)?;
                Some(old)
            }
            _ => None,
        };
        let desc = format!(
            "{} ({}) ε={} δ={}",
            cfg.method, cfg.preset, cfg.epsilon, cfg.delta
        );
        // A dataset's first run sets its δ: then its figures and the run's agree.
        let first = Budget {
            epsilon: DEFAULT_BUDGET.epsilon,
            delta: cfg.delta,
        };
        let id = ledger.reserve_or_open(&key, charges, &desc, first)?;
        let (budget, _) = ledger.budget(&key)?;
        Ok(Self {
            ledger,
            key,
            created_default,
            adopted_from,
            id,
            plan: charges.to_vec(),
            before,
            before_charges,
            budget,
            marks: PLAN_MARKS.iter().map(|_| OnceLock::new()).collect(),
        })
    }

    /// The dataset's standing with `progress`'s charges added, at the ledger's δ: the
    /// smaller of RDP and the PLD figure of the plan mark that covers the charges (both
    /// upper bounds), as the run's own accountant does.
    fn standing(&self, progress: &Progress) -> DatasetBudget {
        let orders = self.ledger.orders();
        let delta = self.budget.delta;
        let run = charges_curve(&progress.charges, orders);
        let with: Vec<f64> = self.before.iter().zip(&run).map(|(a, b)| a + b).collect();
        let eps = |c: &[f64]| to_epsilon(orders, c, delta).epsilon;
        let (mut run_eps, mut used) = (eps(&run), eps(&with));
        let mark = PLAN_MARKS.iter().enumerate().find_map(|(i, f)| {
            let p = plan_prefix(&self.plan, *f);
            covered_by(&progress.charges, &p).then_some((i, p))
        });
        if let Some((i, prefix)) = mark {
            let (alone, together) = *self.marks[i].get_or_init(|| {
                let alone = compose(&prefix, orders, delta).epsilon;
                let together = match &self.before_charges {
                    Some(b) => {
                        let all: Vec<Charge> = b.iter().chain(&prefix).copied().collect();
                        compose(&all, orders, delta).epsilon
                    }
                    None => f64::INFINITY,
                };
                (alone, together)
            });
            run_eps = run_eps.min(alone);
            used = used.min(together);
        }
        let before = match &self.before_charges {
            Some(b) => compose(b, orders, delta).epsilon.min(eps(&self.before)),
            None => eps(&self.before),
        };
        DatasetBudget {
            used,
            before,
            total: self.budget.epsilon,
            delta,
            run: run_eps,
        }
    }

    /// Settles to what the accountant actually charged.
    fn settle(mut self, accountant: &Accountant) -> Result<(), JobError> {
        Ok(self.ledger.settle(self.id, accountant.history())?)
    }
}

/// Everything a run needs besides the data, checked before the data is read and before
/// the ledger reserves anything: a typo in a device or a path costs no budget.
fn preflight(cfg: &RunConfig) -> Result<candle_core::Device, JobError> {
    // The file itself: `data` may name a sheet of it (`book.xlsx#sheet`).
    let file = crate::data::source::Source::parse(&cfg.data).file;
    std::fs::metadata(&file).map_err(|e| JobError::file(&cfg.data, e))?;
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
fn probe_writable(dir: &Path) -> std::io::Result<()> {
    tempfile::Builder::new()
        .prefix(".dpsynth-probe")
        .tempfile_in(dir)
        .map(drop)
}

/// The run's memory and time estimate; refused (before anything is reserved) when the
/// memory is not there, unless the user forces it.
fn estimate_resources(
    cfg: &RunConfig,
    loaded: &Loaded,
    method: &(dyn crate::methods::Synthesizer + Send),
) -> Result<super::resources::Resources, JobError> {
    let (rows, columns, width) = match loaded {
        Loaded::Table { table, schema } => {
            let width = Encoding::new(schema)
                .map_err(|e| JobError::file(&cfg.data, e))?
                .width;
            (table.n_rows, table.n_cols(), width)
        }
        Loaded::Images(e) => (e.data.n_rows, 0, e.data.width),
    };
    let cpu = cfg.device.resolves_to_cpu();
    let r = super::resources::estimate(&method.footprint(rows, width), rows, columns, width, cpu);
    if let Some(why) = r.refusal().filter(|_| !cfg.force_memory) {
        return Err(JobError::CannotPlan(why));
    }
    Ok(r)
}

/// The method a run asks for, after checking that it fits the request.
fn method_for(cfg: &RunConfig) -> Result<(&'static MethodInfo, bool), JobError> {
    let info = super::method(&cfg.method)?;
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
fn checked_input(
    cfg: &RunConfig,
    info: &MethodInfo,
    private: bool,
) -> Result<(Loaded, Keys), JobError> {
    let (loaded, key) = load(cfg)?;
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
fn records(cfg: &RunConfig, rows: usize) -> Result<usize, JobError> {
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
fn distrust_claims(
    ledger_path: &Path,
    keys: &Keys,
    loaded: &mut Loaded,
    send: &(dyn Fn(Event) + Sync),
) -> Result<(), JobError> {
    let key = keys.content.as_str();
    let Loaded::Table { schema, .. } = loaded else {
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

/// Estimates the planned domains (charging the accountant), records them in the ledger,
/// and encodes the data. An estimate that fails settles the reservation to what it spent.
fn estimate_and_encode(
    cfg: &RunConfig,
    loaded: Loaded,
    domains: Option<&DomainPlan>,
    accountant: &mut Accountant,
    noise: &mut NoiseSource,
    reservation: &mut Option<Reservation>,
) -> Result<(Encoded, Vec<String>), JobError> {
    let (table, schema) = match loaded {
        Loaded::Images(e) => return Ok((e, Vec::new())),
        Loaded::Table { table, schema } => (table, schema),
    };
    let Some(d) = domains else {
        return Ok((encode(cfg, &table, &schema)?, Vec::new()));
    };
    let schema = match estimate::estimate_domains(&table, &schema, d, accountant, noise.rng()) {
        Ok(s) => s,
        Err(e) => {
            if let Some(r) = reservation.take() {
                r.settle(accountant)?;
            }
            return Err(JobError::Usage(e.to_string()));
        }
    };
    if let Some(r) = reservation.as_mut() {
        for spec in d.columns.iter().filter_map(|c| schema.column(c)) {
            r.ledger
                .record_estimate(&r.key, &estimate::spec_digest(spec))?;
        }
    }
    Ok((encode(cfg, &table, &schema)?, d.columns.clone()))
}

/// The plan in words, with the domain estimate first when there is one.
fn start_summary(domains: Option<&DomainPlan>, plan: &crate::methods::Plan) -> String {
    match domains {
        Some(d) => format!(
            "domains: {} column(s) estimated privately (noise σ = {:.2}, ε {:.3} of the run's); {}",
            d.columns.len(),
            d.std,
            d.epsilon,
            plan.summary
        ),
        None => plan.summary.clone(),
    }
}

/// What a run spends with: its accountant, its noise, and its ledger reservation.
struct Spend<'a> {
    accountant: &'a mut Accountant,
    noise: &'a mut NoiseSource,
    reservation: Option<Reservation>,
}

/// Trains, settles the reservation to what was charged (whatever happened), and saves the
/// released model. Returns it with the last step reached and whether it was cancelled.
fn train_and_save(
    cfg: &RunConfig,
    method: &mut dyn crate::methods::Synthesizer,
    plan: &crate::methods::Plan,
    mut enc: Encoded,
    device: &candle_core::Device,
    spend: Spend<'_>,
    send: &(dyn Fn(Event) + Sync),
    cancel: &AtomicBool,
) -> Result<(crate::methods::released::ReleasedModel, u64, bool), JobError> {
    let Spend {
        accountant,
        noise,
        reservation,
    } = spend;
    let n = enc.data.n_rows;
    let mut steps = 0u64;
    let mut cancelled = false;
    let mut observer = |p: Progress| {
        steps = steps.max(p.step);
        if let Some(r) = &reservation {
            send(Event::Budget {
                run: p.epsilon_spent,
                dataset: Some(r.standing(&p)),
            });
        }
        send(Event::Progress(p));
        if cancel.load(Ordering::SeqCst) {
            cancelled = true;
            Flow::Stop
        } else {
            Flow::Continue
        }
    };
    let images = enc.kind == DataKind::Images;
    let mut checkpoint = |c: Checkpoint| checkpoint_sink(cfg, images, c, send);
    let trained = (|| -> Result<_, JobError> {
        // Moved, not copied: the encoded rows exist once (a tall table's largest buffer).
        let values = std::mem::take(&mut enc.data.values);
        let data = Tensor::from_vec(values, (n, enc.data.width), device)
            .map_err(|e| JobError::Training(e.to_string()))?;
        Ok(method.train(TrainSetup {
            plan,
            data: &data,
            records: records(cfg, n)?,
            encoding: &enc.encoding,
            accountant,
            noise,
            device,
            observer: &mut observer,
            checkpoint: Some(&mut checkpoint),
            snapshots: None,
        })?)
    })();
    // A run that ended before its plan did (a cancel, a skipped phase, an error after the
    // rows were read) stopped where its outputs led it: it is charged the rest of its
    // plan, so its figure is the plan's, fixed before any row was read (invariant 6,
    // [`Accountant::charge_rest_of_plan`]). Then the reservation settles to that.
    // The steps the run made (its charges so far), before the rest is charged.
    let ran: u64 = accountant.history().iter().map(|c| c.count).sum();
    let steps = steps.max(ran);
    let rest = accountant
        .charge_rest_of_plan()
        .map_err(|e| JobError::Training(format!("charging the rest of the plan: {e}")))?;
    if let Some(r) = reservation {
        r.settle(accountant)?;
    }
    let mut model = trained?;
    if !rest.is_empty() {
        let p = &model.header.privacy;
        model.header.privacy = crate::methods::restate(
            accountant,
            p.epsilon.is_some(),
            &model.header.schema,
            p.not_for_release,
        );
    }
    model.header.privacy.public_rows = cfg.public_rows;
    model
        .save(&cfg.out)
        .map_err(|e| JobError::write(&cfg.out, e))?;
    Ok((model, steps, cancelled))
}

/// Runs `cfg` to the end, sending events through `send`.
pub(super) fn run(
    cfg: &RunConfig,
    ledger_path: &Path,
    send: &(dyn Fn(Event) + Sync),
    cancel: &AtomicBool,
) -> Result<RunSummary, JobError> {
    let t0 = Instant::now();
    let (info, private) = method_for(cfg)?;
    let mut method =
        info.instantiate_boosted(&cfg.preset, cfg.epsilon, &cfg.overrides, cfg.boost.as_ref())?;
    let device = preflight(cfg)?;
    let (mut loaded, keys) = checked_input(cfg, info, private)?;
    let key = keys.content.clone();
    let n = records(cfg, loaded.rows())?;
    if let Some(p) = cfg.public_rows {
        let actual = loaded.rows() as f64;
        if (p as f64 - actual).abs() > 0.1 * actual {
            send(Event::Notice(format!(
                "the public number of records you gave ({p}) is far from the file's: sampling rates and means assume {p}, so the batches are larger or smaller than the preset's (the guarantee holds either way)"
            )));
        }
    }
    let budget = Budget {
        epsilon: if private { cfg.epsilon } else { f64::MAX },
        delta: cfg.delta,
    };
    if private {
        distrust_claims(ledger_path, &keys, &mut loaded, send)?;
    }
    let domain_plan = domain_step(cfg, &loaded, private, budget)?;
    // Every fact the encoding relies on is checked now, before the ledger reserves
    // anything: a mismatch between the schema and the rows costs nothing.
    if let Loaded::Table { table, schema } = &loaded {
        // What the estimate will cost the data, for its owner, before anything is spent.
        if let Some(d) = &domain_plan {
            if let Some(m) = estimate::diagnose(schema, d, &estimate::profile(table)) {
                send(Event::Notice(m));
            }
        }
        let estimated = domain_plan
            .as_ref()
            .map(|d| d.columns.clone())
            .unwrap_or_default();
        schema
            .check_fits(table, &estimated)
            .map_err(|e| JobError::file(&cfg.data, e))?;
    }
    let prior: Vec<Charge> = domain_plan
        .as_ref()
        .map(|d| d.charges.clone())
        .unwrap_or_default();
    let plan = method.plan(n, budget, &prior)?;
    if let Some(w) = plan.noise_warning() {
        send(Event::Notice(w));
    }
    let charges: Vec<Charge> = prior.iter().chain(&plan.charges).copied().collect();
    let resources = estimate_resources(cfg, &loaded, method.as_ref())?;
    // Checked before the ledger reserves anything: a plan that fails here costs nothing.
    let mut accountant = if private {
        Accountant::for_plan(budget, &charges)
            .map_err(|e| JobError::Training(format!("the plan does not fit its budget: {e}")))?
    } else {
        Accountant::new(budget)
    };
    let mut reservation = if private {
        let r = Reservation::make(cfg, ledger_path, &keys, &charges)?;
        if let Some(old) = r.adopted_from {
            send(Event::Notice(format!(
                "nothing had been spent on this dataset yet: its δ is now this run's, {} (was {old}), so every figure is read at one δ",
                r.budget.delta
            )));
        }
        if r.created_default {
            send(Event::Notice(format!(
                "this dataset had no total budget: the default ε = {} at δ = {} now applies to every run on it (`dpsynth budget set` changes it)",
                r.budget.epsilon, r.budget.delta
            )));
        }
        Some(r)
    } else {
        // Nothing to spend, but the book shows the data were read without protection.
        let desc = format!("{} ({}) ε=∞: NOT private", cfg.method, cfg.preset);
        open_ledger(ledger_path, &keys)?.record_exposure(&key, &desc)?;
        None
    };
    // From here on the rows feed mechanisms: a run killed after this mark stays spent.
    if let Some(r) = reservation.as_mut() {
        r.ledger.mark_touched(r.id)?;
    }
    let mut noise = match cfg.seed {
        Some(s) => NoiseSource::from_seed(s),
        None => NoiseSource::from_os(),
    };
    let (enc, estimated) = estimate_and_encode(
        cfg,
        loaded,
        domain_plan.as_ref(),
        &mut accountant,
        &mut noise,
        &mut reservation,
    )?;
    send(Event::Started {
        summary: start_summary(domain_plan.as_ref(), &plan),
        // The whole plan's figure (domain estimate included): what a stop will cost.
        planned_epsilon: accountant
            .plan_epsilon()
            .map_or(plan.epsilon, |c| c.epsilon),
        rows: n,
        width: enc.data.width,
        resources,
    });
    let (model, steps, cancelled) = train_and_save(
        cfg,
        method.as_mut(),
        &plan,
        enc,
        &device,
        Spend {
            accountant: &mut accountant,
            noise: &mut noise,
            reservation,
        },
        send,
        cancel,
    )?;
    Ok(RunSummary {
        epsilon_spent: model.header.privacy.epsilon,
        non_private_domains: model.header.privacy.non_private_domains.clone(),
        non_private_kinds: model.header.privacy.non_private_kinds.clone(),
        estimated_domains: estimated,
        delta: cfg.delta,
        accountant: model.header.privacy.accountant.clone(),
        // What ran, not what was charged (a stopped run is charged its whole plan).
        steps,
        model: cfg.out.clone(),
        seconds: t0.elapsed().as_secs_f64(),
        cancelled,
        not_for_release: model.header.privacy.not_for_release,
        boosted: model.mixture.is_some(),
        device: crate::nn::device::describe(&device),
    })
}

/// Keeps an epoch's checkpoint when the run asked for them, and sends 100 samples of an
/// image generator for the live preview (sampling is post-processing: free).
fn checkpoint_sink(
    cfg: &RunConfig,
    images: bool,
    c: Checkpoint,
    send: &(dyn Fn(Event) + Sync),
) -> Result<(), String> {
    let saved = match &cfg.checkpoints {
        Some(dir) => {
            let gen_path = dir.join(format!("epoch-{:03}.dpsynth", c.epoch));
            c.generator.save(&gen_path).map_err(|e| e.to_string())?;
            if let Some(critic) = &c.critic {
                save_net(
                    critic,
                    &dir.join(format!("epoch-{:03}.critic.safetensors", c.epoch)),
                )
                .map_err(|e| e.to_string())?;
            }
            Some(gen_path)
        }
        None => None,
    };
    send(Event::Checkpoint {
        epoch: c.epoch,
        step: c.step,
        saved,
    });
    if images {
        if let Ok(table) = c.generator.sample(100, Some(c.epoch)) {
            send(Event::Samples {
                epoch: c.epoch,
                table: Arc::new(table),
            });
        }
    }
    Ok(())
}
