//! The Data tab's choice of the column the evaluation's classifiers predict (Results,
//! "Train on synthetic, test on real"): kept in the schema as its `target`, so a saved
//! schema and `dpsynth evaluate` use the same one.

use eframe::egui;

use crate::data::schema::{Kind, Schema};

/// Draws the picker; true when the schema's target changed.
pub fn target_ui(ui: &mut egui::Ui, schema: &mut Schema) -> bool {
    let choices: Vec<String> = schema
        .columns
        .iter()
        .filter(|c| matches!(c.kind, Kind::Binary | Kind::Categorical))
        .map(|c| c.name.clone())
        .collect();
    if choices.is_empty() {
        return false;
    }
    let automatic = {
        let mut s = schema.clone();
        s.target = None;
        crate::job::evaluation::default_label(&s).unwrap_or_default()
    };
    let before = schema.target.clone();
    // A target whose column became numeric or ignored no longer counts.
    if before.as_ref().is_some_and(|t| !choices.contains(t)) {
        schema.target = None;
    }
    ui.horizontal(|ui| {
        let l = ui.label("Classifiers in Results predict:");
        let shown = schema
            .target
            .clone()
            .unwrap_or_else(|| format!("{automatic} (automatic)"));
        egui::ComboBox::from_id_salt("target")
            .selected_text(shown)
            .show_ui(ui, |ui| {
                ui.selectable_value(&mut schema.target, None, format!("{automatic} (automatic)"));
                for c in &choices {
                    ui.selectable_value(&mut schema.target, Some(c.clone()), c);
                }
            })
            .response
            .labelled_by(l.id)
            .on_hover_text("The column the evaluation's classifiers learn to predict from the others, trained on synthetic rows and tested on real ones. A choice about scoring only: it changes nothing in the synthetic rows or the privacy cost.");
    });
    schema.target != before
}
