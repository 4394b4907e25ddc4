//! Figures every results view draws: generated digits beside real ones with their scores,
//! and the plain verdict above a finished evaluation.

use eframe::egui;

use super::eval_state::ImageScores;

/// Generated digits beside real ones, at the same scale.
pub(super) fn images_ui(
    ui: &mut egui::Ui,
    generated: &egui::TextureHandle,
    real: Option<&egui::TextureHandle>,
    scores: &ImageScores,
    preset: Option<&str>,
) {
    image_scores_ui(ui, scores, preset);
    let side = (ui.available_width() / 2.0 - 20.0).clamp(160.0, 420.0);
    ui.horizontal_wrapped(|ui| {
        ui.vertical(|ui| {
            ui.strong("Generated (100 samples of the released model)");
            ui.image((generated.id(), egui::vec2(side, side)));
        });
        if let Some(r) = real {
            ui.vertical(|ui| {
                ui.strong("Real (the first 100 training images)");
                ui.image((r.id(), egui::vec2(side, side)));
            });
        }
    });
}

/// The papers' scores for generated digits, with a plain verdict on top.
pub(super) fn image_scores_ui(ui: &mut egui::Ui, scores: &ImageScores, preset: Option<&str>) {
    match scores {
        ImageScores::Running(_) => {
            ui.horizontal(|ui| {
                crate::gui::busy::spinner(ui);
                ui.label("scoring: training classifiers on generated digits and testing them on the real test digits…");
            });
        }
        ImageScores::Failed(e) => {
            ui.colored_label(
                ui.visuals().error_fg_color,
                format!("scores unavailable: {e}"),
            );
        }
        ImageScores::Done(r) => {
            let (verdict, good) = crate::eval::verdict::image_verdict(r, preset);
            let color = if good {
                ui.visuals().text_color()
            } else {
                ui.visuals().warn_fg_color
            };
            ui.colored_label(color, egui::RichText::new(verdict).strong());
            egui::Grid::new("image-scores").striped(true).show(ui, |ui| {
                for h in ["accuracy on real test digits", "trained on generated", "trained on real"] {
                    ui.strong(h);
                }
                ui.end_row();
                let pct = |x: f64| format!("{:.1} %", 100.0 * x);
                ui.label("convolutional network (the papers' judge)")
                    .on_hover_text("A small image classifier (two 3×3 convolution layers) trained on the digits, then asked to label the real test digits: the number published generators report");
                ui.label(pct(r.synthetic_cnn_accuracy));
                ui.label(pct(r.real_cnn_accuracy));
                ui.end_row();
                ui.label("multilayer perceptron (100 hidden units)")
                    .on_hover_text("A small neural network trained on the digits, then asked to label the real test digits");
                ui.label(pct(r.synthetic_mlp_accuracy));
                ui.label(pct(r.real_mlp_accuracy));
                ui.end_row();
                ui.label("logistic regression")
                    .on_hover_text("A linear classifier: the simplest judge of whether digits carry their label's shape");
                ui.label(pct(r.synthetic_logistic_accuracy));
                ui.label(pct(r.real_logistic_accuracy));
                ui.end_row();
            });
            ui.label(format!(
                "Fréchet distance {:.2} (0 = generated and real test digits look alike to the real-trained network; lower is better) · {} generated, {} real training and {} real test digits",
                r.frechet_distance, r.synthetic_rows, r.real_train_rows, r.real_test_rows
            ))
            .on_hover_text("The distance between the two sets of digits' features in the hidden layer of the network trained on real digits (the FID recipe with a small MNIST network instead of Inception)");
        }
    }
}

/// The plain verdict, at the top of every figure of a finished evaluation.
pub(super) fn verdict_ui(
    ui: &mut egui::Ui,
    rep: &crate::eval::report::Report,
    method: Option<&str>,
) {
    use crate::eval::verdict::{Grade, verdict_for};
    let v = verdict_for(rep, method);
    let color = match v.grade {
        Grade::Useful => egui::Color32::from_rgb(40, 140, 60),
        Grade::Partly => egui::Color32::from_rgb(190, 130, 20),
        Grade::NotUseful => ui.visuals().error_fg_color,
    };
    egui::Frame::group(ui.style()).show(ui, |ui| {
        ui.colored_label(color, egui::RichText::new(&v.headline).strong());
        egui::CollapsingHeader::new("Why")
            .id_salt("verdict-why")
            // Closed at first, so the figures below do not move with the verdict.
            .default_open(false)
            .show(ui, |ui| {
                for r in &v.reasons {
                    ui.label(format!("• {r}"));
                }
            });
    });
}
