//! The ε sweep: one run per (method, ε, repeat), each charged like any run, each scored by
//! the window's evaluation pipeline, and the headline scores drawn against ε — the seed
//! papers' central figure, for a teaching lab.
//!
//! Runs are charged one by one to the dataset's ledger (a scratch ledger on data the user
//! declares public: nothing is charged, and the report says so). Before any run, the sum
//! of the planned ε is known ([`SweepConfig::planned_total`]); the ledger composes the
//! runs, which is tighter than the sum.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use super::evaluation::{EvalSpec, evaluate_model};
use super::{JobError, RunConfig};

/// What a sweep runs.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    /// The settings every run shares (its `method`, `epsilon` and `out` are replaced).
    pub base: RunConfig,
    pub methods: Vec<String>,
    /// `f64::INFINITY` for the non-private point.
    pub epsilons: Vec<f64>,
    /// Runs per (method, ε): more give error bars.
    pub repeats: usize,
    /// The data is public (a bundled sample): charge nothing.
    pub public: bool,
    /// Folder for the models.
    pub out_dir: PathBuf,
}

impl SweepConfig {
    /// Σ ε over the private runs (what the ledger can at most be charged).
    pub fn planned_total(&self) -> f64 {
        self.methods.len() as f64
            * self.repeats.max(1) as f64
            * self.epsilons.iter().filter(|e| e.is_finite()).sum::<f64>()
    }
}

/// A score a failed point does not have: written as `null`, read back as NaN.
pub(super) fn nan_from_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    use serde::Deserialize as _;
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// One run's headline scores.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SweepPoint {
    pub method: String,
    /// The ε asked for (`None`: ∞, not private).
    pub epsilon: Option<f64>,
    pub epsilon_spent: Option<f64>,
    pub repeat: usize,
    /// Mean over the classifiers, trained on synthetic rows and tested on real ones (for
    /// images: the MLP's accuracy on the real test digits).
    pub tstr_accuracy: Option<f64>,
    pub tstr_auroc: Option<f64>,
    /// Mean 1-way total-variation distance (0 = the same marginals).
    #[serde(deserialize_with = "nan_from_null")]
    pub tv_1way: f64,
    /// The 2-way PCA Wasserstein score (1 = the clouds coincide).
    #[serde(deserialize_with = "nan_from_null")]
    pub pca_score: f64,
    pub seconds: f64,
    pub model: PathBuf,
    /// Why this point has no scores: its run or its scoring failed (the sweep goes on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// The run's settings (for opening its results and auditing it in the window).
    #[serde(skip)]
    pub config: Option<Box<RunConfig>>,
}

impl SweepPoint {
    /// ε spent, TSTR accuracy, TSTR AUROC, 1-way TV and PCA score, in the tables' order;
    /// a score a run does not have (or that is not finite) is `None`.
    pub fn scores(&self) -> [Option<f64>; 5] {
        [
            self.epsilon_spent,
            self.tstr_accuracy,
            self.tstr_auroc,
            Some(self.tv_1way),
            Some(self.pca_score),
        ]
        .map(|v| v.filter(|x| x.is_finite()))
    }
}

/// A sweep's table, with the reference lines.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SweepReport {
    pub data: String,
    pub delta: f64,
    pub label: Option<String>,
    pub points: Vec<SweepPoint>,
    /// Classifiers trained on the real rows (the ceiling).
    pub real_accuracy: Option<f64>,
    pub real_auroc: Option<f64>,
    /// Always guessing the majority class (the floor).
    pub majority_accuracy: Option<f64>,
    pub charged: bool,
    pub planned_total: f64,
}

fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = xs.filter(|x| x.is_finite()).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

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
    if cfg.methods.is_empty() || cfg.epsilons.is_empty() {
        return Err(JobError::Usage(
            "a sweep needs at least one method and one ε".into(),
        ));
    }
    for m in &cfg.methods {
        super::method(m)?;
    }
    let data_path = &cfg.base.data;
    let scorer = Scorer::open(&cfg.base)?;
    std::fs::create_dir_all(&cfg.out_dir).map_err(|e| JobError::write(&cfg.out_dir, e))?;
    let scratch = cfg.out_dir.join("sweep-scratch-ledger.sqlite3");
    let ledger = if cfg.public {
        // A fresh scratch book whose total fits the whole sweep: public data has nothing
        // to spend, and earlier sweeps must not refuse this one.
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
        scratch
    } else {
        ledger.to_path_buf()
    };
    let mut points = Vec::new();
    let kept = super::sweep_store::read_kept(cfg);
    let mut refs = kept.as_ref().map_or((None, None, None), |k| {
        (k.real_accuracy, k.real_auroc, k.majority_accuracy)
    });
    let kept = kept.map(|k| k.points).unwrap_or_default();
    let total = cfg.methods.len() * cfg.epsilons.len() * cfg.repeats.max(1);
    let mut k = 0;
    let save = |points: &[SweepPoint], refs: (Option<f64>, Option<f64>, Option<f64>)| {
        super::sweep_store::save(cfg, points, refs)
    };
    for method in &cfg.methods {
        for &eps in &cfg.epsilons {
            for repeat in 0..cfg.repeats.max(1) {
                if cancel.load(std::sync::atomic::Ordering::SeqCst) {
                    return Err(JobError::Training(format!(
                        "the sweep was stopped; its {} finished point(s) are kept and a run of the same sweep resumes from them",
                        points.len()
                    )));
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
                let name = format!(
                    "{method}-eps{}-{repeat}",
                    if eps.is_finite() {
                        eps.to_string()
                    } else {
                        "inf".into()
                    }
                );
                progress(&format!("run {k}/{total}: {method} at ε = {eps}"));
                let run = RunConfig {
                    method: method.clone(),
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
                let outcome = super::run::run(&run, &ledger, &training, cancel).and_then(|s| {
                    let scores = scorer.score(&s.model, cfg.base.seed, &mut line)?;
                    Ok((s, scores))
                });
                let point = match outcome {
                    Ok((summary, scores)) => {
                        if refs.0.is_none() {
                            refs = scores.refs;
                        }
                        SweepPoint {
                            method: method.clone(),
                            epsilon: asked,
                            epsilon_spent: summary.epsilon_spent,
                            repeat,
                            tstr_accuracy: scores.accuracy,
                            tstr_auroc: scores.auroc,
                            tv_1way: scores.tv,
                            pca_score: scores.pca,
                            seconds: summary.seconds,
                            model: summary.model.clone(),
                            failed: None,
                            config: Some(Box::new(run.clone())),
                        }
                    }
                    // A stop is the user's: the sweep ends (its points are kept).
                    Err(e) if cancel.load(std::sync::atomic::Ordering::SeqCst) => {
                        save(&points, refs)?;
                        return Err(e);
                    }
                    // One point's failure is that point's: it is marked and the sweep
                    // goes on (a run that read the rows stays charged, as any run).
                    Err(e) => {
                        progress(&format!(
                            "run {k}/{total}: {method} at ε = {eps} failed: {e}"
                        ));
                        SweepPoint {
                            method: method.clone(),
                            epsilon: asked,
                            epsilon_spent: None,
                            repeat,
                            tstr_accuracy: None,
                            tstr_auroc: None,
                            tv_1way: f64::NAN,
                            pca_score: f64::NAN,
                            seconds: 0.0,
                            model: run.out.clone(),
                            failed: Some(e.to_string()),
                            config: Some(Box::new(run.clone())),
                        }
                    }
                };
                points.push(point);
                save(&points, refs)?;
                if let Some(p) = points.last() {
                    on_point(p);
                }
            }
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

/// One run's headline scores, and the reference lines (real accuracy, real AUROC, floor).
struct Scores {
    accuracy: Option<f64>,
    auroc: Option<f64>,
    tv: f64,
    pca: f64,
    refs: (Option<f64>, Option<f64>, Option<f64>),
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
pub struct SweepHandle {
    pub events: std::sync::mpsc::Receiver<SweepEvent>,
    cancel: std::sync::Arc<AtomicBool>,
}

impl SweepHandle {
    /// Stops after the current run's step; runs already finished stay charged and listed.
    pub fn cancel(&self) {
        self.cancel.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Starts `cfg` on a worker thread with the base run's thread count; `wake` is called
/// after each event.
pub fn spawn_sweep(cfg: SweepConfig, ledger: PathBuf, wake: Option<super::Waker>) -> SweepHandle {
    let (tx, rx) = std::sync::mpsc::channel();
    let threads = cfg.base.threads;
    let cancel = super::spawn_worker(
        threads,
        wake,
        tx,
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
    );
    SweepHandle { events: rx, cancel }
}

/// The table as CSV: one row per run.
pub fn to_csv(r: &SweepReport) -> String {
    let mut s = String::from(
        "method,epsilon,epsilon_spent,repeat,tstr_accuracy,tstr_auroc,tv_1way,pca_score,seconds,failed\n",
    );
    for p in &r.points {
        let cells: Vec<String> = p
            .scores()
            .iter()
            .map(|v| v.map_or(String::new(), |x| format!("{x:.6}")))
            .collect();
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{:.1},{}",
            p.method,
            p.epsilon.map_or("inf".to_string(), |e| e.to_string()),
            cells[0],
            p.repeat,
            cells[1],
            cells[2],
            cells[3],
            cells[4],
            p.seconds,
            p.failed
                .as_deref()
                .map_or(String::new(), |f| format!("\"{}\"", f.replace('"', "'")))
        );
    }
    s
}

/// One metric of the figure.
struct Panel {
    title: &'static str,
    get: fn(&SweepPoint) -> Option<f64>,
    /// (name, value) reference lines.
    refs: Vec<(&'static str, f64)>,
}

const COLOURS: [&str; 6] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
];

/// The figure as one self-contained SVG: a panel per headline score, score against ε on a
/// log axis (∞ at the right), one line per method (the mean over repeats, bars from the
/// smallest to the largest), the real-data ceiling and the majority-class floor dashed.
pub fn to_svg(r: &SweepReport) -> String {
    let images = r.label.as_deref() == Some("digit") && r.points.iter().all(|p| p.tv_1way.is_nan());
    let mut panels = vec![
        Panel {
            title: if images {
                "accuracy on real test digits (MLP trained on generated)"
            } else {
                "TSTR accuracy (mean of 8 classifiers)"
            },
            get: |p| p.tstr_accuracy,
            refs: [
                ("real data", r.real_accuracy),
                ("majority class", r.majority_accuracy),
            ]
            .into_iter()
            .filter_map(|(n, v)| v.map(|v| (n, v)))
            .collect(),
        },
        Panel {
            title: "TSTR AUROC (mean of 8 classifiers)",
            get: |p| p.tstr_auroc,
            refs: [("real data", r.real_auroc), ("chance", Some(0.5))]
                .into_iter()
                .filter_map(|(n, v)| v.map(|v| (n, v)))
                .collect(),
        },
        Panel {
            title: "1-way TV distance (lower is better)",
            get: |p| Some(p.tv_1way),
            refs: vec![],
        },
        Panel {
            title: "2-way PCA Wasserstein score",
            get: |p| Some(p.pca_score),
            refs: vec![],
        },
    ];
    // Panels with nothing to draw go (no classifier label; images have no TV or PCA).
    panels.retain(|p| {
        r.points
            .iter()
            .any(|pt| (p.get)(pt).is_some_and(f64::is_finite))
    });
    let finite: Vec<f64> = r.points.iter().filter_map(|p| p.epsilon).collect();
    let (lo, hi) = (
        finite
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min)
            .min(1.0)
            .log10()
            .floor(),
        finite
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max)
            .max(1.0)
            .log10()
            .ceil(),
    );
    let has_inf = r.points.iter().any(|p| p.epsilon.is_none());
    let x_max = if has_inf { hi + 1.0 } else { hi };
    let (pw, ph, ml, mt) = (420.0, 260.0, 60.0, 40.0);
    let cols = 2usize;
    let rows = panels.len().div_ceil(cols);
    let (w, h) = (
        cols as f64 * (pw + ml + 20.0),
        rows as f64 * (ph + mt + 50.0) + 40.0,
    );
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/>"#
    );
    let mut methods: Vec<&str> = r.points.iter().map(|p| p.method.as_str()).collect();
    methods.dedup();
    methods.sort();
    methods.dedup();
    for (i, panel) in panels.iter().enumerate() {
        let ox = (i % cols) as f64 * (pw + ml + 20.0) + ml;
        let oy = (i / cols) as f64 * (ph + mt + 50.0) + mt;
        let vals: Vec<f64> = r
            .points
            .iter()
            .filter_map(|p| (panel.get)(p))
            .chain(panel.refs.iter().map(|x| x.1))
            .filter(|v| v.is_finite())
            .collect();
        let (mut y0, mut y1) = (
            vals.iter().copied().fold(f64::INFINITY, f64::min),
            vals.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        );
        if !(y0.is_finite() && y1.is_finite()) {
            (y0, y1) = (0.0, 1.0);
        }
        let pad = ((y1 - y0) * 0.1).max(0.01);
        let (y0, y1) = (y0 - pad, y1 + pad);
        let xs = |e: Option<f64>| {
            let lx = e.map_or(x_max, |e| e.log10());
            ox + pw * (lx - lo) / (x_max - lo).max(1e-9)
        };
        let ys = |v: f64| oy + ph * (1.0 - (v - y0) / (y1 - y0));
        let _ = write!(
            s,
            r##"<text x="{ox}" y="{}" font-weight="bold">{}</text><rect x="{ox}" y="{oy}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>"##,
            oy - 8.0,
            panel.title
        );
        // Axes: decades of ε, and ∞.
        let mut d = lo;
        while d <= hi + 1e-9 {
            let x = xs(Some(10f64.powf(d)));
            let label = crate::util::fmt::number(10f64.powf(d));
            let _ = write!(
                s,
                r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#ddd"/><text x="{x}" y="{}" text-anchor="middle">{label}</text>"##,
                oy,
                oy + ph,
                oy + ph + 15.0
            );
            d += 1.0;
        }
        if has_inf {
            let x = xs(None);
            let _ = write!(
                s,
                r##"<text x="{x}" y="{}" text-anchor="middle">∞</text>"##,
                oy + ph + 15.0
            );
        }
        let _ = write!(
            s,
            r##"<text x="{}" y="{}" text-anchor="middle">ε (log scale)</text>"##,
            ox + pw / 2.0,
            oy + ph + 32.0
        );
        for t in 0..=4 {
            let v = y0 + (y1 - y0) * t as f64 / 4.0;
            let _ = write!(
                s,
                r##"<text x="{}" y="{}" text-anchor="end">{v:.3}</text>"##,
                ox - 4.0,
                ys(v) + 4.0
            );
        }
        for (name, v) in &panel.refs {
            let _ = write!(
                s,
                r##"<line x1="{ox}" y1="{0}" x2="{1}" y2="{0}" stroke="#555" stroke-dasharray="6,4"/><text x="{2}" y="{3}" text-anchor="end" fill="#555">{name}</text>"##,
                ys(*v),
                ox + pw,
                ox + pw - 4.0,
                ys(*v) - 4.0
            );
        }
        for (m, method) in methods.iter().enumerate() {
            let colour = COLOURS[m % COLOURS.len()];
            let mut eps: Vec<Option<f64>> = r
                .points
                .iter()
                .filter(|p| p.method == *method)
                .map(|p| p.epsilon)
                .collect();
            eps.sort_by(|a, b| {
                a.unwrap_or(f64::INFINITY)
                    .total_cmp(&b.unwrap_or(f64::INFINITY))
            });
            eps.dedup();
            let mut line = Vec::new();
            for e in eps {
                let v: Vec<f64> = r
                    .points
                    .iter()
                    .filter(|p| p.method == *method && p.epsilon == e)
                    .filter_map(|p| (panel.get)(p))
                    .filter(|v| v.is_finite())
                    .collect();
                let Some(avg) = mean(v.iter().copied()) else {
                    continue;
                };
                let (vmin, vmax) = (
                    v.iter().copied().fold(f64::INFINITY, f64::min),
                    v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                );
                let x = xs(e);
                if v.len() > 1 {
                    let _ = write!(
                        s,
                        r#"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="{colour}"/>"#,
                        ys(vmin),
                        ys(vmax)
                    );
                }
                let _ = write!(
                    s,
                    r#"<circle cx="{x}" cy="{}" r="4" fill="{colour}"/>"#,
                    ys(avg)
                );
                line.push(format!("{x},{}", ys(avg)));
            }
            let _ = write!(
                s,
                r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
                line.join(" ")
            );
            if i == 0 {
                let _ = write!(
                    s,
                    r#"<rect x="{}" y="{}" width="12" height="12" fill="{colour}"/><text x="{}" y="{}">{method}</text>"#,
                    ox + 8.0,
                    oy + 8.0 + 16.0 * m as f64,
                    ox + 24.0,
                    oy + 18.0 + 16.0 * m as f64
                );
            }
        }
    }
    // The reference lines are scores of classifiers trained on the private rows, without
    // noise: the figure says so where it ends up (a slide, a report), not only here.
    if panels.iter().any(|p| !p.refs.is_empty()) {
        let _ = write!(
            s,
            r##"<text x="{}" y="{}" fill="#b00000">NOT FOR RELEASE: the dashed "real data" lines are scores on the private rows, computed without noise; only the method lines are differentially private.</text>"##,
            ml,
            h - 12.0
        );
    }
    s.push_str("</svg>");
    s
}

/// Writes `text` to `path` atomically.
pub fn write(path: &Path, text: &str) -> Result<(), JobError> {
    crate::util::atomic::write_atomic(path, text.as_bytes()).map_err(|e| JobError::write(path, e))
}
