//! The data view: each column's kind (editable), domain, provenance badge and warnings.

use eframe::egui;

use super::{Content, Loaded};
use crate::data::schema::{Domain, Kind, Provenance};

/// State of the data view.
#[derive(Default)]
pub struct DataPanel {}

impl DataPanel {
    /// Draws the view; returns true when the schema changed.
    pub fn ui(&mut self, ui: &mut egui::Ui, loaded: &mut Loaded) -> bool {
        let path = loaded.path.display().to_string();
        let mut changed = false;
        match &mut loaded.content {
            Content::Table {
                table,
                schema,
                notes,
            } => {
                ui.label(format!(
                    "{path}: {} rows × {} columns",
                    table.n_rows,
                    table.n_cols()
                ));
                let np = schema.non_private_domains().len();
                if np > 0 {
                    ui.colored_label(
                        ui.visuals().warn_fg_color,
                        format!("{np} column domains come from the data: not protected until you enter or confirm public values (\"Confirm public\")."),
                    );
                }
                for (c, n) in notes.iter() {
                    ui.label(format!("note: '{c}' {n}"));
                }
                egui::ScrollArea::vertical().show(ui, |ui| {
                    egui::Grid::new("columns").striped(true).show(ui, |ui| {
                        for h in ["column", "kind", "domain", "provenance", "missing", ""] {
                            ui.strong(h);
                        }
                        ui.end_row();
                        for spec in schema.columns.iter_mut() {
                            let col = table.column(&spec.name);
                            ui.label(&spec.name);
                            let before = spec.kind;
                            egui::ComboBox::from_id_salt(("kind", &spec.name))
                                .selected_text(spec.kind.label())
                                .show_ui(ui, |ui| {
                                    for k in Kind::ALL {
                                        ui.selectable_value(&mut spec.kind, k, k.label());
                                    }
                                });
                            if spec.kind != before {
                                if let Some(col) = col {
                                    retarget(spec, col);
                                }
                                changed = true;
                            }
                            match &mut spec.domain {
                                Some(Domain::Bounds { lower, upper }) => {
                                    ui.horizontal(|ui| {
                                        let l = ui.add(egui::DragValue::new(lower).prefix("from "));
                                        let u = ui.add(egui::DragValue::new(upper).prefix("to "));
                                        if l.changed() || u.changed() {
                                            spec.provenance = Provenance::UserProvided;
                                            changed = true;
                                        }
                                    });
                                }
                                _ => {
                                    ui.label(spec.domain_summary(40));
                                }
                            }
                            if spec.kind == Kind::Ignored {
                                ui.label("-");
                            } else if spec.provenance.is_private() {
                                ui.colored_label(egui::Color32::from_rgb(80, 170, 90), spec.provenance.badge());
                            } else {
                                ui.colored_label(ui.visuals().warn_fg_color, "from the data: not protected");
                            }
                            ui.label(col.map_or(0, |c| c.missing_count()).to_string());
                            if spec.kind != Kind::Ignored && !spec.provenance.is_private() {
                                if ui
                                    .button("Confirm public")
                                    .on_hover_text("These values are public knowledge (not read off the private data)")
                                    .clicked()
                                {
                                    spec.provenance = Provenance::UserProvided;
                                    changed = true;
                                }
                            } else {
                                ui.label("");
                            }
                            ui.end_row();
                        }
                    });
                });
            }
            Content::Images {
                count,
                side,
                labels,
                grid,
                texture,
            } => {
                ui.label(format!("{path}: {count} images of {side}×{side} pixels"));
                ui.label(format!("labels: {labels}"));
                let tex = texture.get_or_insert_with(|| {
                    ui.ctx().load_texture(
                        "real-digits",
                        grid.clone(),
                        egui::TextureOptions::NEAREST,
                    )
                });
                ui.label("The first 100 images:");
                ui.add(egui::Image::new(&*tex).fit_to_exact_size(egui::vec2(420.0, 420.0)));
            }
        }
        changed
    }
}

/// After a kind change, give the column a domain of the new shape read off the data
/// (marked `FromData` until the user confirms it).
fn retarget(spec: &mut crate::data::schema::ColumnSpec, col: &crate::data::Column) {
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
        Kind::Continuous => match &col.values {
            Values::Number(v) => {
                let (lo, hi) = crate::data::infer::value_range(v);
                spec.integer = v.iter().flatten().all(|x| x.fract() == 0.0);
                let (lo, hi) = if lo < hi {
                    (lo, hi)
                } else {
                    (lo - 1.0, lo + 1.0)
                };
                Some(Domain::Bounds {
                    lower: lo,
                    upper: hi,
                })
            }
            Values::Text(_) => {
                // Text cannot be continuous: fall back.
                spec.kind = Kind::Categorical;
                Some(Domain::Categories(col.levels()))
            }
        },
    };
}
