//! One training run on the worker thread: load → plan → reserve → train → settle → save.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use candle_core::Tensor;

use super::{Event, JobError, RunConfig, RunSummary};
use crate::data::estimate::{self, DomainPlan};
use crate::methods::registry::DataKind;
use crate::methods::released::save_net;
use crate::methods::{Checkpoint, Flow, Progress, TrainSetup};
use crate::nn::dpsgd::NoiseSource;
use crate::privacy::{Accountant, Budget, Charge};

mod input;
mod reservation;
use crate::data::schema::Provenance;
use input::*;
use reservation::*;

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
        Loaded::Streamed(parts) => return Ok((streamed(parts), Vec::new())),
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

/// A streamed run's data: no rows in memory, the parts read by the method.
fn streamed(parts: crate::data::stream::EncodedScan) -> Encoded {
    let columns = parts.encoding.schema.columns.len();
    Encoded {
        encoding: parts.encoding.clone(),
        data: crate::data::encode::EncodedData {
            n_rows: 0,
            width: parts.encoding.width,
            values: Vec::new(),
            clamped: vec![0; columns],
            unknown: vec![0; columns],
        },
        kind: DataKind::Table,
        parts: Some(parts),
    }
}

/// The plan in words, with the domain estimate first when there is one.
fn start_summary(domains: Option<&DomainPlan>, plan: &crate::methods::Plan) -> String {
    match domains {
        Some(d) => format!(
            "domains: {} column(s) estimated privately{} (noise σ = {:.2}, ε {:.3} of the run's); {}",
            d.columns.len(),
            {
                let mut also = String::new();
                if !d.masses.is_empty() {
                    also += &format!(", exact values of {} found privately", d.masses.join(", "));
                }
                for (l, r) in &d.maps {
                    also += &format!(", the map {l} -> {r} measured");
                }
                also
            },
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
    let n = enc.rows();
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
        let data = Tensor::from_vec(values, (enc.data.n_rows, enc.data.width), device)
            .map_err(|e| JobError::Training(e.to_string()))?;
        Ok(method.train(TrainSetup {
            plan,
            data: &data,
            parts: enc.parts.as_ref(),
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
    restate(cfg, &mut model, accountant, !rest.is_empty());
    model
        .save(&cfg.out)
        .map_err(|e| JobError::write(&cfg.out, e))?;
    Ok((model, steps, cancelled))
}

/// The statement as released: restated from the accountant when the rest of the plan
/// was charged after training (`charged_rest`), with the public record count the run was
/// given and the engine that counted the rows.
fn restate(
    cfg: &RunConfig,
    model: &mut crate::methods::released::ReleasedModel,
    accountant: &Accountant,
    charged_rest: bool,
) {
    if charged_rest {
        let p = &model.header.privacy;
        model.header.privacy = crate::methods::restate(
            accountant,
            p.epsilon.is_some(),
            &model.header.schema,
            p.not_for_release,
        );
    }
    model.header.privacy.public_rows = cfg.public_rows;
    model.header.privacy.counted_by = crate::data::engine::EngineSource::parse(&cfg.data)
        .and_then(Result::ok)
        .map(|s| s.opaque_identity());
}

/// Settings that need labelled images are refused on a table before anything is planned.
fn images_only(method: &dyn crate::methods::Synthesizer, loaded: &Loaded) -> Result<(), JobError> {
    match (matches!(loaded, Loaded::Images(_)), method.needs_images()) {
        (false, Some(why)) => Err(JobError::Usage(why)),
        _ => Ok(()),
    }
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
    announce_source(cfg, send);
    let (mut loaded, keys) = checked_input(cfg, info, private, cancel)?;
    images_only(method.as_ref(), &loaded)?;
    let n = records(cfg, loaded.rows())?;
    public_rows_notice(cfg, loaded.rows(), send);
    let budget = Budget {
        epsilon: if private { cfg.epsilon } else { f64::MAX },
        delta: cfg.delta,
    };
    if private {
        distrust_claims(ledger_path, &keys, &mut loaded, send)?;
    }
    let domain_plan = domain_step(cfg, &loaded, private, budget)?;
    check_table(cfg, &loaded, domain_plan.as_ref(), send)?;
    let (plan, charges) =
        super::plan::method_plan(method.as_ref(), n, budget, domain_plan.as_ref())?;
    if let Some(w) = plan.noise_warning() {
        send(Event::Notice(w));
    }
    let resources = estimate_resources(cfg, &loaded, method.as_ref())?;
    // Checked before the ledger reserves anything: a plan that fails here costs nothing.
    let mut accountant = accountant_for(private, budget, &charges)?;
    let mut reservation = reserve(cfg, ledger_path, &keys, &charges, private, send)?;
    let mut noise = cfg
        .seed
        .map_or_else(NoiseSource::from_os, NoiseSource::from_seed);
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
        estimated_domains: estimated,
        // What ran, not what was charged (a stopped run is charged its whole plan).
        steps,
        seconds: t0.elapsed().as_secs_f64(),
        cancelled,
        device: crate::nn::device::describe(&device),
        ..RunSummary::of_model(cfg, &model)
    })
}

impl RunSummary {
    /// What the released model's statement says about the run; the rest left empty.
    fn of_model(cfg: &RunConfig, model: &crate::methods::released::ReleasedModel) -> Self {
        let privacy = &model.header.privacy;
        RunSummary {
            epsilon_spent: privacy.epsilon,
            non_private_domains: privacy.non_private_domains.clone(),
            non_private_kinds: privacy.non_private_kinds.clone(),
            estimated_domains: Vec::new(),
            delta: cfg.delta,
            accountant: privacy.accountant.clone(),
            steps: 0,
            model: cfg.out.clone(),
            seconds: 0.0,
            cancelled: false,
            not_for_release: privacy.not_for_release,
            boosted: model.mixture.is_some(),
            device: String::new(),
            one_to_one: model
                .header
                .graphical
                .as_ref()
                .map_or_else(Vec::new, |g| g.one_to_one.clone()),
            found_exact_values: model
                .header
                .schema
                .columns
                .iter()
                .filter(|c| c.point_masses_estimated && c.provenance == Provenance::UserProvided)
                .map(|c| (c.name.clone(), c.point_masses.clone()))
                .collect(),
        }
    }
}

/// The run's accountant: a private run's is built for its plan, which must fit `budget`.
fn accountant_for(
    private: bool,
    budget: Budget,
    charges: &[Charge],
) -> Result<Accountant, JobError> {
    if !private {
        return Ok(Accountant::new(budget));
    }
    Accountant::for_plan(budget, charges)
        .map_err(|e| JobError::Training(format!("the plan does not fit its budget: {e}")))
}

/// Says how the rows will be read when they are not simply loaded: by an engine, or in
/// parts.
fn announce_source(cfg: &RunConfig, send: &(dyn Fn(Event) + Sync)) {
    if input::is_engine(cfg) {
        send(Event::Notice(format!(
            "counting {} in its engine: a first query checks every column against the schema and keys the table for the ledger, before anything is spent; the method's queries count",
            cfg.data.display()
        )));
    } else if cfg.stream {
        send(Event::Notice(format!(
            "reading {} in parts: a first pass checks every row against the schema and keys the dataset for the ledger, before anything is spent; the method's pass counts",
            cfg.data.display()
        )));
    }
}

/// Warns when the public record count the user gave is far from the rows' count.
fn public_rows_notice(cfg: &RunConfig, rows: usize, send: &(dyn Fn(Event) + Sync)) {
    if let Some(p) = cfg.public_rows {
        let actual = rows as f64;
        if (p as f64 - actual).abs() > 0.1 * actual {
            send(Event::Notice(format!(
                "the public number of records you gave ({p}) is far from the file's: sampling rates and means assume {p}, so the batches are larger or smaller than the preset's (the guarantee holds either way)"
            )));
        }
    }
}

/// Every fact the encoding relies on, checked before the ledger reserves anything: a
/// mismatch between the schema and the rows costs nothing. Also tells the data's owner
/// what a private domain estimate will cost the data.
fn check_table(
    cfg: &RunConfig,
    loaded: &Loaded,
    domain_plan: Option<&DomainPlan>,
    send: &(dyn Fn(Event) + Sync),
) -> Result<(), JobError> {
    let Loaded::Table { table, schema } = loaded else {
        return Ok(());
    };
    if let Some(d) = domain_plan {
        if let Some(m) = crate::data::domain_check::diagnose(
            schema,
            d,
            &crate::data::domain_check::profile(table),
        ) {
            send(Event::Notice(m));
        }
    }
    let estimated = domain_plan.map(|d| d.columns.clone()).unwrap_or_default();
    schema
        .check_fits(table, &estimated)
        .map_err(|e| JobError::file(&cfg.data, e))?;
    rules_diagnostic(schema, table, send).map_err(|e| JobError::file(&cfg.data, e))
}

/// How many real rows break each of the schema's rules: a local diagnostic for the data's
/// owner (a notice on this machine, never in a released file). The release obeys the rules
/// whatever the rows do.
fn rules_diagnostic(
    schema: &crate::data::schema::Schema,
    table: &crate::data::Table,
    send: &(dyn Fn(Event) + Sync),
) -> Result<(), crate::data::DataError> {
    if schema.rules.is_empty() {
        return Ok(());
    }
    let rules = crate::data::rules::of_schema(schema)?;
    let broken = crate::data::rules::broken_counts(&rules, schema, table)?;
    for (r, b) in rules.iter().zip(broken).filter(|(_, b)| *b > 0) {
        send(Event::Notice(format!(
            "local diagnostic, never released: {b} of {} real rows break the rule '{}'; the synthetic rows will obey it",
            table.n_rows, r.text
        )));
    }
    Ok(())
}

/// Reserves a private run's whole plan in the ledger (saying when that set the dataset's
/// δ or its default total), or records that a non-private run read the data.
fn reserve(
    cfg: &RunConfig,
    ledger_path: &Path,
    keys: &Keys,
    charges: &[Charge],
    private: bool,
    send: &(dyn Fn(Event) + Sync),
) -> Result<Option<Reservation>, JobError> {
    if !private {
        // Nothing to spend, but the book shows the data were read without protection.
        let desc = format!("{} ({}) ε=∞: NOT private", cfg.method, cfg.preset);
        open_ledger(ledger_path, keys)?.record_exposure(&keys.content, &desc)?;
        return Ok(None);
    }
    let mut r = Reservation::make(cfg, ledger_path, keys, charges)?;
    // From here on the rows feed mechanisms: a run killed after this mark stays spent.
    r.ledger.mark_touched(r.id)?;
    if let Some(old) = r.adopted_from {
        send(Event::Notice(format!(
            "nothing had been spent on this dataset yet: its δ is now this run's, {} (was {old}), so every figure is read at one δ",
            r.budget.delta
        )));
    }
    if r.created_default {
        send(Event::Notice(format!(
            "this dataset had no total budget: the default ε = {} at δ = {} now applies to every run on it (the Train tab's \"Set total…\" or `dpsynth budget set` changes it)",
            r.budget.epsilon, r.budget.delta
        )));
    }
    Ok(Some(r))
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
