//! A run's evaluation as the window holds it: in a worker, done, failed, an image run's
//! scores, or kept from before and evaluated when shown.

use std::path::Path;
use std::sync::mpsc::{Receiver, channel};

use eframe::egui;

use crate::data::Table;
use crate::data::schema::Schema;
use crate::job::evaluation::{EvalSpec, Evaluated, evaluate_model};

pub(super) enum Msg {
    Progress(String),
    /// The first look, computed before the rest of the report.
    FirstLook(Box<crate::eval::results::FirstLook>),
    Done(Result<Box<Evaluated>, String>),
}

pub(super) enum EvalState {
    Running {
        rx: Receiver<Msg>,
        line: String,
        started: std::time::Instant,
        /// The first look, shown while the other figures are computed.
        early: Option<Box<crate::eval::results::FirstLook>>,
        /// About how long the whole evaluation takes here ([`expected_seconds`]), and
        /// whether that is at a pace measured on this machine.
        expected: (f64, bool),
    },
    /// The report, what it was computed on, and which rows it scored.
    Done(Box<Evaluated>),
    Failed(String),
    /// An image run: 100 generated digits beside 100 real ones, and the classifier scores
    /// computed in a worker (they take a while: the grids show at once).
    Images {
        generated: egui::TextureHandle,
        real: Option<egui::TextureHandle>,
        scores: ImageScores,
    },
    /// A run kept from an earlier session or another file's: evaluated when shown.
    Kept,
}

/// An image run's scores: classifiers trained on its digits, tested on real test digits.
pub(super) enum ImageScores {
    Running(Receiver<Result<crate::eval::images::ImageReport, String>>),
    Done(crate::eval::images::ImageReport),
    Failed(String),
}

impl ImageScores {
    /// Scores the model at `model` in a worker thread against the image set at `data` and
    /// its test set beside it.
    pub(super) fn start(model: &Path, data: &Path, ctx: &egui::Context) -> Self {
        let (tx, rx) = std::sync::mpsc::channel();
        let (m, d, c) = (model.to_path_buf(), data.to_path_buf(), ctx.clone());
        std::thread::spawn(move || {
            crate::job::priority::yield_to_window();
            use crate::job::evaluation::{open_image_splits, score_images};
            let r = open_image_splits(&d)
                .and_then(|(train, test)| score_images(&m, &train, &test, Some(0)))
                .map_err(|e| e.to_string());
            let _ = tx.send(r);
            crate::gui::busy::wake(&c);
        });
        ImageScores::Running(rx)
    }

    pub(super) fn poll(&mut self) {
        if let ImageScores::Running(rx) = self {
            match rx.try_recv() {
                Ok(Ok(r)) => *self = ImageScores::Done(r),
                Ok(Err(e)) => *self = ImageScores::Failed(e),
                Err(std::sync::mpsc::TryRecvError::Empty) => {}
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    *self = ImageScores::Failed("the scoring worker stopped".into())
                }
            }
        }
    }

    /// One line for the comparison table.
    pub(super) fn summary(&self) -> String {
        match self {
            ImageScores::Running(_) => "scoring…".into(),
            ImageScores::Failed(e) => e.clone(),
            ImageScores::Done(r) => format!(
                "CNN {:.1} % · MLP {:.1} % · LR {:.1} % on real test digits (real-trained CNN: {:.1} %)",
                100.0 * r.synthetic_cnn_accuracy,
                100.0 * r.synthetic_mlp_accuracy,
                100.0 * r.synthetic_logistic_accuracy,
                100.0 * r.real_cnn_accuracy
            ),
        }
    }
}

/// Starts the job's evaluation of `model` (drawn by `draw`) against the real table in a
/// worker thread, on seeded samples of 5,000 rows a side. The worker shares the open
/// table (no copy on the UI thread) and loads the model itself.
pub(super) fn evaluate_in_background(
    model: &Path,
    data: &Path,
    real: &std::sync::Arc<Table>,
    schema: &Schema,
    draw: Option<crate::job::Draw>,
    ctx: &egui::Context,
) -> EvalState {
    use crate::job::report_store;
    let key = report_store::ReportKey::new(model, data, schema, draw);
    if let Some(ev) = key.as_ref().and_then(|k| report_store::load(model, k)) {
        return EvalState::Done(Box::new(ev));
    }
    let units = work_units(schema, real.n_rows);
    let pace = measured_pace();
    let expected = (expected_seconds(units, pace), pace.is_some());
    let (tx, rx) = channel();
    let (model, data) = (model.to_path_buf(), data.to_path_buf());
    let (real, schema, ctx) = (std::sync::Arc::clone(real), schema.clone(), ctx.clone());
    std::thread::spawn(move || {
        crate::job::priority::yield_to_window();
        // Each stage's message wakes the window within a tick, never at once: a frame
        // asked for at once takes the cores the evaluation needs.
        let send = |m: Msg| {
            let _ = tx.send(m);
            crate::gui::busy::wake(&ctx);
        };
        let mut progress = |l: &str| send(Msg::Progress(l.to_string()));
        let spec = EvalSpec {
            draw,
            ..EvalSpec::quick()
        };
        progress("first look: exact values, rules and rows");
        if let Ok(l) = crate::job::evaluation::first_look_of(&model, &real, &schema, &spec) {
            send(Msg::FirstLook(Box::new(l)));
        }
        let t0 = std::time::Instant::now();
        let result = evaluate_model(&model, &data, &real, &schema, &spec, &mut progress);
        if result.is_ok() {
            PACE.store(
                (t0.elapsed().as_secs_f64() / units).to_bits(),
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        if let (Ok(ev), Some(k)) = (&result, &key) {
            // Best effort: a report that cannot be kept is recomputed next time.
            let _ = report_store::save(&model, k, ev);
        }
        send(Msg::Done(result.map(Box::new).map_err(|e| e.to_string())));
    });
    EvalState::Running {
        rx,
        line: "starting".into(),
        started: std::time::Instant::now(),
        early: None,
        expected,
    }
}

/// Seconds per work unit of the last evaluation that finished in this process (f64 bits;
/// 0: none yet).
static PACE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn measured_pace() -> Option<f64> {
    let p = f64::from_bits(PACE.load(std::sync::atomic::Ordering::Relaxed));
    (p.is_finite() && p > 0.0).then_some(p)
}

/// The window's evaluation's work (5,000 rows a side at most): every part scales with the
/// rows, the dimension-wise prediction with the columns (two models each), the
/// classifiers and the PCA with the encoded width (a column per level).
pub(super) fn work_units(schema: &Schema, rows: usize) -> f64 {
    use crate::data::schema::{Domain, Kind};
    let kept = schema.columns.iter().filter(|c| c.kind != Kind::Ignored);
    let (mut columns, mut width) = (0.0f64, 0.0f64);
    for c in kept {
        columns += 1.0;
        width += match &c.domain {
            Some(Domain::Categories(l)) => l.len().max(1) as f64,
            _ => 1.0,
        };
    }
    rows.clamp(100, 5_000) as f64 * (columns.max(1.0) + width / 4.0)
}

/// About how long an evaluation of `units` takes here: at the pace of the last one that
/// finished on this machine, else at the pace measured for Adult (24 s for its 15 columns
/// and 5,000 rows a side on 2 cores: `dpsynth evaluate --dimwise-rows 2000
/// --wasserstein-repeats 10`), scaled by the cores.
pub(super) fn expected_seconds(units: f64, pace: Option<f64>) -> f64 {
    const ADULT_UNITS: f64 = 5_000.0 * (15.0 + 107.0 / 4.0);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    match pace {
        Some(p) => p * units,
        None => 24.0 * (units / ADULT_UNITS) * (2.0 / cores).clamp(0.25, 2.0),
    }
}
