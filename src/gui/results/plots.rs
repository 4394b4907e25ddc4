//! The results view's figures, one function per tab: each draws a plain report value
//! (`eval::report`) with egui_plot and never computes a metric itself.

use eframe::egui;
use egui_plot::{Bar, BarChart, HoverPosition, Legend, Line, Plot, PlotPoints, Points};

use crate::eval::report::Report;
use crate::job::PrivacyStatement;

use super::{REAL, SYNTHETIC};

/// A square plot over [lo, hi]² with the y = x line, real on x and synthetic on y.
#[allow(clippy::too_many_arguments)]
pub(super) fn diagonal_plot(
    ui: &mut egui::Ui,
    id: &str,
    axes: (&str, &str),
    lo: f64,
    hi: f64,
    names: Vec<(String, Vec<String>)>,
    add: impl FnOnce(&mut egui_plot::PlotUi<'_>),
) {
    let names = std::sync::Arc::new(names);
    let lookup = names.clone();
    Plot::new(id)
        .data_aspect(1.0)
        .height(plot_height(ui))
        .x_axis_label(axes.0)
        .y_axis_label(axes.1)
        // Points gather along y = x, from bottom left to top right: the top-left corner
        // is where the legend covers the fewest.
        .legend(Legend::default().position(egui_plot::Corner::LeftTop))
        .include_x(lo)
        .include_x(hi)
        .include_y(lo)
        .include_y(hi)
        .label_formatter(move |pos| match pos {
            HoverPosition::NearDataPoint {
                plot_name,
                position,
                index,
            } => {
                let col = lookup
                    .iter()
                    .find(|(n, _)| n == plot_name)
                    .and_then(|(_, cols)| cols.get(*index))?;
                let _ = position;
                Some(col.clone())
            }
            _ => None,
        })
        .show(ui, |p| {
            p.line(
                Line::new("y = x", PlotPoints::from(vec![[lo, lo], [hi, hi]]))
                    .color(egui::Color32::GRAY),
            );
            add(p);
        });
}

/// A figure takes the height the tab has left, on a small window as on a large one (a
/// fixed height wastes a tall window and overflows a short one), down to a minimum that
/// still reads.
fn plot_height(ui: &egui::Ui) -> f32 {
    (ui.available_height() - 8.0).max(160.0)
}

/// The two series' names in their colours above a figure, so no legend sits on the data.
fn legend_above(ui: &mut egui::Ui) {
    ui.horizontal(|ui| {
        ui.label("Colours:");
        ui.colored_label(REAL, egui::RichText::new("real").strong());
        ui.colored_label(SYNTHETIC, egui::RichText::new("synthetic").strong());
    });
}

/// Scores below this (R² of a useless model) count as it in the window's summaries.
const FLOOR: f64 = -0.1;

/// Mean |real − synthetic| of the dimension-wise scores, each floored at [`FLOOR`].
pub(super) fn floored_mean_abs(rep: &Report) -> f64 {
    let d: Vec<f64> = rep
        .prediction
        .points
        .iter()
        .filter_map(|p| Some((p.real?.max(FLOOR) - p.synthetic?.max(FLOOR)).abs()))
        .collect();
    d.iter().sum::<f64>() / d.len().max(1) as f64
}

pub(super) fn prediction_ui(ui: &mut egui::Ui, rep: &Report) {
    let d = &rep.prediction;
    // One R² of −70 would swamp the mean: summarise the points as drawn, and give the raw
    // figure (the report's) beside it.
    let mean_floored = floored_mean_abs(rep);
    ui.label(format!(
        "Each point is one column predicted from all the others: x = the model trained on real rows, y = trained on synthetic rows, both scored on real held-out rows. Points on the line mean the synthetic data keeps that column's relationships. Mean distance from the line {:.3}, mean |real − synthetic| {:.3} (scores below −0.1, R² of a useless model, count as −0.1 and are drawn there; without that floor: {:.3} and {:.3}). Hover a point for its column and true scores.",
        mean_floored / std::f64::consts::SQRT_2,
        mean_floored,
        d.mean_distance_from_diagonal,
        d.mean_abs_difference
    ));
    let mut series: Vec<(String, Vec<[f64; 2]>, Vec<String>)> = Vec::new();
    for p in &d.points {
        let (Some(r), Some(s)) = (p.real, p.synthetic) else {
            continue;
        };
        let name = format!("{} · {}", p.model, super::glossary::plain_metric(&p.metric));
        let at = match series.iter().position(|(n, _, _)| *n == name) {
            Some(i) => i,
            None => {
                series.push((name, Vec::new(), Vec::new()));
                series.len() - 1
            }
        };
        // R² of a poor synthetic model can be −70: drawn at the floor so the scores that
        // matter keep their scale; the hover text gives the true values.
        series[at].1.push([r.max(FLOOR), s.max(FLOOR)]);
        series[at].2.push(format!(
            "{}\n{}: real {r:.3} · synthetic {s:.3}",
            p.column,
            super::glossary::plain_metric(&p.metric)
        ));
    }
    let (lo, hi) = (FLOOR, 1.0);
    let names = series
        .iter()
        .map(|(n, _, c)| (n.clone(), c.clone()))
        .collect();
    let axes = ("trained on real", "trained on synthetic");
    diagonal_plot(ui, "prediction", axes, lo, hi, names, |p| {
        for (name, pts, _) in series {
            p.points(Points::new(name, PlotPoints::from(pts)).radius(4.0));
        }
    });
}

pub(super) fn probability_ui(ui: &mut egui::Ui, rep: &Report) {
    ui.label("Each point is one binary column: the share of its second value among real rows (x) and synthetic rows (y). Hover a point for its column.");
    let pts: Vec<[f64; 2]> = rep
        .probability
        .iter()
        .map(|p| [p.real, p.synthetic])
        .collect();
    let cols: Vec<String> = rep
        .probability
        .iter()
        .map(|p| {
            format!(
                "{} = {}\nreal {:.3} · synthetic {:.3}",
                p.column, p.value, p.real, p.synthetic
            )
        })
        .collect();
    if pts.is_empty() {
        ui.label("This table has no binary columns.");
        return;
    }
    diagonal_plot(
        ui,
        "probability",
        ("share among real rows", "share among synthetic rows"),
        0.0,
        1.0,
        vec![("binary columns".into(), cols)],
        |p| p.points(Points::new("binary columns", PlotPoints::from(pts)).radius(4.0)),
    );
}

pub(super) fn histogram_ui(ui: &mut egui::Ui, rep: &Report, column: &mut usize) {
    if rep.histograms.is_empty() {
        ui.label("No columns to show.");
        return;
    }
    *column = (*column).min(rep.histograms.len() - 1);
    ui.horizontal(|ui| {
        let l = ui.label("Column:");
        egui::ComboBox::from_id_salt("hist-column")
            .selected_text(rep.histograms[*column].column.clone())
            .show_ui(ui, |ui| {
                for (i, h) in rep.histograms.iter().enumerate() {
                    ui.selectable_value(column, i, format!("{} (TV {:.3})", h.column, h.tvd));
                }
            })
            .response
            .labelled_by(l.id);
    });
    let h = &rep.histograms[*column];
    ui.label(format!(
        "Share of rows per value: real (blue) and synthetic (orange). Total variation distance {:.3} (0 = identical, 1 = disjoint).",
        h.tvd
    ));
    // Values outside the real range sit in the end bars: say how many, never hide them.
    if let Some((_, k)) = rep
        .synthetic_out_of_domain
        .iter()
        .find(|(c, _)| *c == h.column)
    {
        ui.colored_label(
            ui.visuals().warn_fg_color,
            format!(
                "{k} of {} synthetic values are ones the real data does not have (outside its range or categories, or blank where it never is); out-of-range numbers are counted in the end bars.",
                rep.sizes.synthetic
            ),
        );
    }
    let bars = |vals: &[f64], off: f64, color: egui::Color32| -> Vec<Bar> {
        vals.iter()
            .enumerate()
            .map(|(i, v)| {
                Bar::new(i as f64 + off, *v)
                    .width(0.4)
                    .fill(color)
                    .name(h.bins.get(i).cloned().unwrap_or_default())
            })
            .collect()
    };
    let bins = h.bins.clone();
    legend_above(ui);
    Plot::new(format!("hist-{}", h.column))
        .height(plot_height(ui))
        .x_axis_label(format!("{} (hover a bar for its value)", h.column))
        .y_axis_label("share of rows")
        .x_axis_formatter(move |m, _| {
            let i = m.value.round();
            if (m.value - i).abs() < 1e-6 && i >= 0.0 {
                bins.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .show(ui, |p| {
            p.bar_chart(BarChart::new("real", bars(&h.real, -0.2, REAL)).color(REAL));
            p.bar_chart(
                BarChart::new("synthetic", bars(&h.synthetic, 0.2, SYNTHETIC)).color(SYNTHETIC),
            );
        });
}

pub(super) fn pca_ui(ui: &mut egui::Ui, rep: &Report) {
    let p = &rep.pca;
    ui.label(format!(
        "Real and synthetic rows projected on the first two principal components of the real data ({:.0}% of its variance). Wasserstein score {:.3} (1 = the two clouds coincide); whole-data score {:.3}.",
        100.0 * p.explained_variance_ratio.iter().take(2).sum::<f64>(),
        p.wasserstein.score,
        rep.whole_data_wasserstein.score
    ));
    legend_above(ui);
    Plot::new("pca")
        .height(plot_height(ui))
        .data_aspect(1.0)
        .x_axis_label("first principal component")
        .y_axis_label("second principal component")
        .show(ui, |pl| {
            pl.points(
                Points::new("real", PlotPoints::from(p.real_points.clone()))
                    .color(REAL)
                    .radius(1.5),
            );
            pl.points(
                Points::new("synthetic", PlotPoints::from(p.synthetic_points.clone()))
                    .color(SYNTHETIC)
                    .radius(1.5),
            );
        });
}

pub(super) fn tstr_ui(ui: &mut egui::Ui, rep: &Report) {
    let Some(t) = &rep.tstr else {
        ui.label("The table has no binary or categorical column to predict.");
        return;
    };
    ui.label(format!(
        "Eight classifiers predict '{}'. Each is trained once on real rows and once on synthetic rows, and both are scored on real held-out rows ({}). Always guessing the most common class scores {:.3}.",
        t.label, t.test_rows, t.majority_accuracy
    ));
    let fmt = |s: &Result<crate::eval::report::Scores, String>| -> [String; 3] {
        match s {
            Ok(s) => [
                format!("{:.3}", s.accuracy),
                s.auroc.map_or("-".into(), |v| format!("{v:.3}")),
                s.auprc.map_or("-".into(), |v| format!("{v:.3}")),
            ],
            Err(e) => [e.clone(), String::new(), String::new()],
        }
    };
    egui::Grid::new("tstr").striped(true).show(ui, |ui| {
        header_row(
            ui,
            &[
                "model",
                "rows",
                "real: accuracy",
                "AUROC",
                "AUPRC",
                "synthetic: accuracy",
                "AUROC",
                "AUPRC",
            ],
        );
        for r in &t.rows {
            ui.label(&r.label);
            ui.label(r.train_rows.to_string());
            for c in fmt(&r.real).into_iter().chain(fmt(&r.synthetic)) {
                ui.label(c);
            }
            ui.end_row();
        }
    });
    if let Some(a) = t.agreed_ranking_auroc {
        ui.label(format!(
            "Agreed ranking of the models by AUROC (1 = synthetic data ranks them as real data does): {a:.3}"
        ));
    }
}

pub(super) fn risk_ui(ui: &mut egui::Ui, rep: &Report) {
    let r = &rep.privacy_risk;
    ui.label("Empirical checks on the released sample. They cannot prove privacy — the guarantee is the statement's ε — but they show obvious leaks.");
    egui::Grid::new("risk").striped(true).show(ui, |ui| {
        let mut row = |k: &str, v: String| {
            let r = ui.label(k);
            if let Some(t) = super::glossary::explain(k) {
                r.on_hover_text(t);
            }
            ui.label(v);
            ui.end_row();
        };
        row("rows compared", r.rows.to_string());
        row(
            "synthetic rows identical to a training row",
            r.exact_copies.to_string(),
        );
        row(
            "median distance to the closest training row: synthetic / unseen real",
            format!("{:.3} / {:.3}", r.dcr_synthetic_median, r.dcr_test_median),
        );
        row(
            "5th percentile of that distance: synthetic / unseen real",
            format!("{:.3} / {:.3}", r.dcr_synthetic_p5, r.dcr_test_p5),
        );
        row(
            "membership-inference AUC (0.5 = no signal)",
            r.membership_auc.map_or("-".into(), |a| format!("{a:.3}")),
        );
        row(
            "pMSE: how well a classifier tells real from synthetic rows (0 = indistinguishable)",
            format!("{:.4}", rep.pmse.fit.pmse),
        );
        row(
            "MMD² (unbiased): a kernel distance between real and synthetic rows (0 = same)",
            format!("{:.5}", rep.mmd.mmd2_unbiased),
        );
    });
}

pub(super) fn statement_ui(ui: &mut egui::Ui, s: &PrivacyStatement) {
    match s.epsilon {
        Some(e) => {
            let r = ui.heading(format!(
                "(ε = {e:.4}, δ = {}) differential privacy, by the {} accountant",
                s.delta, s.accountant
            ));
            ui.small(format!(
                "{}: {}",
                s.accountant,
                super::glossary::plain_accountant(&s.accountant)
            ));
            r
        }
        None => ui.heading("Not private (ε = ∞): a reference model only, never to be released"),
    };
    accountant_detail_ui(ui, s);
    ui.label("Every use of the private rows:");
    for (d, count) in merged_uses(s) {
        ui.label(format!("  • {d} × {count}"));
    }
    if s.non_private_domains.is_empty() && s.non_private_kinds.is_empty() {
        ui.label("Every column's kind and domain was public (given by you) or estimated privately within this ε, so the guarantee covers the whole release.");
    }
    public_facts_ui(ui, s);
    let gaps = [
        (
            &s.non_private_domains,
            "the domains of {} were read off the data. In the Data tab, replace them with public values or estimate them privately to close this gap.",
        ),
        (
            &s.non_private_kinds,
            "the kinds of {} were guessed from the data (one record can change a guess). In the Data tab, set each kind or press \"Kinds are public\" if they come from a codebook.",
        ),
    ];
    if !s.dropped_columns.is_empty() {
        ui.colored_label(
            ui.visuals().warn_fg_color,
            format!(
                "Not synthesized: {} — no value of theirs was frequent enough to pass the private domain estimate. Give their categories as public facts (Data tab), raise the domain share, or use more rows.",
                s.dropped_columns.join(", ")
            ),
        );
    }
    for (columns, what) in gaps {
        if !columns.is_empty() {
            ui.colored_label(
                ui.visuals().warn_fg_color,
                format!("Not covered: {}", what.replace("{}", &columns.join(", "))),
            );
        }
    }
    if s.epsilon.is_some() {
        ui.label(crate::job::records_statement_in_window(s.public_rows));
        if let Some(at) = &s.counted_by {
            ui.label(crate::job::counted_by_statement(at));
        }
    }
    if s.not_for_release {
        ui.colored_label(
            ui.visuals().warn_fg_color,
            "A fixed seed was used: reproducible, NOT for release.",
        );
    }
}

/// The facts the user stated, which the release holds to at no cost, and the exact
/// values a private estimate found.
fn public_facts_ui(ui: &mut egui::Ui, s: &PrivacyStatement) {
    let (named, found) = crate::job::services::point_masses(s);
    if !named.is_empty() {
        ui.label(format!(
            "Exact values you named (public facts, no cost): {}.",
            named.join("; ")
        ));
    }
    if !found.is_empty() {
        ui.label(format!(
            "Exact values estimated privately with the domains (inside this ε): {}.",
            found.join("; ")
        ));
    }
    if !s.rules.is_empty() {
        ui.label("Rules you stated (public facts, no cost; every synthetic row obeys them):");
        for r in &s.rules {
            ui.monospace(format!("  {r}"));
        }
    }
}

/// The other accountant's figure beside the one the statement uses.
fn accountant_detail_ui(ui: &mut egui::Ui, s: &PrivacyStatement) {
    match (s.epsilon_rdp, s.epsilon_pld) {
        (Some(r), p) => {
            ui.label(format!(
                "detail: RDP accountant ε = {r:.4}{}",
                p.map_or(String::new(), |p| format!(" · PLD accountant ε = {p:.4}"))
            ))
            .on_hover_text(super::glossary::explain("rdp").unwrap_or_default());
        }
        (None, Some(p)) => {
            ui.label(format!(
                "detail: PLD accountant ε = {p:.4} (RDP cannot bound the thresholded category estimate)"
            ));
        }
        _ => {}
    }
}

/// Each mechanism with its number of uses, listed once however the run interleaved them.
fn merged_uses(s: &PrivacyStatement) -> Vec<(String, u64)> {
    let mut merged: Vec<(String, u64)> = Vec::new();
    for m in &s.mechanisms {
        let d = m.mechanism.describe();
        match merged.iter_mut().find(|(k, _)| *k == d) {
            Some((_, c)) => *c += m.count,
            None => merged.push((d, m.count)),
        }
    }
    merged
}

/// A grid's header: one bold cell per name, then the end of the row.
pub(super) fn header_row(ui: &mut egui::Ui, names: &[&str]) {
    for h in names {
        let r = ui.strong(*h);
        if let Some(t) = super::glossary::explain(h) {
            r.on_hover_text(t);
        }
    }
    ui.end_row();
}
