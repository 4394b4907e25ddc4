//! A busy indicator that redraws five times a second, not every frame.
//!
//! egui's own spinner asks for a new frame each time it is drawn, so the window renders
//! flat out while work runs: under a software renderer (llvmpipe, a remote desktop, the
//! CI's virtual screen) that took most of two cores from the evaluation it was waiting on
//! (measured: the window's Adult evaluation ran about seven times slower than the same
//! work on the command line). Progress messages still wake the window at once.

use std::time::Duration;

use eframe::egui;

/// Time between redraws while something is busy.
const TICK: Duration = Duration::from_millis(200);

/// Draws a spinner the size of a line of text and asks for the next frame in [`TICK`].
pub fn spinner(ui: &mut egui::Ui) {
    let size = ui.style().spacing.interact_size.y;
    let (rect, _) = ui.allocate_exact_size(egui::vec2(size, size), egui::Sense::hover());
    if ui.is_rect_visible(rect) {
        let t = ui.input(|i| i.time);
        let radius = rect.height() / 2.0 - 2.0;
        let start = (t * 4.0) % std::f64::consts::TAU;
        let points: Vec<egui::Pos2> = (0..=20)
            .map(|i| {
                let a = start + i as f64 / 20.0 * std::f64::consts::PI * 1.5;
                rect.center() + radius * egui::vec2(a.cos() as f32, a.sin() as f32)
            })
            .collect();
        ui.painter().add(egui::Shape::line(
            points,
            egui::Stroke::new(2.0, ui.visuals().strong_text_color()),
        ));
    }
    ui.ctx().request_repaint_after(TICK);
}

/// Wakes the window from a worker thread no more than [`TICK`] from now: a run's events
/// can come hundreds a second, and each used to ask for a frame of its own.
pub fn wake(ctx: &egui::Context) {
    ctx.request_repaint_after(Duration::from_millis(100));
}
