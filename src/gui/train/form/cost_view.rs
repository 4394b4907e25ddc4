//! The form's cost preview: what the run will cost and leave, in words and per person, the
//! dataset's editable total, and the δ rule.

use eframe::egui;

use crate::job::{self, cost::Cost};

use super::*;

impl Form {
    /// The cost preview and the dataset's editable total.
    pub fn cost_ui(&mut self, ui: &mut egui::Ui, running: bool) {
        let req = self.cost_request();
        let shown = match (&req, self.cost.value()) {
            (Ok(_), Some(Ok(c))) => Some(c.clone()),
            _ => None,
        };
        let updating = req.as_ref().is_ok_and(|r| !self.cost.is_current(r));
        self.sync_delta(shown.as_ref());
        ui.group(|ui| {
            ui.horizontal(|ui| {
                ui.strong("Cost of this run");
                if updating {
                    // The figures below are the last ones until the job has priced the
                    // form as it stands (Train waits for them).
                    crate::gui::busy::spinner(ui);
                }
            });
            match (&req, &shown) {
                (Err(e), _) => {
                    ui.colored_label(ui.visuals().error_fg_color, e);
                }
                (Ok(_), Some(c)) => self.figures_ui(ui, c),
                (Ok(_), None) => {
                    ui.label("computing the cost…");
                }
            }
            if let (Ok(_), Some(Err(e))) = (&req, self.cost.value()) {
                ui.colored_label(ui.visuals().error_fg_color, e.to_string());
            }
            if let Some(r) = shown.as_ref().and_then(|c| c.refused.as_ref()) {
                ui.colored_label(ui.visuals().error_fg_color, r);
            }
            if let Some(r) = self.engine_refusal() {
                ui.colored_label(ui.visuals().error_fg_color, r);
            }
        });
        if let Some(c) = shown.filter(|c| c.total > 0.0) {
            if self.total_for != self.dataset_key {
                self.total_input = crate::util::fmt::number(c.total);
                self.total_for = self.dataset_key.clone();
            }
            if !running {
                self.total_ui(ui, c.total, c.delta);
            }
        }
    }

    /// Once per dataset: the δ field shows the dataset's δ when its ledger record has one
    /// (a run at another δ is refused once anything is spent, see `DeltaRule`).
    pub(super) fn sync_delta(&mut self, shown: Option<&Cost>) {
        let Some(c) = shown else { return };
        if self.delta_synced_for == self.dataset_key {
            return;
        }
        if let Some(d) = c.dataset_delta {
            self.delta = crate::util::fmt::number(d);
        }
        self.delta_synced_for = self.dataset_key.clone();
    }

    /// The dataset's total budget, editable: it is the ledger's, shared by every run on
    /// this file (from the window or the command line). A change is asked about first.
    pub(super) fn total_ui(&mut self, ui: &mut egui::Ui, total: f64, delta: f64) {
        ui.horizontal(|ui| {
            let l = ui.label("This dataset's total budget: ε");
            ui.add(egui::TextEdit::singleline(&mut self.total_input).desired_width(60.0))
                .labelled_by(l.id);
            if ui
                .button("Set total…")
                .on_hover_text("Raise or lower how much ε all runs on this file may spend together (the ledger keeps it and logs the change; `dpsynth budget set` does the same)")
                .clicked()
            {
                match self.total_input.trim().parse::<f64>() {
                    Ok(e) if e > 0.0 && e.is_finite() => {
                        self.total_confirm = Some(e);
                        self.total_msg = None;
                    }
                    _ => {
                        self.total_msg =
                            Some(format!("'{}' is not a positive number", self.total_input.trim()))
                    }
                }
            }
            if let Some(m) = &self.total_msg {
                ui.label(m);
            }
        });
        if let Some(e) = self.total_confirm {
            ui.horizontal(|ui| {
                ui.colored_label(
                    ui.visuals().warn_fg_color,
                    format!("Change this dataset's total from ε {} to ε {}? Every run on this file, from the window or the command line, shares it; the ledger logs the change.", crate::util::fmt::number(total), crate::util::fmt::number(e)),
                );
                if ui.button("Change the total").clicked() {
                    self.total_msg = Some(self.set_total(e, delta));
                    self.total_confirm = None;
                    self.ledger_changed();
                }
                if ui.button("Keep it").clicked() {
                    self.total_confirm = None;
                    self.total_input = crate::util::fmt::number(total);
                }
            });
        }
    }

    pub(super) fn set_total(&self, epsilon: f64, delta: f64) -> String {
        let Some(key) = &self.dataset_key else {
            return "no dataset is open".into();
        };
        match job::cost::set_total(&job::paths::default_ledger_path(), key, epsilon, delta) {
            Ok(()) => format!("total set to ε {epsilon}"),
            Err(e) => format!("could not set the total: {e}"),
        }
    }

    /// The run's figures: the budget before and after, what ε means for a person, and
    /// what the plan says of its parts.
    fn figures_ui(&mut self, ui: &mut egui::Ui, c: &Cost) {
        ui.label(format!(
            "this dataset's budget: total ε {:.3} · spent {:.3} · this run {:.3} · left after {:.3}  (at the dataset's δ = {})",
            c.total, c.spent, c.this_run, c.left_after, c.delta
        ));
        ui.label(c.meaning()).on_hover_text(
            "The best possible membership attack on this run's release (the hypothesis-testing view of differential privacy). `dpsynth privacy risk` prints the same curve.",
        );
        egui::CollapsingHeader::new("What ε means for a person in the data")
            .id_salt("what-eps-means")
            .show(ui, |ui| {
                let curve = job::risk::RiskCurve::of_guarantee(c.this_run, c.delta);
                self.risk.chart(ui, "risk-preview", &curve, &[]);
                if let Some(e) = self.risk.accept_ui(ui, self.delta().ok()) {
                    self.epsilon = round_down(e);
                }
            });
        plan_notes_ui(ui, c);
    }
}

/// What the plan says beyond the budget: the domain and boosting shares, its summary, its
/// warnings, what the statement does not cover, the resources, and the δ rule.
fn plan_notes_ui(ui: &mut egui::Ui, c: &Cost) {
    if let Some(d) = c.domains {
        ui.label(format!(
            "domains: ε {d:.3} of this run's, to estimate the marked columns privately"
        ));
    }
    if let Some(b) = c.boost {
        ui.label(format!(
            "boosting: ε {b:.3} of this run's (alone), for the exponential mechanism's rounds; training gets the rest"
        ));
    }
    if !c.summary.is_empty() {
        if c.summary.contains("zCDP") {
            // The marginal methods' split is in ρ: a figure for the curious, in a fold.
            ui.label("Spends the budget on noisy counts of columns and groups of columns; the model fitted to them costs nothing more.");
            egui::CollapsingHeader::new("Details: how the budget is split (ρ)")
                .id_salt("plan rho")
                .show(ui, |ui| {
                    ui.label(&c.summary).on_hover_text(PLAN_TERMS);
                    ui.label("ρ (zero-concentrated DP) is the budget the marginal methods spend on noisy counts; the figures above are it converted to (ε, δ).");
                });
        } else {
            ui.label(&c.summary).on_hover_text(PLAN_TERMS);
        }
    }
    if let Some(w) = &c.warning {
        ui.colored_label(ui.visuals().warn_fg_color, w);
    }
    if let Some(d) = &c.domain_diagnostic {
        ui.colored_label(ui.visuals().warn_fg_color, d);
    }
    for n in &c.not_covered {
        ui.colored_label(ui.visuals().warn_fg_color, n);
    }
    if let Some(r) = &c.resources {
        match r.refusal() {
            Some(why) => {
                ui.colored_label(ui.visuals().warn_fg_color, why);
            }
            None => {
                ui.label(format!(
                    "{}; trains on {}",
                    r.line_without_available(),
                    c.device
                ));
            }
        }
    }
    if let Some(job::cost::DeltaRule::Adopt { was }) = c.delta_rule {
        ui.label(format!(
            "Nothing has been spent on this dataset yet: this run sets its δ to {} (was {was}).",
            c.delta
        ));
    }
    if let Some(n) = c.composition_note() {
        ui.label(n);
    }
}

/// ε rounded down to four significant digits, so the form's ε never exceeds the one a
/// risk allows.
pub(super) fn round_down(e: f64) -> String {
    if !(e > 0.0 && e.is_finite()) {
        return crate::util::fmt::number(e);
    }
    let scale = 10f64.powi(3 - e.log10().floor() as i32);
    crate::util::fmt::number((e * scale).floor() / scale)
}

/// The plan's terms, for an analyst (the cost summary's tooltip).
pub(super) const PLAN_TERMS: &str = "q — the sampling rate: the chance that each row is used in one training step.\n\
σ — the noise multiplier: the noise added at each step, in units of the most one row can change that step.\n\
ρ — a zero-concentrated DP budget (zCDP): marginal methods spend it on noisy counts; the accountant turns it into (ε, δ).\n\
PLD / RDP — the two accountants: both bound the same composition; the smaller figure is the one shown.";
