//! Runs kept on disk beside their models (`<model>.run.json`): listed again after a file
//! switch or a restart, exported from Results, deleted with their files.

use std::path::{Path, PathBuf};

use eframe::egui;

use super::{EvalState, ResultsPanel};
use crate::data::schema::Schema;

use crate::job::run_store::{self, RunRecord as KeptRun};

/// A run kept on disk for a data file, read off the UI thread (the loader reads them with
/// the file): its record, its model's statement, and scores kept from before.
pub struct Found {
    model: PathBuf,
    run: KeptRun,
    statement: crate::job::PrivacyStatement,
    stored: Option<crate::job::evaluation::Evaluated>,
}

/// The runs kept for the file at `data`, oldest first: reads every record and model
/// header (never the weights), so call it on a worker.
pub fn find(data: &Path) -> Vec<Found> {
    run_store::list(&run_store::models_dir(), Some(data))
        .into_iter()
        .filter_map(|k| {
            let statement = crate::job::services::read_statement(&k.model).ok()?;
            // Scores computed before on exactly these files and settings show at once.
            let stored = k.record.schema.as_ref().and_then(|schema| {
                let key = crate::job::report_store::ReportKey::new(&k.model, data, schema, None)?;
                crate::job::report_store::load(&k.model, &key)
            });
            Some(Found {
                model: k.model,
                run: k.record,
                statement,
                stored,
            })
        })
        .collect()
}

impl ResultsPanel {
    /// Lists the runs [`find`] found for the open file (newest last), to be evaluated
    /// when shown.
    pub fn restore(&mut self, found: Vec<Found>) {
        for f in found {
            if self.runs.iter().any(|x| x.model.as_ref() == Some(&f.model)) {
                continue;
            }
            self.next_config = f.run.config;
            let state = match f.stored {
                Some(ev) => EvalState::Done(Box::new(ev)),
                None => EvalState::Kept,
            };
            self.push(f.run.title, f.statement, state);
            if let Some(last) = self.runs.last_mut() {
                last.model = Some(f.model);
                last.schema = f.run.schema;
            }
        }
    }

    /// Keeps a finished run's record beside its model (best effort: a run that cannot be
    /// kept is still shown now).
    pub(super) fn keep(&mut self, title: &str, model: &Path, data: &Path, schema: &Schema) {
        let r = KeptRun {
            title: title.to_string(),
            data: data.to_path_buf(),
            config: self.next_config.clone(),
            schema: Some(schema.clone()),
        };
        let _ = run_store::keep(model, &r);
        if let Some(last) = self.runs.last_mut() {
            last.model = Some(model.to_path_buf());
            last.schema = Some(schema.clone());
        }
    }

    /// Deletes the selected run's model and record, and forgets the run.
    pub(super) fn delete_selected(&mut self) -> Result<(), String> {
        let Some(run) = self.runs.get(self.selected) else {
            return Ok(());
        };
        if let Some(m) = &run.model {
            run_store::delete(m)?;
        }
        let gone = self.selected;
        let model = run.model.clone();
        // A boosted model's two entries go together.
        if model.is_some() {
            self.runs.retain(|r| r.model != model);
        } else {
            self.runs.remove(gone);
        }
        for r in &mut self.runs {
            r.before = None;
        }
        self.selected = self.selected.min(self.runs.len().saturating_sub(1));
        Ok(())
    }

    /// Writes the selected run's rows or copies its model to `path` (a save dialog's
    /// answer).
    pub fn export_to(
        &mut self,
        purpose: crate::gui::dialogs::Purpose,
        path: &Path,
        ctx: &egui::Context,
    ) {
        let model = self.runs.get(self.selected).and_then(|r| r.model.clone());
        let export = self.export_view();
        match model {
            Some(m) => export.export_to(purpose, &m, path, ctx),
            None => export.msg = Some("the selected run has no model file to export".into()),
        }
    }

    fn export_view(&mut self) -> &mut crate::gui::train::export::ExportView {
        self.export
            .get_or_insert_with(crate::gui::train::export::ExportView::for_results)
    }

    /// The selected run's export (every run with a model file, kept from before or not).
    pub(super) fn export_ui(
        &mut self,
        ui: &mut egui::Ui,
        dialogs: &mut crate::gui::dialogs::Dialogs,
    ) {
        let Some(run) = self.runs.get(self.selected) else {
            return;
        };
        let Some(model) = run.model.clone() else {
            return;
        };
        let private = run.statement.epsilon.is_some();
        let several = self.runs.len() > 1;
        egui::CollapsingHeader::new("Export this run (synthetic CSV, released model)")
            .id_salt("results-export")
            .show(ui, |ui| {
                if several {
                    ui.label("Pick the run to release before you look at its scores: picking the best-scoring run uses the real rows in a way the budget does not count.");
                }
                self.export_view().ui(ui, &model, private, dialogs);
            });
    }
}
