//! Runs compared: the table of every run's headline scores, two runs side by side in the
//! same figure (the teaching view of what changes with ε), and a boosted run beside its
//! last generator.

use eframe::egui;

use super::eval_state::EvalState;
use super::figures::*;
use super::plots::*;
use super::{ResultsPanel, RunResult, View};
use crate::eval::report::Report;

impl ResultsPanel {
    /// The last generator and the boosted mixture of one run, side by side: 1-way
    /// histograms of one column and the 2-way PCA projection.
    pub(super) fn boost_ui(&mut self, ui: &mut egui::Ui) {
        let pair = self
            .runs
            .get(self.selected)
            .and_then(|r| r.before.map(|b| (b, self.selected)));
        let pair = pair.or_else(|| {
            // The selected entry may be the "before" half of a pair.
            self.runs
                .iter()
                .position(|r| r.before == Some(self.selected))
                .map(|after| (self.selected, after))
        });
        let Some((before, after)) = pair else {
            ui.label("This run was not boosted. Tick \"Boost: private post-GAN boosting\" on the Train tab (DP-GAN, DP-auto-GAN, PATE-GAN) to see the last generator and the boosted mixture side by side here.");
            return;
        };
        ui.label("Left: the last generator as training left it. Right: the boosted mixture, the same run's last generators re-weighted by private post-GAN boosting. Both sampled from one model file, scored against the same real rows.");
        let reports: Vec<Result<&Report, String>> = [before, after]
            .iter()
            .map(|i| match &self.runs[*i].state {
                EvalState::Done(ev) => Ok(&ev.report),
                EvalState::Running { line, .. } => Err(format!("evaluating: {line}")),
                EvalState::Failed(e) => Err(format!("evaluation failed: {e}")),
                EvalState::Images { .. } => Err("an image run: see its grid".into()),
                EvalState::Kept => Err("kept from before: show it to evaluate it".into()),
            })
            .collect();
        let mut column = self.hist_column;
        ui.columns(2, |cols| {
            for (k, ui) in cols.iter_mut().enumerate() {
                let i = [before, after][k];
                ui.push_id(("boost", k), |ui| {
                    ui.strong(&self.runs[i].title);
                    match &reports[k] {
                        Ok(rep) => {
                            let tv = rep.histograms.iter().map(|h| h.tvd).sum::<f64>()
                                / rep.histograms.len().max(1) as f64;
                            ui.label(format!(
                                "mean 1-way TV {tv:.3} · PCA Wasserstein score {:.3}",
                                rep.pca.wasserstein.score
                            ));
                            egui::ScrollArea::vertical().show(ui, |ui| {
                                histogram_ui(ui, rep, &mut column);
                                pca_ui(ui, rep);
                            });
                        }
                        Err(line) => {
                            ui.horizontal(|ui| {
                                if line.starts_with("evaluating") {
                                    crate::gui::busy::spinner(ui);
                                }
                                ui.label(line);
                            });
                        }
                    }
                });
            }
        });
        self.hist_column = column;
    }

    /// Any two runs of this dataset, the same figure mirrored: the teaching view of "what
    /// changes when ε does".
    pub(super) fn side_by_side_ui(&mut self, ui: &mut egui::Ui) {
        let n = self.runs.len();
        if n < 2 {
            ui.label("Side by side needs two runs of this dataset: train another (say at another ε) on the Train tab.");
            return;
        }
        if self.pair.0 >= n || self.pair.1 >= n || self.pair.0 == self.pair.1 {
            self.pair = (n - 2, n - 1);
        }
        if !SIDE_VIEWS.iter().any(|(v, _)| *v == self.pair_view) {
            self.pair_view = View::Prediction;
        }
        ui.colored_label(
            ui.visuals().warn_fg_color,
            "A non-private diagnostic: both columns are scored against the real rows. Choosing which run to release by looking here is a use of the data the accountant does not see.",
        );
        self.pick_pair_ui(ui);
        ui.horizontal_wrapped(|ui| {
            ui.label("figure:");
            for (v, name) in SIDE_VIEWS {
                ui.selectable_value(&mut self.pair_view, v, name);
            }
        });
        let (left, right) = self.pair;
        let mut column = self.hist_column;
        let view = self.pair_view;
        let runs = &self.runs;
        egui::ScrollArea::vertical().show(ui, |ui| {
            ui.columns(2, |cols| {
                for (k, ui) in cols.iter_mut().enumerate() {
                    let run = &runs[[left, right][k]];
                    ui.push_id(("side", k), |ui| side_ui(ui, run, view, &mut column));
                }
            });
        });
        self.hist_column = column;
    }

    /// The two runs shown, picked by title, and a swap.
    fn pick_pair_ui(&mut self, ui: &mut egui::Ui) {
        ui.horizontal(|ui| {
            for (k, side) in ["left", "right"].iter().enumerate() {
                let chosen = if k == 0 {
                    &mut self.pair.0
                } else {
                    &mut self.pair.1
                };
                let l = ui.label(*side);
                egui::ComboBox::from_id_salt(("side-pick", k))
                    .selected_text(self.runs[*chosen].title.clone())
                    .width(260.0)
                    .show_ui(ui, |ui| {
                        for (i, r) in self.runs.iter().enumerate() {
                            ui.selectable_value(chosen, i, &r.title);
                        }
                    })
                    .response
                    .labelled_by(l.id);
            }
            if ui.button("swap").clicked() {
                self.pair = (self.pair.1, self.pair.0);
            }
        });
    }

    pub(super) fn compare_ui(&self, ui: &mut egui::Ui) {
        ui.colored_label(
            ui.visuals().warn_fg_color,
            "A non-private diagnostic: these scores are computed on the real rows. Exporting the best of several runs tells the world which one won, a choice the accountant does not see; release a run you chose before looking, or count the selection in the budget.",
        );
        egui::Grid::new("compare").striped(true).show(ui, |ui| {
            header_row(
                ui,
                &[
                    "run",
                    "ε",
                    "mean |real − synthetic| (dimension-wise, floored at −0.1)",
                    "mean 1-way TV",
                    "PCA Wasserstein score",
                    "best TSTR accuracy",
                    "membership AUC",
                ],
            );
            for r in &self.runs {
                ui.label(&r.title);
                ui.label(
                    r.statement
                        .epsilon
                        .map_or("∞".into(), |e| format!("{e:.3}")),
                );
                match &r.state {
                    EvalState::Done(ev) => {
                        let rep = &ev.report;
                        ui.label(format!("{:.3}", floored_mean_abs(rep)));
                        let tv = rep.histograms.iter().map(|h| h.tvd).sum::<f64>()
                            / rep.histograms.len().max(1) as f64;
                        ui.label(format!("{tv:.3}"));
                        ui.label(format!("{:.3}", rep.pca.wasserstein.score));
                        let best = rep.tstr.as_ref().and_then(|t| {
                            t.rows
                                .iter()
                                .filter_map(|r| r.synthetic.as_ref().ok().map(|s| s.accuracy))
                                .reduce(f64::max)
                        });
                        ui.label(best.map_or("-".into(), |b| format!("{b:.3}")));
                        ui.label(
                            rep.privacy_risk
                                .membership_auc
                                .map_or("-".into(), |a| format!("{a:.3}")),
                        );
                    }
                    EvalState::Running { .. } => {
                        ui.label("evaluating…");
                    }
                    EvalState::Failed(e) => {
                        ui.label(e);
                    }
                    EvalState::Images { scores, .. } => {
                        ui.label(scores.summary());
                    }
                    EvalState::Kept => {
                        ui.label("kept from before: select it to evaluate it");
                    }
                }
                ui.end_row();
            }
        });
    }
}

/// The figures side by side can mirror.
const SIDE_VIEWS: [(View, &str); 7] = [
    (View::Prediction, "dimension-wise prediction"),
    (View::Probability, "dimension-wise probability"),
    (View::Histograms, "histograms"),
    (View::Pca, "2-way PCA"),
    (View::Tstr, "train on synthetic, test on real"),
    (View::PrivacyRisk, "privacy risk"),
    (View::Statement, "privacy statement"),
];

/// One line of a run's headline scores, the same for every run shown side by side.
fn headline(rep: &Report) -> String {
    let tv = rep.histograms.iter().map(|h| h.tvd).sum::<f64>() / rep.histograms.len().max(1) as f64;
    let best = rep.tstr.as_ref().and_then(|t| {
        t.rows
            .iter()
            .filter_map(|r| r.synthetic.as_ref().ok().map(|s| s.accuracy))
            .reduce(f64::max)
    });
    format!(
        "mean 1-way TV {tv:.3} · PCA score {:.3}{}",
        rep.pca.wasserstein.score,
        best.map_or(String::new(), |b| format!(" · best TSTR accuracy {b:.3}"))
    )
}

/// One run's column: its title, then the chosen figure (or how far its evaluation is).
fn side_ui(ui: &mut egui::Ui, run: &RunResult, view: View, column: &mut usize) {
    ui.strong(&run.title);
    if view == View::Statement {
        statement_ui(ui, &run.statement);
        return;
    }
    match &run.state {
        EvalState::Done(ev) => {
            let rep = &ev.report;
            ui.label(headline(rep));
            match view {
                View::Probability => probability_ui(ui, rep),
                View::Histograms => histogram_ui(ui, rep, column),
                View::Pca => pca_ui(ui, rep),
                View::Tstr => tstr_ui(ui, rep),
                View::PrivacyRisk => risk_ui(ui, rep),
                _ => prediction_ui(ui, rep),
            }
        }
        EvalState::Running { line, .. } => {
            ui.horizontal(|ui| {
                crate::gui::busy::spinner(ui);
                ui.label(format!("evaluating: {line}"));
            });
        }
        EvalState::Failed(e) => {
            ui.label(format!("evaluation failed: {e}"));
        }
        EvalState::Images {
            generated,
            real,
            scores,
        } => {
            let preset = run.config.as_deref().map(|c| c.preset.as_str());
            images_ui(ui, generated, real.as_ref(), scores, preset);
        }
        EvalState::Kept => {
            ui.label("kept from before: select it above to evaluate it");
        }
    }
}
