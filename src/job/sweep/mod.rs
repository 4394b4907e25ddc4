//! The ε sweep: one run per (method, ε, repeat), each charged like any run, each scored by
//! the window's evaluation pipeline, and the headline scores drawn against ε — the seed
//! papers' central figure, for a teaching lab.
//!
//! Runs are charged one by one to the dataset's ledger (a scratch ledger on data the user
//! declares public: nothing is charged, and the report says so). Before any run, the sum
//! of the planned ε is known ([`SweepConfig::planned_total`]); the ledger composes the
//! runs, which is tighter than the sum.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use super::evaluation::{EvalSpec, evaluate_model};
use super::{JobError, RunConfig};

mod chart;
mod points;
pub mod store;

pub use chart::{to_csv, to_svg, write};
use points::mean;
pub use points::{SweepConfig, SweepPoint, SweepReport};

/// Runs the sweep; `progress` hears one line per run and per stage.
pub fn run_sweep(
    cfg: &SweepConfig,
    ledger: &Path,
    progress: &(dyn Fn(&str) + Sync),
    cancel: &AtomicBool,
) -> Result<SweepReport, JobError> {
    run_sweep_with(cfg, ledger, progress, &|_| {}, &mut |_| {}, cancel)
}

/// [`run_sweep`], telling `steps` where training is at each of its progress reports, and
/// `on_point` each run's scores as soon as they are known (the window draws the curves as
/// they grow).
pub fn run_sweep_with(
    cfg: &SweepConfig,
    ledger: &Path,
    progress: &(dyn Fn(&str) + Sync),
    steps: &(dyn Fn(&str) + Sync),
    on_point: &mut dyn FnMut(&SweepPoint),
    cancel: &AtomicBool,
) -> Result<SweepReport, JobError> {
    check(cfg)?;
    let data_path = &cfg.base.data;
    let scorer = Scorer::open(&cfg.base)?;
    std::fs::create_dir_all(&cfg.out_dir).map_err(|e| JobError::write(&cfg.out_dir, e))?;
    let ledger = sweep_ledger(cfg, ledger)?;
    let mut points = Vec::new();
    let kept = store::read_kept(cfg);
    let mut refs = kept.as_ref().map_or((None, None, None), |k| {
        (k.real_accuracy, k.real_auroc, k.majority_accuracy)
    });
    let kept = kept.map(|k| k.points).unwrap_or_default();
    let total = cfg.methods.len() * cfg.epsilons.len() * cfg.repeats.max(1);
    let mut k = 0;
    let save = |points: &[SweepPoint], refs: Refs| store::save(cfg, points, refs);
    for (method, eps, repeat) in grid(cfg) {
        if cancel.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(stopped(points.len()));
        }
        k += 1;
        let asked = eps.is_finite().then_some(eps);
        if let Some(p) = kept
            .iter()
            .find(|p| p.method == *method && p.epsilon == asked && p.repeat == repeat)
        {
            progress(&format!(
                "run {k}/{total}: {method} at ε = {eps}: kept from before (not run or charged again)"
            ));
            points.push(p.clone());
            on_point(p);
            continue;
        }
        let at = At {
            method,
            eps,
            repeat,
            k,
            total,
        };
        let point = match run_point(cfg, &ledger, &scorer, &at, (progress, steps), cancel) {
            Ok((point, scored)) => {
                if refs.0.is_none() {
                    if let Some(r) = scored {
                        refs = r;
                    }
                }
                point
            }
            // A stop is the user's: the sweep ends (its points are kept).
            Err(e) => {
                save(&points, refs)?;
                return Err(e);
            }
        };
        points.push(point);
        save(&points, refs)?;
        if let Some(p) = points.last() {
            on_point(p);
        }
    }
    Ok(SweepReport {
        data: data_path.display().to_string(),
        delta: cfg.base.delta,
        label: scorer.label(),
        points,
        real_accuracy: refs.0,
        real_auroc: refs.1,
        majority_accuracy: refs.2,
        charged: !cfg.public,
        planned_total: cfg.planned_total(),
    })
}

/// Refuses a sweep without methods or ε, or naming an unknown method.
fn check(cfg: &SweepConfig) -> Result<(), JobError> {
    if cfg.methods.is_empty() || cfg.epsilons.is_empty() {
        return Err(JobError::Usage(
            "a sweep needs at least one method and one ε".into(),
        ));
    }
    for m in &cfg.methods {
        super::method(m)?;
    }
    Ok(())
}

/// Every point of the sweep in order: method by method, ε by ε, repeat by repeat.
fn grid(cfg: &SweepConfig) -> Vec<(&String, f64, usize)> {
    let mut out = Vec::new();
    for method in &cfg.methods {
        for &eps in &cfg.epsilons {
            for repeat in 0..cfg.repeats.max(1) {
                out.push((method, eps, repeat));
            }
        }
    }
    out
}

/// What a stopped sweep says: its finished points are kept, and running it again resumes.
fn stopped(finished: usize) -> JobError {
    JobError::Training(format!(
        "the sweep was stopped; its {finished} finished point(s) are kept and a run of the same sweep resumes from them"
    ))
}

/// Where a point sits in the sweep: its method, ε and repeat, and its number of all.
struct At<'a> {
    method: &'a str,
    eps: f64,
    repeat: usize,
    k: usize,
    total: usize,
}

type Refs = (Option<f64>, Option<f64>, Option<f64>);

/// Trains and scores one point, with its reference lines; a point that fails is marked
/// failed and the sweep goes on (a run that read the rows stays charged, as any run).
/// An error only when the user stopped the sweep.
fn run_point(
    cfg: &SweepConfig,
    ledger: &Path,
    scorer: &Scorer,
    at: &At<'_>,
    (progress, steps): (&(dyn Fn(&str) + Sync), &(dyn Fn(&str) + Sync)),
    cancel: &AtomicBool,
) -> Result<(SweepPoint, Option<Refs>), JobError> {
    let At {
        method,
        eps,
        repeat,
        k,
        total,
    } = *at;
    let asked = eps.is_finite().then_some(eps);
    let eps_name = if eps.is_finite() {
        eps.to_string()
    } else {
        "inf".into()
    };
    let name = format!("{method}-eps{eps_name}-{repeat}");
    progress(&format!("run {k}/{total}: {method} at ε = {eps}"));
    let run = RunConfig {
        method: method.to_string(),
        epsilon: eps,
        out: cfg.out_dir.join(format!("{name}.dpsynth")),
        seed: cfg.base.seed.map(|s| s.wrapping_add(k as u64)),
        ..cfg.base.clone()
    };
    // Training's own progress, every report (the window shows where it is).
    let training = |ev: super::Event| {
        if let super::Event::Progress(p) = ev {
            steps(&format!(
                "run {k}/{total}: {method} at ε = {eps}: {} step {}/{}",
                p.phase, p.step, p.total
            ));
        }
    };
    let mut line = |l: &str| progress(&format!("run {k}/{total}: {l}"));
    let outcome = super::run::run(&run, ledger, &training, cancel).and_then(|s| {
        let scores = scorer.score(&s.model, cfg.base.seed, &mut line)?;
        Ok((s, scores))
    });
    match outcome {
        Ok((summary, scores)) => Ok((
            scores.point(&run, asked, repeat, &summary),
            Some(scores.refs),
        )),
        Err(e) if cancel.load(std::sync::atomic::Ordering::SeqCst) => Err(e),
        Err(e) => {
            progress(&format!(
                "run {k}/{total}: {method} at ε = {eps} failed: {e}"
            ));
            Ok((SweepPoint::failed(&run, asked, repeat, &e), None))
        }
    }
}

/// The ledger the sweep's runs are charged to: the dataset's, or on data the user declares
/// public a fresh scratch book in the sweep's folder whose total fits the whole sweep
/// (public data has nothing to spend, and earlier sweeps must not refuse this one).
fn sweep_ledger(cfg: &SweepConfig, ledger: &Path) -> Result<PathBuf, JobError> {
    if !cfg.public {
        return Ok(ledger.to_path_buf());
    }
    let data_path = &cfg.base.data;
    let scratch = cfg.out_dir.join("sweep-scratch-ledger.sqlite3");
    let _ = std::fs::remove_file(&scratch);
    let total = cfg.planned_total().max(1.0);
    let key = match cfg.base.opened.as_ref().filter(|o| o.0.path == *data_path) {
        Some(o) => o.0.content_key.clone(),
        None => super::cost::dataset_key(data_path, &scratch)?,
    };
    crate::privacy::ledger::Ledger::open(&scratch)?.set_budget(
        &key,
        crate::privacy::Budget {
            epsilon: total * 1.01,
            delta: cfg.base.delta,
        },
    )?;
    Ok(scratch)
}

/// One run's headline scores, and the reference lines (real accuracy, real AUROC, floor).
struct Scores {
    accuracy: Option<f64>,
    auroc: Option<f64>,
    tv: f64,
    pca: f64,
    refs: (Option<f64>, Option<f64>, Option<f64>),
}

impl Scores {
    /// The point of a finished run with these scores.
    fn point(
        &self,
        run: &RunConfig,
        asked: Option<f64>,
        repeat: usize,
        summary: &super::RunSummary,
    ) -> SweepPoint {
        SweepPoint {
            method: run.method.clone(),
            epsilon: asked,
            epsilon_spent: summary.epsilon_spent,
            repeat,
            tstr_accuracy: self.accuracy,
            tstr_auroc: self.auroc,
            tv_1way: self.tv,
            pca_score: self.pca,
            seconds: summary.seconds,
            model: summary.model.clone(),
            failed: None,
            config: Some(Box::new(run.clone())),
        }
    }
}

/// How a sweep scores its runs: a table by the window's evaluation pipeline; images by the
/// papers' protocol, classifiers trained on generated digits and tested on the real test
/// set (the `t10k-` file beside a `train-` IDX file).
enum Scorer {
    Table {
        table: std::sync::Arc<crate::data::Table>,
        schema: crate::data::schema::Schema,
        data: PathBuf,
        spec: EvalSpec,
    },
    Images {
        train: Box<crate::data::image::ImageSet>,
        test: Box<crate::data::image::ImageSet>,
    },
}

impl Scorer {
    /// The real rows the points are scored against: those the window already opened
    /// when it handed them over, else the file read now; the schema the runs use.
    fn open(base: &RunConfig) -> Result<Self, JobError> {
        let data = base.data.as_path();
        if crate::data::image::looks_like_idx(data) {
            let (train, test) = super::evaluation::open_image_splits(data)?;
            return Ok(Scorer::Images {
                train: Box::new(train),
                test: Box::new(test),
            });
        }
        let images = "images are swept from an MNIST IDX train- file with its t10k- file beside it";
        let opened = base.opened.as_ref().filter(|o| o.0.path == data);
        let (table, schema) = match opened.map(|o| &o.0.rows) {
            Some(super::workspace::Rows::Table(t)) => {
                let schema = match (&base.inline_schema, &base.schema) {
                    (Some(s), _) => s.clone(),
                    (None, Some(p)) => {
                        crate::data::schema::Schema::load(p).map_err(|e| JobError::file(p, e))?
                    }
                    (None, None) => {
                        crate::data::infer::infer_schema(t)
                            .map_err(|e| JobError::file(data, e))?
                            .schema
                    }
                };
                (t.clone(), schema)
            }
            Some(super::workspace::Rows::Images(_)) => {
                return Err(JobError::Usage(images.into()));
            }
            None => {
                let (t, s) = super::evaluation::open_table(data, base.schema.as_deref(), images)?;
                (
                    std::sync::Arc::new(t),
                    base.inline_schema.clone().unwrap_or(s),
                )
            }
        };
        let spec = EvalSpec {
            label: super::evaluation::default_label(&schema),
            ..EvalSpec::quick()
        };
        Ok(Scorer::Table {
            table,
            schema,
            data: data.to_path_buf(),
            spec,
        })
    }

    fn label(&self) -> Option<String> {
        match self {
            Scorer::Table { spec, .. } => spec.label.clone(),
            Scorer::Images { .. } => Some("digit".into()),
        }
    }

    fn score(
        &self,
        model: &Path,
        seed: Option<u64>,
        line: &mut dyn FnMut(&str),
    ) -> Result<Scores, JobError> {
        match self {
            Scorer::Table {
                table,
                schema,
                data,
                spec,
            } => {
                let ev = evaluate_model(model, data, table, schema, spec, line)?;
                // Kept with the point's model: opening its results shows them at once.
                if let Some(k) = super::report_store::ReportKey::new(model, data, schema, None) {
                    let _ = super::report_store::save(model, &k, &ev);
                }
                let rep = &ev.report;
                let (mut accuracy, mut auroc, mut refs) = (None, None, (None, None, None));
                if let Some(t) = &rep.tstr {
                    // The classifiers that beat guessing on real rows, for both lines.
                    let (rows, _) = t.working_rows();
                    let syn: Vec<_> = rows
                        .iter()
                        .filter_map(|r| r.synthetic.as_ref().ok())
                        .collect();
                    let real: Vec<_> = rows.iter().filter_map(|r| r.real.as_ref().ok()).collect();
                    refs = (
                        mean(real.iter().map(|s| s.accuracy)),
                        mean(real.iter().filter_map(|s| s.auroc)),
                        Some(t.majority_accuracy),
                    );
                    accuracy = mean(syn.iter().map(|s| s.accuracy));
                    auroc = mean(syn.iter().filter_map(|s| s.auroc));
                }
                Ok(Scores {
                    accuracy,
                    auroc,
                    tv: mean(rep.histograms.iter().map(|h| h.tvd)).unwrap_or(f64::NAN),
                    pca: rep.pca.wasserstein.score,
                    refs,
                })
            }
            Scorer::Images { train, test } => {
                line("sampling digits, training classifiers on them, testing on real ones");
                let rep = super::evaluation::score_images(model, train, test, seed)?;
                // The floor: always guessing the test set's most common digit.
                let mut counts = [0usize; 256];
                for l in test.labels.iter().flatten() {
                    counts[*l as usize] += 1;
                }
                let floor =
                    counts.iter().copied().max().unwrap_or(0) as f64 / test.len().max(1) as f64;
                Ok(Scores {
                    accuracy: Some(rep.synthetic_mlp_accuracy),
                    auroc: None,
                    tv: f64::NAN,
                    pca: f64::NAN,
                    refs: (Some(rep.real_mlp_accuracy), None, Some(floor)),
                })
            }
        }
    }
}

/// What a sweep on a worker thread reports.
#[derive(Debug)]
pub enum SweepEvent {
    Progress(String),
    Point(Box<SweepPoint>),
    Done(Result<Box<SweepReport>, JobError>),
}

/// A sweep on a worker thread.
pub type SweepHandle = super::Worker<SweepEvent>;

/// Starts `cfg` on a worker thread with the base run's thread count; `wake` is called
/// after each event.
pub fn spawn_sweep(cfg: SweepConfig, ledger: PathBuf, wake: Option<super::Waker>) -> SweepHandle {
    let threads = cfg.base.threads;
    super::spawn_worker(
        threads,
        wake,
        move |cancel, send| {
            run_sweep_with(
                &cfg,
                &ledger,
                &|l| send(SweepEvent::Progress(l.to_string())),
                &|l| send(SweepEvent::Progress(l.to_string())),
                &mut |p| send(SweepEvent::Point(Box::new(p.clone()))),
                cancel,
            )
        },
        |result, send| send(SweepEvent::Done(result.map(Box::new))),
    )
}
