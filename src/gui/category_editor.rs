//! The category editor: a window over the data view where the user types a column's
//! public category list.

use eframe::egui;

use crate::data::schema::{Domain, Provenance, Schema};

/// The category list being edited (one per line).
pub(super) struct CategoryEdit {
    pub column: String,
    pub text: String,
    /// The data's own levels, shown beside an empty editor as a non-private hint when the
    /// column's list was read off the rows (never pre-filled: a list the user accepts
    /// unchanged would still be the data's).
    pub hint: Option<String>,
    pub error: Option<String>,
}

/// The category editor, as a window over the view; true when a list was applied.
pub(super) fn category_window(
    editing: &mut Option<CategoryEdit>,
    ctx: &egui::Context,
    schema: &mut Schema,
) -> bool {
    let Some(edit) = editing else {
        return false;
    };
    let mut open = true;
    let mut apply = false;
    let mut cancel = false;
    egui::Window::new(format!("Categories of '{}'", edit.column))
        .open(&mut open)
        .collapsible(false)
        .show(ctx, |ui| {
            ui.label("One category per line. Enter the values the column can take, as public knowledge (e.g. from a codebook): values in the data but not listed here are treated as missing.");
            if let Some(h) = &edit.hint {
                ui.colored_label(
                    ui.visuals().warn_fg_color,
                    format!("Hint, read off the private data (NOT public; typing these in copies them into the model): {h}"),
                );
            }
            let l = ui.label("categories");
            egui::ScrollArea::vertical().max_height(300.0).show(ui, |ui| {
                ui.add(egui::TextEdit::multiline(&mut edit.text).desired_rows(10))
                    .labelled_by(l.id);
            });
            if let Some(e) = &edit.error {
                ui.colored_label(ui.visuals().error_fg_color, e);
            }
            ui.horizontal(|ui| {
                apply = ui.button("Apply").clicked();
                cancel = ui.button("Cancel").clicked();
            });
        });
    if !open || cancel {
        *editing = None;
        return false;
    }
    if !apply {
        return false;
    }
    let mut levels: Vec<String> = Vec::new();
    for l in edit.text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if !levels.iter().any(|x| x == l) {
            levels.push(l.to_string());
        }
    }
    let Some(spec) = schema.columns.iter_mut().find(|c| c.name == edit.column) else {
        *editing = None;
        return false;
    };
    let mut candidate = spec.clone();
    candidate.domain = Some(Domain::Categories(levels));
    if candidate.provenance != Provenance::UserProvided {
        candidate.made_public();
    }
    candidate.provenance = Provenance::UserProvided;
    match candidate.validate() {
        Ok(()) => {
            *spec = candidate;
            *editing = None;
            true
        }
        Err(e) => {
            edit.error = Some(e.to_string());
            false
        }
    }
}
