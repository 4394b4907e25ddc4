//! Native open/save dialogs, run off the UI thread.
//!
//! On Linux rfd talks to the desktop portal over D-Bus (or spawns zenity); a portal that
//! accepts the request but never answers would block forever. The dialog therefore runs in
//! its own thread and the window keeps drawing; the user can stop waiting for it, and every
//! dialog has a typed-path alternative in the panel that asked.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, TryRecvError, channel};
use std::time::{Duration, Instant};

use eframe::egui;

/// What a dialog was opened for: the window routes its answer by this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    OpenData,
    LoadSchema,
    SaveSchema,
    ExportCsv,
    SaveModel,
    SaveReport,
}

impl Purpose {
    fn title(self) -> &'static str {
        match self {
            Purpose::OpenData => "Open a CSV file or MNIST IDX file",
            Purpose::LoadSchema => "Load a schema (JSON)",
            Purpose::SaveSchema => "Save the schema (JSON)",
            Purpose::ExportCsv => "Export synthetic data (CSV)",
            Purpose::SaveModel => "Save the released model",
            Purpose::SaveReport => "Save the HTML report",
        }
    }

    fn filter(self) -> (&'static str, &'static [&'static str]) {
        match self {
            Purpose::OpenData => (
                "CSV or MNIST IDX",
                &["csv", "tsv", "txt", "gz", "idx3-ubyte", "idx1-ubyte"],
            ),
            Purpose::LoadSchema | Purpose::SaveSchema => ("Schema", &["json"]),
            Purpose::ExportCsv => ("CSV", &["csv"]),
            Purpose::SaveModel => ("dpsynth model", &["dpsynth"]),
            Purpose::SaveReport => ("HTML", &["html"]),
        }
    }

    fn saves(self) -> bool {
        !matches!(self, Purpose::OpenData | Purpose::LoadSchema)
    }
}

/// At most one dialog at a time.
#[derive(Default)]
pub struct Dialogs {
    pending: Option<(Purpose, Receiver<Option<PathBuf>>)>,
    opened: Option<Instant>,
    /// Shown when a dialog came back empty at once: no dialog could be shown at all.
    note: Option<String>,
    /// The answer to give the next request instead of showing a dialog.
    scripted: Option<PathBuf>,
}

/// Faster than any person can cancel a dialog: an empty answer this quick means none
/// was shown (rfd returns "cancelled" when there is no portal and no zenity).
const TOO_QUICK: Duration = Duration::from_millis(400);

impl Dialogs {
    /// True while a dialog is open (buttons that would open another are disabled).
    pub fn busy(&self) -> bool {
        self.pending.is_some()
    }

    /// Opens a dialog in a worker thread. `file_name` is the suggested name of a save.
    pub fn request(
        &mut self,
        purpose: Purpose,
        dir: Option<PathBuf>,
        file_name: &str,
        ctx: &egui::Context,
    ) {
        if self.busy() {
            return;
        }
        let (tx, rx) = channel();
        if let Some(p) = self.scripted.take() {
            let _ = tx.send(Some(p));
            self.pending = Some((purpose, rx));
            self.opened = None;
            return;
        }
        let ctx = ctx.clone();
        let file_name = file_name.to_string();
        let spawned = std::thread::Builder::new()
            .name("file-dialog".into())
            .spawn(move || {
                let (label, exts) = purpose.filter();
                let mut d = rfd::AsyncFileDialog::new()
                    .set_title(purpose.title())
                    .add_filter(label, exts)
                    .add_filter("All files", &["*"]);
                if let Some(dir) = dir.filter(|d| d.is_dir()) {
                    d = d.set_directory(dir);
                }
                let picked = if purpose.saves() {
                    pollster::block_on(d.set_file_name(file_name).save_file())
                } else {
                    pollster::block_on(d.pick_file())
                };
                let _ = tx.send(picked.map(|h| h.path().to_path_buf()));
                ctx.request_repaint();
            });
        if spawned.is_ok() {
            self.pending = Some((purpose, rx));
            self.opened = Some(Instant::now());
            self.note = None;
        }
    }

    /// A button that opens the dialog for `purpose` (disabled while one is open or while
    /// `enabled` is false). `file_name` is a save's suggested name.
    pub fn button(
        &mut self,
        ui: &mut egui::Ui,
        enabled: bool,
        label: &str,
        hover: &str,
        purpose: Purpose,
        file_name: &str,
    ) {
        let free = enabled && !self.busy();
        if ui
            .add_enabled(free, egui::Button::new(label))
            .on_hover_text(hover)
            .clicked()
        {
            self.request(purpose, None, file_name, ui.ctx());
        }
    }

    /// Answers the next dialog with `path` without showing one (tests drive the window's
    /// save and open paths this way).
    pub fn script_answer(&mut self, path: PathBuf) {
        self.scripted = Some(path);
    }

    /// The chosen path, once; `None` while waiting or after a cancel.
    pub fn poll(&mut self) -> Option<(Purpose, PathBuf)> {
        let (purpose, rx) = self.pending.as_ref()?;
        match rx.try_recv() {
            Err(TryRecvError::Empty) => None,
            Ok(Some(path)) => {
                let p = *purpose;
                self.pending = None;
                Some((p, path))
            }
            Ok(None) | Err(TryRecvError::Disconnected) => {
                self.pending = None;
                if self.opened.is_some_and(|t| t.elapsed() < TOO_QUICK) {
                    self.note = Some(
                        "No file dialog could be shown (this desktop has neither xdg-desktop-portal nor zenity): type the path into the field instead.".into(),
                    );
                }
                None
            }
        }
    }

    /// A line saying a dialog is open, with a way to stop waiting for it (a broken desktop
    /// portal can leave it open forever).
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        if let Some(n) = &self.note {
            let mut close = false;
            ui.horizontal(|ui| {
                ui.colored_label(ui.visuals().warn_fg_color, n);
                close = ui.small_button("OK").clicked();
            });
            if close {
                self.note = None;
            }
        }
        let Some(purpose) = self.pending.as_ref().map(|(p, _)| *p) else {
            return;
        };
        ui.horizontal(|ui| {
            ui.spinner();
            ui.label(format!(
                "A file dialog is open: {}. If none appeared, type the path instead.",
                purpose.title()
            ));
            if ui.button("Stop waiting").clicked() {
                self.pending = None;
            }
        });
    }
}
