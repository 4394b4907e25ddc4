//! A released model opened in the window (`.dpsynth`, by Open, a typed path, a drop or
//! the recent list): its privacy statement and columns, and any number of rows sampled
//! from it and exported — no private data needed, and nothing charged (sampling is
//! post-processing).

use std::path::{Path, PathBuf};

use eframe::egui;

use super::dialogs::{Dialogs, Purpose};
use super::train::export::ExportView;
use crate::job::services::{ModelSummary, read_model};

pub(crate) struct ModelView {
    path: PathBuf,
    model: Model,
    export: ExportView,
    open: bool,
}

/// The model file, read on a worker: a large model takes frames to load.
enum Model {
    Reading(std::sync::mpsc::Receiver<Result<ModelSummary, String>>),
    Read(Result<ModelSummary, String>),
}

impl ModelView {
    pub fn open(path: &Path, ctx: &egui::Context) -> Self {
        let (tx, rx) = std::sync::mpsc::channel();
        let (p, ctx) = (path.to_path_buf(), ctx.clone());
        std::thread::spawn(move || {
            crate::job::priority::yield_to_window();
            let _ = tx.send(read_model(&p).map_err(|e| e.to_string()));
            ctx.request_repaint();
        });
        Self {
            path: path.to_path_buf(),
            model: Model::Reading(rx),
            export: ExportView::standalone(),
            open: true,
        }
    }

    /// Whether the user closed it.
    pub fn closed(&self) -> bool {
        !self.open
    }

    /// A save dialog's answer for this model's rows.
    pub fn export_to(&mut self, purpose: Purpose, path: &Path, ctx: &egui::Context) {
        let model = self.path.clone();
        self.export.export_to(purpose, &model, path, ctx);
    }

    pub fn ui(&mut self, ctx: &egui::Context, dialogs: &mut Dialogs) {
        if let Model::Reading(rx) = &self.model {
            match rx.try_recv() {
                Ok(m) => self.model = Model::Read(m),
                Err(std::sync::mpsc::TryRecvError::Empty) => {}
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    self.model = Model::Read(Err("the model reader stopped unexpectedly".into()));
                }
            }
        }
        let mut open = self.open;
        let title = format!(
            "Released model: {}",
            self.path
                .file_name()
                .map_or(String::new(), |n| n.to_string_lossy().into_owned())
        );
        egui::Window::new(title)
            .open(&mut open)
            .default_width(560.0)
            // Right of centre and below the toolbar, so the path field and tabs stay free.
            .default_pos([(ctx.content_rect().right() - 600.0).max(0.0), 110.0])
            .vscroll(true)
            .show(ctx, |ui| match &self.model {
                Model::Reading(_) => {
                    ui.horizontal(|ui| {
                        crate::gui::busy::spinner(ui);
                        ui.label("reading the model…");
                    });
                }
                Model::Read(Err(e)) => {
                    ui.colored_label(ui.visuals().error_fg_color, e);
                }
                Model::Read(Ok(m)) => {
                    ui.label(format!("method: {} · preset: {}", m.method, m.preset));
                    super::results::statement_heading(ui, &m.statement);
                    let curve = crate::job::risk::RiskCurve::of_statement(&m.statement, None);
                    ui.label(&curve.sentence);
                    let cols: Vec<&str> = m
                        .schema
                        .columns
                        .iter()
                        .filter(|c| c.kind != crate::data::schema::Kind::Ignored)
                        .map(|c| c.name.as_str())
                        .collect();
                    match m.image_side {
                        // 785 column names say less than what they are.
                        Some(side) => ui.label(format!(
                            "{} columns: {side}×{side} images ({} pixels){}",
                            cols.len(),
                            side * side,
                            if cols.len() > side * side { " and their label" } else { "" }
                        )),
                        None => ui.label(format!("{} columns: {}", cols.len(), cols.join(", "))),
                    };
                    ui.label(
                        "Sampling reads only this file: any number of rows, no private data, nothing charged.",
                    );
                    let private = m.statement.epsilon.is_some();
                    let path = self.path.clone();
                    self.export.images = m.image_side.is_some();
                    self.export.ui(ui, &path, private, dialogs);
                }
            });
        self.open = open;
    }
}
