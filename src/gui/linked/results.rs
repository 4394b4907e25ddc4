//! The Results tab's view of the last linked run on the open pair: its statement and the
//! figures across the link (the Train tab's linked mode shows the same, beside export).

use eframe::egui;

use crate::eval::linked::LinkedReport;

/// A finished linked run's results, as the Results tab shows them.
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    pub model: std::path::PathBuf,
    pub statement: String,
    pub report: LinkedReport,
}

impl Shown {
    pub fn ui(&self, ui: &mut egui::Ui) {
        ui.heading("The linked pair");
        ui.label(format!("model: {}", self.model.display()));
        ui.label(&self.statement);
        figures(ui, &self.report);
        ui.weak("Both tables are written from the Train tab's Linked tables mode.");
    }
}

/// The figures across the link, as the report prints them.
pub fn figures(ui: &mut egui::Ui, r: &LinkedReport) {
    ui.label(format!(
        "synthetic children whose key is a synthetic parent's: {:.1} %",
        100.0 * r.keys_found
    ));
    egui::Grid::new("linked-sizes")
        .striped(true)
        .show(ui, |ui| {
            ui.strong("children per parent");
            for k in 0..r.children_real.len() {
                ui.strong(k.to_string());
            }
            ui.end_row();
            for (name, v) in [
                ("real", &r.children_real),
                ("synthetic", &r.children_synthetic),
            ] {
                ui.label(name);
                for x in v.iter() {
                    ui.label(format!("{:.1} %", 100.0 * x));
                }
                ui.end_row();
            }
        });
    ui.label(format!(
        "children per parent: total variation {:.3}",
        r.children_tv
    ));
    ui.label(format!(
        "parent × child tables on the joined rows: mean total variation {:.3} over {} pairs",
        r.cross_mean_tv,
        r.cross.len()
    ));
    for c in r.cross.iter().take(3) {
        ui.weak(format!("  worst: {} × {}: {:.3}", c.parent, c.child, c.tv));
    }
    if let Some(t) = &r.task {
        ui.label(format!(
            "two-table task — a parent's {} from its other columns and its children's ({}, scored on a held-out fifth of the real parents): trained on synthetic {:.3}, on the other real parents {:.3}",
            t.label, t.score, t.synthetic, t.real
        ));
    }
}
