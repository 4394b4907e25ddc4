//! The data view: each column's kind (editable), domain (editable bounds or category
//! list), provenance badge and warnings; schema save/load (the CLI's JSON); and a preview
//! of the rows that only lays out the rows on screen, so 100k+ rows scroll smoothly.

use std::path::Path;

use eframe::egui;

mod columns;
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
                    format!("{np} column domains are read off the data and not protected: replace them with public values (type both bounds, or a category list), or estimate them privately."),
                );
                if ui
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
                        self.child.ui(ui, table, &mut loaded.linked, dialogs);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::schema::{ColumnSpec, Domain};

    fn adult() -> (Loaded, tempfile::TempDir) {
        let path = super::super::sample_path("adult/adult_train.csv");
        let table = crate::data::csv::load_csv(&path, &Default::default()).unwrap();
        let inf = crate::data::infer::infer_schema(&table).unwrap();
        let stats = ColumnStats::of(&table);
        let profile = std::sync::Arc::new(crate::data::domain_check::profile(&table));
        (
            Loaded {
                key: None,
                path,
                dataset: None,
                linked: None,
                content: Content::Table {
                    table: std::sync::Arc::new(table),
                    schema: inf.schema,
                    notes: inf.notes,
                    stats,
                    profile,
                },
            },
            tempfile::tempdir().unwrap(),
        )
    }

    #[test]
    fn a_saved_schema_loads_back_and_a_foreign_one_is_refused() {
        let (mut l, dir) = adult();
        let mut p = DataPanel::default();
        if let Content::Table { schema, .. } = &mut l.content {
            schema.columns[0].provenance = Provenance::UserProvided;
            schema.columns[0].domain = Some(Domain::Bounds {
                lower: 17.0,
                upper: 90.0,
            });
        }
        let file = dir.path().join("s.json");
        assert!(!p.schema_file(Purpose::SaveSchema, &file, &mut l));
        let (mut fresh, _d) = adult();
        assert!(p.schema_file(Purpose::LoadSchema, &file, &mut fresh));
        let Content::Table { schema, .. } = &fresh.content else {
            panic!()
        };
        assert_eq!(schema.columns[0].bounds(), Some((17.0, 90.0)));
        assert!(schema.columns[0].provenance.is_private());

        // A schema of another table is refused with the column at fault, and the current
        // schema is kept.
        let other = dir.path().join("other.json");
        std::fs::write(
            &other,
            r#"{"columns":[{"name":"x","kind":"continuous","domain":{"bounds":{"lower":0,"upper":1}}}]}"#,
        )
        .unwrap();
        assert!(!p.schema_file(Purpose::LoadSchema, &other, &mut fresh));
        let Some(Err(m)) = &p.message else { panic!() };
        assert!(m.contains("does not fit this table"), "{m}");
        let Content::Table { schema, .. } = &fresh.content else {
            panic!()
        };
        assert_eq!(schema.columns[0].bounds(), Some((17.0, 90.0)));
    }

    #[test]
    fn warnings_name_constant_sparse_and_wide_columns() {
        let mut spec = ColumnSpec {
            name: "c".into(),
            kind: Kind::Categorical,
            integer: false,
            missing: false,
            time_format: None,
            domain: Some(Domain::Categories((0..60).map(|i| i.to_string()).collect())),
            point_masses: Vec::new(),
            point_masses_estimated: false,
            no_point_masses: false,
            decimals: None,
            kind_from_data: false,
            blank_share: None,
            codebook: false,
            provenance: Provenance::UserProvided,
        };
        let w = warnings(
            &spec,
            ColumnStats {
                missing: 30,
                distinct: 60,
                range: None,
            },
            100,
        );
        assert!(w.iter().any(|w| w.contains("60 categories")), "{w:?}");
        assert!(w.iter().any(|w| w.contains("30 % missing")), "{w:?}");
        spec.domain = Some(Domain::Categories(vec!["a".into(), "b".into()]));
        let w = warnings(
            &spec,
            ColumnStats {
                missing: 0,
                distinct: 1,
                range: None,
            },
            100,
        );
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("constant"));
        // Bounds: reversed ones are refused at once; narrower than the file, a warning.
        let mut b = spec.clone();
        b.kind = Kind::Continuous;
        b.domain = Some(Domain::Bounds {
            lower: 10.0,
            upper: 5.0,
        });
        let st = ColumnStats {
            missing: 0,
            distinct: 50,
            range: Some((0.0, 99.0)),
        };
        assert!(warnings(&b, st, 100)[0].contains("must be below the upper"));
        b.domain = Some(Domain::Bounds {
            lower: 0.0,
            upper: 50.0,
        });
        assert!(warnings(&b, st, 100)[0].contains("clamped"));
        b.domain = Some(Domain::Bounds {
            lower: 0.0,
            upper: 100.0,
        });
        assert!(warnings(&b, st, 100).is_empty());
        spec.kind = Kind::Ignored;
        assert!(
            warnings(
                &spec,
                ColumnStats {
                    missing: 90,
                    distinct: 1,
                    range: None,
                },
                100
            )
            .is_empty()
        );
    }
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
