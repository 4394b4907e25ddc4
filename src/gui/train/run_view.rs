//! The live run: progress and ETA, the budget gauges (at the ledger's δ, from the job),
//! loss curves, and for image runs the digits the generator draws after each epoch.

use eframe::egui;
use egui_plot::{Line, Plot, PlotPoints};

use crate::job::{DatasetBudget, Event, Progress};

/// What the run view shows.
#[derive(Default)]
pub(super) struct RunView {
    eta: crate::job::eta::Eta,
    /// Seconds the current phase has left, from the last report.
    left: Option<f64>,
    step: (u64, u64, String),
    /// This run's ε so far at its own δ, and its budget.
    epsilon_run: f64,
    epsilon_budget: f64,
    /// The whole plan's ε (what a stop charges), from the job's start event.
    planned: Option<f64>,
    delta_run: f64,
    dataset: Option<DatasetBudget>,
    /// One curve per (phase, loss name): x is the report number.
    losses: Vec<(String, Vec<[f64; 2]>)>,
    reports: u64,
    /// The newest generated digits and the epoch they come from.
    preview: Option<(u64, egui::TextureHandle)>,
    /// Which run this is: the loss chart's id, so each run starts with a fresh view.
    generation: u64,
    /// The loss chart takes the mouse (drag, wheel) only when asked.
    zoom: bool,
    reset: bool,
    /// What each step did, in order (a marginal method's measurements).
    notes: Vec<String>,
}

impl RunView {
    pub fn start(&mut self, epsilon_budget: f64, delta_run: f64) {
        *self = Self {
            epsilon_budget,
            delta_run,
            generation: self.generation + 1,
            zoom: self.zoom,
            ..Default::default()
        };
    }

    pub fn set_planned(&mut self, epsilon: f64) {
        self.planned = Some(epsilon);
    }

    /// The whole plan's ε, the run's budget until the job has said.
    pub fn planned(&self) -> f64 {
        self.planned.unwrap_or(self.epsilon_budget)
    }

    /// ε this run has spent so far (at its δ), as the last event reported it.
    pub fn spent(&self) -> f64 {
        if self.epsilon_run.is_finite() {
            self.epsilon_run
        } else {
            0.0
        }
    }

    /// Takes the events this view draws; the rest are the panel's.
    pub fn event(&mut self, ev: &Event, ctx: &egui::Context) {
        match ev {
            Event::Progress(p) => self.progress(p),
            Event::Budget { run, dataset } => {
                self.epsilon_run = *run;
                self.dataset = *dataset;
            }
            Event::Samples { epoch, table } => {
                if let Ok(set) = crate::data::image::from_pixel_table(table, "preview") {
                    let img = crate::gui::image_grid(&set, 10, 10);
                    let tex = ctx.load_texture("preview", img, egui::TextureOptions::NEAREST);
                    self.preview = Some((*epoch, tex));
                }
            }
            _ => {}
        }
    }

    fn progress(&mut self, p: &Progress) {
        self.step = (p.step, p.total, p.phase.clone());
        self.left = self.eta.update(&p.phase, p.step, p.total);
        if let Some(n) = &p.note {
            if self.notes.last() != Some(n) {
                self.notes.push(n.clone());
            }
        }
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

    pub fn ui(&mut self, ui: &mut egui::Ui, running: bool, real: Option<&egui::TextureHandle>) {
        let (step, total, phase) = &self.step;
        let frac = if *total > 0 {
            *step as f32 / *total as f32
        } else {
            0.0
        };
        let eta = if running {
            crate::job::eta::eta_text(self.left)
        } else {
            String::new()
        };
        let text = if *total == 0 {
            "preparing: reading and encoding the data".to_string()
        } else {
            format!("{phase}: step {step} / {total}{eta}")
        };
        ui.add(egui::ProgressBar::new(frac).text(text));
        self.budget_ui(ui, running);
        self.notes_ui(ui);
        if self.preview.is_some() {
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

    /// The measurements so far, newest last (each is a DP output, so showing it is safe).
    fn notes_ui(&self, ui: &mut egui::Ui) {
        if self.notes.is_empty() {
            return;
        }
        egui::CollapsingHeader::new(format!("Measured so far ({})", self.notes.len()))
            .id_salt(("notes", self.generation))
            .default_open(true)
            .show(ui, |ui| {
                egui::ScrollArea::vertical()
                    .max_height(120.0)
                    .stick_to_bottom(true)
                    .show(ui, |ui| {
                        for n in &self.notes {
                            ui.label(n);
                        }
                    });
            });
    }

    fn budget_ui(&self, ui: &mut egui::Ui, running: bool) {
        if !self.epsilon_budget.is_finite() {
            return;
        }
        let spent = if self.epsilon_run.is_finite() {
            self.epsilon_run
        } else {
            0.0
        };
        ui.add(
            egui::ProgressBar::new((spent / self.epsilon_budget).clamp(0.0, 1.0) as f32)
                .text(format!(
                    "budget of this run: ε {spent:.3} of {:.3} spent (at the run's δ = {})",
                    self.epsilon_budget, self.delta_run
                ))
                .fill(egui::Color32::from_rgb(200, 120, 40)),
        );
        if let Some(d) = self.dataset.filter(|d| d.total > 0.0 && running) {
            // Composed by RDP at the ledger's δ, as the ledger will settle it.
            ui.add(
                egui::ProgressBar::new((d.used / d.total).clamp(0.0, 1.0) as f32)
                    .text(format!(
                        "this dataset's budget: ε {:.3} of {:.3} used (before this run {:.3}; at δ = {})",
                        d.used, d.total, d.before, d.delta
                    ))
                    .fill(egui::Color32::from_rgb(150, 90, 40)),
            );
        }
    }

    /// One curve per loss the run reports.
    fn losses_ui(&mut self, ui: &mut egui::Ui) {
        ui.horizontal(|ui| {
            ui.checkbox(&mut self.zoom, "zoom and pan")
                .on_hover_text("Let the chart take the mouse: drag to pan, scroll to zoom. Off, the mouse wheel scrolls the page.");
            if ui
                .button("Reset view")
                .on_hover_text("Fit the chart to every curve again (a double-click does the same).")
                .clicked()
            {
                self.reset = true;
            }
        });
        let mut plot = Plot::new(("losses", self.generation))
            .height(180.0)
            .allow_scroll(self.zoom)
            .allow_zoom(self.zoom)
            .allow_drag(self.zoom)
            .allow_boxed_zoom(self.zoom)
            .legend(egui_plot::Legend::default().position(egui_plot::Corner::LeftTop));
        if std::mem::take(&mut self.reset) {
            plot = plot.reset();
        }
        plot.x_axis_label("progress report (every 50 steps)")
            .y_axis_label("loss")
            .show(ui, |p| {
                for (name, pts) in &self.losses {
                    p.line(Line::new(name.as_str(), PlotPoints::from(pts.clone())));
                }
            });
        ui.small("Curves are computed from generated rows and what the run has already released privately (the DP-trained critic, the noisy embedding, PATE-GAN's noisy teacher votes): a loss on the real rows (the autoencoder's, the critic's on real data) would itself reveal something about them, so none is shown.");
    }

    /// For image data: 100 digits from the generator of the last finished epoch.
    fn preview_ui(&self, ui: &mut egui::Ui, real: Option<&egui::TextureHandle>) {
        let Some((epoch, tex)) = &self.preview else {
            return;
        };
        let side = tex.size()[0] as f32;
        let size = egui::vec2(side, side).min(egui::vec2(200.0, 200.0));
        ui.vertical(|ui| {
            ui.label(format!("generated after epoch {epoch}"));
            ui.image((tex.id(), size));
        });
        if let Some(r) = real {
            ui.vertical(|ui| {
                ui.label("real");
                ui.image((r.id(), size));
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each run draws its loss chart under a new id, so a view the user panned or zoomed
    /// during one run never carries over (an empty-looking chart) to the next; the zoom
    /// switch itself is the user's choice and stays.
    #[test]
    fn a_new_run_resets_the_chart_view_but_keeps_the_zoom_switch() {
        let mut v = RunView::default();
        v.start(1.0, 1e-5);
        let first = v.generation;
        v.zoom = true;
        v.losses.push(("gan · generator".into(), vec![[0.0, 1.0]]));
        v.start(2.0, 1e-5);
        assert_ne!(v.generation, first);
        assert!(v.zoom);
        assert!(v.losses.is_empty());
    }
}
