//! The data view: each column's kind (editable), domain (editable bounds or category
//! list), provenance badge and warnings; schema save/load (the CLI's JSON); and a preview
//! of the rows that only lays out the rows on screen, so 100k+ rows scroll smoothly.

use std::path::Path;

use eframe::egui;
use egui_extras::{Column as TableColumn, TableBuilder};

use super::dialogs::{Dialogs, Purpose};
use super::{Content, Loaded};
use crate::data::schema::{ColumnSpec, Domain, Kind, Provenance, Schema};

/// Per-column facts the warnings need, computed once when the file is read (scanning
/// every row each frame would cost the frame budget on big tables).
#[derive(Debug, Clone, Copy, Default)]
pub struct ColumnStats {
    pub missing: usize,
    pub distinct: usize,
    /// The smallest and largest finite number of a numeric column.
    pub range: Option<(f64, f64)>,
}

impl ColumnStats {
    pub fn of(table: &crate::data::Table) -> Vec<ColumnStats> {
        table
            .columns
            .iter()
            .map(|c| ColumnStats {
                missing: c.missing_count(),
                distinct: c.distinct_count(),
                range: match &c.values {
                    crate::data::Values::Number(v) => v
                        .iter()
                        .flatten()
                        .filter(|x| x.is_finite())
                        .fold(None, |r: Option<(f64, f64)>, x| {
                            Some(r.map_or((*x, *x), |(a, b)| (a.min(*x), b.max(*x))))
                        }),
                    _ => None,
                },
            })
            .collect()
    }
}

/// More categories than this earn a warning: each becomes its own one-hot output, and
/// rare ones are mostly noise under DP.
const MANY_CATEGORIES: usize = 50;

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
}

/// Warnings about one column, in words a user can act on.
fn warnings(spec: &ColumnSpec, stats: ColumnStats, n_rows: usize) -> Vec<String> {
    let mut w = Vec::new();
    if spec.kind == Kind::Ignored {
        return w;
    }
    if stats.distinct <= 1 {
        w.push("constant: carries no information; consider \"ignore\"".into());
    }
    if let Some(c) = spec.categories() {
        if c.len() > MANY_CATEGORIES {
            w.push(format!(
                "{} categories: rare ones become noise under DP; group them or ignore the column",
                c.len()
            ));
        }
    }
    if let Some((lower, upper)) = spec.bounds() {
        if !(lower < upper) {
            w.push(format!(
                "the lower bound ({lower}) must be below the upper ({upper}): training refuses this"
            ));
        } else if let Some((lo, hi)) = stats.range {
            if lo < lower || hi > upper {
                w.push(format!(
                    "the file's values run from {lo} to {hi}: those outside {lower}–{upper} are clamped to the bounds"
                ));
            }
        }
    }
    if n_rows > 0 && stats.missing * 5 > n_rows {
        w.push(format!(
            "{:.0} % missing",
            100.0 * stats.missing as f64 / n_rows as f64
        ));
    }
    w
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
                let mut changed = false;
                ui.horizontal(|ui| {
                    ui.label(format!(
                        "{path}: {} rows × {} columns",
                        table.n_rows,
                        table.n_cols()
                    ));
                    self.sheet_picker(ui, &loaded.path);
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
                                self.message = Some(Ok("guessed the kinds and domains from the file again".into()));
                                changed = true;
                            }
                            Err(e) => self.message = Some(Err(e.to_string())),
                        }
                    }
                });
                if let Some(m) = &self.message {
                    match m {
                        Ok(m) => ui.label(m),
                        Err(e) => ui.colored_label(ui.visuals().error_fg_color, e),
                    };
                }
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
                for (c, n) in notes.iter() {
                    ui.label(format!("note: '{c}' {n}"));
                }
                let half = (ui.available_height() * 0.55).max(160.0);
                egui::ScrollArea::both()
                    .id_salt("columns")
                    .max_height(half)
                    .show(ui, |ui| {
                        changed |= self.columns_ui(ui, table, schema, stats);
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
        }
    }

    fn columns_ui(
        &mut self,
        ui: &mut egui::Ui,
        table: &crate::data::Table,
        schema: &mut Schema,
        stats: &[ColumnStats],
    ) -> bool {
        let mut changed = false;
        egui::Grid::new("columns").striped(true).show(ui, |ui| {
            for h in [
                "column",
                "kind",
                "domain",
                "provenance",
                "missing",
                "",
                "warnings",
            ] {
                ui.strong(h);
            }
            ui.end_row();
            for (i, spec) in schema.columns.iter_mut().enumerate() {
                let col = table.column(&spec.name);
                let st = stats.get(i).copied().unwrap_or_default();
                ui.label(&spec.name);
                let before = (spec.kind, spec.time_format.is_some());
                let mut chosen = before;
                egui::ComboBox::from_id_salt(("kind", &spec.name))
                    .selected_text(spec.kind_label())
                    .show_ui(ui, |ui| {
                        for k in Kind::ALL {
                            ui.selectable_value(&mut chosen, (k, false), k.label());
                        }
                        ui.selectable_value(&mut chosen, (Kind::Continuous, true), "date/time")
                            .on_hover_text("Dates or times, learned as a number (days since 1970) between public bounds and written back in the file's own format");
                    })
                    .response
                    .accessible_name(format!("kind of {}", spec.name));
                if chosen != before {
                    if let Some(col) = col {
                        let old = spec.clone();
                        spec.kind = chosen.0;
                        spec.time_format = None;
                        if chosen.1 {
                            match date_format_of(col) {
                                Some(f) => spec.time_format = Some(f.to_string()),
                                None => {
                                    *spec = old.clone();
                                    self.message = Some(Err(format!(
                                        "{}: no date/time format reads every cell (tried {}); fix the cells or give the format in a schema file (\"time_format\")",
                                        spec.name,
                                        crate::data::times::CANDIDATES.join(", ")
                                    )));
                                }
                            }
                        }
                        if spec.kind != old.kind || spec.time_format != old.time_format {
                            // A kind the user picks is theirs; a date format is still read
                            // off the cells, so a date pick stays a guess until confirmed.
                            spec.kind_from_data = chosen.1;
                            retarget(spec, col);
                            self.date_text.remove(&spec.name);
                            changed = true;
                        }
                    }
                }
                changed |= self.domain_cell(ui, spec);
                changed |= provenance_cells(ui, spec, st);
                let w = warnings(spec, st, table.n_rows);
                if w.is_empty() {
                    ui.label("");
                } else {
                    ui.colored_label(ui.visuals().warn_fg_color, w.join("; "));
                }
                ui.end_row();
            }
        });
        changed
    }

    /// A column's domain: two bound fields, or the category summary with its editor.
    fn domain_cell(&mut self, ui: &mut egui::Ui, spec: &mut ColumnSpec) -> bool {
        let mut changed = false;
        let name = spec.name.clone();
        let time_format = spec.time_format.clone();
        match &mut spec.domain {
            Some(Domain::Bounds { lower, upper }) if time_format.is_some() => {
                let f = time_format.unwrap_or_default();
                let text = self.date_text.entry(name.clone()).or_insert_with(|| {
                    [
                        crate::data::times::format(*lower, &f),
                        crate::data::times::format(*upper, &f),
                    ]
                });
                let mut typed = [false; 2];
                ui.horizontal(|ui| {
                    for (i, (prefix, bound)) in [("from", &mut *lower), ("to", &mut *upper)]
                        .into_iter()
                        .enumerate()
                    {
                        ui.label(prefix);
                        let parsed = crate::data::times::parse(&text[i], &f);
                        let mut edit =
                            egui::TextEdit::singleline(&mut text[i]).desired_width(130.0);
                        if parsed.is_none() {
                            edit = edit.text_color(ui.visuals().error_fg_color);
                        }
                        let r = ui
                            .add(edit)
                            .accessible_name(format!(
                                "{} bound of {name}",
                                if i == 0 { "lower" } else { "upper" }
                            ))
                            .on_hover_text(format!("a date/time in the format {f}"));
                        if r.changed() {
                            if let Some(x) = crate::data::times::parse(&text[i], &f) {
                                *bound = x;
                                typed[i] = true;
                            }
                        }
                    }
                    ui.weak(&f);
                });
                if typed[0] || typed[1] {
                    let t = self.typed.entry(name.clone()).or_default();
                    t[0] |= typed[0];
                    t[1] |= typed[1];
                    if spec.provenance.is_private() || (t[0] && t[1]) {
                        spec.provenance = Provenance::UserProvided;
                    }
                    changed = true;
                }
            }
            Some(Domain::Bounds { lower, upper }) => {
                ui.horizontal(|ui| {
                    let speed = ((*upper - *lower).abs() / 200.0).max(1e-6);
                    let l = ui
                        .add(egui::DragValue::new(lower).prefix("from ").speed(speed))
                        .accessible_name(format!("lower bound of {name}"));
                    let u = ui
                        .add(egui::DragValue::new(upper).prefix("to ").speed(speed))
                        .accessible_name(format!("upper bound of {name}"));
                    if l.changed() || u.changed() {
                        let t = self.typed.entry(name.clone()).or_default();
                        t[0] |= l.changed();
                        t[1] |= u.changed();
                        if spec.provenance.is_private() || (t[0] && t[1]) {
                            spec.provenance = Provenance::UserProvided;
                        }
                        changed = true;
                    }
                });
            }
            Some(Domain::Categories(levels)) => {
                let summary = spec_summary(levels, 40);
                ui.horizontal(|ui| {
                    ui.label(summary);
                    if ui
                        .small_button("edit")
                        .accessible_name(format!("edit the categories of {name}"))
                        .on_hover_text("Edit the category list (one per line)")
                        .clicked()
                    {
                        let from_data = !spec.provenance.is_private();
                        self.editing = Some(super::category_editor::CategoryEdit {
                            column: name.clone(),
                            text: if from_data {
                                String::new()
                            } else {
                                levels.join("\n")
                            },
                            hint: from_data.then(|| levels.join(", ")),
                            error: None,
                        });
                    }
                });
            }
            None => {
                ui.label("-");
            }
        }
        changed
    }

    /// Saves or loads the schema (a dialog's answer). True when the schema changed.
    pub fn schema_file(&mut self, purpose: Purpose, path: &Path, loaded: &mut Loaded) -> bool {
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

/// "a, b, c, … (12)" within `max_chars`.
/// A column's provenance badge, missing count and "Estimate privately" button.
fn provenance_cells(ui: &mut egui::Ui, spec: &mut ColumnSpec, st: ColumnStats) -> bool {
    let mut changed = false;
    if spec.kind == Kind::Ignored {
        ui.label("-");
    } else if spec.provenance.is_private() {
        ui.colored_label(
            egui::Color32::from_rgb(80, 170, 90),
            spec.provenance.badge(),
        );
    } else if spec.provenance == Provenance::ToEstimate {
        ui.colored_label(
            ui.visuals().warn_fg_color,
            "estimated privately when training",
        )
        .on_hover_text(
            "The values shown are the data's, a hint only: the model gets a noisy estimate",
        );
    } else {
        ui.colored_label(ui.visuals().warn_fg_color, "from the data: not protected");
    }
    ui.label(st.missing.to_string());
    if spec.kind != Kind::Ignored && spec.provenance == Provenance::FromData {
        if ui
            .button("Estimate privately")
            .on_hover_text(
                "Estimate this domain with noise when training (charged to the run) instead of copying the data's values",
            )
            .clicked()
        {
            spec.provenance = Provenance::ToEstimate;
            changed = true;
        }
    } else {
        ui.label("");
    }
    changed
}

fn spec_summary(levels: &[String], max_chars: usize) -> String {
    let mut s = String::new();
    for (i, l) in levels.iter().enumerate() {
        let next = if i == 0 { l.clone() } else { format!(", {l}") };
        if s.chars().count() + next.chars().count() > max_chars {
            s.push_str(", …");
            break;
        }
        s.push_str(&next);
    }
    format!("{s} ({})", levels.len())
}

/// The rows, laid out only where they are on screen.
fn preview_ui(ui: &mut egui::Ui, table: &crate::data::Table) {
    let row_h = ui.text_style_height(&egui::TextStyle::Body) + 4.0;
    egui::ScrollArea::horizontal()
        .id_salt("preview-h")
        .show(ui, |ui| {
            TableBuilder::new(ui)
                .id_salt("preview")
                .striped(true)
                .resizable(true)
                .cell_layout(egui::Layout::left_to_right(egui::Align::Center))
                .column(TableColumn::exact(56.0))
                .columns(
                    TableColumn::initial(110.0).at_least(40.0).clip(true),
                    table.n_cols(),
                )
                .min_scrolled_height(0.0)
                .max_scroll_height(f32::INFINITY)
                .header(row_h + 2.0, |mut h| {
                    h.col(|ui| {
                        ui.strong("row");
                    });
                    for c in &table.columns {
                        h.col(|ui| {
                            ui.strong(&c.name);
                        });
                    }
                })
                .body(|body| {
                    body.rows(row_h, table.n_rows, |mut row| {
                        let i = row.index();
                        row.col(|ui| {
                            ui.weak((i + 1).to_string());
                        });
                        for c in &table.columns {
                            row.col(|ui| match c.text(i) {
                                Some(t) => {
                                    ui.label(t);
                                }
                                None => {
                                    ui.weak("missing");
                                }
                            });
                        }
                    });
                });
        });
}

/// The date/time format that reads every cell of a text column.
fn date_format_of(col: &crate::data::Column) -> Option<&'static str> {
    let levels = col.levels();
    crate::data::times::detect(levels.iter().map(String::as_str))
}

/// After a kind change, give the column a domain of the new shape read off the data
/// (marked `FromData` until the user confirms it).
fn retarget(spec: &mut ColumnSpec, col: &crate::data::Column) {
    use crate::data::Values;
    spec.provenance = Provenance::FromData;
    spec.integer = false;
    spec.domain = match spec.kind {
        Kind::Ignored => None,
        Kind::Binary | Kind::Categorical => {
            let mut levels = col.levels();
            if spec.kind == Kind::Binary {
                levels.truncate(2);
                if levels.len() < 2 {
                    levels.push("other".into());
                }
            }
            Some(Domain::Categories(levels))
        }
        Kind::Continuous if spec.time_format.is_some() => {
            let days = spec.numbers(col).unwrap_or_default();
            let f = spec.time_format.as_deref().unwrap_or_default();
            spec.integer = !crate::data::times::has_time(f);
            Some(crate::data::infer::bounds_around(&days))
        }
        Kind::Continuous => match &col.values {
            Values::Number(v) => {
                spec.integer = v.iter().flatten().all(|x| x.fract() == 0.0);
                Some(crate::data::infer::bounds_around(v))
            }
            Values::Text(_) => {
                // Text cannot be continuous: fall back.
                spec.kind = Kind::Categorical;
                Some(Domain::Categories(col.levels()))
            }
        },
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adult() -> (Loaded, tempfile::TempDir) {
        let path = super::super::sample_path("adult/adult_train.csv");
        let table = crate::data::csv::load_csv(&path, &Default::default()).unwrap();
        let inf = crate::data::infer::infer_schema(&table).unwrap();
        let stats = ColumnStats::of(&table);
        let profile = std::sync::Arc::new(crate::data::estimate::profile(&table));
        (
            Loaded {
                key: None,
                path,
                dataset: None,
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
