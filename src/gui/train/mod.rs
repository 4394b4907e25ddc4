//! The training view: the run form with its cost preview ([`form`]), the live run
//! ([`run_view`]) and exporting its results ([`export`]). The job does the work; this
//! panel only draws what it reports.

mod ask;
pub(crate) mod export;
mod form;
mod found;
mod method_cards;
mod run_view;
mod sweep_view;

use std::path::{Path, PathBuf};

use eframe::egui;

use super::dialogs::{Dialogs, Purpose};
use super::panel::{Command, Ctx};
use super::{Content, Loaded};
use crate::job::{self, Event, JobError, JobHandle, RunConfig, RunSummary};

/// One run, or an ε sweep of the form's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Mode {
    #[default]
    OneRun,
    Sweep,
    /// The open table with its linked child table, as one pair.
    Linked,
}

/// State of the training view.
#[derive(Default)]
pub struct TrainPanel {
    mode: Mode,
    sweep: sweep_view::SweepView,
    /// The ledger's answer for the sweep's Σ ε (the sum, an upper bound on the composition).
    sweep_cost:
        crate::gui::background::Latest<job::cost::CostRequest, Result<job::cost::Cost, JobError>>,
    /// A sweep run the user asked to open in the results.
    sweep_open: Option<Finished>,
    form: form::Form,
    view: run_view::RunView,
    linked: crate::gui::linked::run_view::RunView,
    export: export::ExportView,
    job: Option<JobHandle>,
    /// The data file of the running (or last) run: its results belong to it alone.
    run_data: Option<PathBuf>,
    /// (method, preset) of the running (or last) run.
    run_title: (String, String),
    /// A run that finished since the window last asked (title, model file, its settings).
    just_finished: Option<Finished>,
    /// The settings of the run going on (the results' audit repeats them).
    run_config: Option<RunConfig>,
    log: Vec<String>,
    result: Option<Result<RunSummary, JobError>>,
    /// Why the last Train press did not start a run.
    start_error: Option<String>,
    /// Train was pressed while the job was still pricing the form: start once it is.
    queued: bool,
    /// Cancel was pressed: the question (keep the partial model or not) is showing.
    cancel_asked: bool,
    /// Train was pressed on a run the preview calls hopeless: the question is showing.
    ask: ask::Ask,
    /// The user chose to stop and discard the partial model.
    discard: bool,
    /// Exact values the last run found privately, for the file it trained on.
    found: Option<(PathBuf, Vec<(String, Vec<f64>)>)>,
}

/// A finished run: its title, model file and settings.
type Finished = (String, PathBuf, Option<Box<RunConfig>>);

impl TrainPanel {
    /// The run that finished since the last call, once, if it trained on `data` (the
    /// user may have opened another file meanwhile).
    fn take_finished(&mut self, data: Option<&Path>) -> Option<Finished> {
        let f = self.just_finished.take()?;
        if self.run_data.as_deref() != data {
            self.log.push(format!(
                "the run finished, but another dataset is open now; its model is at {}",
                f.1.display()
            ));
            return None;
        }
        Some(f)
    }

    pub fn is_running(&self) -> bool {
        self.job.is_some() || self.linked.is_running()
    }

    /// The last session's choices.
    pub fn apply_settings(&mut self, s: &super::settings::Settings) {
        if let Some(i) = job::methods()
            .iter()
            .position(|m| m.id == s.method)
            .filter(|_| s.method_chosen)
        {
            self.form.method = i;
            self.form.preset = s.preset.clone();
            self.form.chosen = true;
        }
        self.form.epsilon = s.epsilon.clone();
        self.export.rows = s.export_rows.max(1);
    }

    pub fn store_settings(&self, s: &mut super::settings::Settings) {
        s.method = self.form.info().id.to_string();
        s.method_chosen = self.form.chosen;
        s.preset = self.form.preset.clone();
        s.epsilon = self.form.epsilon.clone();
        s.export_rows = self.export.rows;
    }

    /// Writes samples or copies the released model to `path` (a save dialog's answer).
    pub fn export_to(&mut self, purpose: Purpose, path: &Path, ctx: &egui::Context) {
        match &self.result {
            Some(Ok(s)) => {
                let model = s.model.clone();
                self.export.export_to(purpose, &model, path, ctx);
            }
            _ => self.export.msg = Some("no finished run to export".into()),
        }
    }

    /// Drains the job's events.
    fn drain(&mut self, ctx: &egui::Context) {
        let Some(job) = &self.job else { return };
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(5);
        let mut finished = None;
        while std::time::Instant::now() < deadline {
            let Ok(ev) = job.events.try_recv() else { break };
            match &ev {
                Event::Started {
                    summary,
                    rows,
                    width,
                    planned_epsilon,
                    ..
                } => {
                    self.view.set_planned(*planned_epsilon);
                    self.log
                        .push(format!("{rows} rows, {width} encoded columns; {summary}"))
                }
                Event::Notice(m) => self.log.push(format!("warning: {m}")),
                Event::Finished(r) => {
                    finished = Some(r.clone());
                    break;
                }
                _ => self.view.event(&ev, ctx),
            }
        }
        if let Some(r) = finished {
            self.finish(r);
        }
    }

    fn finish(&mut self, r: Result<RunSummary, JobError>) {
        self.cancel_asked = false;
        let r = match r {
            Ok(s) if s.cancelled && std::mem::take(&mut self.discard) => {
                self.discard_partial(&s);
                if let Some(j) = self.job.take() {
                    j.join();
                }
                self.form.ledger_changed();
                return;
            }
            r => r,
        };
        match &r {
            Ok(s) => {
                let eps = s
                    .epsilon_spent
                    .map_or("∞".to_string(), |e| format!("{e:.2}"));
                let (m, p) = &self.run_title;
                self.just_finished = Some((
                    format!("{m} · {p} · ε {eps}"),
                    s.model.clone(),
                    self.run_config.clone().map(Box::new),
                ));
                self.found = self
                    .run_data
                    .clone()
                    .map(|d| (d, s.found_exact_values.clone()));
                self.log.push(format!(
                    "finished: ε = {} ({}) in {:.0} s; model saved to {}",
                    s.epsilon_spent.map_or("∞".into(), |e| format!("{e:.3}")),
                    s.accountant,
                    s.seconds,
                    s.model.display()
                ));
            }
            Err(e) => self.log.push(format!("failed: {e}")),
        }
        self.result = Some(r);
        if let Some(j) = self.job.take() {
            j.join();
        }
        // The run settled its reservation: the ledger's standing changed.
        self.form.ledger_changed();
    }

    /// Removes a cancelled run's model at the user's request; what it spent stays spent.
    fn discard_partial(&mut self, s: &RunSummary) {
        let spent = s
            .epsilon_spent
            .map_or("nothing".to_string(), |e| format!("ε {e:.3}"));
        match std::fs::remove_file(&s.model) {
            Ok(()) => self.log.push(format!(
                "stopped; the partial model was discarded. The {spent} it used stays spent in the ledger."
            )),
            Err(e) => self.log.push(format!(
                "stopped; could not remove the partial model {}: {e}",
                s.model.display()
            )),
        }
        self.result = None;
        self.view = Default::default();
    }

    /// Another file was opened: the last run's progress, export and log belong to the old
    /// one and go (a run still training goes on; its results are not shown for this file).
    pub fn dataset_opened(&mut self, loaded: Option<&Loaded>) {
        if self.job.is_none() {
            self.result = None;
            self.view = Default::default();
            self.export.msg = None;
            self.log.clear();
        }
        // Messages about the last file do not follow the user to the next one.
        self.start_error = None;
        // A table opened with its child table (the linked sample) trains as a pair.
        if loaded.is_some_and(|l| l.linked.is_some()) {
            self.mode = Mode::Linked;
        }
        self.form.forget_cost();
        self.dataset_changed(loaded);
    }

    /// A new dataset (or schema): the key, the row count and the default δ.
    pub fn dataset_changed(&mut self, loaded: Option<&Loaded>) {
        self.form.dataset_key = loaded.and_then(|l| l.key.clone());
        self.form.schema = match loaded.map(|l| &l.content) {
            Some(Content::Table { schema, .. } | Content::Engine { schema, .. }) => {
                Some(schema.clone())
            }
            _ => None,
        };
        self.form.engine = matches!(loaded.map(|l| &l.content), Some(Content::Engine { .. }));
        self.form.held = match loaded {
            Some(
                l @ Loaded {
                    content: Content::Engine { .. },
                    ..
                },
            ) => Some(if job::workspace::streamed(&l.path) {
                crate::data::stream::PART_ROWS
            } else {
                0
            }),
            _ => None,
        };
        self.form.profile = match loaded.map(|l| &l.content) {
            Some(Content::Table { profile, .. }) => Some(profile.clone()),
            _ => None,
        };
        self.form.image_schema = match loaded.map(|l| &l.content) {
            Some(Content::Images { side, .. }) => {
                Some(crate::data::image::image_schema(*side, *side, true))
            }
            _ => None,
        };
        self.form.ledger_changed();
        let rows = match loaded.map(|l| &l.content) {
            Some(Content::Table { table, .. }) => Some(table.n_rows),
            Some(Content::Engine { records, .. }) => Some(*records),
            Some(Content::Images { count, .. }) => {
                // Images train with the image presets.
                if self.form.chosen {
                    self.form.preset = job::DIGITS_PRESET.into();
                }
                Some(*count)
            }
            None => None,
        };
        self.form.follow_recommendation();
        if let Some(n) = rows {
            self.form.rows = n;
            // δ ≪ 1/n: propose 1/(10 n), rounded down to one significant digit.
            // Written as digit and exponent ("3e-5"): the product 3 × 10⁻⁵ in floating
            // point prints as 3.0000000000000004e-5.
            let d = 1.0 / (10.0 * n.max(1) as f64);
            let exp = d.log10().floor();
            let digit = (d / 10f64.powf(exp)).floor().clamp(1.0, 9.0);
            self.form.delta = format!("{digit}e{exp}");
        }
    }

    /// The run the form describes.
    fn config(&self, loaded: &Loaded) -> Result<RunConfig, String> {
        self.unsaved_config(loaded, self.form.epsilon()?)
    }

    /// The run the form describes at `epsilon`: the open rows and the schema as edited
    /// travel with it (nothing is written for it but its model).
    fn unsaved_config(&self, loaded: &Loaded, epsilon: f64) -> Result<RunConfig, String> {
        let info = self.form.info();
        let out = job::paths::new_model_path(&loaded.path, info.id)?;
        let schema = match &loaded.content {
            Content::Table { schema, .. } | Content::Engine { schema, .. } => Some(schema),
            Content::Images { .. } => None,
        };
        Ok(RunConfig {
            inline_schema: schema.cloned(),
            opened: loaded.dataset.clone(),
            preset: self.form.preset.clone(),
            seed: self.form.advanced.seed()?,
            out,
            device: self.form.advanced.device,
            threads: Some(self.form.advanced.threads.max(1)),
            overrides: self.form.advanced.overrides(),
            // The window shows uncovered domains in the statement before and after a run.
            domains: self.form.advanced.domain_policy()?,
            public_rows: self.form.advanced.public_rows()?,
            boost: if self.form.sweep_mode {
                None
            } else {
                self.form.boost_config()?
            },
            // A file the window connected to (not a query engine's table) is read in parts.
            stream: matches!(loaded.content, Content::Engine { .. })
                && job::workspace::streamed(&loaded.path),
            ..RunConfig::new(loaded.path.clone(), info.id, epsilon, self.form.delta()?)
        })
    }

    fn start(&mut self, loaded: &Loaded, ctx: &egui::Context) {
        let cfg = match self.config(loaded) {
            Ok(c) => c,
            Err(e) => {
                self.start_error = Some(e);
                return;
            }
        };
        self.start_error = None;
        self.view.start(cfg.epsilon, cfg.delta);
        self.run_data = Some(loaded.path.clone());
        self.run_title = (cfg.method.clone(), cfg.preset.clone());
        self.run_config = Some(cfg.clone());
        self.log.clear();
        self.log.push(format!(
            "started {} ({}) at ε = {}, δ = {}",
            cfg.method, cfg.preset, cfg.epsilon, cfg.delta
        ));
        let ctx = ctx.clone();
        self.job = Some(job::spawn(
            cfg,
            job::paths::default_ledger_path(),
            Some(Box::new(move || crate::gui::busy::wake(&ctx))),
        ));
        self.result = None;
        self.export.msg = None;
    }

    fn draw(&mut self, ui: &mut egui::Ui, loaded: Option<&Loaded>, dialogs: &mut Dialogs) {
        // Both ways: on a narrow window the form scrolls sideways instead of being cut.
        egui::ScrollArea::both()
            .id_salt("train")
            .auto_shrink([false, false])
            .show(ui, |ui| self.body(ui, loaded, dialogs));
    }

    fn body(&mut self, ui: &mut egui::Ui, loaded: Option<&Loaded>, dialogs: &mut Dialogs) {
        let Some(loaded) = loaded else {
            ui.label("Open a dataset first (Data tab).");
            return;
        };
        let running = self.job.is_some();
        ui.add_enabled_ui(!running && !self.sweep.is_running() && !self.linked.is_running(), |ui| {
            ui.horizontal(|ui| {
                ui.selectable_value(&mut self.mode, Mode::OneRun, "One run")
                    .on_hover_text("Train one model at the ε below, then export it.");
                ui.selectable_value(&mut self.mode, Mode::Sweep, "ε sweep (teaching)")
                    .on_hover_text("Train the chosen method(s) once per ε and draw utility against ε: what the privacy budget buys.");
                ui.selectable_value(&mut self.mode, Mode::Linked, "Linked tables")
                    .on_hover_text("This table and the child table linked to it in the Data tab, trained as one pair: each parent with all its children is one record of the guarantee.");
            });
        });
        self.form.sweep_mode = self.mode == Mode::Sweep;
        if self.mode == Mode::Linked {
            self.linked.ui(ui, loaded);
            return;
        }
        if self.mode == Mode::Sweep {
            self.sweep_body(ui, loaded);
            return;
        }
        ui.add_enabled_ui(!running, |ui| self.form.ui(ui));
        if !running {
            self.form.refresh_cost(ui.ctx());
        }
        self.form.cost_ui(ui, running);
        if self.queued && !running {
            match self.form.verdict() {
                form::Verdict::Ready => {
                    self.queued = false;
                    self.start_or_ask(loaded, ui.ctx());
                }
                form::Verdict::Refused(_) => self.queued = false,
                form::Verdict::Pending => {}
            }
        }
        self.buttons_ui(ui, loaded, self.job.is_some());
        if running || self.result.is_some() {
            self.view.ui(ui, running, loaded.content.real_grid());
        }
        if let Some(Err(e)) = &self.result {
            ui.colored_label(ui.visuals().error_fg_color, format!("The run failed: {e}"));
        }
        if let Some(Ok(s)) = &self.result {
            let (model, private) = (s.model.clone(), s.epsilon_spent.is_some());
            self.export.images = loaded.content.real_grid().is_some();
            self.export.ui(ui, &model, private, dialogs);
        }
        egui::CollapsingHeader::new("Log")
            .default_open(true)
            .show(ui, |ui| {
                for l in self.log.iter().rev().take(8) {
                    ui.label(l);
                }
            });
    }

    /// The sweep mode: the form (without its ε), the sweep's settings, cost and figure.
    fn sweep_body(&mut self, ui: &mut egui::Ui, loaded: &Loaded) {
        let busy = self.job.is_some() || self.sweep.is_running();
        ui.add_enabled_ui(!busy, |ui| self.form.ui(ui));
        if self.job.is_some() {
            ui.label("A run is training: the sweep can start when it has finished.");
        }
        let base = self.unsaved_config(loaded, 1.0);
        let budget = match (self.sweep.planned, self.form.cost_request_at(self.sweep.planned.unwrap_or(1.0))) {
            (Some(total), Ok(req)) if total > 0.0 => {
                self.sweep_cost.want(ui.ctx(), req.clone(), |r| job::cost::cost(&r));
                match self.sweep_cost.value() {
                    Some(Ok(c)) if self.sweep_cost.is_current(&req) => Some(match &c.refused {
                        Some(r) => Err(format!("The ledger refuses this sweep as planned: {r}")),
                        None => Ok(format!(
                            "this dataset's budget: total ε {:.3} · spent {:.3} · the sweep at most {total:.3} · left after at least {:.3}  (δ = {})",
                            c.total, c.spent, c.left_after, c.delta
                        )),
                    }),
                    Some(Err(e)) if self.sweep_cost.is_current(&req) => Some(Err(e.to_string())),
                    _ => None,
                }
            }
            (Some(_), Ok(_)) => Some(Ok("only the non-private point: nothing to charge, the ledger records a read without protection".into())),
            (_, Err(e)) => Some(Err(e)),
            (None, _) => None,
        };
        let action = ui
            .add_enabled_ui(self.job.is_none(), |ui| {
                self.sweep.ui(ui, &loaded.path, base, budget)
            })
            .inner;
        match action {
            Some(sweep_view::Action::Start(cfg)) => {
                self.sweep_cost.invalidate();
                self.sweep.start(*cfg, &loaded.path, ui.ctx());
            }
            Some(sweep_view::Action::Open(o)) => self.sweep_open = Some(o),
            None => {}
        }
        if let Some(e) = &self.start_error {
            ui.colored_label(ui.visuals().error_fg_color, e);
        }
    }

    fn buttons_ui(&mut self, ui: &mut egui::Ui, loaded: &Loaded, running: bool) {
        ui.horizontal(|ui| {
            let verdict = self.form.verdict();
            let can = !running && !matches!(verdict, form::Verdict::Refused(_));
            let train = ui.add_enabled(can, egui::Button::new("Train (Ctrl+Enter)"));
            let shortcut = ui.input(|i| i.modifiers.command && i.key_pressed(egui::Key::Enter));
            if train.clicked() || (can && shortcut) {
                if verdict == form::Verdict::Ready {
                    self.start_or_ask(loaded, ui.ctx());
                } else {
                    // Pressed within the frames the job takes to price the form.
                    self.queued = true;
                }
            }
            if self.queued {
                crate::gui::busy::spinner(ui);
                ui.label("starting as soon as the cost is known…");
            }
            if running && !self.cancel_asked {
                let cancel = ui.button("Cancel…").on_hover_text(
                    "Stops after the current step; the run is charged its whole plan",
                );
                if cancel.clicked() {
                    self.cancel_asked = true;
                }
            }
            if let Some(e) = &self.start_error {
                ui.colored_label(ui.visuals().error_fg_color, e);
            }
        });
        if running && self.cancel_asked {
            self.cancel_ui(ui);
        }
        match self.ask.ui(ui) {
            Some(ask::Answer::TrainAnyway) => self.start(loaded, ui.ctx()),
            Some(ask::Answer::NotNow) | None => {}
        }
    }

    /// Starts the run, or first asks when the preview calls it hopeless.
    fn start_or_ask(&mut self, loaded: &Loaded, ctx: &egui::Context) {
        match self.form.hopeless() {
            Some(why) => self.ask.open(why),
            None => {
                self.ask.close();
                self.start(loaded, ctx);
            }
        }
    }

    /// The question Cancel asks: what stopping charges, and whether to keep what was trained.
    fn cancel_ui(&mut self, ui: &mut egui::Ui) {
        ui.group(|ui| {
            ui.colored_label(
                ui.visuals().warn_fg_color,
                format!(
                    "Stop this run? It has used ε {:.3} so far, but a stop chosen while watching the run is charged the whole plan, ε {:.3}, whatever you choose: the figure of a run stopped early may not depend on when it stopped. A partial model is released under the plan's ε.",
                    self.view.spent(),
                    self.view.planned()
                ),
            );
            ui.horizontal(|ui| {
                let mut stop = |discard: bool, log: &str| {
                    if let Some(j) = &self.job {
                        j.cancel();
                    }
                    self.discard = discard;
                    self.cancel_asked = false;
                    self.log.push(log.into());
                };
                if ui.button("Stop, keep the partial model").clicked() {
                    stop(false, "stopping; the partial model will be kept…");
                }
                if ui.button("Stop, discard it").clicked() {
                    stop(true, "stopping; the partial model will be discarded…");
                }
                if ui.button("Go on training").clicked() {
                    self.cancel_asked = false;
                }
            });
        });
    }
}

impl crate::gui::panel::Panel for TrainPanel {
    fn ui(&mut self, ui: &mut egui::Ui, cx: &mut Ctx<'_>) -> Vec<Command> {
        self.draw(ui, cx.loaded.as_deref(), cx.dialogs);
        Vec::new()
    }

    /// Drains the job's events whatever tab is shown, and asks for the results of a run
    /// that finished on the open dataset.
    fn poll(&mut self, ctx: &egui::Context, cx: &mut Ctx<'_>) -> Vec<Command> {
        self.drain(ctx);
        if let Some(s) = self.linked.poll(ctx, cx.loaded.as_deref()) {
            return vec![Command::ShowLinked(Box::new(s))];
        }
        if let Some((title, model, config)) = self.sweep_open.take() {
            return vec![Command::ShowRun {
                title,
                model,
                config,
            }];
        }
        let mut out = Vec::new();
        if self.adopt_found(cx) {
            out.push(Command::SchemaChanged);
        }
        let open = cx.loaded.as_deref().map(|l| l.path.clone());
        if let Some((title, model, config)) = self.take_finished(open.as_deref()) {
            out.push(Command::ShowRun {
                title,
                model,
                config,
            });
        }
        out
    }
}
