//! One training run on the worker thread: load → plan → reserve → train → settle → save.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use candle_core::Tensor;

use super::{DatasetBudget, Event, JobError, RunConfig, RunSummary};
use crate::data::encode::{EncodedData, Encoding};
use crate::data::schema::Schema;
use crate::data::{self, Dataset};
use crate::methods::registry::{DataKind, MethodInfo};
use crate::methods::released::save_net;
use crate::methods::{Checkpoint, Flow, Plan, Progress, TrainSetup};
use crate::nn::dpsgd::NoiseSource;
use crate::privacy::convert::to_epsilon;
use crate::privacy::ledger::{Ledger, dataset_key_any};
use crate::privacy::{Accountant, Budget, charges_curve};

/// The private data, encoded, and what kind it is.
struct Encoded {
    encoding: Encoding,
    data: EncodedData,
    kind: DataKind,
}

/// Opens the private data and encodes it: a table under its schema (given, else guessed),
/// or an image set under its fixed, public image schema.
fn load_encoded(cfg: &RunConfig) -> Result<Encoded, JobError> {
    let at = |e: &dyn std::fmt::Display| JobError::file(&cfg.data, e);
    match data::open(&cfg.data, &data::csv::LoadOptions::default()).map_err(|e| at(&e))? {
        Dataset::Table(table) => {
            let schema = match &cfg.schema {
                Some(p) => Schema::load(p).map_err(|e| JobError::file(p, e))?,
                None => {
                    data::infer::infer_schema(&table)
                        .map_err(|e| at(&e))?
                        .schema
                }
            };
            let encoding = Encoding::new(&schema).map_err(|e| at(&e))?;
            let data = encoding.encode(&table).map_err(|e| at(&e))?;
            Ok(Encoded {
                encoding,
                data,
                kind: DataKind::Table,
            })
        }
        Dataset::Images(set) => {
            if cfg.schema.is_some() {
                return Err(at(
                    &"image sets have a fixed schema (label 0–9, pixels 0–255); run without a schema file",
                ));
            }
            let encoding = Encoding::new(&set.schema()).map_err(|e| at(&e))?;
            let data = set.encode().map_err(|e| at(&e))?;
            Ok(Encoded {
                encoding,
                data,
                kind: DataKind::Images,
            })
        }
    }
}

/// The dataset's ledger entry for this run: the reservation, and what the ledger held
/// before it (for the live [`DatasetBudget`]).
struct Reservation {
    ledger: Ledger,
    id: i64,
    before: Vec<f64>,
    budget: Budget,
}

impl Reservation {
    /// Reserves the plan's whole RDP curve before training reads a row.
    fn make(cfg: &RunConfig, ledger_path: &Path, plan: &Plan) -> Result<Self, JobError> {
        let mut ledger = Ledger::open(ledger_path)?;
        let key = dataset_key_any(&cfg.data).map_err(|e| JobError::file(&cfg.data, e))?;
        let before = ledger.spent_curve(&key)?;
        let (budget, _) = ledger.budget(&key)?;
        let planned = charges_curve(&plan.charges, ledger.orders());
        let desc = format!(
            "{} ({}) ε={} δ={}",
            cfg.method, cfg.preset, cfg.epsilon, cfg.delta
        );
        let id = ledger.reserve(&key, &planned, &desc)?;
        Ok(Self {
            ledger,
            id,
            before,
            budget,
        })
    }

    /// The dataset's standing with `progress`'s charges added, at the ledger's δ.
    fn standing(&self, progress: &Progress) -> DatasetBudget {
        let orders = self.ledger.orders();
        let run = charges_curve(&progress.charges, orders);
        let with: Vec<f64> = self.before.iter().zip(&run).map(|(a, b)| a + b).collect();
        let eps = |c: &[f64]| to_epsilon(orders, c, self.budget.delta).epsilon;
        DatasetBudget {
            used: eps(&with),
            before: eps(&self.before),
            total: self.budget.epsilon,
            delta: self.budget.delta,
            run: eps(&run),
        }
    }

    /// Settles to what the accountant actually charged.
    fn settle(mut self, accountant: &Accountant) -> Result<(), JobError> {
        let spent = charges_curve(accountant.history(), self.ledger.orders());
        Ok(self.ledger.settle(self.id, &spent)?)
    }
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

/// Runs `cfg` to the end, sending events through `send`.
pub(super) fn run(
    cfg: &RunConfig,
    ledger_path: &Path,
    send: &(dyn Fn(Event) + Sync),
    cancel: &AtomicBool,
) -> Result<RunSummary, JobError> {
    let t0 = Instant::now();
    let (info, private) = method_for(cfg)?;
    let mut method = info.instantiate(&cfg.preset, cfg.epsilon, &cfg.overrides)?;
    let enc = load_encoded(cfg)?;
    if !info.accepts(enc.kind) {
        return Err(JobError::Usage(format!(
            "{} cannot train on {}; pick a method that accepts them (`dpsynth methods`)",
            info.id,
            match enc.kind {
                DataKind::Table => "tables",
                DataKind::Images => "images",
            }
        )));
    }
    let (n, width) = (enc.data.n_rows, enc.data.width);
    let budget = Budget {
        epsilon: if private { cfg.epsilon } else { f64::MAX },
        delta: cfg.delta,
    };
    let plan = method.plan(n, budget)?;
    let reservation = if private {
        Some(Reservation::make(cfg, ledger_path, &plan)?)
    } else {
        None
    };
    send(Event::Started {
        summary: plan.summary.clone(),
        planned_epsilon: plan.epsilon,
        rows: n,
        width,
    });
    let mut accountant = Accountant::new(budget);
    let mut noise = match cfg.seed {
        Some(s) => NoiseSource::from_seed(s),
        None => NoiseSource::from_os(),
    };
    let mut steps = 0u64;
    let mut cancelled = false;
    let mut observer = |p: Progress| {
        steps = p.step;
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
        if let Some(dir) = &cfg.checkpoints {
            std::fs::create_dir_all(dir).map_err(|e| JobError::write(dir, e))?;
        }
        let device = cfg
            .device
            .open()
            .map_err(|e| JobError::Usage(e.to_string()))?;
        let data = Tensor::from_vec(enc.data.values.clone(), (n, width), &device)
            .map_err(|e| JobError::Training(e.to_string()))?;
        Ok(method.train(TrainSetup {
            plan: &plan,
            data: &data,
            encoding: &enc.encoding,
            accountant: &mut accountant,
            noise: &mut noise,
            device: &device,
            observer: &mut observer,
            checkpoint: Some(&mut checkpoint),
        })?)
    })();
    // Settle to what was actually charged, whatever happened.
    if let Some(r) = reservation {
        r.settle(&accountant)?;
    }
    let model = trained?;
    model
        .save(&cfg.out)
        .map_err(|e| JobError::write(&cfg.out, e))?;
    Ok(RunSummary {
        epsilon_spent: model.header.privacy.epsilon,
        delta: cfg.delta,
        accountant: model.header.privacy.accountant.clone(),
        steps: accountant
            .history()
            .iter()
            .map(|c| c.count)
            .sum::<u64>()
            .max(steps),
        model: cfg.out.clone(),
        seconds: t0.elapsed().as_secs_f64(),
        cancelled,
        not_for_release: model.header.privacy.not_for_release,
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
            save_net(
                &c.critic,
                &dir.join(format!("epoch-{:03}.critic.safetensors", c.epoch)),
            )
            .map_err(|e| e.to_string())?;
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
