//! Linked tables in the window: the Data tab's child table (its file, public schema, the
//! key and K, a preview and how many parents K would cut), and the Train tab's linked run
//! ([`run_view`]).

pub mod results;
pub mod run_view;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use eframe::egui;

use crate::data::Table;
use crate::data::schema::{Kind, Schema};
use crate::gui::dialogs::{Dialogs, Purpose};

/// The child table linked to the open (parent) table.
#[derive(Clone)]
pub struct Child {
    pub path: PathBuf,
    pub table: Arc<Table>,
    pub schema: Schema,
    /// The public schema file it came from; `None`: guessed from the rows (not covered).
    pub schema_file: Option<PathBuf>,
    /// The ledger's content key of its rows (the pair's key joins it with the parent's).
    pub content_key: String,
    /// The key column both tables share.
    pub key: Option<String>,
    /// K, the most children one parent contributes.
    pub max_children: usize,
    /// The fewest children every parent has (a public fact).
    pub min_children: usize,
    /// A child column no two children of one parent share (a person's year).
    pub unique: Option<String>,
    /// A child column each parent counts its children by.
    pub count_by: Option<String>,
}

impl Child {
    /// Opens a child table and its schema (the file's, else a guess from the rows).
    pub fn open(path: &Path, schema_file: Option<&Path>) -> Result<Self, String> {
        let opened =
            crate::job::workspace::open(path, &mut |_, _| {}).map_err(|e| e.to_string())?;
        let content_key = opened.content_key.clone();
        let table = match opened.rows {
            crate::job::workspace::Rows::Table(t) => t,
            _ => {
                return Err(format!(
                    "{}: holds images; a child table is a table",
                    path.display()
                ));
            }
        };
        let schema = match schema_file {
            Some(f) => Schema::load(f).map_err(|e| e.to_string())?,
            None => {
                crate::data::infer::infer_schema(&table)
                    .map_err(|e| e.to_string())?
                    .schema
            }
        };
        Ok(Self {
            path: path.to_path_buf(),
            table,
            schema,
            schema_file: schema_file.map(Path::to_path_buf),
            content_key,
            key: None,
            max_children: 5,
            min_children: 0,
            unique: None,
            count_by: None,
        })
    }

    /// The columns both tables have: the key's candidates.
    pub fn shared_columns(&self, parent: &Table) -> Vec<String> {
        parent
            .columns
            .iter()
            .map(|c| c.name.clone())
            .filter(|n| self.table.column(n).is_some())
            .collect()
    }
}

/// The bundled linked sample: persons and their yearly interviews, with public schemas.
pub fn sample_child() -> Result<Child, String> {
    let p = crate::gui::sample_path("gsoep/years_train.csv");
    let s = crate::gui::sample_path("gsoep/years.schema.json");
    let mut c = Child::open(&p, Some(&s))?;
    c.key = Some("id".into());
    c.max_children = 5;
    c.min_children = 1;
    c.unique = Some("year".into());
    Ok(c)
}

/// The Data tab's section for a child table.
#[derive(Default)]
pub struct ChildSection {
    path: String,
    schema: String,
    message: Option<Result<String, String>>,
    /// (key, K) the diagnostic was computed for, and its line.
    diagnostic: Option<((String, usize), Result<String, String>)>,
}

impl ChildSection {
    /// Writes the child's schema as its editor shows it (a dialog's answer).
    pub fn save_schema(&mut self, schema: &Schema, path: &Path) {
        self.message = Some(
            schema
                .save(path)
                .map(|()| format!("saved the child table's schema to {}", path.display()))
                .map_err(|e| format!("could not save the child table's schema: {e}")),
        );
    }

    /// A file dialog's answer for the child table or its schema.
    pub fn chosen(&mut self, purpose: Purpose, path: &Path) {
        match purpose {
            Purpose::OpenChild => self.path = path.display().to_string(),
            Purpose::ChildSchema => self.schema = path.display().to_string(),
            _ => {}
        }
    }

    /// The section; `columns` draws the child's column editor (the Data tab's own, which
    /// this module does not depend on).
    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        parent: &Table,
        linked: &mut Option<Child>,
        dialogs: &mut Dialogs,
        columns: &mut dyn FnMut(&mut egui::Ui, &mut Child),
    ) {
        egui::CollapsingHeader::new("Linked child table")
            .id_salt("linked-child")
            .default_open(linked.is_some())
            .show(ui, |ui| match linked {
                None => self.add_ui(ui, linked, dialogs),
                Some(c) => {
                    if self.child_ui(ui, parent, c, (dialogs, columns)) {
                        *linked = None;
                        self.diagnostic = None;
                    }
                }
            });
    }

    fn add_ui(&mut self, ui: &mut egui::Ui, linked: &mut Option<Child>, dialogs: &mut Dialogs) {
        ui.label("A second table whose rows belong to this one's rows — household members, a patient's visits, a person's years. They train together, and each person here with all their rows there is one record of the guarantee.");
        ui.horizontal(|ui| {
            ui.label("child table");
            ui.add(
                egui::TextEdit::singleline(&mut self.path)
                    .hint_text("path of the child table")
                    .desired_width(320.0),
            );
            dialogs.button(
                ui,
                true,
                "Choose…",
                "Pick the child table's file",
                Purpose::OpenChild,
                "",
            );
        });
        ui.horizontal(|ui| {
            ui.label("its public schema");
            ui.add(
                egui::TextEdit::singleline(&mut self.schema)
                    .hint_text("schema JSON (optional)")
                    .desired_width(320.0),
            );
            dialogs.button(
                ui,
                true,
                "Choose… ",
                "Pick the child table's public schema (JSON)",
                Purpose::ChildSchema,
                "",
            );
        });
        if ui.button("Link child table").clicked() {
            let schema =
                (!self.schema.trim().is_empty()).then(|| PathBuf::from(self.schema.trim()));
            match Child::open(Path::new(self.path.trim()), schema.as_deref()) {
                Ok(c) => {
                    *linked = Some(c);
                    self.message = None;
                }
                Err(e) => self.message = Some(Err(e)),
            }
        }
        if let Some(Err(e)) = &self.message {
            ui.colored_label(ui.visuals().error_fg_color, e);
        }
    }

    /// The linked child: its size, schema, key, K and diagnostic. True to unlink it.
    fn child_ui(
        &mut self,
        ui: &mut egui::Ui,
        parent: &Table,
        c: &mut Child,
        (dialogs, columns): (&mut Dialogs, &mut dyn FnMut(&mut egui::Ui, &mut Child)),
    ) -> bool {
        ui.label(format!(
            "{}: {} rows × {} columns",
            c.path.display(),
            c.table.n_rows,
            c.table.n_cols()
        ));
        self.columns_ui(ui, c, dialogs, columns);
        let shared = c.shared_columns(parent);
        ui.horizontal(|ui| {
            ui.label("key");
            egui::ComboBox::from_id_salt("linked-key")
                .selected_text(c.key.clone().unwrap_or_else(|| "pick the column both tables share".into()))
                .show_ui(ui, |ui| {
                    for n in &shared {
                        ui.selectable_value(&mut c.key, Some(n.clone()), n);
                    }
                })
                .response
                .on_hover_text("The column that names each child's parent. Keys are identifiers: never released; synthetic keys are fresh numbers.");
            ui.label("K");
            ui.add(egui::DragValue::new(&mut c.max_children).range(1..=crate::data::linked::MAX_K))
                .on_hover_text("The most children one parent contributes: a public bound. A parent with more keeps its first K; the children's noise grows with K.");
            ui.label("at least");
            ui.add(egui::DragValue::new(&mut c.min_children).range(0..=c.max_children))
                .on_hover_text("The fewest children every parent has, as a public fact (a person in a panel has at least one year): no synthetic parent gets fewer");
        });
        let names: Vec<String> = c
            .schema
            .columns
            .iter()
            .filter(|s| matches!(s.kind, Kind::Categorical | Kind::Binary))
            .map(|s| s.name.clone())
            .filter(|n| Some(n) != c.key.as_ref())
            .collect();
        column_choice(
            ui,
            ("linked-unique", "one child per parent for each"),
            &names,
            &mut c.unique,
            "A child column no two children of one parent share — a person has one row a year: synthetic children keep it (a public fact; no cost)",
        );
        column_choice(
            ui,
            ("linked-count-by", "count each parent's children by"),
            &names,
            &mut c.count_by,
            "A child column each parent counts its children by (a household's women and men): the parent model learns the counts, and each synthetic parent's children take exactly those values",
        );
        if let Some(key) = &c.key {
            self.diagnostic_ui(ui, parent, c, key.clone());
        }
        preview(ui, &c.table);
        ui.button("Unlink the child table").clicked()
    }

    /// Where the child's schema stands, and its column editor: kinds, bounds, categories,
    /// exact values, blanks and decimals, typed as for any table, and saved as a schema.
    fn columns_ui(
        &mut self,
        ui: &mut egui::Ui,
        c: &mut Child,
        dialogs: &mut Dialogs,
        columns: &mut dyn FnMut(&mut egui::Ui, &mut Child),
    ) {
        let uncovered = crate::data::estimate::uncovered(&c.schema).len();
        let guessed = c.schema.non_private_kinds().len();
        if uncovered > 0 {
            ui.colored_label(
                ui.visuals().warn_fg_color,
                format!("{uncovered} of the child table's column domains are read off its rows: the guarantee does not cover them, and the pair will not train until they are typed below (both bounds, or a category list) or loaded from its public schema. Private estimation is not offered for linked tables."),
            );
        } else if let Some(f) = &c.schema_file {
            ui.label(format!(
                "public schema: {} (and what is typed below)",
                f.display()
            ));
        } else {
            ui.label("public schema: as typed below");
        }
        if guessed > 0 {
            ui.horizontal_wrapped(|ui| {
                ui.colored_label(
                    ui.visuals().warn_fg_color,
                    format!("{guessed} of the child's column kinds were guessed from its rows: set them below, or confirm them if they are public."),
                );
                if ui
                    .button("The child's kinds are public")
                    .clicked()
                {
                    c.schema.confirm_kinds();
                }
            });
        }
        egui::CollapsingHeader::new("Columns of the child table")
            .id_salt("linked-child-columns")
            .default_open(uncovered > 0 || guessed > 0)
            .show(ui, |ui| {
                columns(ui, c);
                dialogs.button(
                    ui,
                    true,
                    "Save the child's schema…",
                    "Write the child table's kinds and domains as a schema file (JSON), to reuse with `dpsynth train --child-schema`",
                    Purpose::SaveChildSchema,
                    "child-schema.json",
                );
                if let Some(m) = &self.message {
                    match m {
                        Ok(m) => ui.label(m),
                        Err(e) => ui.colored_label(ui.visuals().error_fg_color, e),
                    };
                }
            });
    }

    /// How many parents have more than K children (read off the rows: shown here only).
    fn diagnostic_ui(&mut self, ui: &mut egui::Ui, parent: &Table, c: &Child, key: String) {
        let want = (key.clone(), c.max_children * 1001 + c.min_children);
        if self.diagnostic.as_ref().is_none_or(|(k, _)| *k != want) {
            let link = crate::data::linked::Link {
                key,
                max_children: c.max_children,
                min_children: c.min_children,
            };
            let line = crate::data::linked::join(parent, &c.table, &link)
                .map(|j| diagnostic_line(&j, c.max_children))
                .map_err(|e| e.to_string());
            self.diagnostic = Some((want, line));
        }
        match self.diagnostic.as_ref().map(|d| &d.1) {
            Some(Ok(l)) => {
                ui.label(l);
            }
            Some(Err(e)) => {
                ui.colored_label(ui.visuals().error_fg_color, e);
            }
            None => {}
        }
    }
}

fn diagnostic_line(j: &crate::data::linked::Joined, k: usize) -> String {
    let most = j.sizes.iter().copied().max().unwrap_or(0);
    let cut = if j.truncated_parents == 0 {
        format!("no parent has more than K = {k}")
    } else {
        format!(
            "{} parents have more than K = {k}: {} children would be left out",
            j.truncated_parents, j.dropped_children
        )
    };
    format!(
        "{} parents with {} children; at most {most} a parent; {cut} (read off the rows: shown only to you, never released)",
        j.parents.n_rows,
        j.sizes.iter().sum::<usize>()
    )
}

/// A pick among the child's columns of categories, or none.
fn column_choice(
    ui: &mut egui::Ui,
    (id, label): (&str, &str),
    names: &[String],
    pick: &mut Option<String>,
    hover: &str,
) {
    ui.horizontal(|ui| {
        ui.label(label);
        egui::ComboBox::from_id_salt(id)
            .selected_text(pick.clone().unwrap_or_else(|| "(none)".into()))
            .show_ui(ui, |ui| {
                ui.selectable_value(pick, None, "(none)");
                for n in names {
                    ui.selectable_value(pick, Some(n.clone()), n);
                }
            })
            .response
            .on_hover_text(hover);
    });
}

/// The child's first rows.
fn preview(ui: &mut egui::Ui, t: &Table) {
    egui::Grid::new("linked-preview")
        .striped(true)
        .show(ui, |ui| {
            for c in &t.columns {
                ui.strong(&c.name);
            }
            ui.end_row();
            for r in 0..t.n_rows.min(5) {
                for c in &t.columns {
                    ui.label(c.text(r).unwrap_or_default());
                }
                ui.end_row();
            }
        });
}
