//! The Train tab's linked run: the pair, the budget and its split, training, the figures
//! across the link, and the export of both tables.

use std::path::PathBuf;
use std::sync::mpsc::Receiver;

use eframe::egui;

use crate::eval::linked::LinkedReport;
use crate::gui::{Content, Loaded};
use crate::job::linked::model::LinkedModel;
use crate::job::linked::{self, LinkedConfig, LinkedEvent, LinkedSummary, Split};
use crate::job::{Event, RunConfig, Worker};

/// State of a linked run and its results.
pub struct RunView {
    method: &'static str,
    epsilon: String,
    delta: String,
    share: f64,
    independent: bool,
    job: Option<Worker<LinkedEvent>>,
    progress: Option<(String, u64, u64)>,
    log: Vec<String>,
    result: Option<Result<LinkedSummary, String>>,
    statement: Option<String>,
    figures: Option<Receiver<Result<LinkedReport, String>>>,
    report: Option<Result<LinkedReport, String>>,
    /// The pair's ledger standing for (ε, δ, share, K), as last worked out.
    standing: Option<(String, Result<String, String>)>,
    rows: usize,
    out_parents: String,
    out_children: String,
    export_msg: Option<Result<String, String>>,
}

impl Default for RunView {
    fn default() -> Self {
        Self {
            method: "aim",
            epsilon: "1".into(),
            delta: "1e-6".into(),
            share: linked::DEFAULT_PARENT_SHARE,
            independent: false,
            job: None,
            progress: None,
            log: Vec::new(),
            result: None,
            statement: None,
            figures: None,
            report: None,
            standing: None,
            rows: 1000,
            out_parents: String::new(),
            out_children: String::new(),
            export_msg: None,
        }
    }
}

/// The open pair: the parent table, its schema, and the linked child.
fn pair(
    loaded: &Loaded,
) -> Option<(
    &crate::data::Table,
    &crate::data::schema::Schema,
    &super::Child,
)> {
    match (&loaded.content, &loaded.linked) {
        (Content::Table { table, schema, .. }, Some(c)) => Some((table, schema, c)),
        _ => None,
    }
}

impl RunView {
    pub fn is_running(&self) -> bool {
        self.job.is_some()
    }

    pub fn ui(&mut self, ui: &mut egui::Ui, loaded: &Loaded) {
        let Some((parent, _, child)) = pair(loaded) else {
            ui.label("Link a child table first: Data tab, \"Linked child table\" (or try the persons-and-years sample on the start screen).");
            return;
        };
        let Some(key) = child.key.clone() else {
            ui.label("Pick the key that links the two tables in the Data tab.");
            return;
        };
        ui.label(format!(
            "parents: {} ({} rows) · children: {} ({} rows) · linked by '{key}' · K = {}",
            loaded.path.display(),
            parent.n_rows,
            child.path.display(),
            child.table.n_rows,
            child.max_children
        ));
        let running = self.job.is_some();
        ui.add_enabled_ui(!running, |ui| self.form_ui(ui));
        self.cost_ui(ui, child.max_children);
        if !running {
            self.standing_ui(ui, loaded);
        }
        ui.horizontal(|ui| {
            if ui
                .add_enabled(!running, egui::Button::new("Train the linked pair"))
                .clicked()
            {
                self.start(loaded, ui.ctx());
            }
            if running && ui.button("Cancel").clicked() {
                if let Some(j) = &self.job {
                    j.cancel();
                }
            }
        });
        if let Some((phase, step, total)) = &self.progress {
            ui.add(
                egui::ProgressBar::new(*step as f32 / (*total).max(1) as f32)
                    .text(format!("{phase} {step}/{total}")),
            );
        }
        self.result_ui(ui, loaded);
        egui::CollapsingHeader::new("Log")
            .id_salt("linked-log")
            .show(ui, |ui| {
                for l in self.log.iter().rev().take(10) {
                    ui.label(l);
                }
            });
    }

    fn form_ui(&mut self, ui: &mut egui::Ui) {
        ui.horizontal(|ui| {
            ui.label("method");
            for m in linked::METHODS {
                ui.selectable_value(&mut self.method, m, m.to_uppercase());
            }
            ui.label("ε");
            ui.add(egui::TextEdit::singleline(&mut self.epsilon).desired_width(50.0));
            ui.label("δ");
            ui.add(egui::TextEdit::singleline(&mut self.delta).desired_width(60.0));
        });
        ui.horizontal(|ui| {
            ui.label("share for the parent table");
            ui.add(egui::Slider::new(&mut self.share, 0.1..=0.9));
            ui.checkbox(
                &mut self.independent,
                "children apart (the baseline without the link)",
            );
        });
    }

    fn numbers(&self) -> Result<(f64, f64), String> {
        let e = self
            .epsilon
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|e| *e > 0.0 && e.is_finite());
        let d = self
            .delta
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|d| *d > 0.0 && *d < 1.0);
        match (e, d) {
            (Some(e), Some(d)) => Ok((e, d)),
            _ => Err("ε must be a positive number and δ between 0 and 1".into()),
        }
    }

    /// What the run costs and how the budget is split.
    fn cost_ui(&self, ui: &mut egui::Ui, k: usize) {
        let split = self
            .numbers()
            .and_then(|(e, d)| Split::new(e, d, self.share, k).map(|s| (e, d, s)));
        match split {
            Ok((e, d, s)) => {
                ui.label(format!(
                    "cost: ε = {e} at δ = {d} for each parent with all its children, charged to the pair's book and to each table's own (the same people: every book must have room)"
                ));
                egui::CollapsingHeader::new("Details of the split")
                    .id_salt("linked split details")
                    .show(ui, |ui| {
                        ui.weak(format!(
                            "split in zCDP: record counts {:.0} % · parents {:.0} % · children {:.0} %, whose counts carry noise K = {k} times larger (ρ = {:.5} in all)",
                            200.0 * s.count_rho / s.rho,
                            100.0 * s.parent_rho / s.rho,
                            100.0 * s.child_unit_rho() / s.rho,
                            s.rho
                        ));
                    });
            }
            Err(e) => {
                ui.colored_label(ui.visuals().error_fg_color, e);
            }
        }
    }

    /// The pair's budget in the ledger with this run added (worked out again when a
    /// setting changes; the ledger is a small local file).
    fn standing_ui(&mut self, ui: &mut egui::Ui, loaded: &Loaded) {
        let (Some((_, _, child)), Some(pk)) = (pair(loaded), loaded.key.as_ref()) else {
            return;
        };
        let want = format!(
            "{}|{}|{}|{}|{}",
            self.epsilon,
            self.delta,
            self.share,
            child.max_children,
            self.result.is_some()
        );
        if self.standing.as_ref().is_none_or(|(w, _)| *w != want) {
            let ledger = crate::job::paths::default_ledger_path();
            let line = self
                .numbers()
                .and_then(|(e, d)| Split::new(e, d, self.share, child.max_children))
                .and_then(|s| {
                    linked::standing(pk, &child.content_key, &s, &ledger).map_err(|e| e.to_string())
                });
            self.standing = Some((want, line));
        }
        match self.standing.as_ref().map(|s| &s.1) {
            Some(Ok(l)) => {
                ui.label(l);
            }
            Some(Err(e)) => {
                ui.colored_label(ui.visuals().error_fg_color, e);
            }
            None => {}
        }
    }

    fn config(&self, loaded: &Loaded) -> Result<LinkedConfig, String> {
        let (_, schema, child) = pair(loaded).ok_or("no linked child table")?;
        let (epsilon, delta) = self.numbers()?;
        let out =
            crate::job::paths::new_model_path(&loaded.path, &format!("linked-{}", self.method))?;
        Ok(LinkedConfig {
            parent: RunConfig {
                inline_schema: Some(schema.clone()),
                out,
                ..RunConfig::new(loaded.path.clone(), self.method, epsilon, delta)
            },
            child: child.path.clone(),
            child_schema: Some(child.schema.clone()),
            link: crate::data::linked::Link {
                key: child.key.clone().ok_or("pick the key first")?,
                max_children: child.max_children,
                min_children: child.min_children,
            },
            parent_share: self.share,
            independent: self.independent,
            unique: child.unique.iter().cloned().collect(),
            count_by: child.count_by.clone(),
        })
    }

    fn start(&mut self, loaded: &Loaded, ctx: &egui::Context) {
        self.result = None;
        self.report = None;
        self.statement = None;
        self.export_msg = None;
        self.log.clear();
        let cfg = match self.config(loaded) {
            Ok(c) => c,
            Err(e) => {
                self.result = Some(Err(e));
                return;
            }
        };
        self.log.push(format!(
            "started {} on the pair at ε = {}, δ = {}",
            cfg.parent.method, cfg.parent.epsilon, cfg.parent.delta
        ));
        let stem = loaded
            .path
            .file_stem()
            .map_or("data".into(), |s| s.to_string_lossy().into_owned());
        let dir = crate::job::paths::models_dir();
        self.out_parents = dir
            .join(format!("{stem}-synthetic-parents.csv"))
            .display()
            .to_string();
        self.out_children = dir
            .join(format!("{stem}-synthetic-children.csv"))
            .display()
            .to_string();
        self.rows = loaded_rows(loaded);
        let _ = ctx;
        self.job = Some(linked::spawn_linked(
            cfg,
            crate::job::paths::default_ledger_path(),
        ));
    }

    /// Picks up the run's events and the evaluation's answer (every frame).
    /// Returns the run's results for the Results tab once its figures are in.
    pub fn poll(
        &mut self,
        ctx: &egui::Context,
        loaded: Option<&Loaded>,
    ) -> Option<super::results::Shown> {
        let mut shown = None;
        if let Some(rx) = &self.figures {
            if let Ok(r) = rx.try_recv() {
                if let (Ok(report), Some(Ok(s))) = (&r, &self.result) {
                    shown = Some(super::results::Shown {
                        model: s.model.clone(),
                        statement: self.statement.clone().unwrap_or_default(),
                        report: report.clone(),
                    });
                }
                self.report = Some(r);
                self.figures = None;
            } else {
                crate::gui::busy::wake(ctx);
            }
        }
        self.poll_job(ctx, loaded);
        shown
    }

    fn poll_job(&mut self, ctx: &egui::Context, loaded: Option<&Loaded>) {
        let Some(job) = &self.job else { return };
        crate::gui::busy::wake(ctx);
        let mut done = None;
        while let Ok(ev) = job.events.try_recv() {
            match ev {
                LinkedEvent::Run(Event::Notice(m)) => self.log.push(m),
                LinkedEvent::Run(Event::Progress(p)) => {
                    self.progress = Some((p.phase.clone(), p.step, p.total))
                }
                LinkedEvent::Run(_) => {}
                LinkedEvent::Finished(r) => done = Some(r),
            }
        }
        let Some(r) = done else { return };
        if let Some(j) = self.job.take() {
            j.join();
        }
        self.progress = None;
        match r {
            Ok(s) => {
                self.statement = LinkedModel::load(&s.model).ok().map(|m| m.header.statement);
                self.log
                    .push(format!("model written to {}", s.model.display()));
                if let Some(l) = loaded {
                    self.figures = evaluate(l, &s.model);
                }
                self.result = Some(Ok(s));
            }
            Err(e) => self.result = Some(Err(e.to_string())),
        }
    }

    fn result_ui(&mut self, ui: &mut egui::Ui, loaded: &Loaded) {
        match &self.result {
            Some(Err(e)) => {
                ui.colored_label(
                    ui.visuals().error_fg_color,
                    format!("The linked run failed: {e}"),
                );
            }
            Some(Ok(s)) => {
                ui.strong(format!(
                    "Trained the pair in {:.1} s: {} parents, {} children",
                    s.seconds, s.parents, s.children
                ));
                if let Some(t) = &self.statement {
                    ui.label(t);
                }
                self.figures_ui(ui);
                self.export_ui(ui, &s.model.clone(), loaded);
            }
            None => {}
        }
    }

    fn figures_ui(&self, ui: &mut egui::Ui) {
        ui.heading("Results across the link");
        match &self.report {
            None => {
                ui.label("comparing the synthetic pair with the real one…");
            }
            Some(Err(e)) => {
                ui.colored_label(ui.visuals().error_fg_color, e);
            }
            Some(Ok(r)) => super::results::figures(ui, r),
        }
    }

    fn export_ui(&mut self, ui: &mut egui::Ui, model: &std::path::Path, loaded: &Loaded) {
        ui.heading("The synthetic pair as files");
        ui.horizontal(|ui| {
            ui.label("parents");
            ui.add(egui::DragValue::new(&mut self.rows).range(1..=10_000_000));
        });
        ui.horizontal(|ui| {
            let l = ui.label("parents file");
            ui.add(egui::TextEdit::singleline(&mut self.out_parents).desired_width(380.0))
                .labelled_by(l.id);
        });
        ui.horizontal(|ui| {
            let l = ui.label("children file");
            ui.add(egui::TextEdit::singleline(&mut self.out_children).desired_width(380.0))
                .labelled_by(l.id);
        });
        if ui.button("Export both tables").clicked() {
            self.export_msg = Some(export(
                model,
                self.rows,
                &self.out_parents,
                &self.out_children,
            ));
        }
        let _ = loaded;
        match &self.export_msg {
            Some(Ok(m)) => {
                ui.label(m);
            }
            Some(Err(e)) => {
                ui.colored_label(ui.visuals().error_fg_color, e);
            }
            None => {}
        }
    }
}

fn loaded_rows(loaded: &Loaded) -> usize {
    match &loaded.content {
        Content::Table { table, .. } => table.n_rows.max(1),
        _ => 1000,
    }
}

/// Samples the pair and writes both files with their statements.
fn export(
    model: &std::path::Path,
    rows: usize,
    parents: &str,
    children: &str,
) -> Result<String, String> {
    let (p, c) = (
        PathBuf::from(parents.trim()),
        PathBuf::from(children.trim()),
    );
    let (_, drawn) =
        linked::services::export_pair(model, rows, None, (&p, &c)).map_err(|e| e.to_string())?;
    Ok(format!(
        "wrote {} parents to {} and their {} children to {}, each with its statement beside it",
        drawn.parents.n_rows,
        p.display(),
        drawn.children.n_rows,
        c.display()
    ))
}

/// The pair judged against the real one, off the UI thread (the job does the work).
fn evaluate(
    loaded: &Loaded,
    model: &std::path::Path,
) -> Option<Receiver<Result<LinkedReport, String>>> {
    let (parent, schema, child) = pair(loaded)?;
    let (parent, schema) = (parent.clone(), schema.clone());
    let (child_table, child_schema, key) = (
        child.table.clone(),
        child.schema.clone(),
        child.key.clone()?,
    );
    let model = model.to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let real = linked::services::RealPair {
            parents: &parent,
            parent_schema: &schema,
            children: &child_table,
            child_schema: &child_schema,
            key: &key,
        };
        let _ = tx.send(linked::services::judge_pair(&model, &real).map_err(|e| e.to_string()));
    });
    Some(rx)
}
