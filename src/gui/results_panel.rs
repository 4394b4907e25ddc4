//! The results view: one entry per finished run of the open table, each evaluated in a
//! worker thread by `eval::report::evaluate`, shown as tabs. Several runs of one dataset
//! (say ε = 0.5, 1 and ∞) sit side by side in the comparison table.
//!
//! The window evaluates seeded subsamples (5,000 rows a side, 10 Wasserstein repeats) so a
//! report takes seconds; `dpsynth evaluate` gives the full-size report of the same
//! figures.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, channel};

use eframe::egui;
use egui_plot::{Bar, BarChart, HoverPosition, Legend, Line, Plot, PlotPoints, Points};

use crate::data::Table;
use crate::data::schema::{Kind, Schema};
use crate::eval::report::{Options, Report, evaluate};
use crate::methods::released::{PrivacyStatement, ReleasedModel};

/// Rows per side the window evaluates.
const EVAL_ROWS: usize = 5_000;

const REAL: egui::Color32 = egui::Color32::from_rgb(60, 120, 216);
const SYNTHETIC: egui::Color32 = egui::Color32::from_rgb(230, 120, 40);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum View {
    #[default]
    Prediction,
    Probability,
    Histograms,
    Pca,
    Tstr,
    PrivacyRisk,
    Statement,
    Compare,
}

impl View {
    const ALL: [(View, &'static str); 8] = [
        (View::Prediction, "Dimension-wise prediction"),
        (View::Probability, "Dimension-wise probability"),
        (View::Histograms, "Histograms"),
        (View::Pca, "2-way PCA"),
        (View::Tstr, "Train on synthetic, test on real"),
        (View::PrivacyRisk, "Privacy risk"),
        (View::Statement, "Privacy statement"),
        (View::Compare, "Compare runs"),
    ];
}

enum Msg {
    Progress(String),
    Done(Result<Box<Report>, String>),
}

enum EvalState {
    Running {
        rx: Receiver<Msg>,
        line: String,
    },
    Done(Box<Report>),
    Failed(String),
    /// An image run: 100 generated digits beside 100 real ones (`dpsynth evaluate` scores
    /// image runs with classifiers; that takes minutes, so the window shows the grids).
    Images {
        generated: egui::TextureHandle,
        real: Option<egui::TextureHandle>,
    },
}

/// One finished run and its evaluation.
struct RunResult {
    title: String,
    statement: PrivacyStatement,
    test_note: String,
    /// What the HTML report names as its inputs.
    inputs: crate::eval::html::Inputs,
    state: EvalState,
    report_msg: Option<String>,
}

/// State of the results view.
#[derive(Default)]
pub struct ResultsPanel {
    runs: Vec<RunResult>,
    selected: usize,
    view: View,
    hist_column: usize,
}

/// The column the TSTR table predicts: a binary or categorical column named like a label,
/// else the last such column.
pub fn default_label(schema: &Schema) -> Option<String> {
    let discrete: Vec<&str> = schema
        .columns
        .iter()
        .filter(|c| matches!(c.kind, Kind::Binary | Kind::Categorical))
        .map(|c| c.name.as_str())
        .collect();
    for want in ["income", "label", "class", "target", "y", "outcome"] {
        if let Some(c) = discrete.iter().find(|c| c.eq_ignore_ascii_case(want)) {
            return Some(c.to_string());
        }
    }
    discrete.last().map(|c| c.to_string())
}

/// A held-out file beside the data (`…train…` → `…test…`), if there is one.
fn sibling_test(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    if !name.contains("train") {
        return None;
    }
    let p = path.with_file_name(name.replacen("train", "test", 1));
    p.exists().then_some(p)
}

impl ResultsPanel {
    /// Forgets every run (a new dataset was opened).
    pub fn clear(&mut self) {
        self.runs.clear();
        self.selected = 0;
    }

    /// Starts evaluating a finished run's model against the real table in a worker thread.
    pub fn add_run(
        &mut self,
        title: String,
        model_path: &Path,
        data_path: &Path,
        real: &Table,
        schema: &Schema,
        ctx: &egui::Context,
    ) {
        let model = match ReleasedModel::load(model_path, &candle_core::Device::Cpu) {
            Ok(m) => m,
            Err(e) => {
                self.runs.push(RunResult {
                    title,
                    statement: empty_statement(),
                    test_note: String::new(),
                    inputs: no_inputs(),
                    state: EvalState::Failed(e.to_string()),
                    report_msg: None,
                });
                return;
            }
        };
        let test_path = sibling_test(data_path);
        let test_note = match &test_path {
            Some(p) => format!("scored on the held-out file {}", p.display()),
            None => "no held-out file was found beside the data, so scores use rows of the training data (optimistic for the real row)".into(),
        };
        let statement = model.header.privacy.clone();
        let inputs = crate::eval::html::Inputs {
            real_train: format!("{} ({EVAL_ROWS} sampled rows)", data_path.display()),
            real_test: test_path.as_ref().map_or_else(
                || "rows of the training data (no held-out file was found)".into(),
                |p| format!("{} ({EVAL_ROWS} sampled rows)", p.display()),
            ),
            synthetic: format!("{EVAL_ROWS} rows sampled from {}", model_path.display()),
        };
        let (tx, rx) = channel();
        let real = real.sample_rows(EVAL_ROWS, 1);
        let schema = schema.clone();
        let ctx = ctx.clone();
        std::thread::spawn(move || {
            let send = |m: Msg| {
                let _ = tx.send(m);
                ctx.request_repaint();
            };
            let result = (|| -> Result<Box<Report>, String> {
                send(Msg::Progress("sampling 5,000 synthetic rows".into()));
                let syn = model
                    .sample(EVAL_ROWS, Some(2))
                    .map_err(|e| e.to_string())?;
                let test = match &test_path {
                    Some(p) => match crate::data::open(p, &Default::default()) {
                        Ok(crate::data::Dataset::Table(t)) => t.sample_rows(EVAL_ROWS, 3),
                        _ => real.clone(),
                    },
                    None => real.clone(),
                };
                let opts = Options {
                    label: default_label(&schema),
                    seed: 0,
                    dimwise_rows: 2_000,
                    wasserstein_repeats: 10,
                };
                let mut progress = |l: &str| send(Msg::Progress(l.to_string()));
                evaluate(Some(schema), &real, &test, &syn, &opts, &mut progress).map(Box::new)
            })();
            send(Msg::Done(result));
        });
        self.runs.push(RunResult {
            title,
            statement,
            test_note,
            inputs,
            state: EvalState::Running {
                rx,
                line: "starting".into(),
            },
            report_msg: None,
        });
        self.selected = self.runs.len() - 1;
    }

    /// Adds an image run: 100 generated images (10 per label row when the generator emits
    /// labels) shown beside the real ones.
    pub fn add_image_run(
        &mut self,
        title: String,
        model_path: &Path,
        real: Option<egui::TextureHandle>,
        ctx: &egui::Context,
    ) {
        let made = ReleasedModel::load(model_path, &candle_core::Device::Cpu)
            .map_err(|e| e.to_string())
            .and_then(|m| {
                let t = m.sample(100, None).map_err(|e| e.to_string())?;
                let set = crate::data::image::from_pixel_table(&t, "generated")
                    .map_err(|e| e.to_string())?;
                Ok((m.header.privacy.clone(), super::image_grid(&set, 10, 10)))
            });
        let (statement, state) = match made {
            Ok((st, img)) => (
                st,
                EvalState::Images {
                    generated: ctx.load_texture(
                        format!("generated-{}", self.runs.len()),
                        img,
                        egui::TextureOptions::NEAREST,
                    ),
                    real,
                },
            ),
            Err(e) => (empty_statement(), EvalState::Failed(e)),
        };
        self.runs.push(RunResult {
            title,
            statement,
            test_note: String::new(),
            inputs: no_inputs(),
            state,
            report_msg: None,
        });
        self.selected = self.runs.len() - 1;
    }

    /// The selected run's report as HTML, for the save dialog's answer.
    pub fn save_report(&mut self, path: &Path) {
        let Some(run) = self.runs.get_mut(self.selected) else {
            return;
        };
        run.report_msg = Some(match &run.state {
            EvalState::Done(rep) => {
                let html = crate::eval::html::render(rep, &run.inputs);
                match crate::util::atomic::write_atomic(path, html.as_bytes()) {
                    Ok(()) => format!("saved the report to {}", path.display()),
                    Err(e) => format!("could not save {}: {e}", path.display()),
                }
            }
            _ => "this run has no finished evaluation to report".into(),
        });
    }

    fn drain(&mut self) {
        for r in &mut self.runs {
            let mut next = None;
            if let EvalState::Running { rx, line } = &mut r.state {
                while let Ok(m) = rx.try_recv() {
                    match m {
                        Msg::Progress(l) => *line = l,
                        Msg::Done(Ok(rep)) => next = Some(EvalState::Done(rep)),
                        Msg::Done(Err(e)) => next = Some(EvalState::Failed(e)),
                    }
                }
            }
            if let Some(n) = next {
                r.state = n;
            }
        }
    }

    pub fn ui(&mut self, ui: &mut egui::Ui, dialogs: &mut super::dialogs::Dialogs) {
        self.drain();
        if self.runs.is_empty() {
            ui.label("No results yet: train a model in tab 2; its evaluation appears here.");
            return;
        }
        ui.horizontal_wrapped(|ui| {
            ui.label("Run:");
            for (i, r) in self.runs.iter().enumerate() {
                ui.selectable_value(&mut self.selected, i, &r.title);
            }
        });
        ui.horizontal_wrapped(|ui| {
            for (v, name) in View::ALL {
                ui.selectable_value(&mut self.view, v, name);
            }
        });
        ui.separator();
        if self.view == View::Compare {
            self.compare_ui(ui);
            return;
        }
        let Some(run) = self.runs.get(self.selected) else {
            return;
        };
        if self.view == View::Statement {
            statement_ui(ui, &run.statement);
            return;
        }
        if let EvalState::Done(_) = &run.state {
            ui.horizontal(|ui| {
                dialogs.button(
                    ui,
                    true,
                    "Save HTML report…",
                    "Every figure and table of this run, in one self-contained file. It shows figures of the real rows (histograms, PCA points): share it only where the real data may be seen.",
                    super::dialogs::Purpose::SaveReport,
                    "dpsynth-report.html",
                );
                if let Some(m) = &run.report_msg {
                    ui.label(m);
                }
            });
        }
        match &run.state {
            EvalState::Images { generated, real } => {
                images_ui(ui, generated, real.as_ref());
            }
            EvalState::Running { line, .. } => {
                ui.horizontal(|ui| {
                    ui.spinner();
                    ui.label(format!("evaluating: {line}"));
                });
            }
            EvalState::Failed(e) => {
                ui.colored_label(
                    ui.visuals().error_fg_color,
                    format!("evaluation failed: {e}"),
                );
            }
            EvalState::Done(rep) => {
                ui.small(&run.test_note);
                match self.view {
                    View::Prediction => prediction_ui(ui, rep),
                    View::Probability => probability_ui(ui, rep),
                    View::Histograms => histogram_ui(ui, rep, &mut self.hist_column),
                    View::Pca => pca_ui(ui, rep),
                    View::Tstr => tstr_ui(ui, rep),
                    View::PrivacyRisk => risk_ui(ui, rep),
                    View::Statement | View::Compare => {}
                }
            }
        }
    }

    fn compare_ui(&self, ui: &mut egui::Ui) {
        egui::Grid::new("compare").striped(true).show(ui, |ui| {
            header_row(
                ui,
                &[
                    "run",
                    "ε",
                    "mean |real − synthetic| (dimension-wise, floored at −0.1)",
                    "mean 1-way TV",
                    "PCA Wasserstein score",
                    "best TSTR accuracy",
                    "membership AUC",
                ],
            );
            for r in &self.runs {
                ui.label(&r.title);
                ui.label(
                    r.statement
                        .epsilon
                        .map_or("∞".into(), |e| format!("{e:.3}")),
                );
                match &r.state {
                    EvalState::Done(rep) => {
                        ui.label(format!("{:.3}", floored_mean_abs(rep)));
                        let tv = rep.histograms.iter().map(|h| h.tvd).sum::<f64>()
                            / rep.histograms.len().max(1) as f64;
                        ui.label(format!("{tv:.3}"));
                        ui.label(format!("{:.3}", rep.pca.wasserstein.score));
                        let best = rep.tstr.as_ref().and_then(|t| {
                            t.rows
                                .iter()
                                .filter_map(|r| r.synthetic.as_ref().ok().map(|s| s.accuracy))
                                .reduce(f64::max)
                        });
                        ui.label(best.map_or("-".into(), |b| format!("{b:.3}")));
                        ui.label(
                            rep.privacy_risk
                                .membership_auc
                                .map_or("-".into(), |a| format!("{a:.3}")),
                        );
                    }
                    EvalState::Running { .. } => {
                        ui.label("evaluating…");
                    }
                    EvalState::Failed(e) => {
                        ui.label(e);
                    }
                    EvalState::Images { .. } => {
                        ui.label("image run: see its grid");
                    }
                }
                ui.end_row();
            }
        });
    }
}

fn no_inputs() -> crate::eval::html::Inputs {
    crate::eval::html::Inputs {
        real_train: String::new(),
        real_test: String::new(),
        synthetic: String::new(),
    }
}

/// Generated digits beside real ones, at the same scale.
fn images_ui(
    ui: &mut egui::Ui,
    generated: &egui::TextureHandle,
    real: Option<&egui::TextureHandle>,
) {
    let side = (ui.available_width() / 2.0 - 20.0).clamp(200.0, 420.0);
    ui.horizontal(|ui| {
        ui.vertical(|ui| {
            ui.strong("Generated (100 samples of the released model)");
            ui.image((generated.id(), egui::vec2(side, side)));
        });
        if let Some(r) = real {
            ui.vertical(|ui| {
                ui.strong("Real (the first 100 training images)");
                ui.image((r.id(), egui::vec2(side, side)));
            });
        }
    });
    ui.label("Full scores for image runs (classifier accuracy on real test digits, Fréchet distance): dpsynth evaluate --grid.");
}

fn empty_statement() -> PrivacyStatement {
    PrivacyStatement {
        epsilon: None,
        delta: 0.0,
        accountant: "none".into(),
        epsilon_rdp: None,
        epsilon_pld: None,
        mechanisms: vec![],
        non_private_domains: vec![],
        not_for_release: false,
    }
}

/// A square plot over [lo, hi]² with the y = x line, real on x and synthetic on y.
#[allow(clippy::too_many_arguments)]
fn diagonal_plot(
    ui: &mut egui::Ui,
    id: &str,
    axes: (&str, &str),
    lo: f64,
    hi: f64,
    names: Vec<(String, Vec<String>)>,
    add: impl FnOnce(&mut egui_plot::PlotUi<'_>),
) {
    let names = std::sync::Arc::new(names);
    let lookup = names.clone();
    Plot::new(id)
        .data_aspect(1.0)
        .height(ui.available_height().min(460.0))
        .x_axis_label(axes.0)
        .y_axis_label(axes.1)
        .legend(Legend::default())
        .include_x(lo)
        .include_x(hi)
        .include_y(lo)
        .include_y(hi)
        .label_formatter(move |pos| match pos {
            HoverPosition::NearDataPoint {
                plot_name,
                position,
                index,
            } => {
                let col = lookup
                    .iter()
                    .find(|(n, _)| n == plot_name)
                    .and_then(|(_, cols)| cols.get(*index))?;
                let _ = position;
                Some(col.clone())
            }
            _ => None,
        })
        .show(ui, |p| {
            p.line(
                Line::new("y = x", PlotPoints::from(vec![[lo, lo], [hi, hi]]))
                    .color(egui::Color32::GRAY),
            );
            add(p);
        });
}

/// Scores below this (R² of a useless model) count as it in the window's summaries.
const FLOOR: f64 = -0.1;

/// Mean |real − synthetic| of the dimension-wise scores, each floored at [`FLOOR`].
fn floored_mean_abs(rep: &Report) -> f64 {
    let d: Vec<f64> = rep
        .prediction
        .points
        .iter()
        .filter_map(|p| Some((p.real?.max(FLOOR) - p.synthetic?.max(FLOOR)).abs()))
        .collect();
    d.iter().sum::<f64>() / d.len().max(1) as f64
}

fn prediction_ui(ui: &mut egui::Ui, rep: &Report) {
    let d = &rep.prediction;
    // One R² of −70 would swamp the mean: summarise the points as drawn, and give the raw
    // figure (the report's) beside it.
    let mean_floored = floored_mean_abs(rep);
    ui.label(format!(
        "Each point is one column predicted from all the others: x = the model trained on real rows, y = trained on synthetic rows, both scored on real held-out rows. Points on the line mean the synthetic data keeps that column's relationships. Mean distance from the line {:.3}, mean |real − synthetic| {:.3} (scores below −0.1, R² of a useless model, count as −0.1 and are drawn there; without that floor: {:.3} and {:.3}). Hover a point for its column and true scores.",
        mean_floored / std::f64::consts::SQRT_2,
        mean_floored,
        d.mean_distance_from_diagonal,
        d.mean_abs_difference
    ));
    let mut series: Vec<(String, Vec<[f64; 2]>, Vec<String>)> = Vec::new();
    for p in &d.points {
        let (Some(r), Some(s)) = (p.real, p.synthetic) else {
            continue;
        };
        let name = format!("{} · {}", p.model, p.metric);
        let at = match series.iter().position(|(n, _, _)| *n == name) {
            Some(i) => i,
            None => {
                series.push((name, Vec::new(), Vec::new()));
                series.len() - 1
            }
        };
        // R² of a poor synthetic model can be −70: drawn at the floor so the scores that
        // matter keep their scale; the hover text gives the true values.
        series[at].1.push([r.max(FLOOR), s.max(FLOOR)]);
        series[at].2.push(format!(
            "{}\n{}: real {r:.3} · synthetic {s:.3}",
            p.column, p.metric
        ));
    }
    let (lo, hi) = (FLOOR, 1.0);
    let names = series
        .iter()
        .map(|(n, _, c)| (n.clone(), c.clone()))
        .collect();
    let axes = ("trained on real", "trained on synthetic");
    diagonal_plot(ui, "prediction", axes, lo, hi, names, |p| {
        for (name, pts, _) in series {
            p.points(Points::new(name, PlotPoints::from(pts)).radius(4.0));
        }
    });
}

fn probability_ui(ui: &mut egui::Ui, rep: &Report) {
    ui.label("Each point is one binary column: the share of its second value among real rows (x) and synthetic rows (y). Hover a point for its column.");
    let pts: Vec<[f64; 2]> = rep
        .probability
        .iter()
        .map(|p| [p.real, p.synthetic])
        .collect();
    let cols: Vec<String> = rep
        .probability
        .iter()
        .map(|p| {
            format!(
                "{} = {}\nreal {:.3} · synthetic {:.3}",
                p.column, p.value, p.real, p.synthetic
            )
        })
        .collect();
    if pts.is_empty() {
        ui.label("This table has no binary columns.");
        return;
    }
    diagonal_plot(
        ui,
        "probability",
        ("share among real rows", "share among synthetic rows"),
        0.0,
        1.0,
        vec![("binary columns".into(), cols)],
        |p| p.points(Points::new("binary columns", PlotPoints::from(pts)).radius(4.0)),
    );
}

fn histogram_ui(ui: &mut egui::Ui, rep: &Report, column: &mut usize) {
    if rep.histograms.is_empty() {
        ui.label("No columns to show.");
        return;
    }
    *column = (*column).min(rep.histograms.len() - 1);
    ui.horizontal(|ui| {
        let l = ui.label("Column:");
        egui::ComboBox::from_id_salt("hist-column")
            .selected_text(rep.histograms[*column].column.clone())
            .show_ui(ui, |ui| {
                for (i, h) in rep.histograms.iter().enumerate() {
                    ui.selectable_value(column, i, format!("{} (TV {:.3})", h.column, h.tvd));
                }
            })
            .response
            .labelled_by(l.id);
    });
    let h = &rep.histograms[*column];
    ui.label(format!(
        "Share of rows per value: real (blue) and synthetic (orange). Total variation distance {:.3} (0 = identical, 1 = disjoint).",
        h.tvd
    ));
    let bars = |vals: &[f64], off: f64, color: egui::Color32| -> Vec<Bar> {
        vals.iter()
            .enumerate()
            .map(|(i, v)| {
                Bar::new(i as f64 + off, *v)
                    .width(0.4)
                    .fill(color)
                    .name(h.bins.get(i).cloned().unwrap_or_default())
            })
            .collect()
    };
    let bins = h.bins.clone();
    Plot::new(format!("hist-{}", h.column))
        .height(ui.available_height().min(420.0))
        .legend(Legend::default())
        .x_axis_formatter(move |m, _| {
            let i = m.value.round();
            if (m.value - i).abs() < 1e-6 && i >= 0.0 {
                bins.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .show(ui, |p| {
            p.bar_chart(BarChart::new("real", bars(&h.real, -0.2, REAL)).color(REAL));
            p.bar_chart(
                BarChart::new("synthetic", bars(&h.synthetic, 0.2, SYNTHETIC)).color(SYNTHETIC),
            );
        });
}

fn pca_ui(ui: &mut egui::Ui, rep: &Report) {
    let p = &rep.pca;
    ui.label(format!(
        "Real and synthetic rows projected on the first two principal components of the real data ({:.0}% of its variance). Wasserstein score {:.3} (1 = the two clouds coincide); whole-data score {:.3}.",
        100.0 * p.explained_variance_ratio.iter().take(2).sum::<f64>(),
        p.wasserstein.score,
        rep.whole_data_wasserstein.score
    ));
    Plot::new("pca")
        .height(ui.available_height().min(460.0))
        .data_aspect(1.0)
        .legend(Legend::default())
        .show(ui, |pl| {
            pl.points(
                Points::new("real", PlotPoints::from(p.real_points.clone()))
                    .color(REAL)
                    .radius(1.5),
            );
            pl.points(
                Points::new("synthetic", PlotPoints::from(p.synthetic_points.clone()))
                    .color(SYNTHETIC)
                    .radius(1.5),
            );
        });
}

fn tstr_ui(ui: &mut egui::Ui, rep: &Report) {
    let Some(t) = &rep.tstr else {
        ui.label("The table has no binary or categorical column to predict.");
        return;
    };
    ui.label(format!(
        "Eight classifiers predict '{}'. Each is trained once on real rows and once on synthetic rows, and both are scored on real held-out rows ({}). Always guessing the most common class scores {:.3}.",
        t.label, t.test_rows, t.majority_accuracy
    ));
    let fmt = |s: &Result<crate::eval::report::Scores, String>| -> [String; 3] {
        match s {
            Ok(s) => [
                format!("{:.3}", s.accuracy),
                s.auroc.map_or("-".into(), |v| format!("{v:.3}")),
                s.auprc.map_or("-".into(), |v| format!("{v:.3}")),
            ],
            Err(e) => [e.clone(), String::new(), String::new()],
        }
    };
    egui::Grid::new("tstr").striped(true).show(ui, |ui| {
        header_row(
            ui,
            &[
                "model",
                "rows",
                "real: accuracy",
                "AUROC",
                "AUPRC",
                "synthetic: accuracy",
                "AUROC",
                "AUPRC",
            ],
        );
        for r in &t.rows {
            ui.label(&r.label);
            ui.label(r.train_rows.to_string());
            for c in fmt(&r.real).into_iter().chain(fmt(&r.synthetic)) {
                ui.label(c);
            }
            ui.end_row();
        }
    });
    if let Some(a) = t.agreed_ranking_auroc {
        ui.label(format!(
            "Agreed ranking of the models by AUROC (1 = synthetic data ranks them as real data does): {a:.3}"
        ));
    }
}

fn risk_ui(ui: &mut egui::Ui, rep: &Report) {
    let r = &rep.privacy_risk;
    ui.label("Empirical checks on the released sample. They cannot prove privacy — the guarantee is the statement's ε — but they show obvious leaks.");
    egui::Grid::new("risk").striped(true).show(ui, |ui| {
        let mut row = |k: &str, v: String| {
            ui.label(k);
            ui.label(v);
            ui.end_row();
        };
        row("rows compared", r.rows.to_string());
        row(
            "synthetic rows identical to a training row",
            r.exact_copies.to_string(),
        );
        row(
            "median distance to the closest training row: synthetic / unseen real",
            format!("{:.3} / {:.3}", r.dcr_synthetic_median, r.dcr_test_median),
        );
        row(
            "5th percentile of that distance: synthetic / unseen real",
            format!("{:.3} / {:.3}", r.dcr_synthetic_p5, r.dcr_test_p5),
        );
        row(
            "membership-inference AUC (0.5 = no signal)",
            r.membership_auc.map_or("-".into(), |a| format!("{a:.3}")),
        );
        row(
            "pMSE (0 = indistinguishable)",
            format!("{:.4}", rep.pmse.fit.pmse),
        );
        row("MMD² (unbiased)", format!("{:.5}", rep.mmd.mmd2_unbiased));
    });
}

fn statement_ui(ui: &mut egui::Ui, s: &PrivacyStatement) {
    match s.epsilon {
        Some(e) => ui.heading(format!(
            "(ε = {e:.4}, δ = {}) differential privacy, by the {} accountant",
            s.delta, s.accountant
        )),
        None => ui.heading("Not private (ε = ∞): a reference model only, never to be released"),
    };
    if let (Some(r), p) = (s.epsilon_rdp, s.epsilon_pld) {
        ui.label(format!(
            "RDP accountant: ε = {r:.4}{}",
            p.map_or(String::new(), |p| format!(" · PLD accountant: ε = {p:.4}"))
        ));
    }
    ui.label("Every use of the private rows:");
    for m in &s.mechanisms {
        ui.label(format!("  • {} × {}", m.mechanism.describe(), m.count));
    }
    if s.non_private_domains.is_empty() {
        ui.label("Every column's domain was public (entered or confirmed), so the guarantee covers the whole release.");
    } else {
        ui.colored_label(
            ui.visuals().warn_fg_color,
            format!(
                "Not covered: the domains of {} were read off the data. Confirm public values in the Data tab to close this gap.",
                s.non_private_domains.join(", ")
            ),
        );
    }
    if s.not_for_release {
        ui.colored_label(
            ui.visuals().warn_fg_color,
            "A fixed seed was used: reproducible, NOT for release.",
        );
    }
}

/// A grid's header: one bold cell per name, then the end of the row.
fn header_row(ui: &mut egui::Ui, names: &[&str]) {
    for h in names {
        ui.strong(*h);
    }
    ui.end_row();
}
