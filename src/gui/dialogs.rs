//! Native open/save dialogs, run off the UI thread.
//!
//! On Linux rfd talks to the desktop portal over D-Bus (or spawns zenity); a portal that
//! accepts the request but never answers would block forever. The dialog therefore runs in
//! its own thread and the window keeps drawing; the user can stop waiting for it.
//!
//! Where no system dialog can be shown (no portal, no zenity: a plain X server, a remote
//! session), every open and save falls back to the window's own path prompt: a field
//! prefilled with the folder and suggested name, which asks before replacing a file. Its
//! answer goes where the dialog's would, so every action works without a system dialog.

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
    /// The public schema of a table a query engine holds (the connect dialog).
    EngineSchema,
    ExportCsv,
    SaveModel,
    SaveReport,
    /// Rows of a model opened on its own.
    SampleModel,
    /// Rows and the model of a run selected in Results.
    ExportRunCsv,
    SaveRunModel,
    /// A child table linked to the open one, and its public schema.
    OpenChild,
    ChildSchema,
    /// The child table's schema as its column editor shows it.
    SaveChildSchema,
}

impl Purpose {
    fn title(self) -> &'static str {
        match self {
            Purpose::OpenData => {
                "Open a table (CSV, Excel, ODS, Parquet, SPSS, Stata), MNIST digits or a released model"
            }
            Purpose::LoadSchema => "Load a schema (JSON)",
            Purpose::EngineSchema => "The engine table's public schema (JSON)",
            Purpose::SaveSchema => "Save the schema (JSON)",
            Purpose::ExportCsv => "Export synthetic data (CSV)",
            Purpose::SaveModel => "Save the released model",
            Purpose::SaveReport => "Save the HTML report",
            Purpose::SampleModel => "Export rows of the opened model (CSV)",
            Purpose::ExportRunCsv => "Export the selected run's synthetic data (CSV)",
            Purpose::SaveRunModel => "Save the selected run's released model",
            Purpose::OpenChild => "Open the child table linked to this one",
            Purpose::ChildSchema => "The child table's public schema (JSON)",
            Purpose::SaveChildSchema => "Save the child table's schema (JSON)",
        }
    }

    fn filter(self) -> (&'static str, Vec<&'static str>) {
        match self {
            Purpose::OpenData => (
                "Tables (CSV, Excel, ODS, Parquet, Arrow, SPSS, Stata), MNIST IDX or dpsynth model",
                crate::data::source::table_extensions()
                    .chain(["gz", "idx3-ubyte", "idx1-ubyte", "dpsynth"])
                    .collect(),
            ),
            Purpose::LoadSchema
            | Purpose::SaveSchema
            | Purpose::EngineSchema
            | Purpose::ChildSchema
            | Purpose::SaveChildSchema => ("Schema", vec!["json"]),
            Purpose::OpenChild => (
                "Tables (CSV, Excel, ODS, Parquet, Arrow, SPSS, Stata)",
                crate::data::source::table_extensions().collect(),
            ),
            Purpose::ExportCsv | Purpose::SampleModel | Purpose::ExportRunCsv => {
                ("CSV", vec!["csv"])
            }
            Purpose::SaveModel | Purpose::SaveRunModel => ("dpsynth model", vec!["dpsynth"]),
            Purpose::SaveReport => ("HTML", vec!["html"]),
        }
    }

    fn saves(self) -> bool {
        !matches!(
            self,
            Purpose::OpenData
                | Purpose::LoadSchema
                | Purpose::EngineSchema
                | Purpose::OpenChild
                | Purpose::ChildSchema
        )
    }
}

/// The window's own path prompt, standing in for a system dialog.
struct Prompt {
    purpose: Purpose,
    text: String,
    /// A save to an existing file, asked about: the path it was asked for.
    replace: Option<PathBuf>,
    error: Option<String>,
    /// The field took the keyboard when the prompt opened (what is typed after Ctrl+O
    /// lands in it).
    focused: bool,
}

/// At most one dialog at a time.
#[derive(Default)]
pub struct Dialogs {
    pending: Option<(Purpose, Receiver<Option<PathBuf>>)>,
    prompt: Option<Prompt>,
    /// The prompt's answer, for the next poll.
    answered: Option<(Purpose, PathBuf)>,
    /// No system dialog could be shown: use the prompt from now on.
    no_system_dialog: bool,
    /// The last request's folder and suggested name (to prefill the prompt).
    last: Option<(Option<PathBuf>, String)>,
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
        self.pending.is_some() || self.prompt.is_some()
    }

    /// Uses the window's path prompt for every open and save from now on (for desktops
    /// known to have no file dialog, and for tests of that path).
    pub fn use_path_prompt(&mut self) {
        self.no_system_dialog = true;
    }

    fn open_prompt(&mut self, purpose: Purpose) {
        let (dir, name) = self.last.clone().unwrap_or_default();
        let dir = dir
            .filter(|d| d.is_dir())
            .unwrap_or_else(crate::job::paths::data_dir);
        let text = if purpose.saves() {
            dir.join(name).display().to_string()
        } else {
            format!("{}{}", dir.display(), std::path::MAIN_SEPARATOR)
        };
        self.prompt = Some(Prompt {
            purpose,
            text,
            replace: None,
            error: None,
            focused: false,
        });
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
        self.last = Some((dir.clone(), file_name.to_string()));
        let (tx, rx) = channel();
        if self.no_system_dialog && self.scripted.is_none() {
            self.open_prompt(purpose);
            ctx.request_repaint();
            return;
        }
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
                    .add_filter(label, &exts)
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
        if let Some(a) = self.answered.take() {
            return Some(a);
        }
        let (purpose, rx) = self.pending.as_ref()?;
        match rx.try_recv() {
            Err(TryRecvError::Empty) => None,
            Ok(Some(path)) => {
                let p = *purpose;
                self.pending = None;
                Some((p, path))
            }
            Ok(None) | Err(TryRecvError::Disconnected) => {
                let p = *purpose;
                self.pending = None;
                if self.opened.is_some_and(|t| t.elapsed() < TOO_QUICK) {
                    self.note = Some(
                        "No system file dialog could be shown (this desktop has neither xdg-desktop-portal nor zenity): dpsynth asks for paths in the window instead.".into(),
                    );
                    self.no_system_dialog = true;
                    self.open_prompt(p);
                }
                None
            }
        }
    }

    /// A line saying a dialog is open, with a way to stop waiting for it (a broken desktop
    /// portal can leave it open forever).
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        self.prompt_ui(ui);
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
            crate::gui::busy::spinner(ui);
            ui.label(format!(
                "A file dialog is open: {}. If none appeared, type the path instead.",
                purpose.title()
            ));
            if ui.button("Stop waiting").clicked() {
                self.pending = None;
            }
            if ui.button("Type the path instead").clicked() {
                self.pending = None;
                self.open_prompt(purpose);
            }
        });
    }

    /// The path prompt: a field, OK and Cancel; a save to an existing file asks first, an
    /// open of a missing file says so.
    fn prompt_ui(&mut self, ui: &mut egui::Ui) {
        let Some(p) = &mut self.prompt else { return };
        let mut done: Option<Option<PathBuf>> = None;
        ui.group(|ui| {
            ui.horizontal(|ui| {
                let l = ui.strong(format!("{}:", p.purpose.title()));
                let r = ui
                    .add(
                        egui::TextEdit::singleline(&mut p.text)
                            .desired_width(ui.available_width().clamp(200.0, 560.0) - 140.0),
                    )
                    .labelled_by(l.id);
                if !p.focused {
                    r.request_focus();
                    p.focused = true;
                }
                if r.changed() {
                    p.replace = None;
                    p.error = None;
                }
                let enter = r.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
                if ui.button("OK").clicked() || enter {
                    let path = PathBuf::from(p.text.trim());
                    if p.text.trim().is_empty()
                        || p.text.trim().ends_with(std::path::MAIN_SEPARATOR)
                    {
                        p.error = Some("type a file name, not only a folder".into());
                    } else if !p.purpose.saves() && !path.is_file() {
                        p.error = Some(format!("there is no file at {}", path.display()));
                    } else if p.purpose.saves()
                        && path.exists()
                        && p.replace.as_ref() != Some(&path)
                    {
                        p.replace = Some(path);
                    } else {
                        done = Some(Some(path));
                    }
                }
                if ui.button("Cancel").clicked() {
                    done = Some(None);
                }
            });
            if let Some(r) = &p.replace {
                ui.colored_label(
                    ui.visuals().warn_fg_color,
                    format!(
                        "{} exists: press OK again to replace it, or change the name.",
                        r.display()
                    ),
                );
            }
            if let Some(e) = &p.error {
                ui.colored_label(ui.visuals().error_fg_color, e);
            }
        });
        if let Some(answer) = done {
            let purpose = p.purpose;
            self.prompt = None;
            if let Some(path) = answer {
                if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    // A typed folder that does not exist yet is made, as a dialog would.
                    if purpose.saves() {
                        let _ = std::fs::create_dir_all(d);
                    }
                }
                self.answered = Some((purpose, path));
                ui.ctx().request_repaint();
            }
        }
    }
}
