//! Exporting a finished run: synthetic rows as CSV and the released model, through a
//! dialog or a typed path; the job samples and writes in a worker.

use std::path::{Path, PathBuf};

use eframe::egui;

use crate::gui::background::Task;
use crate::gui::dialogs::{Dialogs, Purpose};
use crate::job;

pub(super) struct ExportView {
    pub rows: usize,
    pub path: String,
    pub msg: Option<String>,
    task: Option<Task<String>>,
}

impl Default for ExportView {
    fn default() -> Self {
        Self {
            rows: 1000,
            path: job::cost::data_dir()
                .join("synthetic.csv")
                .display()
                .to_string(),
            msg: None,
            task: None,
        }
    }
}

impl ExportView {
    /// Writes samples or copies the released model to `path` (a save dialog's answer).
    pub fn export_to(&mut self, purpose: Purpose, model: &Path, path: &Path, ctx: &egui::Context) {
        if purpose == Purpose::ExportCsv {
            self.path = path.display().to_string();
            self.start(model, path, ctx);
            return;
        }
        self.msg = Some(match job::services::copy_model(model, path) {
            Ok(()) => format!("saved the released model to {}", path.display()),
            Err(e) => format!("could not save the model: {e}"),
        });
    }

    /// Samples and writes in a worker (a million rows take a while).
    fn start(&mut self, model: &Path, out: &Path, ctx: &egui::Context) {
        let (model, out, rows) = (model.to_path_buf(), out.to_path_buf(), self.rows);
        self.task = Some(Task::spawn(ctx, move || {
            match job::services::export_csv(&model, rows, None, &out) {
                Ok(side) => format!(
                    "wrote {rows} rows to {}, and its privacy statement to {}",
                    out.display(),
                    side.display()
                ),
                Err(e) => format!("export failed: {e}"),
            }
        }));
        self.msg = Some(format!("sampling {} rows…", self.rows));
    }

    pub fn ui(&mut self, ui: &mut egui::Ui, model: &Path, dialogs: &mut Dialogs) {
        if let Some(m) = self.task.as_mut().and_then(|t| t.poll()) {
            self.msg = Some(m);
            self.task = None;
        }
        let busy = self.task.is_some();
        ui.group(|ui| {
            ui.strong("Export");
            // The outcome first: the group's end may be below the window's edge.
            if let Some(m) = &self.msg {
                ui.label(m);
            }
            ui.horizontal(|ui| {
                let l = ui.label("Rows:");
                ui.add(egui::DragValue::new(&mut self.rows).range(1..=10_000_000))
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
                ui.add(egui::TextEdit::singleline(&mut self.path).desired_width(360.0))
                    .labelled_by(l.id);
                if ui.add_enabled(!busy, egui::Button::new("Export CSV")).clicked() {
                    let out = PathBuf::from(self.path.trim());
                    self.start(model, &out, ui.ctx());
                }
                if busy {
                    ui.spinner();
                }
            });
            ui.label(format!("released model: {}", model.display()));
        });
    }
}
