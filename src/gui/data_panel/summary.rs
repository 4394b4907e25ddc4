//! What the data view shows of the rows themselves: per-column facts computed once when the
//! file is read, the warnings they earn, and the preview of the first rows.

use eframe::egui;
use egui_extras::{Column as TableColumn, TableBuilder};

use crate::data::schema::{ColumnSpec, Kind};

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
pub(super) const MANY_CATEGORIES: usize = 50;

/// Warnings about one column, in words a user can act on.
pub(super) fn warnings(spec: &ColumnSpec, stats: ColumnStats, n_rows: usize) -> Vec<String> {
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

/// The rows, laid out only where they are on screen.
pub(super) fn preview_ui(ui: &mut egui::Ui, table: &crate::data::Table) {
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
