//! The results view: one entry per finished run of the open table, each evaluated in a
//! worker thread by `eval::report::evaluate`, shown as tabs. Several runs of one dataset
//! (say ε = 0.5, 1 and ∞) sit side by side in the comparison table.
//!
//! The window evaluates seeded subsamples (5,000 rows a side, 10 Wasserstein repeats) so a
//! report takes seconds; `dpsynth evaluate` gives the full-size report of the same
//! figures.

mod audit;
mod compare;
mod eval_state;
mod figures;
mod first_look;
mod glossary;
mod kept;
mod plots;

pub use kept::{Found as KeptRun, find as find_kept};

use std::path::{Path, PathBuf};

use eframe::egui;

use crate::data::Table;
use crate::data::schema::Schema;
use crate::job::PrivacyStatement;
use eval_state::{EvalState, ImageScores, Msg, evaluate_in_background};
use figures::*;
use plots::*;

const REAL: egui::Color32 = egui::Color32::from_rgb(60, 120, 216);
const SYNTHETIC: egui::Color32 = egui::Color32::from_rgb(230, 120, 40);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum View {
    #[default]
    Prediction,
    FirstLook,
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
    const ALL: [(View, &'static str); 12] = [
        (View::FirstLook, "First look"),
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
        real: &std::sync::Arc<Table>,
        schema: &Schema,
        config: Option<Box<crate::job::RunConfig>>,
        ctx: &egui::Context,
    ) {
        self.next_config = config;
        // The header alone: the evaluation's worker loads and checks the weights.
        let (statement, mixture) = match crate::job::services::run_header(model_path) {
            Ok(h) => h,
            Err(e) => {
                self.push(title, empty_statement(), EvalState::Failed(e.to_string()));
                return;
            }
        };
        let Some(draw) = mixture else {
            let state = evaluate_in_background(model_path, data_path, real, schema, None, ctx);
            self.push(title.clone(), statement, state);
            self.keep(&title, model_path, data_path, schema);
            return;
        };
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
        self.push(format!("{title} · {}", draw.name()), statement, state);
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
    fn evaluate_kept(
        &mut self,
        data: &Path,
        real: &std::sync::Arc<Table>,
        schema: &Schema,
        ctx: &egui::Context,
    ) {
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
                // The window shows real rows; the file the user may hand on holds none.
                let (shared, figure) = (ev.report.without_real_rows(), run.audit.figure());
                let html =
                    crate::eval::html::render_with_audit(&shared, &ev.inputs, figure.as_ref());
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
            if let EvalState::Running {
                rx, line, early, ..
            } = &mut r.state
            {
                while let Ok(m) = rx.try_recv() {
                    match m {
                        Msg::Progress(l) => *line = l,
                        Msg::FirstLook(l) => *early = Some(l),
                        Msg::Done(Ok(rep)) => next = Some(EvalState::Done(rep)),
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
            ui.label("No results yet of a single-table run: train one in tab 2; its evaluation appears here.");
            return;
        }
        if !self.run_picker(ui) {
            return;
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
            statement_view(ui, run, &mut self.risk);
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
        self.evaluation_ui(ui, dialogs);
    }

    /// The run picker, with Delete run… and its confirmation. False when the last run
    /// was just deleted (nothing left to show).
    fn run_picker(&mut self, ui: &mut egui::Ui) -> bool {
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
                return false;
            }
        }
        if let Some(m) = &self.delete_msg {
            ui.colored_label(ui.visuals().error_fg_color, m);
        }
        true
    }

    /// The selected run's evaluation in the chosen view, its progress, or why there is
    /// none; Save HTML report… once it is done.
    fn evaluation_ui(&mut self, ui: &mut egui::Ui, dialogs: &mut super::dialogs::Dialogs) {
        let Some(run) = self.runs.get(self.selected) else {
            return;
        };
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
            EvalState::Running {
                line,
                started,
                early,
                expected,
                ..
            } => running_ui(ui, line, *started, early.as_deref(), Some(*expected)),
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
                verdict_ui(ui, &ev.report, run.config.as_deref().map(|c| &*c.method));
                ui.label(&ev.rows_note);
                let rep = &ev.report;
                match self.view {
                    View::Prediction => prediction_ui(ui, rep),
                    View::Probability => probability_ui(ui, rep),
                    View::Histograms => histogram_ui(ui, rep, &mut self.hist_column),
                    View::Pca => pca_ui(ui, rep),
                    View::Tstr => tstr_ui(ui, rep),
                    View::PrivacyRisk => risk_ui(ui, rep),
                    View::FirstLook => first_look::first_look_ui(ui, rep.first_look.as_ref()),
                    View::Statement
                    | View::Compare
                    | View::SideBySide
                    | View::Boost
                    | View::Audit => {}
                }
            }
        }
    }
}

/// An evaluation in progress: what it is doing, for how long, and the first look as soon
/// as it is ready.
fn running_ui(
    ui: &mut egui::Ui,
    line: &str,
    started: std::time::Instant,
    early: Option<&crate::eval::results::FirstLook>,
    last_seconds: Option<(f64, bool)>,
) {
    let expect = match last_seconds {
        Some((s, true)) => format!(
            " (about {} expected, at the pace of the last evaluation on this machine)",
            crate::job::resources::duration(s)
        ),
        Some((s, false)) => format!(
            " (about {} expected on this machine)",
            crate::job::resources::duration(s)
        ),
        None => String::new(),
    };
    ui.horizontal(|ui| {
        crate::gui::busy::spinner(ui);
        ui.label(format!("evaluating: {line}"));
    });
    ui.label(format!(
        "{} so far{expect}. The scores are kept with the run: reopening the file or restarting shows them at once.",
        crate::job::resources::duration(started.elapsed().as_secs_f64())
    ));
    if let Some(l) = early {
        ui.separator();
        ui.strong("First look, ready before the other figures");
        first_look::first_look_ui(ui, Some(l));
    }
}

/// The selected run's privacy statement, and what it means for a person in the data, with
/// the audit's measured points when it has run.
fn statement_view(ui: &mut egui::Ui, run: &RunResult, risk: &mut super::risk_view::RiskView) {
    egui::ScrollArea::vertical().show(ui, |ui| {
                statement_ui(ui, &run.statement);
                ui.separator();
                ui.strong("What this means for a person in the data");
                let curve = crate::job::risk::RiskCurve::of_statement(&run.statement, None);
                ui.label(&curve.sentence);
                let measured = run.audit.measured_points();
                risk.chart(ui, "risk-statement", &curve, &measured);
                if measured.is_empty() {
                    ui.label("Run the privacy audit (its view, beside this one) to see real attacks' measured points on this chart.");
                } else {
                    ui.label("The dots are the privacy audit's attacks on this method, as measured on canaries (point estimates; the audit view gives the bounds they prove). A dot above the red curve would be evidence of a bug.");
                }
            });
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
        counted_by: None,
        rules: vec![],
        point_masses: vec![],
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

/// A privacy statement as the results show it (also for a model opened on its own).
pub(crate) fn statement_heading(ui: &mut egui::Ui, s: &crate::job::PrivacyStatement) {
    statement_ui(ui, s);
}
