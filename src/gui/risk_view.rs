//! "What ε means for a person in the data": the best membership attack's trade-off curve
//! for a guarantee (the job's [`crate::job::risk`]), an audit's measured attacks on the same
//! chart, and the budget stated the other way round — the attack risk a user accepts
//! turned into the ε that guarantees it. Used beside the cost preview and in a run's
//! privacy statement.

use eframe::egui;
use egui_plot::{Legend, Line, Plot, PlotPoints, Points};

use crate::job::risk::{AcceptedRisk, RiskCurve};

/// The trade-off chart: TPR against FPR, the guarantee's ceiling, chance, and any measured
/// attack points. Logarithmic FPR shows the low-FPR corner, where attacks that matter
/// live (Carlini et al. 2022); linear shows the textbook square.
pub fn curve_plot(
    ui: &mut egui::Ui,
    id: &str,
    curve: &RiskCurve,
    measured: &[(String, f64, f64)],
    log_fpr: bool,
) {
    let x = |f: f64| if log_fpr { f.max(1e-4).log10() } else { f };
    let pts: Vec<[f64; 2]> = curve
        .points
        .iter()
        .filter(|(f, _)| !log_fpr || *f > 0.0)
        .map(|(f, t)| [x(*f), *t])
        .collect();
    let chance: Vec<[f64; 2]> = curve
        .points
        .iter()
        .filter(|(f, _)| !log_fpr || *f > 0.0)
        .map(|(f, _)| [x(*f), *f])
        .collect();
    let label = match curve.epsilon {
        Some(e) => format!("best possible attack at ε = {e:.3}, δ = {}", curve.delta),
        None => "not private: certainty".to_string(),
    };
    Plot::new(id)
        .height(300.0)
        .width(ui.available_width().min(380.0))
        .legend(Legend::default().position(egui_plot::Corner::RightBottom))
        .allow_scroll(false)
        .allow_drag(false)
        .allow_zoom(false)
        .include_y(0.0)
        .include_y(1.0)
        .include_x(x(if log_fpr { 1e-4 } else { 0.0 }))
        .include_x(x(1.0))
        .x_axis_label(if log_fpr {
            "false-positive rate (log scale)"
        } else {
            "false-positive rate"
        })
        .y_axis_label("true-positive rate")
        .x_axis_formatter(move |m, _| {
            if log_fpr {
                format!("{}", 10f64.powf(m.value))
            } else {
                format!("{:.2}", m.value)
            }
        })
        .show(ui, |p| {
            p.line(
                Line::new("chance (a coin)", PlotPoints::from(chance)).color(egui::Color32::GRAY),
            );
            p.line(
                Line::new(label, PlotPoints::from(pts))
                    .color(egui::Color32::from_rgb(214, 39, 40))
                    .width(2.0),
            );
            for (k, (name, f, t)) in measured.iter().enumerate() {
                let color = [
                    egui::Color32::from_rgb(31, 119, 180),
                    egui::Color32::from_rgb(44, 160, 44),
                ][k % 2];
                p.points(
                    Points::new(
                        format!("{name}: measured"),
                        PlotPoints::from(vec![[x(*f), *t]]),
                    )
                    .radius(5.0)
                    .color(color),
                );
            }
        });
}

/// Which way the accepted risk is stated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Stated {
    #[default]
    Accuracy,
    TprAt,
}

/// The chart's switch and the "state the budget as a risk" form.
pub struct RiskView {
    log_fpr: bool,
    stated: Stated,
    accuracy: String,
    tpr: String,
    fpr: String,
    answer: Option<Result<f64, String>>,
}

impl Default for RiskView {
    fn default() -> Self {
        Self {
            log_fpr: false,
            stated: Stated::default(),
            accuracy: "60".into(),
            tpr: "0.05".into(),
            fpr: "0.01".into(),
            answer: None,
        }
    }
}

impl RiskView {
    /// The chart with its axis switch; `measured` points are an audit's attacks.
    pub fn chart(
        &mut self,
        ui: &mut egui::Ui,
        id: &str,
        curve: &RiskCurve,
        measured: &[(String, f64, f64)],
    ) {
        ui.horizontal_wrapped(|ui| {
            ui.label(format!("The red curve bounds every possible attack (from {}): no attack that flags people as \"in the data\" reaches above it.", curve.source_words()));
            ui.checkbox(&mut self.log_fpr, "log scale")
                .on_hover_text("A logarithmic false-positive axis shows the corner where an attack is confident about a few people: the risk that matters most.");
        });
        curve_plot(ui, id, curve, measured, self.log_fpr);
    }

    /// The accepted-risk form; returns an ε when the user asks to use it.
    pub fn accept_ui(&mut self, ui: &mut egui::Ui, delta: Option<f64>) -> Option<f64> {
        let mut used = None;
        ui.label("Or state the budget the other way round, as the attack risk you accept:");
        ui.horizontal(|ui| {
            ui.radio_value(&mut self.stated, Stated::Accuracy, "an attacker right at most")
                .on_hover_text("Guessing \"in\" or \"out\" for one person whose presence is a coin flip: 50 % is chance.");
            ui.add_enabled(
                self.stated == Stated::Accuracy,
                egui::TextEdit::singleline(&mut self.accuracy).desired_width(40.0),
            );
            ui.label("% of the time");
        });
        ui.horizontal(|ui| {
            ui.radio_value(&mut self.stated, Stated::TprAt, "at most a true-positive rate of")
                .on_hover_text("Of the people in the data, the share an attack flags, while it wrongly flags the given share of people not in it.");
            ui.add_enabled(
                self.stated == Stated::TprAt,
                egui::TextEdit::singleline(&mut self.tpr).desired_width(50.0),
            );
            ui.label("at a false-positive rate of");
            ui.add_enabled(
                self.stated == Stated::TprAt,
                egui::TextEdit::singleline(&mut self.fpr).desired_width(50.0),
            );
        });
        ui.horizontal(|ui| {
            if ui.button("What ε is that?").clicked() {
                self.answer = Some(self.solve(delta));
            }
            match &self.answer {
                Some(Ok(e)) => {
                    ui.label(format!("ε ≤ {e:.4} at δ = {}", delta.unwrap_or(f64::NAN)));
                    if ui
                        .button("Use this ε")
                        .on_hover_text("Puts this ε in the form (rounded down).")
                        .clicked()
                    {
                        used = Some(*e);
                    }
                }
                Some(Err(e)) => {
                    ui.colored_label(ui.visuals().error_fg_color, e);
                }
                None => {}
            }
        });
        used
    }

    fn solve(&self, delta: Option<f64>) -> Result<f64, String> {
        let delta = delta.ok_or("type a valid δ first")?;
        let num = |s: &str, what: &str| {
            s.trim()
                .trim_end_matches('%')
                .trim()
                .parse::<f64>()
                .map_err(|_| format!("{what} '{}' is not a number", s.trim()))
        };
        let risk = match self.stated {
            Stated::Accuracy => {
                let a = num(&self.accuracy, "the accuracy")?;
                if !(a > 50.0 && a < 100.0) {
                    return Err(format!(
                        "the accuracy must be between 50 % (chance) and 100 %, got {a}"
                    ));
                }
                AcceptedRisk::Advantage(2.0 * a / 100.0 - 1.0)
            }
            Stated::TprAt => {
                let tpr = num(&self.tpr, "the true-positive rate")?;
                let fpr = num(&self.fpr, "the false-positive rate")?;
                if !(0.0 < fpr && fpr < tpr && tpr < 1.0) {
                    return Err(format!(
                        "the rates must satisfy 0 < false-positive rate < true-positive rate < 1 (an attack below the diagonal is worse than a coin), got {tpr} at {fpr}"
                    ));
                }
                AcceptedRisk::TprAt { tpr, fpr }
            }
        };
        risk.epsilon(delta)
    }
}
