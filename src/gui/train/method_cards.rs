//! The method cards: one per registered method, as many to a row as fit, the
//! recommended one for the open data marked.

use eframe::egui;

use crate::job::{self, MethodInfo};

/// Every method as a card, in rows that fit the width; `chosen` is the registry index of
/// the selected one, `kind` the open data's.
pub(super) fn grid(ui: &mut egui::Ui, chosen: &mut usize, kind: job::DataKind) {
    // Rows of as many cards as fit (a wrapped layout cannot know a card's width before
    // drawing it, so it would let the last one run off the window).
    let card = CARD_WIDTH + 2.0 * 8.0 + ui.spacing().item_spacing.x + 2.0;
    let per_row = ((ui.available_width() / card).floor() as usize).max(1);
    let recommended = job::recommended(kind).0;
    for (r, row) in job::methods().chunks(per_row).enumerate() {
        ui.horizontal(|ui| {
            for (j, m) in row.iter().enumerate() {
                let tag = (m.id == recommended).then_some(kind);
                method_card(ui, chosen, r * per_row + j, m, tag);
            }
        });
    }
}

/// The width of a method card's text.
const CARD_WIDTH: f32 = 255.0;

/// One method as a card: a radio button, one plain sentence, when it is the better
/// choice (on cards other than the recommended one), the paper.
/// `recommended`: the kind of data this method is the recommended start for.
fn method_card(
    ui: &mut egui::Ui,
    chosen: &mut usize,
    i: usize,
    m: &MethodInfo,
    recommended: Option<job::DataKind>,
) {
    let frame = egui::Frame::group(ui.style())
        .fill(if *chosen == i {
            ui.visuals().selection.bg_fill.gamma_multiply(0.35)
        } else {
            ui.visuals().faint_bg_color
        })
        .inner_margin(8.0);
    frame.show(ui, |ui| {
        ui.set_width(CARD_WIDTH);
        ui.set_min_height(112.0);
        ui.vertical(|ui| {
            ui.horizontal(|ui| {
                ui.radio_value(chosen, i, m.title);
                if let Some(kind) = recommended {
                    ui.label(
                        egui::RichText::new(match kind {
                            job::DataKind::Table => "Recommended for tables",
                            job::DataKind::Images => "Recommended for images",
                        })
                        .strong(),
                    )
                    .on_hover_text("Measured: the closest to real data at ε = 1 of the presets that train in minutes (see the README).");
                }
            });
            ui.label(m.sentence);
            if recommended.is_none() {
                ui.label(egui::RichText::new(m.pick_when).italics().weak());
            }
            ui.hyperlink_to(format!("idea: {}", m.paper), m.url);
        });
    });
}
