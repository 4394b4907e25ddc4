//! Exporting a finished run: synthetic rows as CSV and the released model, through a
//! dialog or a typed path; the job samples and writes in a worker.

use std::path::{Path, PathBuf};

use eframe::egui;

use crate::gui::background::Task;
use crate::gui::dialogs::{Dialogs, Purpose};
use crate::job;

pub(crate) struct ExportView {
    pub rows: usize,
    pub path: String,
    pub msg: Option<String>,
    task: Option<Task<String>>,
    /// The model the proposed names belong to: a new run gets fresh names, so one run's
    /// export never lands on another's file by default.
    for_model: PathBuf,
    /// A typed path that exists and was shown once: exporting to it again replaces it.
    replace: Option<PathBuf>,
    /// The user confirmed that a non-private model's rows carry no guarantee.
    not_private_ok: bool,
    /// Whether the shown model is private (`None` before it was shown).
    private: Option<bool>,
    /// Exports of a model opened on its own (the model is already a file: no "Save
    /// model…").
    standalone: bool,
    /// The dialog purposes whose answers the window routes back to this view's owner.
    csv_purpose: Purpose,
    model_purpose: Purpose,
    /// Whether the model makes images (its owner knows; set before each frame): only then
    /// is jitter offered.
    pub images: bool,
    /// Jitter each sampled image (`dpsynth sample --jitter`): on by default, since labelled
    /// synthetic digits are mostly exported to train a classifier, and jittered ones train
    /// a better one (CNN judge 95.9 % against 93.2 % for the same ε = 1 model); unticked,
    /// the digits are exported as drawn, the closer likeness (Fréchet 3.6 against 31.7).
    jitter: bool,
}

impl Default for ExportView {
    fn default() -> Self {
        Self {
            rows: 1000,
            path: job::paths::data_dir()
                .join("synthetic.csv")
                .display()
                .to_string(),
            msg: None,
            task: None,
            for_model: PathBuf::new(),
            replace: None,
            not_private_ok: false,
            private: None,
            standalone: false,
            csv_purpose: Purpose::ExportCsv,
            model_purpose: Purpose::SaveModel,
            images: false,
            jitter: true,
        }
    }
}

/// The file-name stem proposed for exports of `model` (its own name: one per run).
fn stem(model: &Path) -> String {
    model
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "synthetic".into())
}

impl ExportView {
    /// The export of a model opened on its own.
    pub fn standalone() -> Self {
        Self {
            standalone: true,
            csv_purpose: Purpose::SampleModel,
            ..Self::default()
        }
    }

    /// The export of any kept run, in Results.
    pub fn for_results() -> Self {
        Self {
            csv_purpose: Purpose::ExportRunCsv,
            model_purpose: Purpose::SaveRunModel,
            ..Self::default()
        }
    }

    /// Fresh names and questions for a new run's model.
    fn follow(&mut self, model: &Path) {
        if self.for_model == model {
            return;
        }
        self.for_model = model.to_path_buf();
        self.path = job::paths::data_dir()
            .join(format!("{}.csv", stem(model)))
            .display()
            .to_string();
        self.replace = None;
        self.not_private_ok = false;
        self.msg = None;
    }

    /// Writes samples or copies the released model to `path` (a save dialog's answer).
    pub fn export_to(&mut self, purpose: Purpose, model: &Path, path: &Path, ctx: &egui::Context) {
        if self.for_model == model && self.blocked_by_privacy() {
            self.msg = Some("confirm first that these rows are not private".into());
            return;
        }
        if purpose == self.csv_purpose {
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
        let jitter = (self.images && self.jitter).then_some(job::Jitter::STANDARD);
        self.task = Some(Task::spawn(
            ctx,
            move || match job::services::export_csv_where(
                &model, rows, None, None, jitter, None, &out,
            ) {
                Ok((side, acceptance)) => format!(
                    "wrote {rows} {} to {} ({}), and its privacy statement to {}{}",
                    if jitter.is_some() {
                        "jittered digits"
                    } else {
                        "rows"
                    },
                    out.display(),
                    job::services::export_holds(&model),
                    side.display(),
                    moved_note(&acceptance.moved)
                ),
                Err(e) => format!("export failed: {e}"),
            },
        ));
        self.msg = Some(format!("sampling {} rows…", self.rows));
    }

    /// Whether a non-private model still waits for the user's confirmation.
    fn blocked_by_privacy(&self) -> bool {
        self.private == Some(false) && !self.not_private_ok
    }

    /// `private`: whether the model carries a guarantee (a non-private reference's rows
    /// are exported only after an explicit confirmation).
    pub fn ui(&mut self, ui: &mut egui::Ui, model: &Path, private: bool, dialogs: &mut Dialogs) {
        self.follow(model);
        self.private = Some(private);
        if let Some(m) = self.task.as_mut().and_then(|t| t.poll()) {
            self.msg = Some(m);
            self.task = None;
        }
        let name = stem(model);
        ui.group(|ui| {
            ui.strong("Export");
            // The outcome first: the group's end may be below the window's edge.
            if let Some(m) = &self.msg {
                ui.label(m);
            }
            if !private {
                ui.colored_label(
                    ui.visuals().warn_fg_color,
                    "This model was trained without privacy (ε = ∞): its rows can copy people in the data. It is a reference for comparison, not for release.",
                );
                ui.checkbox(
                    &mut self.not_private_ok,
                    "I understand: export these non-private rows anyway",
                );
            }
            if self.images {
                ui.checkbox(&mut self.jitter, "Jitter each digit (to train a classifier on)")
                    .on_hover_text("Turns, zooms and moves each sampled digit a little at random (up to 10°, 10 %, 10 % of the side), as MNIST training recipes augment real digits: a classifier trained on them does better on real digits, while the set looks less like the real one. No privacy cost (it happens after the release); the privacy statement says it was done.");
            }
            let busy = self.task.is_some() || self.blocked_by_privacy();
            ui.horizontal(|ui| {
                let l = ui.label("Rows:");
                ui.add(egui::DragValue::new(&mut self.rows).range(1..=10_000_000))
                    .labelled_by(l.id);
                dialogs.button(
                    ui,
                    !busy,
                    "Save CSV…",
                    "Sample this many synthetic rows and save them through a dialog",
                    self.csv_purpose,
                    &format!("{name}.csv"),
                );
                if !self.standalone {
                    dialogs.button(
                    ui,
                    !busy,
                    "Save model…",
                    "The released generator with its privacy statement: anyone can sample from it with `dpsynth sample`. It holds no training rows, critic or encoder.",
                    self.model_purpose,
                    &format!("{name}.dpsynth"),
                );
                }
            });
            ui.horizontal(|ui| {
                let l = ui.label("or to the CSV file:");
                ui.add(egui::TextEdit::singleline(&mut self.path).desired_width(360.0))
                    .labelled_by(l.id);
                if ui.add_enabled(!busy, egui::Button::new("Export CSV")).clicked() {
                    let out = PathBuf::from(self.path.trim());
                    if out.exists() && self.replace.as_ref() != Some(&out) {
                        self.msg = Some(format!(
                            "{} already exists: press Export CSV again to replace it, or change the name",
                            out.display()
                        ));
                        self.replace = Some(out);
                    } else {
                        self.replace = None;
                        self.start(model, &out, ui.ctx());
                    }
                }
                if self.task.is_some() {
                    crate::gui::busy::spinner(ui);
                }
            });
            if !self.standalone {
                ui.label(format!("released model: {}", model.display()));
            }
        });
    }
}

/// What keeping rows by the model's rules changed, for the export's message: each column
/// whose share moved by more than [`crate::data::rules::MOVED`] between the rows drawn and those kept.
fn moved_note(moved: &[crate::data::rules::Moved]) -> String {
    if moved.is_empty() {
        return String::new();
    }
    let each: Vec<String> = moved.iter().map(|m| m.to_string()).collect();
    format!(
        ". Keeping rows by the rules moved {} column(s): {}",
        moved.len(),
        each.join("; ")
    )
}
