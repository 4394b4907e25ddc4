//! The training view: method and budget, the cost preview from the dataset's ledger, the
//! live run (progress, ETA, losses, budget gauge, cancel, log) and exporting samples.

use std::path::PathBuf;
use std::time::Instant;

use eframe::egui;
use egui_plot::{Line, Plot, PlotPoints};

use super::{Content, Loaded};
use crate::job::{self, Event, JobHandle, RunConfig, RunSummary};
use crate::privacy::Budget;
use crate::privacy::ledger::{Ledger, data_dir, default_ledger_path};

/// A method as the window presents it: one plain sentence and where the idea comes from.
struct MethodCard {
    name: &'static str,
    title: &'static str,
    sentence: &'static str,
    paper: &'static str,
    url: &'static str,
    presets: &'static [&'static str],
}

const METHODS: [MethodCard; 3] = [
    MethodCard {
        name: "dp-auto-gan",
        title: "DP-auto-GAN",
        sentence: "Learns to compress a row into a short code, then learns to invent codes; both steps see the data only through noisy, clipped gradients. Best for mixed tables.",
        paper: "Tantipongpipat et al., Differentially Private Synthetic Mixed-Type Data Generation (2021)",
        url: "https://arxiv.org/abs/1912.03250",
        presets: &[
            "quick",
            "tiny",
            "adult",
            "mnist",
            "adult-paper",
            "mimic-paper",
        ],
    },
    MethodCard {
        name: "dp-gan",
        title: "DP-SGD GAN",
        sentence: "A generator learns to fool a critic that sees the data only through noisy, clipped gradients: the standard baseline.",
        paper: "Xie et al., Differentially Private Generative Adversarial Network (2018)",
        url: "https://arxiv.org/abs/1802.06739",
        presets: &["quick", "tiny", "adult", "mnist"],
    },
    MethodCard {
        name: "gan",
        title: "GAN without privacy",
        sentence: "The same GAN with no noise (ε = ∞): a reference line for comparisons, never for release.",
        paper: "Goodfellow et al., Generative Adversarial Nets (2014)",
        url: "https://arxiv.org/abs/1406.2661",
        presets: &["quick", "tiny", "adult", "mnist"],
    },
];

/// The advanced settings: the preset's values, editable one by one.
#[derive(Default)]
struct Advanced {
    /// (method, preset) the rows below belong to.
    of: (String, String),
    /// (name, text the user edits, the preset's value as text).
    rows: Vec<(String, String, String)>,
    seed: String,
    threads: usize,
}

impl Advanced {
    fn refresh(&mut self, method: &str, preset: &str) {
        if self.of == (method.to_string(), preset.to_string()) {
            return;
        }
        self.of = (method.to_string(), preset.to_string());
        self.rows = job::preset_settings(method, preset)
            .map(|m| {
                m.into_iter()
                    .map(|(k, v)| {
                        let t = value_text(&v);
                        (k, t.clone(), t)
                    })
                    .collect()
            })
            .unwrap_or_default();
    }

    /// The edited settings as overrides (only those that differ from the preset).
    fn overrides(&self) -> Result<serde_json::Map<String, serde_json::Value>, String> {
        let mut m = serde_json::Map::new();
        for (k, text, default) in &self.rows {
            if text.trim() == default.trim() {
                continue;
            }
            let v = serde_json::from_str(text.trim())
                .unwrap_or_else(|_| serde_json::Value::String(text.trim().to_string()));
            m.insert(k.clone(), v);
        }
        Ok(m)
    }

    fn seed(&self) -> Result<Option<u64>, String> {
        let t = self.seed.trim();
        if t.is_empty() {
            return Ok(None);
        }
        t.parse().map(Some).map_err(|_| {
            format!("seed '{t}' is not a whole number (leave it empty for a random seed)")
        })
    }
}

/// A setting's value as the user edits it: strings without quotes, the rest as JSON.
fn value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// Training threads by default: all cores but one, which stays with the window.
fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .saturating_sub(1)
        .max(1)
}

/// The ledger's view of the open dataset, and the run's planned cost.
#[derive(Default, Clone)]
struct Cost {
    total: f64,
    delta: f64,
    spent: f64,
    this_run: f64,
    left_after: f64,
    summary: String,
    refused: Option<String>,
}

/// State of the training view.
pub struct TrainPanel {
    method: usize,
    advanced: Advanced,
    /// The data file of the running (or last) run: its results belong to it alone.
    run_data: Option<PathBuf>,
    preset: String,
    epsilon: String,
    delta: String,
    dataset_key: Option<String>,
    rows: usize,
    cost: Option<Cost>,
    job: Option<JobHandle>,
    started: Option<Instant>,
    step: (u64, u64, String),
    epsilon_run: f64,
    /// One curve per (phase, loss name): x is the report number.
    losses: Vec<(String, Vec<[f64; 2]>)>,
    reports: u64,
    /// The last finished GAN epoch and its generator (previewed while training).
    epoch: u64,
    preview: Option<std::sync::Arc<crate::methods::released::ReleasedModel>>,
    preview_texture: Option<egui::TextureHandle>,
    /// The epoch the texture shows, and the grid being sampled in a worker (sampling and
    /// tiling 100 images takes longer than a frame).
    preview_shown: u64,
    preview_job: Option<std::sync::mpsc::Receiver<(u64, Option<egui::ColorImage>)>>,
    /// A run that finished since the window last asked (title, model file).
    just_finished: Option<(String, PathBuf)>,
    log: Vec<String>,
    result: Option<Result<RunSummary, String>>,
    export_rows: usize,
    export_path: String,
    export_msg: Option<String>,
    export_job: Option<std::sync::mpsc::Receiver<String>>,
    /// The dataset's total ε as the user edits it, and what setting it said.
    total_input: String,
    total_msg: Option<String>,
}

impl Default for TrainPanel {
    fn default() -> Self {
        Self {
            method: 0,
            advanced: Advanced {
                threads: default_threads(),
                ..Default::default()
            },
            run_data: None,
            preset: "quick".into(),
            epsilon: "1".into(),
            delta: String::new(),
            dataset_key: None,
            rows: 0,
            cost: None,
            job: None,
            started: None,
            step: (0, 0, String::new()),
            epsilon_run: 0.0,
            losses: Vec::new(),
            reports: 0,
            epoch: 0,
            preview: None,
            preview_texture: None,
            preview_shown: 0,
            preview_job: None,
            just_finished: None,
            log: Vec::new(),
            result: None,
            export_rows: 1000,
            export_path: data_dir().join("synthetic.csv").display().to_string(),
            export_msg: None,
            export_job: None,
            total_input: String::new(),
            total_msg: None,
        }
    }
}

impl TrainPanel {
    /// The run that finished since the last call, once, if it trained on `data` (the
    /// user may have opened another file meanwhile).
    pub fn take_finished(&mut self, data: Option<&std::path::Path>) -> Option<(String, PathBuf)> {
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
        self.job.is_some()
    }

    /// The last session's choices.
    pub fn apply_settings(&mut self, s: &super::settings::Settings) {
        if let Some(i) = METHODS.iter().position(|m| m.name == s.method) {
            self.method = i;
        }
        self.preset = s.preset.clone();
        self.epsilon = s.epsilon.clone();
        self.export_rows = s.export_rows.max(1);
    }

    pub fn store_settings(&self, s: &mut super::settings::Settings) {
        s.method = METHODS[self.method].name.to_string();
        s.preset = self.preset.clone();
        s.epsilon = self.epsilon.clone();
        s.export_rows = self.export_rows;
    }

    /// Writes samples or copies the released model to `path` (a save dialog's answer).
    pub fn export_to(
        &mut self,
        purpose: super::dialogs::Purpose,
        path: &std::path::Path,
        ctx: &egui::Context,
    ) {
        let Some(Ok(s)) = &self.result else {
            self.export_msg = Some("no finished run to export".into());
            return;
        };
        let model = s.model.clone();
        if purpose == super::dialogs::Purpose::ExportCsv {
            self.export_path = path.display().to_string();
            self.start_export(&model, path, ctx);
            return;
        }
        // The model file holds the generator and its privacy statement only (no critic, no
        // encoder, no training rows): safe to hand out as it is.
        self.export_msg = Some(
            match std::fs::read(&model).and_then(|b| crate::util::atomic::write_atomic(path, &b)) {
                Ok(()) => format!("saved the released model to {}", path.display()),
                Err(e) => format!("could not save the model: {e}"),
            },
        );
    }

    /// Drains the job's events (the window calls this every frame, whatever tab is shown).
    pub fn poll(&mut self) {
        self.drain();
    }

    /// A new dataset (or schema): recompute the key, the default δ and the cost.
    /// Another file was opened: the last run's progress, export and log belong to the old
    /// one and go (a run still training goes on; its results are not shown for this file).
    pub fn dataset_opened(&mut self, loaded: Option<&Loaded>) {
        if self.job.is_none() {
            self.result = None;
            self.losses.clear();
            self.reports = 0;
            self.step = (0, 0, String::new());
            self.epsilon_run = 0.0;
            self.preview = None;
            self.preview_texture = None;
            self.preview_job = None;
            self.export_msg = None;
            self.log.clear();
        }
        self.dataset_changed(loaded);
    }

    pub fn dataset_changed(&mut self, loaded: Option<&Loaded>) {
        self.cost = None;
        self.dataset_key = loaded.and_then(|l| l.key.clone());
        let rows = match loaded.map(|l| &l.content) {
            Some(Content::Table { table, .. }) => Some(table.n_rows),
            Some(Content::Images { count, .. }) => {
                // Images train with the image presets.
                self.preset = "mnist".into();
                Some(*count)
            }
            None => None,
        };
        if let Some(n) = rows {
            self.rows = n;
            // δ ≪ 1/n: propose 1/(10 n), rounded down to one significant digit.
            let d = 1.0 / (10.0 * n.max(1) as f64);
            let p = 10f64.powf(d.log10().floor());
            self.delta = format!("{:e}", (d / p).floor() * p);
        }
    }

    fn budget(&self) -> Result<Budget, String> {
        let e: f64 = self
            .epsilon
            .trim()
            .parse()
            .map_err(|_| format!("ε '{}' is not a number", self.epsilon))?;
        let d: f64 = self
            .delta
            .trim()
            .parse()
            .map_err(|_| format!("δ '{}' is not a number", self.delta))?;
        let b = Budget {
            epsilon: e,
            delta: d,
        };
        b.validate()?;
        Ok(b)
    }

    fn compute_cost(&mut self) {
        let method = METHODS[self.method].name;
        let mut c = Cost::default();
        let res = (|| -> Result<Cost, String> {
            let key = self.dataset_key.clone().ok_or("no dataset is open")?;
            let ledger = Ledger::open(&default_ledger_path()).map_err(|e| e.to_string())?;
            let st = ledger.standing(&key).map_err(|e| e.to_string())?;
            c.total = st.budget.epsilon;
            c.delta = st.budget.delta;
            c.spent = st.spent;
            if method == "gan" {
                c.summary =
                    "non-private: spends nothing from the ledger, and guarantees nothing".into();
                c.left_after = st.remaining;
                return Ok(c.clone());
            }
            let budget = self.budget()?;
            let overrides = self.advanced.overrides()?;
            self.advanced.seed()?;
            let plan = job::plan_with(method, &self.preset, self.rows, budget, &overrides)?;
            let orders = ledger.orders().to_vec();
            let curve = crate::privacy::charges_curve(&plan.charges, &orders);
            let after = ledger
                .epsilon_after(&key, &curve)
                .map_err(|e| e.to_string())?;
            // All four figures at the ledger's δ, so they add up; the run's own (ε, δ) is
            // what the run will report.
            c.this_run =
                crate::privacy::convert::to_epsilon(&orders, &curve, st.budget.delta).epsilon;
            c.left_after = (c.total - after).max(0.0);
            c.summary = plan.summary;
            if after > c.total {
                c.refused = Some(format!(
                    "This run needs ε ≈ {:.3} but only {:.3} is left of the dataset's total {:.3}. Lower ε or raise the total.",
                    c.this_run,
                    (c.total - c.spent).max(0.0),
                    c.total
                ));
            }
            Ok(c.clone())
        })();
        if let Ok(c) = &res {
            if c.total > 0.0 {
                self.total_input = crate::util::fmt::number(c.total);
            }
        }
        self.cost = Some(match res {
            Ok(c) => c,
            Err(e) => Cost {
                refused: Some(e),
                ..Default::default()
            },
        });
    }

    fn start(&mut self, loaded: &Loaded, ctx: &egui::Context) {
        let schema = match &loaded.content {
            Content::Table { schema, .. } => Some(schema),
            Content::Images { .. } => None,
        };
        self.losses.clear();
        self.reports = 0;
        self.epoch = 0;
        self.preview = None;
        self.preview_texture = None;
        self.preview_job = None;
        let method = METHODS[self.method].name;
        let dir = data_dir();
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let schema_path = dir.join("schemas").join(format!("run-{stamp}.json"));
        let out = dir.join("models").join(format!(
            "{}-{method}-{stamp}.dpsynth",
            loaded
                .path
                .file_stem()
                .map_or("data".into(), |s| s.to_string_lossy().into_owned())
        ));
        let prepared = std::fs::create_dir_all(dir.join("schemas"))
            .and_then(|_| std::fs::create_dir_all(dir.join("models")))
            .map_err(|e| e.to_string())
            .and_then(|_| match schema {
                Some(s) => s.save(&schema_path).map_err(|e| e.to_string()),
                None => Ok(()),
            });
        if let Err(e) = prepared {
            self.result = Some(Err(e));
            return;
        }
        let epsilon = if method == "gan" {
            f64::INFINITY
        } else {
            self.epsilon.trim().parse().unwrap_or(1.0)
        };
        let (overrides, seed) = match (self.advanced.overrides(), self.advanced.seed()) {
            (Ok(o), Ok(s)) => (o, s),
            (Err(e), _) | (_, Err(e)) => {
                self.result = Some(Err(e));
                return;
            }
        };
        let cfg = RunConfig {
            data: loaded.path.clone(),
            schema: schema.map(|_| schema_path),
            method: method.into(),
            preset: self.preset.clone(),
            epsilon,
            delta: self.delta.trim().parse().unwrap_or(1e-5),
            seed,
            out,
            device: Default::default(),
            threads: Some(self.advanced.threads.max(1)),
            ledger: None,
            overrides,
            checkpoints: None,
        };
        self.run_data = Some(loaded.path.clone());
        let ctx = ctx.clone();
        self.job = Some(job::spawn(
            cfg,
            default_ledger_path(),
            Some(Box::new(move || ctx.request_repaint())),
        ));
        self.started = Some(Instant::now());
        self.losses.clear();
        self.reports = 0;
        self.log.clear();
        self.result = None;
        self.export_msg = None;
        self.log.push(format!(
            "started {method} ({}) at ε = {}, δ = {}",
            self.preset, self.epsilon, self.delta
        ));
    }

    fn drain(&mut self) {
        let Some(job) = &self.job else { return };
        let deadline = Instant::now() + std::time::Duration::from_millis(5);
        let mut finished = false;
        while Instant::now() < deadline {
            match job.events.try_recv() {
                Ok(Event::Started { plan, rows, width }) => {
                    self.log.push(format!(
                        "{rows} rows, {width} encoded columns; {}",
                        plan.summary
                    ));
                }
                Ok(Event::Progress(p)) => {
                    self.step = (p.step, p.total, p.phase.clone());
                    self.epsilon_run = p.epsilon_spent;
                    let x = self.reports as f64;
                    self.reports += 1;
                    for (k, v) in p.losses.iter().filter(|(_, v)| v.is_finite()) {
                        let name = format!("{} · {k}", p.phase);
                        match self.losses.iter_mut().find(|(n, _)| *n == name) {
                            Some((_, pts)) => pts.push([x, *v]),
                            None => self.losses.push((name, vec![[x, *v]])),
                        }
                    }
                }
                Ok(Event::Checkpoint {
                    epoch, generator, ..
                }) => {
                    self.epoch = epoch;
                    self.preview = Some(generator);
                }
                Ok(Event::Finished(r)) => {
                    if let Ok(s) = &r {
                        let (m, p) = (METHODS[self.method].name, self.preset.clone());
                        let eps = s
                            .epsilon_spent
                            .map_or("∞".to_string(), |e| format!("{e:.2}"));
                        self.just_finished =
                            Some((format!("{m} · {p} · ε {eps}"), s.model.clone()));
                    }
                    match &r {
                        Ok(s) => self.log.push(format!(
                            "finished: ε = {} ({}) in {:.0} s; model saved to {}",
                            s.epsilon_spent.map_or("∞".into(), |e| format!("{e:.3}")),
                            s.accountant,
                            s.seconds,
                            s.model.display()
                        )),
                        Err(e) => self.log.push(format!("failed: {e}")),
                    }
                    self.result = Some(r);
                    finished = true;
                    break;
                }
                Err(_) => break,
            }
        }
        if finished {
            if let Some(j) = self.job.take() {
                j.join();
            }
            self.cost = None;
        }
    }

    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        loaded: Option<&Loaded>,
        dialogs: &mut super::dialogs::Dialogs,
    ) {
        egui::ScrollArea::vertical()
            .id_salt("train")
            .auto_shrink([false, false])
            .show(ui, |ui| self.body(ui, loaded, dialogs));
    }

    fn body(
        &mut self,
        ui: &mut egui::Ui,
        loaded: Option<&Loaded>,
        dialogs: &mut super::dialogs::Dialogs,
    ) {
        self.drain();
        let Some(loaded) = loaded else {
            ui.label("Open a dataset first (Data tab).");
            return;
        };
        let running = self.job.is_some();
        ui.add_enabled_ui(!running, |ui| self.settings_ui(ui));
        if self.cost.is_none() && !running {
            self.compute_cost();
        }
        if let Some(c) = &self.cost {
            ui.group(|ui| {
                ui.strong("Cost of this run");
                ui.label(format!(
                    "this dataset's budget: total ε {:.3} · spent {:.3} · this run {:.3} · left after {:.3}  (at the dataset's δ = {})",
                    c.total, c.spent, c.this_run, c.left_after, c.delta
                ));
                if !c.summary.is_empty() {
                    ui.label(&c.summary);
                }
                if let Some(r) = &c.refused {
                    ui.colored_label(ui.visuals().error_fg_color, r);
                }
            });
        }
        if let Some((total, delta)) = self.cost.as_ref().map(|c| (c.total, c.delta)) {
            if total > 0.0 && !running {
                self.total_ui(ui, delta);
            }
        }
        ui.horizontal(|ui| {
            let can = !running && self.cost.as_ref().is_some_and(|c| c.refused.is_none());
            let train = ui.add_enabled(can, egui::Button::new("Train (Ctrl+Enter)"));
            let shortcut = ui.input(|i| i.modifiers.command && i.key_pressed(egui::Key::Enter));
            if (train.clicked() || (can && shortcut)) && !running {
                self.start(loaded, ui.ctx());
            }
            if running {
                if ui
                    .button("Cancel")
                    .on_hover_text(
                        "Stops after the current step; the budget spent so far stays spent",
                    )
                    .clicked()
                {
                    if let Some(j) = &self.job {
                        j.cancel();
                    }
                    self.log.push("cancelling…".into());
                }
            }
        });
        if running || self.result.is_some() {
            self.progress_ui(ui, loaded.content.real_grid());
        }
        if let Some(Err(e)) = &self.result {
            ui.colored_label(ui.visuals().error_fg_color, format!("The run failed: {e}"));
        }
        if let Some(Ok(s)) = &self.result {
            let model = s.model.clone();
            self.export_ui(ui, &model, dialogs);
        }
        egui::CollapsingHeader::new("Log")
            .default_open(true)
            .show(ui, |ui| {
                for l in self.log.iter().rev().take(8) {
                    ui.label(l);
                }
            });
    }

    fn settings_ui(&mut self, ui: &mut egui::Ui) {
        let before = (
            self.method,
            self.preset.clone(),
            self.epsilon.clone(),
            self.delta.clone(),
        );
        ui.strong("Method");
        ui.horizontal_wrapped(|ui| {
            for (i, m) in METHODS.iter().enumerate() {
                let chosen = self.method == i;
                let frame = egui::Frame::group(ui.style())
                    .fill(if chosen {
                        ui.visuals().selection.bg_fill.gamma_multiply(0.35)
                    } else {
                        ui.visuals().faint_bg_color
                    })
                    .inner_margin(8.0);
                frame.show(ui, |ui| {
                    ui.set_width(340.0);
                    ui.set_min_height(112.0);
                    ui.vertical(|ui| {
                        ui.radio_value(&mut self.method, i, m.title);
                        ui.label(m.sentence);
                        ui.hyperlink_to(format!("idea: {}", m.paper), m.url);
                    });
                });
            }
        });
        let presets = METHODS[self.method].presets;
        if !presets.contains(&self.preset.as_str()) {
            self.preset = presets[0].to_string();
        }
        ui.horizontal(|ui| {
            let l = ui.label("Preset:");
            egui::ComboBox::from_id_salt("preset")
                .selected_text(self.preset.clone())
                .show_ui(ui, |ui| {
                    for p in presets {
                        ui.selectable_value(&mut self.preset, p.to_string(), *p);
                    }
                })
                .response
                .labelled_by(l.id);
            ui.separator();
            let l = ui.label("ε");
            ui.add(egui::TextEdit::singleline(&mut self.epsilon).desired_width(60.0))
                .labelled_by(l.id);
            let l = ui.label("δ");
            ui.add(egui::TextEdit::singleline(&mut self.delta).desired_width(80.0))
                .labelled_by(l.id);
        });
        ui.label(format!(
            "Guidance: ε ≤ 1 is strong protection, ε ≤ 5 moderate. δ should be far below 1/n (n = {}); proposed: 1/(10 n).",
            self.rows
        ));
        let method = METHODS[self.method].name;
        self.advanced.refresh(method, &self.preset);
        let mut advanced_changed = false;
        egui::CollapsingHeader::new("Advanced settings")
            .default_open(false)
            .show(ui, |ui| {
                ui.label("The preset's values; change one to override it. The cost above follows.");
                egui::Grid::new("advanced").striped(true).show(ui, |ui| {
                    let l = ui.label("seed");
                    advanced_changed |= ui
                        .add(egui::TextEdit::singleline(&mut self.advanced.seed).hint_text("random").desired_width(120.0))
                        .labelled_by(l.id)
                        .on_hover_text("A fixed seed makes a run reproducible, and marks its model NOT for release")
                        .changed();
                    ui.end_row();
                    let l = ui.label("training threads");
                    ui.add(egui::DragValue::new(&mut self.advanced.threads).range(1..=256))
                        .labelled_by(l.id);
                    ui.end_row();
                    for (k, text, default) in &mut self.advanced.rows {
                        let l = ui.label(k.as_str());
                        let r = ui
                            .add(egui::TextEdit::singleline(text).desired_width(160.0))
                            .labelled_by(l.id);
                        advanced_changed |= r.changed();
                        if text.trim() != default.trim() {
                            ui.weak(format!("preset: {default}"));
                        }
                        ui.end_row();
                    }
                });
                if ui.button("Reset to the preset").clicked() {
                    for (_, t, d) in &mut self.advanced.rows {
                        *t = d.clone();
                    }
                    self.advanced.seed.clear();
                    advanced_changed = true;
                }
            });
        if advanced_changed {
            self.cost = None;
        }
        if (
            self.method,
            self.preset.clone(),
            self.epsilon.clone(),
            self.delta.clone(),
        ) != before
        {
            self.cost = None;
        }
    }

    fn progress_ui(&mut self, ui: &mut egui::Ui, real: Option<&egui::TextureHandle>) {
        let (step, total, phase) = self.step.clone();
        let frac = if total > 0 {
            step as f32 / total as f32
        } else {
            0.0
        };
        let eta = match self.started {
            Some(t) if frac > 0.0 && self.job.is_some() => {
                format!(
                    " · ETA {:.0} s",
                    t.elapsed().as_secs_f32() * (1.0 - frac) / frac
                )
            }
            _ => String::new(),
        };
        let text = if total == 0 {
            "preparing: reading and encoding the data".to_string()
        } else {
            format!("{phase}: step {step} / {total}{eta}")
        };
        ui.add(egui::ProgressBar::new(frac).text(text));
        if let Ok(b) = self.budget() {
            let spent = if self.epsilon_run.is_finite() {
                self.epsilon_run
            } else {
                0.0
            };
            ui.add(
                egui::ProgressBar::new((spent / b.epsilon).clamp(0.0, 1.0) as f32)
                    .text(format!(
                        "budget of this run: ε {spent:.3} of {:.3} spent",
                        b.epsilon
                    ))
                    .fill(egui::Color32::from_rgb(200, 120, 40)),
            );
            if let Some(c) = self
                .cost
                .as_ref()
                .filter(|c| c.total > 0.0 && self.job.is_some())
            {
                // Adding ε's over-counts (RDP composes sub-additively): a safe upper bound
                // for the gauge; the ledger settles the exact figure when the run ends.
                let used = (c.spent + spent).min(c.total);
                ui.add(
                    egui::ProgressBar::new((used / c.total) as f32)
                        .text(format!(
                            "this dataset's budget: at most ε {used:.3} of {:.3} used (before this run {:.3})",
                            c.total, c.spent
                        ))
                        .fill(egui::Color32::from_rgb(150, 90, 40)),
                );
            }
        }
        // Every GAN epoch leaves a generator; only image generators have a grid to show.
        if self.preview.as_deref().and_then(image_side).is_some() {
            ui.horizontal(|ui| {
                ui.vertical(|ui| {
                    ui.set_width((ui.available_width() - 440.0).max(200.0));
                    self.losses_ui(ui);
                });
                self.preview_ui(ui, real);
            });
        } else {
            self.losses_ui(ui);
        }
    }

    /// The dataset's total budget, editable: it is the ledger's, shared by every run on
    /// this file (from the window or the command line).
    fn total_ui(&mut self, ui: &mut egui::Ui, delta: f64) {
        ui.horizontal(|ui| {
            let l = ui.label("This dataset's total budget: ε");
            ui.add(egui::TextEdit::singleline(&mut self.total_input).desired_width(60.0))
                .labelled_by(l.id);
            if ui
                .button("Set total")
                .on_hover_text("Raise or lower how much ε all runs on this file may spend together (the ledger keeps it; `dpsynth budget set` does the same)")
                .clicked()
            {
                self.total_msg = Some(self.set_total(delta));
                self.cost = None;
            }
            if let Some(m) = &self.total_msg {
                ui.label(m);
            }
        });
    }

    fn set_total(&self, delta: f64) -> String {
        let Ok(epsilon) = self.total_input.trim().parse::<f64>() else {
            return format!("'{}' is not a number", self.total_input.trim());
        };
        let Some(key) = &self.dataset_key else {
            return "no dataset is open".into();
        };
        let b = Budget { epsilon, delta };
        match Ledger::open(&default_ledger_path()).and_then(|mut l| l.set_budget(key, b)) {
            Ok(()) => format!("total set to ε {epsilon}"),
            Err(e) => format!("could not set the total: {e}"),
        }
    }

    /// One curve per loss the run reports.
    fn losses_ui(&self, ui: &mut egui::Ui) {
        Plot::new("losses")
            .height(180.0)
            .legend(egui_plot::Legend::default())
            .x_axis_label("progress report (every 50 steps)")
            .y_axis_label("loss")
            .show(ui, |p| {
                for (name, pts) in &self.losses {
                    p.line(Line::new(name.as_str(), PlotPoints::from(pts.clone())));
                }
            });
        ui.small("Curves are computed from generated rows and the private critic only: a loss on the real rows (the autoencoder's, the critic's on real data) would itself reveal something about them, so none is shown.");
    }

    /// For image data: 100 digits from the generator of the last finished epoch.
    fn preview_ui(&mut self, ui: &mut egui::Ui, real: Option<&egui::TextureHandle>) {
        let Some(model) = &self.preview else { return };
        let Some(side) = image_side(model) else {
            return;
        };
        // Show the grid a worker finished; start the next one for the newest epoch (epochs
        // that end while a grid is being drawn are skipped).
        if let Some(rx) = &self.preview_job {
            if let Ok((epoch, img)) = rx.try_recv() {
                if let Some(img) = img {
                    self.preview_texture =
                        Some(ui.ctx().load_texture("preview", img, Default::default()));
                }
                self.preview_shown = epoch;
                self.preview_job = None;
            }
        }
        if self.preview_job.is_none()
            && (self.preview_texture.is_none() || self.preview_shown < self.epoch)
        {
            let (tx, rx) = std::sync::mpsc::channel();
            let (model, epoch, ctx) = (model.clone(), self.epoch, ui.ctx().clone());
            std::thread::spawn(move || {
                let img = model
                    .sample(100, Some(epoch))
                    .ok()
                    .and_then(|t| crate::data::image::from_pixel_table(&t, "preview").ok())
                    .map(|set| super::image_grid(&set, 10, 10));
                let _ = tx.send((epoch, img));
                ctx.request_repaint();
            });
            self.preview_job = Some(rx);
        }
        let size = egui::vec2(10.0 * side as f32, 10.0 * side as f32).min(egui::vec2(200.0, 200.0));
        if let Some(t) = &self.preview_texture {
            ui.vertical(|ui| {
                ui.label(format!("generated after epoch {}", self.preview_shown));
                ui.image((t.id(), size));
            });
        }
        if let Some(r) = real {
            ui.vertical(|ui| {
                ui.label("real");
                ui.image((r.id(), size));
            });
        }
    }

    fn export_ui(
        &mut self,
        ui: &mut egui::Ui,
        model: &std::path::Path,
        dialogs: &mut super::dialogs::Dialogs,
    ) {
        use super::dialogs::Purpose;
        if let Some(rx) = &self.export_job {
            if let Ok(m) = rx.try_recv() {
                self.export_msg = Some(m);
                self.export_job = None;
            }
        }
        let busy = self.export_job.is_some();
        ui.group(|ui| {
            ui.strong("Export");
            ui.horizontal(|ui| {
                let l = ui.label("Rows:");
                ui.add(egui::DragValue::new(&mut self.export_rows).range(1..=10_000_000))
                    .labelled_by(l.id);
                dialogs.button(
                    ui,
                    !busy,
                    "Save CSV…",
                    "Sample this many synthetic rows and save them through a dialog",
                    Purpose::ExportCsv,
                    "synthetic.csv",
                );
                dialogs.button(
                    ui,
                    !busy,
                    "Save model…",
                    "The released generator with its privacy statement: anyone can sample from it with `dpsynth sample`. It holds no training rows, critic or encoder.",
                    Purpose::SaveModel,
                    "model.dpsynth",
                );
            });
            ui.horizontal(|ui| {
                let l = ui.label("or to the CSV file:");
                ui.add(egui::TextEdit::singleline(&mut self.export_path).desired_width(360.0))
                    .labelled_by(l.id);
                if ui.add_enabled(!busy, egui::Button::new("Export CSV")).clicked() {
                    let out = PathBuf::from(self.export_path.trim());
                    self.start_export(model, &out, ui.ctx());
                }
                if busy {
                    ui.spinner();
                }
            });
            ui.label(format!("released model: {}", model.display()));
            if let Some(m) = &self.export_msg {
                ui.label(m);
            }
        });
    }

    /// Samples and writes in a worker (a million rows take a while).
    fn start_export(
        &mut self,
        model: &std::path::Path,
        out: &std::path::Path,
        ctx: &egui::Context,
    ) {
        let (tx, rx) = std::sync::mpsc::channel();
        let (model, out, rows, ctx) = (
            model.to_path_buf(),
            out.to_path_buf(),
            self.export_rows,
            ctx.clone(),
        );
        std::thread::spawn(move || {
            let _ = tx.send(export_csv(&model, rows, &out));
            ctx.request_repaint();
        });
        self.export_msg = Some(format!("sampling {} rows…", self.export_rows));
        self.export_job = Some(rx);
    }
}

/// Samples `rows` rows from the model file and writes them as CSV (atomically).
fn export_csv(model: &std::path::Path, rows: usize, out: &std::path::Path) -> String {
    if out.as_os_str().is_empty() {
        return "export failed: type a file path first".into();
    }
    match crate::methods::released::ReleasedModel::load(model, &candle_core::Device::Cpu)
        .and_then(|m| m.sample(rows, None))
        .map_err(|e| e.to_string())
        .and_then(|t| crate::data::export::write_csv(&t, out).map_err(|e| e.to_string()))
    {
        Ok(()) => format!("wrote {rows} rows to {}", out.display()),
        Err(e) => format!("export failed: {e}"),
    }
}

/// The image side of a model trained on images (its columns are `label, pixel0, …`).
fn image_side(model: &crate::methods::released::ReleasedModel) -> Option<usize> {
    let cols = &model.header.schema.columns;
    let px = cols.iter().filter(|c| c.name.starts_with("pixel")).count();
    let side = (px as f64).sqrt().round() as usize;
    (px >= 4 && side * side == px && cols.first().is_some_and(|c| c.name == "label"))
        .then_some(side)
}
