//! Brief overview: a run. A serde [`RunConfig`] (everything needed to reproduce it) goes to
//! a worker thread; the thread sends [`Event`]s (start with the plan, progress, finish or
//! error) and honours cancellation. The CLI and the window consume the same events.
//!
//! Budget discipline (DESIGN.md §2): the run's whole planned RDP curve is reserved in the
//! dataset's ledger before training reads a row; when the run ends — finished, cancelled
//! or failed — the reservation is settled to what the accountant actually charged. A crash
//! leaves the reservation counted.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Instant;

use candle_core::Tensor;
use serde::{Deserialize, Serialize};

use crate::data::encode::Encoding;
use crate::data::schema::Schema;
use crate::data::{self, Dataset};
use crate::methods::dp_auto_gan::{DpAutoGan, DpAutoGanConfig};
use crate::methods::dp_gan::{DpGan, DpGanConfig};
use crate::methods::released::{ReleasedModel, save_net};
use crate::methods::{Checkpoint, Flow, Plan, Progress, Synthesizer, TrainSetup};
use crate::nn::device::DeviceChoice;
use crate::nn::dpsgd::NoiseSource;
use crate::privacy::ledger::{Ledger, dataset_key_any};
use crate::privacy::{Accountant, Budget};

/// Everything needed to reproduce a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    pub data: PathBuf,
    #[serde(default)]
    pub schema: Option<PathBuf>,
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
    /// Ledger file (default: the user data folder).
    #[serde(default)]
    pub ledger: Option<PathBuf>,
    /// Advanced settings overriding the preset's, by field name (e.g. `{"gan_lr": 0.001}`).
    #[serde(default)]
    pub overrides: serde_json::Map<String, serde_json::Value>,
    /// Folder for per-epoch checkpoints (`epoch-NNN.dpsynth` generator,
    /// `epoch-NNN.critic.safetensors` critic); none are written when absent.
    #[serde(default)]
    pub checkpoints: Option<PathBuf>,
}

/// Applies `overrides` to a preset's settings; unknown names are errors.
fn with_overrides<T>(
    preset: T,
    overrides: &serde_json::Map<String, serde_json::Value>,
) -> Result<T, String>
where
    T: Serialize + serde::de::DeserializeOwned,
{
    if overrides.is_empty() {
        return Ok(preset);
    }
    let mut v = serde_json::to_value(&preset).map_err(|e| e.to_string())?;
    let Some(obj) = v.as_object_mut() else {
        return Err("settings are not an object".into());
    };
    for (k, val) in overrides {
        if !obj.contains_key(k) {
            let mut names: Vec<&String> = obj.keys().collect();
            names.sort();
            return Err(format!(
                "unknown setting '{k}'; this method's settings are: {}",
                names
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        obj.insert(k.clone(), val.clone());
    }
    serde_json::from_value(v).map_err(|e| format!("bad setting value: {e}"))
}

fn default_preset() -> String {
    "quick".into()
}

/// A finished run.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// `None` for a non-private run (ε = ∞).
    pub epsilon_spent: Option<f64>,
    pub delta: f64,
    pub accountant: String,
    pub steps: u64,
    pub model: PathBuf,
    pub seconds: f64,
    pub cancelled: bool,
    pub not_for_release: bool,
}

/// What a running job reports.
#[derive(Debug, Clone)]
pub enum Event {
    Started {
        plan: Plan,
        rows: usize,
        width: usize,
    },
    Progress(Progress),
    /// The end of a GAN epoch: the generator as it stands (the window previews it), and
    /// where its files went when the run keeps checkpoints.
    Checkpoint {
        epoch: u64,
        step: u64,
        generator: Arc<ReleasedModel>,
        saved: Option<PathBuf>,
    },
    Finished(Result<RunSummary, String>),
}

/// A running job.
pub struct JobHandle {
    pub events: Receiver<Event>,
    cancel: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl JobHandle {
    /// Asks the run to stop after the current step; it still settles the ledger and saves
    /// the model trained so far.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::SeqCst);
    }

    pub fn join(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts `cfg` on a worker thread; `wake` is called after each event (the window passes
/// a repaint request).
pub fn spawn(
    cfg: RunConfig,
    ledger_path: PathBuf,
    wake: Option<Box<dyn Fn() + Send + Sync>>,
) -> JobHandle {
    let (tx, rx) = channel();
    let cancel = Arc::new(AtomicBool::new(false));
    let c2 = cancel.clone();
    let thread = std::thread::spawn(move || {
        let send = |e: Event| {
            let _ = tx.send(e);
            if let Some(w) = &wake {
                w();
            }
        };
        let threads = cfg
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let result = crate::nn::device::with_cpu_threads(threads, || {
            run(&cfg, &ledger_path, &tx, &c2, &wake)
        })
        .map_err(|e| e.to_string())
        .and_then(|r| r);
        send(Event::Finished(result));
    });
    JobHandle {
        events: rx,
        cancel,
        thread: Some(thread),
    }
}

/// The plan (charges, ε, summary) a run of `method`/`preset` on `rows` rows would make
/// within `budget` — what the window shows before Train.
pub fn plan(method: &str, preset: &str, rows: usize, budget: Budget) -> Result<Plan, String> {
    plan_with(method, preset, rows, budget, &Default::default())
}

/// [`plan`] with advanced settings overriding the preset's (as [`RunConfig::overrides`]).
pub fn plan_with(
    method: &str,
    preset: &str,
    rows: usize,
    budget: Budget,
    overrides: &serde_json::Map<String, serde_json::Value>,
) -> Result<Plan, String> {
    let private = budget.epsilon.is_finite() && method != "gan";
    let m = method_named(method, preset, private, overrides)?;
    m.plan(rows, budget).map_err(|e| e.to_string())
}

/// A preset's settings by name, as [`RunConfig::overrides`] names them (the window's
/// advanced settings list these).
pub fn preset_settings(
    method: &str,
    preset: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    let v = match method {
        "dp-gan" | "gan" => {
            serde_json::to_value(DpGanConfig::preset(preset).map_err(|e| e.to_string())?)
        }
        "dp-auto-gan" => {
            serde_json::to_value(DpAutoGanConfig::preset(preset).map_err(|e| e.to_string())?)
        }
        m => return Err(format!("unknown method '{m}'")),
    }
    .map_err(|e| e.to_string())?;
    match v {
        serde_json::Value::Object(mut o) => {
            // Set by the method's name (gan = not private) and the preset picker.
            o.remove("private");
            o.remove("preset");
            Ok(o)
        }
        _ => Err("settings are not an object".into()),
    }
}

fn method_for(cfg: &RunConfig) -> Result<Box<dyn Synthesizer>, String> {
    let private = cfg.epsilon.is_finite() && cfg.method != "gan";
    method_named(&cfg.method, &cfg.preset, private, &cfg.overrides)
}

fn method_named(
    method: &str,
    preset: &str,
    private: bool,
    overrides: &serde_json::Map<String, serde_json::Value>,
) -> Result<Box<dyn Synthesizer>, String> {
    match method {
        "dp-gan" | "gan" => {
            let mut c = with_overrides(
                DpGanConfig::preset(preset).map_err(|e| e.to_string())?,
                overrides,
            )?;
            c.private = private;
            Ok(Box::new(DpGan::new(c)))
        }
        "dp-auto-gan" => {
            let mut c = with_overrides(
                DpAutoGanConfig::preset(preset).map_err(|e| e.to_string())?,
                overrides,
            )?;
            c.private = private;
            Ok(Box::new(DpAutoGan::new(c)))
        }
        "pate-gan" | "pearl" | "dp-merf" => Err(format!(
            "method '{}' is not available yet in this version; use dp-auto-gan or dp-gan (or gan for the non-private reference)",
            method
        )),
        m => Err(format!(
            "unknown method '{m}'; use one of {}",
            crate::methods::METHODS.join(", ")
        )),
    }
}

/// Opens the private data and encodes it: a table under its schema (given, else guessed),
/// or an image set under its fixed, public image schema.
fn load_encoded(cfg: &RunConfig) -> Result<(Encoding, crate::data::encode::EncodedData), String> {
    match data::open(&cfg.data, &data::csv::LoadOptions::default()).map_err(|e| e.to_string())? {
        Dataset::Table(table) => {
            let schema = match &cfg.schema {
                Some(p) => Schema::load(p).map_err(|e| e.to_string())?,
                None => {
                    data::infer::infer_schema(&table)
                        .map_err(|e| format!("{}: {e}", cfg.data.display()))?
                        .schema
                }
            };
            let encoding = Encoding::new(&schema).map_err(|e| e.to_string())?;
            let enc = encoding.encode(&table).map_err(|e| e.to_string())?;
            Ok((encoding, enc))
        }
        Dataset::Images(set) => {
            if cfg.schema.is_some() {
                return Err(format!(
                    "{}: image sets have a fixed schema (label 0–9, pixels 0–255); run without a schema file",
                    cfg.data.display()
                ));
            }
            let encoding = Encoding::new(&set.schema()).map_err(|e| e.to_string())?;
            let enc = set
                .encode()
                .map_err(|e| format!("{}: {e}", cfg.data.display()))?;
            Ok((encoding, enc))
        }
    }
}

fn run(
    cfg: &RunConfig,
    ledger_path: &std::path::Path,
    tx: &Sender<Event>,
    cancel: &AtomicBool,
    wake: &Option<Box<dyn Fn() + Send + Sync>>,
) -> Result<RunSummary, String> {
    let t0 = Instant::now();
    let send = |e: Event| {
        let _ = tx.send(e);
        if let Some(w) = wake {
            w();
        }
    };
    let private = cfg.epsilon.is_finite() && cfg.method != "gan";
    if private && !(cfg.epsilon > 0.0 && cfg.delta > 0.0 && cfg.delta < 1.0) {
        return Err(format!(
            "need ε > 0 and 0 < δ < 1, got ε = {}, δ = {}",
            cfg.epsilon, cfg.delta
        ));
    }
    let mut method = method_for(cfg)?;
    let (encoding, enc) = load_encoded(cfg)?;
    let (n, width) = (enc.n_rows, enc.width);
    let budget = Budget {
        epsilon: if private { cfg.epsilon } else { f64::MAX },
        delta: cfg.delta,
    };
    let plan = method.plan(n, budget).map_err(|e| e.to_string())?;
    let mut accountant = Accountant::new(budget);
    // Reserve the whole plan before training reads a row.
    let reservation = if private {
        let mut ledger = Ledger::open(ledger_path).map_err(|e| e.to_string())?;
        let key = dataset_key_any(&cfg.data).map_err(|e| format!("{}: {e}", cfg.data.display()))?;
        let orders = ledger.orders().to_vec();
        let planned = crate::privacy::charges_curve(&plan.charges, &orders);
        let desc = format!(
            "{} ({}) ε={} δ={}",
            cfg.method, cfg.preset, cfg.epsilon, cfg.delta
        );
        let id = ledger
            .reserve(&key, &planned, &desc)
            .map_err(|e| e.to_string())?;
        Some((ledger, id, orders))
    } else {
        None
    };
    send(Event::Started {
        plan: plan.clone(),
        rows: n,
        width,
    });
    let device = cfg.device.open().map_err(|e| e.to_string())?;
    let mut noise = match cfg.seed {
        Some(s) => NoiseSource::from_seed(s),
        None => NoiseSource::from_os(),
    };
    let mut steps = 0u64;
    let mut cancelled = false;
    let mut observer = |p: Progress| {
        steps = p.step;
        send(Event::Progress(p));
        if cancel.load(Ordering::SeqCst) {
            cancelled = true;
            Flow::Stop
        } else {
            Flow::Continue
        }
    };
    if let Some(dir) = &cfg.checkpoints {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("checkpoint folder {}: {e}", dir.display()))?;
    }
    let mut checkpoint = |c: Checkpoint| -> Result<(), String> {
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
            generator: Arc::new(c.generator),
            saved,
        });
        Ok(())
    };
    let trained = (|| -> Result<_, String> {
        let data =
            Tensor::from_vec(enc.values.clone(), (n, width), &device).map_err(|e| e.to_string())?;
        method
            .train(TrainSetup {
                data: &data,
                encoding: &encoding,
                accountant: &mut accountant,
                noise: &mut noise,
                device: &device,
                observer: &mut observer,
                checkpoint: Some(&mut checkpoint),
            })
            .map_err(|e| e.to_string())
    })();
    // Settle to what was actually charged, whatever happened.
    if let Some((mut ledger, id, orders)) = reservation {
        let spent = crate::privacy::charges_curve(accountant.history(), &orders);
        ledger.settle(id, &spent).map_err(|e| e.to_string())?;
    }
    let model = trained?;
    model.save(&cfg.out).map_err(|e| e.to_string())?;
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
