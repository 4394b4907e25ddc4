//! The results view: one entry per finished run of the open table, each evaluated in a
//! worker thread by `eval::report::evaluate`, shown as tabs. Several runs of one dataset
//! (say ε = 0.5, 1 and ∞) sit side by side in the comparison table.
//!
//! The window evaluates seeded subsamples (5,000 rows a side, 10 Wasserstein repeats) so a
//! report takes seconds; `dpsynth evaluate` gives the full-size report of the same
//! figures.

mod audit;
mod eval_state;
mod glossary;
mod kept;
mod plots;

pub use kept::{Found as KeptRun, find as find_kept};

use std::path::{Path, PathBuf};

use eframe::egui;

use crate::data::Table;
use crate::data::schema::Schema;
use crate::eval::report::Report;
use crate::job::PrivacyStatement;
use eval_state::{EvalState, ImageScores, Msg, evaluate_in_background};
use plots::*;

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
    SideBySide,
    Boost,
    Audit,
}

impl View {
    const ALL: [(View, &'static str); 11] = [
        (View::Prediction, "Dimension-wise prediction"),
        (View::Probability, "Dimension-wise probability"),
        (View::Histograms, "Histograms"),
        (View::Pca, "2-way PCA"),
        (View::Tstr, "Train on synthetic, test on real"),
        (View::PrivacyRisk, "Privacy risk"),
        (View::Statement, "Privacy statement"),
        (View::Audit, "Privacy audit"),
        (View::Compare, "Compare runs"),
        (View::SideBySide, "Side by side"),
        (View::Boost, "Before / after boosting"),
    ];
}

/// One finished run and its evaluation.
struct RunResult {
    title: String,
    statement: PrivacyStatement,
    state: EvalState,
    report_msg: Option<String>,
    /// For a boosted run: the entry of the same model drawn from its last generator.
    before: Option<usize>,
    /// The run's settings (known for runs trained in this window).
    config: Option<Box<crate::job::RunConfig>>,
    audit: audit::AuditView,
    /// The model file (for runs that have one on disk: kept, deletable).
    model: Option<PathBuf>,
    /// The column settings a kept run trained with.
    schema: Option<Schema>,
}

/// State of the results view.
#[derive(Default)]
pub struct ResultsPanel {
    runs: Vec<RunResult>,
    selected: usize,
    view: View,
    hist_column: usize,
    /// The settings of the run [`Self::add_run`] is adding.
    next_config: Option<Box<crate::job::RunConfig>>,
    /// The statement's attack curve.
    risk: super::risk_view::RiskView,
    /// The two runs shown side by side, and the figure shown for both.
    pair: (usize, usize),
    pair_view: View,
    /// "Delete run…" was pressed once: the next press deletes.
    delete_armed: bool,
    delete_msg: Option<String>,
    /// Exports of the selected run (made on first use: its dialogs route back here).
    export: Option<crate::gui::train::export::ExportView>,
    /// Seconds the last evaluation took (finished here, or read from a kept report): what
    /// the next one is expected to take.
    last_eval_seconds: Option<f64>,
}

impl ResultsPanel {
    /// Whether a run's evaluation is still going on in a worker.
    pub fn is_evaluating(&self) -> bool {
        self.runs.iter().any(|r| {
            matches!(r.state, EvalState::Running { .. })
                || matches!(
                    r.state,
                    EvalState::Images {
                        scores: ImageScores::Running(_),
                        ..
                    }
                )
        })
    }

    /// Forgets every run (a new dataset was opened).
    pub fn clear(&mut self) {
        self.runs.clear();
        self.selected = 0;
        self.delete_msg = None;
    }

    /// Starts evaluating a finished run's model against the real table in a worker thread
    /// (the job's evaluation pipeline, on seeded samples of 5,000 rows a side).
    pub fn add_run(
        &mut self,
        title: String,
        model_path: &Path,
        data_path: &Path,
        real: &Table,
        schema: &Schema,
        config: Option<Box<crate::job::RunConfig>>,
        ctx: &egui::Context,
    ) {
        self.next_config = config;
        let summary = match crate::job::services::read_model(model_path) {
            Ok(m) => m,
            Err(e) => {
                self.push(title, empty_statement(), EvalState::Failed(e.to_string()));
                return;
            }
        };
        let statement = summary.statement;
        if !summary.boosted {
            let state = evaluate_in_background(model_path, data_path, real, schema, None, ctx);
            self.push(title.clone(), statement, state);
            self.keep(&title, model_path, data_path, schema);
            return;
        }
        // A boosted model: its last generator beside its boosted mixture, one entry each.
        use crate::job::Draw;
        let state = evaluate_in_background(
            model_path,
            data_path,
            real,
            schema,
            Some(Draw::Generator),
            ctx,
        );
        self.push(
            format!("{title} · last generator"),
            statement.clone(),
            state,
        );
        let before = self.runs.len() - 1;
        let state = evaluate_in_background(model_path, data_path, real, schema, None, ctx);
        self.push(
            format!("{title} · {}", summary.draw.name()),
            statement,
            state,
        );
        if let Some(r) = self.runs.last_mut() {
            r.before = Some(before);
        }
        self.keep(&title, model_path, data_path, schema);
        if let Some(r) = self.runs.get_mut(before) {
            r.model = Some(model_path.to_path_buf());
        }
        self.view = View::Boost;
    }

    fn push(&mut self, title: String, statement: PrivacyStatement, state: EvalState) {
        let config = self.next_config.clone();
        let sample = config
            .as_ref()
            .is_some_and(|c| c.data.starts_with(super::sample_path("")));
        // Repeated runs of one method, preset and ε are told apart by their number.
        let same = self
            .runs
            .iter()
            .filter(|r| r.title == title || r.title.starts_with(&format!("{title} #")))
            .count();
        let title = if same == 0 {
            title
        } else {
            format!("{title} #{}", same + 1)
        };
        self.runs.push(RunResult {
            title,
            statement,
            state,
            report_msg: None,
            before: None,
            config,
            audit: audit::AuditView::new(sample),
            model: None,
            schema: None,
        });
        self.selected = self.runs.len() - 1;
    }

    /// Starts evaluating the shown run when it is one kept from before.
    fn evaluate_kept(&mut self, data: &Path, real: &Table, schema: &Schema, ctx: &egui::Context) {
        let Some(run) = self.runs.get_mut(self.selected) else {
            return;
        };
        if let (EvalState::Kept, Some(model)) = (&run.state, &run.model) {
            // Scored with the columns it trained with, while they still fit the file.
            let schema = run
                .schema
                .as_ref()
                .filter(|s| s.check_table(real).is_ok())
                .unwrap_or(schema);
            run.state = evaluate_in_background(model, data, real, schema, None, ctx);
        }
    }

    /// Adds an image run: 100 generated images (10 per label row when the generator emits
    /// labels) shown beside the real ones.
    pub fn add_image_run(
        &mut self,
        title: String,
        model_path: &Path,
        data_path: &Path,
        real: Option<egui::TextureHandle>,
        ctx: &egui::Context,
    ) {
        self.next_config = None;
        let made = crate::job::services::read_model(model_path)
            .and_then(|m| {
                Ok((
                    m.statement,
                    crate::job::services::sample(model_path, 100, None)?,
                ))
            })
            .map_err(|e| e.to_string())
            .and_then(|(st, t)| {
                let set = crate::data::image::from_pixel_table(&t, "generated")
                    .map_err(|e| e.to_string())?;
                Ok((st, super::image_grid(&set, 10, 10)))
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
                    scores: ImageScores::start(model_path, data_path, ctx),
                },
            ),
            Err(e) => (empty_statement(), EvalState::Failed(e)),
        };
        self.push(title, statement, state);
    }

    /// The selected run's report as HTML, for the save dialog's answer.
    pub fn save_report(&mut self, path: &Path) {
        let Some(run) = self.runs.get_mut(self.selected) else {
            return;
        };
        run.report_msg = Some(match &run.state {
            EvalState::Done(ev) => {
                let figure = run.audit.figure();
                let html =
                    crate::eval::html::render_with_audit(&ev.report, &ev.inputs, figure.as_ref());
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
            if let EvalState::Running { rx, line, started } = &mut r.state {
                while let Ok(m) = rx.try_recv() {
                    match m {
                        Msg::Progress(l) => *line = l,
                        Msg::Done(Ok(rep)) => {
                            self.last_eval_seconds = Some(started.elapsed().as_secs_f64());
                            next = Some(EvalState::Done(rep))
                        }
                        Msg::Done(Err(e)) => next = Some(EvalState::Failed(e)),
                    }
                }
            }
            if let Some(n) = next {
                r.state = n;
            }
            if let EvalState::Images { scores, .. } = &mut r.state {
                scores.poll();
            }
        }
    }

    fn draw(&mut self, ui: &mut egui::Ui, dialogs: &mut super::dialogs::Dialogs) {
        self.drain();
        if self.runs.is_empty() {
            ui.label("No results yet: train a model in tab 2; its evaluation appears here.");
            return;
        }
        let mut delete = false;
        ui.horizontal_wrapped(|ui| {
            ui.label("Run:");
            for (i, r) in self.runs.iter().enumerate() {
                ui.selectable_value(&mut self.selected, i, &r.title);
            }
            if self.runs.get(self.selected).is_some_and(|r| r.model.is_some()) {
                ui.separator();
                if self.delete_armed {
                    ui.label("Delete this run's model file for good?");
                    delete = ui.button("Yes, delete it").clicked();
                    if ui.button("Keep it").clicked() {
                        self.delete_armed = false;
                    }
                } else if ui
                    .button("Delete run…")
                    .on_hover_text("Removes the run from this list and its model file from the app's folder (exported files stay)")
                    .clicked()
                {
                    self.delete_armed = true;
                }
            }
        });
        if delete {
            self.delete_armed = false;
            if let Err(e) = self.delete_selected() {
                self.delete_msg = Some(e);
            }
            if self.runs.is_empty() {
                return;
            }
        }
        if let Some(m) = &self.delete_msg {
            ui.colored_label(ui.visuals().error_fg_color, m);
        }
        self.export_ui(ui, dialogs);
        // The before/after view only where a run was boosted.
        let boosted = self.runs.iter().any(|r| r.before.is_some());
        if self.view == View::Boost && !boosted {
            self.view = View::default();
        }
        ui.horizontal_wrapped(|ui| {
            for (v, name) in View::ALL {
                if v != View::Boost || boosted {
                    ui.selectable_value(&mut self.view, v, name);
                }
            }
        });
        ui.separator();
        if self.view == View::Compare {
            self.compare_ui(ui);
            return;
        }
        if self.view == View::Boost {
            self.boost_ui(ui);
            return;
        }
        if self.view == View::SideBySide {
            self.side_by_side_ui(ui);
            return;
        }
        let Some(run) = self.runs.get(self.selected) else {
            return;
        };
        if self.view == View::Statement {
            egui::ScrollArea::vertical().show(ui, |ui| {
                statement_ui(ui, &run.statement);
                ui.separator();
                ui.strong("What this means for a person in the data");
                let curve = crate::job::risk::RiskCurve::of_statement(&run.statement, None);
                ui.label(&curve.sentence);
                let measured = run.audit.measured_points();
                self.risk.chart(ui, "risk-statement", &curve, &measured);
                if measured.is_empty() {
                    ui.label("Run the privacy audit (its view, beside this one) to see real attacks' measured points on this chart.");
                } else {
                    ui.label("The dots are the privacy audit's attacks on this method, as measured on canaries (point estimates; the audit view gives the bounds they prove). A dot above the red curve would be evidence of a bug.");
                }
            });
            return;
        }
        if self.view == View::Audit {
            let Some(run) = self.runs.get_mut(self.selected) else {
                return;
            };
            let claimed = run.statement.epsilon;
            run.audit.ui(ui, run.config.as_deref(), claimed);
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
            EvalState::Images {
                generated,
                real,
                scores,
            } => {
                let preset = run.config.as_deref().map(|c| c.preset.as_str());
                images_ui(ui, generated, real.as_ref(), scores, preset);
            }
            EvalState::Running { line, started, .. } => {
                let expect = match self.last_eval_seconds {
                    Some(s) => format!(
                        " (the last evaluation took {})",
                        crate::job::resources::duration(s)
                    ),
                    None => String::new(),
                };
                ui.horizontal(|ui| {
                    ui.spinner();
                    ui.label(format!("evaluating: {line}"));
                });
                ui.label(format!(
                    "{} so far{expect}. The scores are kept with the run: reopening the file or restarting shows them at once.",
                    crate::job::resources::duration(started.elapsed().as_secs_f64())
                ));
            }
            EvalState::Failed(e) => {
                ui.colored_label(
                    ui.visuals().error_fg_color,
                    format!("evaluation failed: {e}"),
                );
            }
            EvalState::Kept => {
                ui.label(
                    "A run kept from before: it is evaluated against the open file when shown.",
                );
            }
            EvalState::Done(ev) => {
                verdict_ui(ui, &ev.report);
                ui.label(&ev.rows_note);
                let rep = &ev.report;
                match self.view {
                    View::Prediction => prediction_ui(ui, rep),
                    View::Probability => probability_ui(ui, rep),
                    View::Histograms => histogram_ui(ui, rep, &mut self.hist_column),
                    View::Pca => pca_ui(ui, rep),
                    View::Tstr => tstr_ui(ui, rep),
                    View::PrivacyRisk => risk_ui(ui, rep),
                    View::Statement
                    | View::Compare
                    | View::SideBySide
                    | View::Boost
                    | View::Audit => {}
                }
            }
        }
    }

    /// The last generator and the boosted mixture of one run, side by side: 1-way
    /// histograms of one column and the 2-way PCA projection.
    fn boost_ui(&mut self, ui: &mut egui::Ui) {
        let pair = self
            .runs
            .get(self.selected)
            .and_then(|r| r.before.map(|b| (b, self.selected)));
        let pair = pair.or_else(|| {
            // The selected entry may be the "before" half of a pair.
            self.runs
                .iter()
                .position(|r| r.before == Some(self.selected))
                .map(|after| (self.selected, after))
        });
        let Some((before, after)) = pair else {
            ui.label("This run was not boosted. Tick \"Boost: private post-GAN boosting\" on the Train tab (DP-GAN, DP-auto-GAN, PATE-GAN) to see the last generator and the boosted mixture side by side here.");
            return;
        };
        ui.label("Left: the last generator as training left it. Right: the boosted mixture, the same run's last generators re-weighted by private post-GAN boosting. Both sampled from one model file, scored against the same real rows.");
        let reports: Vec<Result<&Report, String>> = [before, after]
            .iter()
            .map(|i| match &self.runs[*i].state {
                EvalState::Done(ev) => Ok(&ev.report),
                EvalState::Running { line, .. } => Err(format!("evaluating: {line}")),
                EvalState::Failed(e) => Err(format!("evaluation failed: {e}")),
                EvalState::Images { .. } => Err("an image run: see its grid".into()),
                EvalState::Kept => Err("kept from before: show it to evaluate it".into()),
            })
            .collect();
        let mut column = self.hist_column;
        ui.columns(2, |cols| {
            for (k, ui) in cols.iter_mut().enumerate() {
                let i = [before, after][k];
                ui.push_id(("boost", k), |ui| {
                    ui.strong(&self.runs[i].title);
                    match &reports[k] {
                        Ok(rep) => {
                            let tv = rep.histograms.iter().map(|h| h.tvd).sum::<f64>()
                                / rep.histograms.len().max(1) as f64;
                            ui.label(format!(
                                "mean 1-way TV {tv:.3} · PCA Wasserstein score {:.3}",
                                rep.pca.wasserstein.score
                            ));
                            egui::ScrollArea::vertical().show(ui, |ui| {
                                histogram_ui(ui, rep, &mut column);
                                pca_ui(ui, rep);
                            });
                        }
                        Err(line) => {
                            ui.horizontal(|ui| {
                                if line.starts_with("evaluating") {
                                    ui.spinner();
                                }
                                ui.label(line);
                            });
                        }
                    }
                });
            }
        });
        self.hist_column = column;
    }

    /// Any two runs of this dataset, the same figure mirrored: the teaching view of "what
    /// changes when ε does".
    fn side_by_side_ui(&mut self, ui: &mut egui::Ui) {
        let n = self.runs.len();
        if n < 2 {
            ui.label("Side by side needs two runs of this dataset: train another (say at another ε) on the Train tab.");
            return;
        }
        if self.pair.0 >= n || self.pair.1 >= n || self.pair.0 == self.pair.1 {
            self.pair = (n - 2, n - 1);
        }
        if !SIDE_VIEWS.iter().any(|(v, _)| *v == self.pair_view) {
            self.pair_view = View::Prediction;
        }
        ui.colored_label(
            ui.visuals().warn_fg_color,
            "A non-private diagnostic: both columns are scored against the real rows. Choosing which run to release by looking here is a use of the data the accountant does not see.",
        );
        ui.horizontal(|ui| {
            for (k, side) in ["left", "right"].iter().enumerate() {
                let chosen = if k == 0 {
                    &mut self.pair.0
                } else {
                    &mut self.pair.1
                };
                let l = ui.label(*side);
                egui::ComboBox::from_id_salt(("side-pick", k))
                    .selected_text(self.runs[*chosen].title.clone())
                    .width(260.0)
                    .show_ui(ui, |ui| {
                        for (i, r) in self.runs.iter().enumerate() {
                            ui.selectable_value(chosen, i, &r.title);
                        }
                    })
                    .response
                    .labelled_by(l.id);
            }
            if ui.button("swap").clicked() {
                self.pair = (self.pair.1, self.pair.0);
            }
        });
        ui.horizontal_wrapped(|ui| {
            ui.label("figure:");
            for (v, name) in SIDE_VIEWS {
                ui.selectable_value(&mut self.pair_view, v, name);
            }
        });
        let (left, right) = self.pair;
        let mut column = self.hist_column;
        let view = self.pair_view;
        let runs = &self.runs;
        egui::ScrollArea::vertical().show(ui, |ui| {
            ui.columns(2, |cols| {
                for (k, ui) in cols.iter_mut().enumerate() {
                    let run = &runs[[left, right][k]];
                    ui.push_id(("side", k), |ui| {
                        ui.strong(&run.title);
                        if view == View::Statement {
                            statement_ui(ui, &run.statement);
                            return;
                        }
                        match &run.state {
                            EvalState::Done(ev) => {
                                let rep = &ev.report;
                                ui.label(headline(rep));
                                match view {
                                    View::Probability => probability_ui(ui, rep),
                                    View::Histograms => histogram_ui(ui, rep, &mut column),
                                    View::Pca => pca_ui(ui, rep),
                                    View::Tstr => tstr_ui(ui, rep),
                                    View::PrivacyRisk => risk_ui(ui, rep),
                                    _ => prediction_ui(ui, rep),
                                }
                            }
                            EvalState::Running { line, .. } => {
                                ui.horizontal(|ui| {
                                    ui.spinner();
                                    ui.label(format!("evaluating: {line}"));
                                });
                            }
                            EvalState::Failed(e) => {
                                ui.label(format!("evaluation failed: {e}"));
                            }
                            EvalState::Images {
                                generated,
                                real,
                                scores,
                            } => {
                                let preset = run.config.as_deref().map(|c| c.preset.as_str());
                                images_ui(ui, generated, real.as_ref(), scores, preset);
                            }
                            EvalState::Kept => {
                                ui.label("kept from before: select it above to evaluate it");
                            }
                        }
                    });
                }
            });
        });
        self.hist_column = column;
    }

    fn compare_ui(&self, ui: &mut egui::Ui) {
        ui.colored_label(
            ui.visuals().warn_fg_color,
            "A non-private diagnostic: these scores are computed on the real rows. Exporting the best of several runs tells the world which one won, a choice the accountant does not see; release a run you chose before looking, or count the selection in the budget.",
        );
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
                    EvalState::Done(ev) => {
                        let rep = &ev.report;
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
                    EvalState::Images { scores, .. } => {
                        ui.label(scores.summary());
                    }
                    EvalState::Kept => {
                        ui.label("kept from before: select it to evaluate it");
                    }
                }
                ui.end_row();
            }
        });
    }
}

/// The figures side by side can mirror.
const SIDE_VIEWS: [(View, &str); 7] = [
    (View::Prediction, "dimension-wise prediction"),
    (View::Probability, "dimension-wise probability"),
    (View::Histograms, "histograms"),
    (View::Pca, "2-way PCA"),
    (View::Tstr, "train on synthetic, test on real"),
    (View::PrivacyRisk, "privacy risk"),
    (View::Statement, "privacy statement"),
];

/// One line of a run's headline scores, the same for every run shown side by side.
fn headline(rep: &Report) -> String {
    let tv = rep.histograms.iter().map(|h| h.tvd).sum::<f64>() / rep.histograms.len().max(1) as f64;
    let best = rep.tstr.as_ref().and_then(|t| {
        t.rows
            .iter()
            .filter_map(|r| r.synthetic.as_ref().ok().map(|s| s.accuracy))
            .reduce(f64::max)
    });
    format!(
        "mean 1-way TV {tv:.3} · PCA score {:.3}{}",
        rep.pca.wasserstein.score,
        best.map_or(String::new(), |b| format!(" · best TSTR accuracy {b:.3}"))
    )
}

/// Generated digits beside real ones, at the same scale.
fn images_ui(
    ui: &mut egui::Ui,
    generated: &egui::TextureHandle,
    real: Option<&egui::TextureHandle>,
    scores: &ImageScores,
    preset: Option<&str>,
) {
    image_scores_ui(ui, scores, preset);
    let side = (ui.available_width() / 2.0 - 20.0).clamp(160.0, 420.0);
    ui.horizontal_wrapped(|ui| {
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
}

/// The papers' scores for generated digits, with a plain verdict on top.
fn image_scores_ui(ui: &mut egui::Ui, scores: &ImageScores, preset: Option<&str>) {
    match scores {
        ImageScores::Running(_) => {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label("scoring: training classifiers on generated digits and testing them on the real test digits…");
            });
        }
        ImageScores::Failed(e) => {
            ui.colored_label(
                ui.visuals().error_fg_color,
                format!("scores unavailable: {e}"),
            );
        }
        ImageScores::Done(r) => {
            let (verdict, good) = crate::eval::verdict::image_verdict(r, preset);
            let color = if good {
                ui.visuals().text_color()
            } else {
                ui.visuals().warn_fg_color
            };
            ui.colored_label(color, egui::RichText::new(verdict).strong());
            egui::Grid::new("image-scores").striped(true).show(ui, |ui| {
                for h in ["accuracy on real test digits", "trained on generated", "trained on real"] {
                    ui.strong(h);
                }
                ui.end_row();
                let pct = |x: f64| format!("{:.1} %", 100.0 * x);
                ui.label("convolutional network (the papers' judge)")
                    .on_hover_text("A small image classifier (two 3×3 convolution layers) trained on the digits, then asked to label the real test digits: the number published generators report");
                ui.label(pct(r.synthetic_cnn_accuracy));
                ui.label(pct(r.real_cnn_accuracy));
                ui.end_row();
                ui.label("multilayer perceptron (100 hidden units)")
                    .on_hover_text("A small neural network trained on the digits, then asked to label the real test digits");
                ui.label(pct(r.synthetic_mlp_accuracy));
                ui.label(pct(r.real_mlp_accuracy));
                ui.end_row();
                ui.label("logistic regression")
                    .on_hover_text("A linear classifier: the simplest judge of whether digits carry their label's shape");
                ui.label(pct(r.synthetic_logistic_accuracy));
                ui.label(pct(r.real_logistic_accuracy));
                ui.end_row();
            });
            ui.label(format!(
                "Fréchet distance {:.2} (0 = generated and real test digits look alike to the real-trained network; lower is better) · {} generated, {} real training and {} real test digits",
                r.frechet_distance, r.synthetic_rows, r.real_train_rows, r.real_test_rows
            ))
            .on_hover_text("The distance between the two sets of digits' features in the hidden layer of the network trained on real digits (the FID recipe with a small MNIST network instead of Inception)");
        }
    }
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
        non_private_kinds: vec![],
        dropped_columns: vec![],
        not_for_release: false,
        public_rows: None,
    }
}

impl super::panel::Panel for ResultsPanel {
    fn ui(
        &mut self,
        ui: &mut egui::Ui,
        cx: &mut super::panel::Ctx<'_>,
    ) -> Vec<super::panel::Command> {
        if let Some(super::Loaded {
            path,
            content: super::Content::Table { table, schema, .. },
            ..
        }) = cx.loaded.as_deref()
        {
            self.evaluate_kept(path, table, schema, ui.ctx());
        }
        self.draw(ui, cx.dialogs);
        Vec::new()
    }
}

/// The plain verdict, at the top of every figure of a finished evaluation.
fn verdict_ui(ui: &mut egui::Ui, rep: &crate::eval::report::Report) {
    use crate::eval::verdict::{Grade, verdict};
    let v = verdict(rep);
    let color = match v.grade {
        Grade::Useful => egui::Color32::from_rgb(40, 140, 60),
        Grade::Partly => egui::Color32::from_rgb(190, 130, 20),
        Grade::NotUseful => ui.visuals().error_fg_color,
    };
    egui::Frame::group(ui.style()).show(ui, |ui| {
        ui.colored_label(color, egui::RichText::new(&v.headline).strong());
        egui::CollapsingHeader::new("Why")
            .id_salt("verdict-why")
            // Closed at first, so the figures below do not move with the verdict.
            .default_open(false)
            .show(ui, |ui| {
                for r in &v.reasons {
                    ui.label(format!("• {r}"));
                }
            });
    });
}

/// A privacy statement as the results show it (also for a model opened on its own).
pub(crate) fn statement_heading(ui: &mut egui::Ui, s: &crate::job::PrivacyStatement) {
    statement_ui(ui, s);
}
