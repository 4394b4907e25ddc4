//! The training view: method and budget, the cost preview from the dataset's ledger, the
//! live run (progress, ETA, losses, budget gauge, cancel, log) and exporting samples.

use std::path::PathBuf;
use std::time::Instant;

use eframe::egui;
use egui_plot::{Line, Plot, PlotPoints};

use super::{Content, Loaded};
use crate::job::{self, Event, JobHandle, RunConfig, RunSummary};
use crate::privacy::Budget;
use crate::privacy::ledger::{Ledger, data_dir, dataset_key_any, default_ledger_path};

const METHODS: [(&str, &str, &[&str]); 3] = [
    (
        "dp-auto-gan",
        "Trains an autoencoder, then a GAN in its compact code space — both with DP-SGD (Tantipongpipat et al.).",
        &[
            "quick",
            "tiny",
            "adult",
            "mnist",
            "adult-paper",
            "mimic-paper",
        ],
    ),
    (
        "dp-gan",
        "A GAN whose critic (discriminator) is trained with DP-SGD: the baseline.",
        &["quick", "tiny", "adult", "mnist"],
    ),
    (
        "gan",
        "The same GAN without privacy (ε = ∞): a reference line, never for release.",
        &["quick", "tiny", "adult", "mnist"],
    ),
];

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
    losses: Vec<[f64; 2]>,
    /// The last finished GAN epoch and its generator (previewed while training).
    epoch: u64,
    preview: Option<std::sync::Arc<crate::methods::released::ReleasedModel>>,
    preview_texture: Option<egui::TextureHandle>,
    /// A run that finished since the window last asked (title, model file).
    just_finished: Option<(String, PathBuf)>,
    log: Vec<String>,
    result: Option<Result<RunSummary, String>>,
    export_rows: usize,
    export_path: String,
    export_msg: Option<String>,
}

impl Default for TrainPanel {
    fn default() -> Self {
        Self {
            method: 0,
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
            epoch: 0,
            preview: None,
            preview_texture: None,
            just_finished: None,
            log: Vec::new(),
            result: None,
            export_rows: 1000,
            export_path: data_dir().join("synthetic.csv").display().to_string(),
            export_msg: None,
        }
    }
}

impl TrainPanel {
    /// The run that finished since the last call, once.
    pub fn take_finished(&mut self) -> Option<(String, PathBuf)> {
        self.just_finished.take()
    }

    /// Drains the job's events (the window calls this every frame, whatever tab is shown).
    pub fn poll(&mut self) {
        self.drain();
    }

    /// A new dataset (or schema): recompute the key, the default δ and the cost.
    pub fn dataset_changed(&mut self, loaded: Option<&Loaded>) {
        self.cost = None;
        self.dataset_key = loaded.and_then(|l| dataset_key_any(&l.path).ok());
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
        let method = METHODS[self.method].0;
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
            let plan = job::plan(method, &self.preset, self.rows, budget)?;
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
        self.epoch = 0;
        self.preview = None;
        self.preview_texture = None;
        let method = METHODS[self.method].0;
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
        let cfg = RunConfig {
            data: loaded.path.clone(),
            schema: schema.map(|_| schema_path),
            method: method.into(),
            preset: self.preset.clone(),
            epsilon,
            delta: self.delta.trim().parse().unwrap_or(1e-5),
            seed: None,
            out,
            device: Default::default(),
            // One core stays with the window.
            threads: Some(1),
            ledger: None,
            overrides: Default::default(),
            checkpoints: None,
        };
        let ctx = ctx.clone();
        self.job = Some(job::spawn(
            cfg,
            default_ledger_path(),
            Some(Box::new(move || ctx.request_repaint())),
        ));
        self.started = Some(Instant::now());
        self.losses.clear();
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
                    if let Some((_, v)) = p.losses.iter().find(|(k, _)| k == "generator") {
                        if v.is_finite() {
                            let x = self.losses.len() as f64;
                            self.losses.push([x, *v]);
                        }
                    }
                }
                Ok(Event::Checkpoint {
                    epoch, generator, ..
                }) => {
                    self.epoch = epoch;
                    self.preview = Some(generator);
                    self.preview_texture = None;
                }
                Ok(Event::Finished(r)) => {
                    if let Ok(s) = &r {
                        let (m, p) = (METHODS[self.method].0, self.preset.clone());
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

    pub fn ui(&mut self, ui: &mut egui::Ui, loaded: Option<&Loaded>) {
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
            self.progress_ui(ui);
        }
        if let Some(Ok(s)) = &self.result {
            let model = s.model.clone();
            self.export_ui(ui, &model);
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
        for (i, (name, blurb, _)) in METHODS.iter().enumerate() {
            ui.horizontal(|ui| {
                ui.radio_value(&mut self.method, i, *name);
                ui.label(*blurb);
            });
        }
        let presets = METHODS[self.method].2;
        if !presets.contains(&self.preset.as_str()) {
            self.preset = presets[0].to_string();
        }
        ui.horizontal(|ui| {
            ui.label("Preset:");
            egui::ComboBox::from_id_salt("preset")
                .selected_text(self.preset.clone())
                .show_ui(ui, |ui| {
                    for p in presets {
                        ui.selectable_value(&mut self.preset, p.to_string(), *p);
                    }
                });
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

    fn progress_ui(&mut self, ui: &mut egui::Ui) {
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
        ui.add(egui::ProgressBar::new(frac).text(format!("{phase}: step {step} / {total}{eta}")));
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
        ui.horizontal(|ui| {
            ui.vertical(|ui| {
                ui.set_width((ui.available_width() - 300.0).max(200.0));
                Plot::new("losses")
                    .height(160.0)
                    .x_axis_label("report (every 50 steps)")
                    .show(ui, |p| {
                        p.line(Line::new(
                            "generator loss",
                            PlotPoints::from(self.losses.clone()),
                        ));
                    });
            });
            self.preview_ui(ui);
        });
    }

    /// For image data: 100 digits from the generator of the last finished epoch.
    fn preview_ui(&mut self, ui: &mut egui::Ui) {
        let Some(model) = &self.preview else { return };
        let Some(side) = image_side(model) else {
            return;
        };
        if self.preview_texture.is_none() {
            if let Ok(t) = model.sample(100, Some(self.epoch)) {
                if let Ok(set) = crate::data::image::from_pixel_table(&t, "preview") {
                    let img = super::image_grid(&set, 10, 10);
                    self.preview_texture =
                        Some(ui.ctx().load_texture("preview", img, Default::default()));
                }
            }
        }
        if let Some(t) = &self.preview_texture {
            ui.vertical(|ui| {
                ui.label(format!("generated after epoch {}", self.epoch));
                let size = egui::vec2(10.0 * side as f32, 10.0 * side as f32)
                    .min(egui::vec2(280.0, 280.0));
                ui.image((t.id(), size));
            });
        }
    }

    fn export_ui(&mut self, ui: &mut egui::Ui, model: &std::path::Path) {
        ui.group(|ui| {
            ui.strong("Export synthetic data");
            ui.horizontal(|ui| {
                let l = ui.label("Rows:");
                ui.add(egui::DragValue::new(&mut self.export_rows).range(1..=10_000_000))
                    .labelled_by(l.id);
                let l = ui.label("CSV file:");
                ui.text_edit_singleline(&mut self.export_path)
                    .labelled_by(l.id);
                if ui.button("Export CSV").clicked() {
                    let out = PathBuf::from(self.export_path.trim());
                    self.export_msg = Some(
                        match crate::methods::released::ReleasedModel::load(
                            model,
                            &candle_core::Device::Cpu,
                        )
                        .and_then(|m| m.sample(self.export_rows, None))
                        .map_err(|e| e.to_string())
                        .and_then(|t| {
                            crate::data::export::write_csv(&t, &out).map_err(|e| e.to_string())
                        }) {
                            Ok(()) => {
                                format!("wrote {} rows to {}", self.export_rows, out.display())
                            }
                            Err(e) => format!("export failed: {e}"),
                        },
                    );
                }
            });
            ui.label(format!("released model: {}", model.display()));
            if let Some(m) = &self.export_msg {
                ui.label(m);
            }
        });
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
