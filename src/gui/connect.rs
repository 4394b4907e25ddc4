//! "Connect…": a table a Ballista cluster holds, or a CSV or Parquet file too large to open,
//! read in parts (`dpsynth train --stream`), opened as a connection.
//!
//! Its rows never come into the window: the engine counts groups of columns, or a scan
//! counts them part by part, and dpsynth adds the noise (`data::engine`, `data::stream`). So the window cannot guess the columns' kinds and
//! domains from the rows, and the connection needs the table's public schema beside its
//! address — the same two things `dpsynth train --data ballista://… --schema …` takes.

use std::path::PathBuf;

use eframe::egui;

use super::dialogs::{Dialogs, Purpose};

/// The connection being typed; `open` while the window shows it.
#[derive(Default)]
pub struct ConnectDialog {
    pub open: bool,
    url: String,
    schema: String,
}

/// What the user asked for: the table's address and its schema file.
pub struct Connect {
    pub url: PathBuf,
    pub schema: PathBuf,
}

impl ConnectDialog {
    /// Shows the dialog, with `url` in its address field when one was typed elsewhere.
    pub fn show(&mut self, url: Option<&str>) {
        if let Some(u) = url {
            self.url = u.to_string();
        } else if self.url.is_empty() {
            self.url = format!(
                "ballista://localhost:{}/",
                crate::data::engine::DEFAULT_PORT
            );
        }
        self.open = true;
    }

    /// A schema file chosen in the file dialog.
    pub fn schema_chosen(&mut self, path: &std::path::Path) {
        self.schema = path.display().to_string();
    }

    /// The address and schema of the last connection, to connect again with another
    /// schema.
    pub fn remember(&mut self, url: &std::path::Path, schema: &std::path::Path) {
        self.url = url.display().to_string();
        self.schema = schema.display().to_string();
    }

    pub fn ui(&mut self, ctx: &egui::Context, dialogs: &mut Dialogs) -> Option<Connect> {
        if !self.open {
            return None;
        }
        let mut open = self.open;
        let mut asked = None;
        egui::Window::new("Connect to a table that stays where it is")
            .open(&mut open)
            .default_width(520.0)
            .collapsible(false)
            // Below the toolbar, so the tabs and the path field stay in view.
            .pivot(egui::Align2::CENTER_TOP)
            .default_pos([ctx.content_rect().center().x, 90.0])
            .show(ctx, |ui| {
                ui.label("A table an Apache DataFusion Ballista cluster holds (Parquet or CSV on its storage), or a CSV or Parquet file on this machine too large to open, read in parts. Its rows never come into memory at once: the engine, or a scan of the file, counts groups of columns; dpsynth adds the noise. MST and AIM train this way.");
                // Shown whatever is typed, so the fields do not move under the cursor.
                if !crate::data::engine::AVAILABLE {
                    ui.colored_label(
                        ui.visuals().warn_fg_color,
                        format!(
                            "{} — a file's path works in this build",
                            crate::data::engine::ABSENT
                        ),
                    );
                }
                egui::Grid::new("connect").num_columns(2).show(ui, |ui| {
                    let l = ui.label("Table:");
                    ui.add(egui::TextEdit::singleline(&mut self.url).desired_width(380.0))
                        .labelled_by(l.id)
                        .on_hover_text("ballista://HOST:PORT/PATH (a cluster's scheduler), ballista://local/PATH (a scheduler and an executor in this process), or the path of a CSV or Parquet file to read in parts");
                    ui.end_row();
                    let l = ui.label("Public schema:");
                    ui.horizontal(|ui| {
                        ui.add(egui::TextEdit::singleline(&mut self.schema).desired_width(280.0))
                            .labelled_by(l.id)
                            .on_hover_text("Every column's kind and public domain (bounds or categories): nothing is read off the rows. `dpsynth inspect` on a sample of the table writes one to edit.");
                        dialogs.button(
                            ui,
                            true,
                            "Choose…",
                            "Pick the schema file (JSON)",
                            Purpose::EngineSchema,
                            "",
                        );
                    });
                    ui.end_row();
                });
                let ready = !self.url.trim().is_empty() && !self.schema.trim().is_empty();
                if ui
                    .add_enabled(ready, egui::Button::new("Connect"))
                    .on_disabled_hover_text("Give the table's address (or the file's path) and its schema file")
                    .clicked()
                {
                    asked = Some(Connect {
                        url: PathBuf::from(self.url.trim()),
                        schema: PathBuf::from(self.schema.trim()),
                    });
                }
            });
        self.open = open && asked.is_none();
        asked
    }
}
