//! The data view: each column's kind (editable), domain (editable bounds or category
//! list), provenance badge and warnings; schema save/load (the CLI's JSON); and a preview
//! of the rows that only lays out the rows on screen, so 100k+ rows scroll smoothly.

use std::path::Path;

use eframe::egui;

mod bounds;
mod columns;
mod facts;
mod rules;
mod summary;
mod target;

pub use summary::ColumnStats;
use summary::*;

use crate::data::schema::{Kind, Provenance, Schema};
use crate::gui::dialogs::{Dialogs, Purpose};
use crate::gui::{Content, Loaded};

/// State of the data view.
#[derive(Default)]
pub struct DataPanel {
    editing: Option<super::category_editor::CategoryEdit>,
    message: Option<Result<String, String>>,
    /// Which bounds of a data-read range the user has typed ([lower, upper]): the range
    /// becomes the user's only when both are, so nudging one leaves the other an exact
    /// data extreme no longer.
    typed: std::collections::HashMap<String, [bool; 2]>,
    /// The text of a date/time column's bound fields while the user types ([lower,
    /// upper]); a field's text becomes the bound once it reads as a date.
    date_text: std::collections::HashMap<String, [String; 2]>,
    /// The open workbook's sheets, read once per file (`None`: not a workbook).
    sheets: Option<(std::path::PathBuf, Vec<String>)>,
    /// A sheet the user picked: the window opens it after this frame.
    open_request: Option<std::path::PathBuf>,
    /// Rules between columns, as public facts.
    rules: rules::RulesEditor,
    /// The text of a number column's point-mass field while the user types.
    point_text: std::collections::HashMap<String, String>,
    /// The text of a number column's empty bound fields while its domain is the data's.
    bound_text: std::collections::HashMap<String, [String; 2]>,
    /// Private estimation is not offered (a linked pair's tables): no "Estimate
    /// privately" button, and the prompt says why.
    no_estimates: bool,
    /// The linked child table's column editor and the per-column facts it shows.
    child_editor: Option<Box<DataPanel>>,
    child_stats: Option<(std::path::PathBuf, Vec<ColumnStats>)>,
    /// The blanks and precision the user picked per column.
    stated: std::collections::HashMap<String, facts::Stated>,
    /// A child table linked to this one.
    pub child: crate::gui::linked::ChildSection,
}

impl DataPanel {
    /// A choice of sheet when the open file is a workbook with more than one.
    fn sheet_picker(&mut self, ui: &mut egui::Ui, path: &Path) {
        use crate::data::source::{Format, Source};
        let src = Source::parse(path);
        if self.sheets.as_ref().is_none_or(|(p, _)| *p != src.file) {
            let names = if crate::data::source::detect(&src.file) == Format::Workbook {
                crate::data::workbook::sheet_names(&src.file).unwrap_or_default()
            } else {
                Vec::new()
            };
            self.sheets = Some((src.file.clone(), names));
        }
        let Some((_, names)) = &self.sheets else {
            return;
        };
        if names.len() < 2 {
            return;
        }
        let current = src
            .sheet
            .clone()
            .unwrap_or_else(|| "(first with data)".into());
        let mut picked = None;
        egui::ComboBox::from_label("sheet")
            .selected_text(&current)
            .show_ui(ui, |ui| {
                for n in names {
                    if ui.selectable_label(*n == current, n).clicked() && *n != current {
                        picked = Some(n.clone());
                    }
                }
            })
            .response
            .on_hover_text(
                "Which sheet of the workbook is the table (the CLI's --data 'FILE#SHEET')",
            );
        if let Some(sheet) = picked {
            let next = Source {
                sheet: Some(sheet),
                header_row: src.header_row,
                ..src
            };
            self.open_request = Some(next.to_path());
        }
    }

    /// Says that the column settings are the user's own from last time.
    pub fn restored(&mut self) {
        self.message = Some(Ok("Your column settings for this file from last time are back. \"Guess again\" starts over from the file.".into()));
    }

    /// Says that the kinds and domains are the bundled sample's public ones.
    pub fn from_sample_schema(&mut self, file: &Path) {
        self.message = Some(Ok(format!(
            "Kinds and domains come from this sample's public schema ({}: the codebook's, not the rows'), so the guarantee covers them. \"Guess again\" reads them from the rows instead, as for a file of your own.",
            file.display()
        )));
    }

    /// The table's size, the sheet, and the schema buttons (save, load, guess again).
    /// True when the schema changed.
    fn table_header(
        &mut self,
        ui: &mut egui::Ui,
        file: &Path,
        (table, schema, notes): (&crate::data::Table, &mut Schema, &mut Vec<(String, String)>),
        dialogs: &mut Dialogs,
    ) -> bool {
        let path = file.display().to_string();
        let mut changed = false;
        ui.horizontal(|ui| {
            ui.label(format!(
                "{path}: {} rows × {} columns",
                table.n_rows,
                table.n_cols()
            ));
            self.sheet_picker(ui, file);
            ui.separator();
            dialogs.button(
                ui,
                true,
                "Save schema…",
                "The kinds and domains as JSON, the same file `dpsynth train --schema` reads",
                Purpose::SaveSchema,
                "schema.json",
            );
            dialogs.button(
                ui,
                true,
                "Load schema…",
                "Replace the kinds and domains with a saved schema",
                Purpose::LoadSchema,
                "",
            );
            if ui
                .button("Guess again")
                .on_hover_text("Forget the kinds and domains set for this file and guess them from the data again")
                .clicked()
            {
                match crate::data::infer::infer_schema(table) {
                    Ok(inf) => {
                        *schema = inf.schema;
                        *notes = inf.notes;
                        self.typed.clear();
                        self.date_text.clear();
                        self.point_text.clear();
                        self.message = Some(Ok("guessed the kinds and domains from the file again".into()));
                        changed = true;
                    }
                    Err(e) => self.message = Some(Err(e.to_string())),
                }
            }
        });
        changed
    }

    /// What the guarantee does not cover yet, each with the one click that covers it:
    /// domains read off the rows, a codebook not called public, kinds guessed. True when
    /// the schema changed.
    fn coverage_prompts(&mut self, ui: &mut egui::Ui, schema: &mut Schema) -> bool {
        let mut changed = false;
        // Marked columns are estimated privately when a run trains: they are on
        // their way to being covered, not "read off the data" any more.
        let marked = crate::data::estimate::marked(schema).len();
        if marked > 0 {
            let what = if marked == 1 {
                "1 column domain will be".to_string()
            } else {
                format!("{marked} column domains will be")
            };
            ui.label(format!("{what} estimated privately when a private run trains (a share of its ε; the cost preview in tab 2 says what the estimate will keep)."));
        }
        let from_codebook = schema.unconfirmed_codebook().len();
        if from_codebook > 0 {
            ui.horizontal_wrapped(|ui| {
                ui.colored_label(
                    ui.visuals().warn_fg_color,
                    format!("{from_codebook} columns take their categories from the file's codebook (its value labels, every label whether a row uses it or not). If the codebook is published (a survey's documentation), say so and they are covered."),
                );
                if ui
                    .button("The file's codebook is public")
                    .on_hover_text("The value labels are a public fact, not something these rows decided: the kinds and categories of those columns are then covered by the guarantee")
                    .clicked()
                {
                    let n = schema.confirm_codebook();
                    self.message = Some(Ok(format!("{n} columns now use the public codebook")));
                    changed = true;
                }
            });
        }
        let np = crate::data::estimate::uncovered(schema).len();
        if np > 0 {
            ui.horizontal_wrapped(|ui| {
                ui.colored_label(
                    ui.visuals().warn_fg_color,
                    if self.no_estimates {
                        format!("{np} column domains are read off the data and not protected: replace them with public values (type both bounds, or a category list). Private estimation is not offered for linked tables.")
                    } else {
                        format!("{np} column domains are read off the data and not protected: replace them with public values (type both bounds, or a category list), or estimate them privately.")
                    },
                );
                if !self.no_estimates
                    && ui
                        .button("Estimate all privately")
                    .on_hover_text("Each private run estimates these domains with noise (a share of its ε, shown in the cost preview) instead of copying the data's values into the model")
                    .clicked()
                {
                    for c in &mut schema.columns {
                        if c.kind != Kind::Ignored && c.provenance == Provenance::FromData {
                            c.provenance = Provenance::ToEstimate;
                        }
                    }
                    changed = true;
                }
            });
        }
        let guessed = schema.non_private_kinds().len();
        if guessed > 0 {
            ui.horizontal_wrapped(|ui| {
                ui.colored_label(
                    ui.visuals().warn_fg_color,
                    format!("{guessed} column kinds were guessed from the rows: one record can change a guess, so the statement will name them as not covered. Set each kind below, or confirm them if they are public (a codebook's)."),
                );
                if ui
                    .button("Kinds are public")
                    .on_hover_text("The kinds and date formats shown are public facts (from a codebook or the data's documentation), not something these rows decided: the guarantee then covers them")
                    .clicked()
                {
                    schema.confirm_kinds();
                    changed = true;
                }
            });
        }
        changed
    }

    /// Draws the view; returns true when the schema changed.
    fn draw(&mut self, ui: &mut egui::Ui, loaded: &mut Loaded, dialogs: &mut Dialogs) -> bool {
        let path = loaded.path.display().to_string();
        match &mut loaded.content {
            Content::Table {
                table,
                schema,
                notes,
                stats,
                ..
            } => {
                let mut changed =
                    self.table_header(ui, &loaded.path, (&**table, schema, notes), dialogs);
                if let Some(m) = &self.message {
                    match m {
                        Ok(m) => ui.label(m),
                        Err(e) => ui.colored_label(ui.visuals().error_fg_color, e),
                    };
                }
                self.no_estimates = loaded.linked.is_some();
                changed |= self.coverage_prompts(ui, schema);
                for (c, n) in notes.iter() {
                    ui.label(format!("note: '{c}' {n}"));
                }
                let half = (ui.available_height() * 0.55).max(160.0);
                egui::ScrollArea::both()
                    .id_salt("columns")
                    .max_height(half)
                    .show(ui, |ui| {
                        changed |= self.columns_ui(ui, table, schema, stats);
                        ui.add_space(6.0);
                        changed |= self.rules.ui(ui, table, schema);
                        changed |= target::target_ui(ui, schema);
                        ui.add_space(6.0);
                        let (editor, stats) = (&mut self.child_editor, &mut self.child_stats);
                        let mut columns = |ui: &mut egui::Ui, c: &mut crate::gui::linked::Child| {
                            child_columns(ui, c, editor, stats);
                        };
                        self.child
                            .ui(ui, table, &mut loaded.linked, dialogs, &mut columns);
                    });
                ui.separator();
                ui.strong("Preview");
                preview_ui(ui, table);
                if super::category_editor::category_window(&mut self.editing, ui.ctx(), schema) {
                    changed = true;
                }
                changed
            }
            Content::Images {
                count,
                side,
                labels,
                texture,
            } => {
                ui.label(format!("{path}: {count} images of {side}×{side} pixels"));
                ui.label(format!("labels: {labels}"));
                ui.label("Images use a fixed public schema (label 0–9, pixels 0–255): nothing to mark. Go on to tab 2.");
                ui.label("The first 100 images:");
                ui.add(egui::Image::new(&*texture).fit_to_exact_size(egui::vec2(420.0, 420.0)));
                false
            }
            Content::Engine {
                schema,
                records,
                schema_path,
            } => {
                engine_ui(ui, &path, schema, *records, schema_path, dialogs);
                if let Some(m) = &self.message {
                    match m {
                        Ok(m) => ui.label(m),
                        Err(e) => ui.colored_label(ui.visuals().error_fg_color, e),
                    };
                }
                false
            }
        }
    }

    /// The column table alone, for a table other than the open one (a linked child):
    /// kinds, domains, exact values, blanks and decimals, without private estimation (not
    /// offered for linked tables). True when the schema changed.
    pub fn column_editor(
        &mut self,
        ui: &mut egui::Ui,
        table: &crate::data::Table,
        schema: &mut Schema,
        stats: &[ColumnStats],
    ) -> bool {
        self.no_estimates = true;
        let mut changed = self.columns_ui(ui, table, schema, stats);
        if super::category_editor::category_window(&mut self.editing, ui.ctx(), schema) {
            changed = true;
        }
        changed
    }

    /// Saves or loads the schema (a dialog's answer). True when the schema changed.
    pub fn schema_file(&mut self, purpose: Purpose, path: &Path, loaded: &mut Loaded) -> bool {
        if let (Purpose::SaveSchema, Content::Engine { schema, .. }) = (purpose, &loaded.content) {
            self.message = Some(
                schema
                    .save(path)
                    .map(|()| format!("saved the schema to {}", path.display()))
                    .map_err(|e| format!("could not save the schema: {e}")),
            );
            return false;
        }
        let Content::Table { table, schema, .. } = &mut loaded.content else {
            return false;
        };
        match purpose {
            Purpose::SaveSchema => {
                self.message = Some(
                    schema
                        .save(path)
                        .map(|()| format!("saved the schema to {}", path.display()))
                        .map_err(|e| format!("could not save the schema: {e}")),
                );
                false
            }
            Purpose::LoadSchema => {
                let loaded = Schema::load(path).and_then(|s| {
                    s.validate()?;
                    s.check_table(table)?;
                    Ok(s)
                });
                match loaded {
                    Ok(s) => {
                        *schema = s;
                        self.message = Some(Ok(format!("loaded the schema {}", path.display())));
                        self.date_text.clear();
                        self.point_text.clear();
                        true
                    }
                    Err(e) => {
                        self.message = Some(Err(format!(
                            "{} does not fit this table: {e}",
                            path.display()
                        )));
                        false
                    }
                }
            }
            _ => false,
        }
    }
}

/// A table a query engine holds, or a file read in parts: where it is, how many records
/// the engine (or the survey) counted, and
/// the public schema it trains under (read-only here: its rows are not here to check an
/// edit against, so another schema file is loaded and checked by the engine).
fn engine_ui(
    ui: &mut egui::Ui,
    path: &str,
    schema: &Schema,
    records: usize,
    schema_path: &Path,
    dialogs: &mut Dialogs,
) {
    if crate::job::workspace::streamed(Path::new(path)) {
        ui.label(format!("{path}: {records} records, read in parts"));
        ui.label("Its rows are never held in memory at once, nor shown here: a run reads the file again part by part and counts groups of columns, dpsynth adds the noise. Train it with MST or AIM (tab 2); the released model then opens beside, to read and sample.");
    } else {
        ui.label(format!(
            "{path}: {records} records, counted by the query engine"
        ));
        ui.label("Its rows stay in the engine and are never held or shown here: they pass through once, a batch at a time, to key the budget as the same rows in a file would be; the engine counts groups of columns, dpsynth adds the noise. Train it with MST or AIM (tab 2); the released model then opens beside, to read and sample.");
    }
    ui.horizontal(|ui| {
        ui.label(format!("Public schema: {}", schema_path.display()));
        dialogs.button(
            ui,
            true,
            "Load schema…",
            "Use another schema file: the engine checks the rows against it again",
            Purpose::LoadSchema,
            "",
        );
        dialogs.button(
            ui,
            true,
            "Save schema…",
            "A copy of the schema, the same file `dpsynth train --schema` reads",
            Purpose::SaveSchema,
            "schema.json",
        );
    });
    ui.separator();
    egui::ScrollArea::vertical().show(ui, |ui| {
        egui::Grid::new("engine-columns")
            .striped(true)
            .num_columns(3)
            .show(ui, |ui| {
                ui.strong("Column");
                ui.strong("Kind");
                ui.strong("Public domain");
                ui.end_row();
                for c in &schema.columns {
                    ui.label(&c.name);
                    ui.label(format!("{:?}", c.kind).to_lowercase());
                    ui.label(c.domain_summary(80));
                    ui.end_row();
                }
            });
    });
}

/// The child table's column editor: the Data tab's own, without private estimation (not
/// offered for linked tables); its facts (blanks, range) computed once per child file.
fn child_columns(
    ui: &mut egui::Ui,
    c: &mut crate::gui::linked::Child,
    editor: &mut Option<Box<DataPanel>>,
    stats: &mut Option<(std::path::PathBuf, Vec<ColumnStats>)>,
) {
    if stats.as_ref().is_none_or(|(p, _)| *p != c.path) {
        *stats = Some((c.path.clone(), ColumnStats::of(&c.table)));
    }
    let st = stats.as_ref().map(|(_, s)| s.as_slice()).unwrap_or(&[]);
    let editor = editor.get_or_insert_with(Default::default);
    ui.push_id("linked-child-editor", |ui| {
        editor.column_editor(ui, &c.table, &mut c.schema, st);
    });
}

impl super::panel::Panel for DataPanel {
    fn ui(
        &mut self,
        ui: &mut egui::Ui,
        cx: &mut super::panel::Ctx<'_>,
    ) -> Vec<super::panel::Command> {
        let changed = match cx.loaded.as_deref_mut() {
            Some(l) => self.draw(ui, l, cx.dialogs),
            None => false,
        };
        let mut commands = Vec::new();
        if changed {
            commands.push(super::panel::Command::SchemaChanged);
        }
        if let Some(p) = self.open_request.take() {
            commands.push(super::panel::Command::Open(p));
        }
        commands
    }
}

#[cfg(test)]
mod tests;
