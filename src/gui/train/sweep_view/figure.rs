//! The sweep's results as the panel draws them: the score-against-ε chart (a click opens a
//! point's run), the table of points, and the export of both.

use std::path::{Path, PathBuf};

use eframe::egui;
use egui_plot::{HLine, Legend, Line, Plot, PlotPoint, PlotPoints, Points};

use crate::job::sweep::{SweepPoint, SweepReport};
use crate::job::{self};

use super::*;

impl SweepView {
    /// The score against ε: a line per method through the mean of its repeats, bars from
    /// the smallest to the largest, the reference lines dashed. A click opens the nearest
    /// point's results.
    pub(super) fn chart(
        &mut self,
        ui: &mut egui::Ui,
        report: Option<&SweepReport>,
        here: bool,
    ) -> Option<Open> {
        let finite: Vec<f64> = self.points.iter().filter_map(|p| p.epsilon).collect();
        let top = finite.iter().copied().fold(1.0f64, f64::max).log10().ceil();
        let x_inf = top + 1.0;
        let has_inf = self.points.iter().any(|p| p.epsilon.is_none());
        let x = move |e: Option<f64>| e.map_or(x_inf, f64::log10);
        let mut methods: Vec<&str> = self.points.iter().map(|p| p.method.as_str()).collect();
        methods.sort();
        methods.dedup();
        let metric = self.metric;
        let (name, help) = Metric::ALL
            .iter()
            .find(|(m, ..)| *m == metric)
            .map_or(("", ""), |(_, n, h)| (*n, *h));
        let refs = reference_lines(report, metric);
        let (mid, half) = y_range(&self.points, metric, &refs);
        let outer = ui.scope(|ui| {
            Plot::new("sweep-chart")
                .height(300.0)
                .width(ui.available_width().min(900.0))
                .include_y(mid - half)
                .include_y(mid + half)
                .legend(Legend::default().position(egui_plot::Corner::RightBottom))
                .allow_scroll(false)
                .allow_drag(false)
                .allow_zoom(false)
                .x_axis_label("ε (log scale; ∞ = not private)")
                .y_axis_label(metric.axis_words().unwrap_or(name))
                .include_x(x(Some(finite.iter().copied().fold(1.0, f64::min))) - 0.3)
                .include_x(if has_inf { x_inf + 0.3 } else { top + 0.3 })
                .x_axis_formatter(move |m, _| epsilon_tick(m.value, x_inf))
                .show(ui, |p| {
                    for (n, v) in &refs {
                        // The ceiling in green, the floor (or chance) in grey.
                        let colour = if n.starts_with("real") {
                            egui::Color32::from_rgb(60, 170, 90)
                        } else {
                            egui::Color32::GRAY
                        };
                        p.hline(
                            HLine::new(*n, *v)
                                .color(colour)
                                .style(egui_plot::LineStyle::dashed_loose()),
                        );
                    }
                    for (k, m) in methods.iter().enumerate() {
                        let series = by_epsilon(&self.points, m, metric, x);
                        draw_series(p, m, COLOURS[k % COLOURS.len()], &series);
                    }
                })
        });
        // The chart with its axes and labels (what a saved PNG shows).
        let resp = outer.inner;
        self.chart_rect = Some(outer.response.rect);
        ui.label(format!("The y axis: {help}"));
        ui.small("Click a point (or Open in the table) to see that run's results.");
        if !here || !resp.response.clicked() {
            return None;
        }
        let pos = resp.response.interact_pointer_pos()?;
        let nearest = self
            .points
            .iter()
            .filter_map(|pt| {
                let v = metric.get(pt)?;
                let s = resp
                    .transform
                    .position_from_point(&PlotPoint::new(x(pt.epsilon), v));
                Some((s.distance(pos), pt))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))?;
        (nearest.0 < 16.0).then(|| open_point(nearest.1))
    }

    /// Every run as a row, with its results one click away.
    pub(super) fn table(&self, ui: &mut egui::Ui, here: bool) -> Option<Open> {
        let mut open = None;
        let f = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.3}"));
        egui::Grid::new("sweep-table").striped(true).show(ui, |ui| {
            for h in [
                "method", "ε", "spent", "TSTR accuracy", "TSTR AUROC", "1-way TV", "PCA score",
                "seconds", "",
            ] {
                ui.strong(h);
            }
            ui.end_row();
            for p in &self.points {
                ui.label(&p.method);
                ui.label(p.epsilon.map_or("∞".into(), crate::util::fmt::number));
                if let Some(why) = &p.failed {
                    // A failed point keeps its row, with the reason, and the sweep goes on.
                    ui.colored_label(ui.visuals().warn_fg_color, "failed")
                        .on_hover_text(why.as_str());
                    for _ in 0..6 {
                        ui.label("");
                    }
                    ui.label(why.chars().take(80).collect::<String>());
                    ui.end_row();
                    continue;
                }
                ui.label(f(p.epsilon_spent));
                ui.label(f(p.tstr_accuracy));
                ui.label(f(p.tstr_auroc));
                ui.label(format!("{:.3}", p.tv_1way));
                ui.label(format!("{:.3}", p.pca_score));
                ui.label(format!("{:.0}", p.seconds));
                if ui
                    .add_enabled(here, egui::Button::new("Open results"))
                    .on_hover_text("Evaluates this run in the Results tab, with its plots and its privacy audit.")
                    .clicked()
                {
                    open = Some(open_point(p));
                }
                ui.end_row();
            }
        });
        ui.small("A non-private diagnostic: every score is computed on the real rows. Releasing the best run of a sweep is a choice the accountant does not see.");
        open
    }

    /// Save the figure (SVG) and the table (CSV) to a typed path: no system dialog needed.
    pub(super) fn export_ui(&mut self, ui: &mut egui::Ui, r: &SweepReport, data: &Path) {
        if self.export_path.is_empty() {
            let stem = data
                .file_stem()
                .map_or("data".into(), |s| s.to_string_lossy().into_owned());
            self.export_path = job::paths::data_dir()
                .join(format!("{stem}-sweep"))
                .display()
                .to_string();
        }
        ui.horizontal(|ui| {
            let l = ui.label("save as");
            ui.add(egui::TextEdit::singleline(&mut self.export_path).desired_width(320.0))
                .labelled_by(l.id)
                .on_hover_text("A path without extension: .svg, .png or .csv is added.");
            for (label, ext) in [
                ("Save figure (SVG)", "svg"),
                ("Save chart (PNG)", "png"),
                ("Save table (CSV)", "csv"),
            ] {
                if ui.button(label).clicked() {
                    let path = PathBuf::from(self.export_path.trim()).with_extension(ext);
                    if path.exists() && self.overwrite.as_ref() != Some(&path) {
                        self.overwrite = Some(path.clone());
                        self.export_msg = Some(format!(
                            "{} exists: press again to replace it",
                            path.display()
                        ));
                        continue;
                    }
                    self.overwrite = None;
                    if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                        let _ = std::fs::create_dir_all(d);
                    }
                    if ext == "png" {
                        self.save_png(ui.ctx(), path);
                        continue;
                    }
                    let text = if ext == "svg" {
                        job::sweep::to_svg(r)
                    } else {
                        job::sweep::to_csv(r)
                    };
                    self.export_msg = Some(match job::sweep::write(&path, &text) {
                        Ok(()) => format!("saved {}", path.display()),
                        Err(e) => e.to_string(),
                    });
                }
            }
        });
        if let Some(m) = self.png_answer.as_ref().and_then(|rx| rx.try_recv().ok()) {
            self.png_answer = None;
            self.export_msg = Some(m);
        }
        if let Some(m) = &self.export_msg {
            ui.label(m);
        }
    }

    /// The chart as shown, as a PNG: a screenshot of the window cut to the chart (the
    /// renderer answers a frame later, on its own thread).
    pub(super) fn save_png(&mut self, ctx: &egui::Context, path: PathBuf) {
        let Some(rect) = self.chart_rect else {
            self.export_msg = Some("the chart has not been drawn yet".into());
            return;
        };
        let (tx, rx) = std::sync::mpsc::channel();
        self.png_answer = Some(rx);
        self.export_msg = Some("taking the picture…".into());
        let ppp = ctx.pixels_per_point();
        let wake = ctx.clone();
        ctx.request_screenshot(move |image| {
            let cut = image.region(&rect, Some(ppp));
            let msg = match crate::eval::images::rgba_png(
                cut.size[0],
                cut.size[1],
                cut.as_raw(),
                &path,
            ) {
                Ok(()) => format!("saved {}", path.display()),
                Err(e) => e,
            };
            let _ = tx.send(msg);
            wake.request_repaint();
        });
    }
}

pub(super) fn open_point(p: &SweepPoint) -> Open {
    (
        format!(
            "sweep: {} at ε = {}{}",
            p.method,
            p.epsilon.map_or("∞".into(), crate::util::fmt::number),
            if p.repeat > 0 {
                format!(" (repeat {})", p.repeat + 1)
            } else {
                String::new()
            }
        ),
        p.model.clone(),
        p.config.clone(),
    )
}

/// One colour per method, in the order of their names.
const COLOURS: [egui::Color32; 5] = [
    egui::Color32::from_rgb(31, 119, 180),
    egui::Color32::from_rgb(255, 127, 14),
    egui::Color32::from_rgb(44, 160, 44),
    egui::Color32::from_rgb(214, 39, 40),
    egui::Color32::from_rgb(148, 103, 189),
];

/// The dashed lines that give a score its meaning: real data's (the ceiling) and the floor.
fn reference_lines(report: Option<&SweepReport>, metric: Metric) -> Vec<(&'static str, f64)> {
    let lines = match (report, metric) {
        (Some(r), Metric::Accuracy) => vec![
            ("real data (ceiling)", r.real_accuracy),
            ("majority class (floor)", r.majority_accuracy),
        ],
        (Some(r), Metric::Auroc) => {
            vec![("real data (ceiling)", r.real_auroc), ("chance", Some(0.5))]
        }
        _ => vec![],
    };
    lines
        .into_iter()
        .filter_map(|(n, v)| v.map(|v| (n, v)))
        .collect()
}

/// The y range's middle and half height: the scores and the reference lines, padded, at
/// least 0.1 tall (an auto-scaled axis would blow one point's noise up to the whole chart).
fn y_range(points: &[SweepPoint], metric: Metric, refs: &[(&str, f64)]) -> (f64, f64) {
    let ys: Vec<f64> = points
        .iter()
        .filter_map(|p| metric.get(p))
        .chain(refs.iter().map(|r| r.1))
        .collect();
    let (mut y0, mut y1) = (
        ys.iter().copied().fold(f64::INFINITY, f64::min),
        ys.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    if !(y0.is_finite() && y1.is_finite()) {
        (y0, y1) = (0.0, 1.0);
    }
    ((y0 + y1) / 2.0, ((y1 - y0) / 2.0 * 1.15).max(0.05))
}

/// The x axis's label at `value`: a power of ten, ∞ at `x_inf`, nothing between.
fn epsilon_tick(value: f64, x_inf: f64) -> String {
    if (value - x_inf).abs() < 1e-6 {
        "∞".into()
    } else if (value - value.round()).abs() < 1e-6 && value < x_inf {
        crate::util::fmt::number(10f64.powf(value.round()))
    } else {
        String::new()
    }
}

/// `method`'s scores grouped by their x position (repeats at one ε together), left to right.
fn by_epsilon(
    points: &[SweepPoint],
    method: &str,
    metric: Metric,
    x: impl Fn(Option<f64>) -> f64,
) -> Vec<(f64, Vec<f64>)> {
    let mut by_eps: Vec<(f64, Vec<f64>)> = Vec::new();
    for pt in points.iter().filter(|p| p.method == method) {
        let Some(v) = metric.get(pt) else { continue };
        let xe = x(pt.epsilon);
        match by_eps.iter_mut().find(|(a, _)| (*a - xe).abs() < 1e-9) {
            Some((_, vs)) => vs.push(v),
            None => by_eps.push((xe, vec![v])),
        }
    }
    by_eps.sort_by(|a, b| a.0.total_cmp(&b.0));
    by_eps
}

/// A method's line through the means of its repeats, with a bar from the smallest to the
/// largest where an ε was repeated.
fn draw_series(
    p: &mut egui_plot::PlotUi<'_>,
    method: &str,
    colour: egui::Color32,
    series: &[(f64, Vec<f64>)],
) {
    let means: Vec<[f64; 2]> = series
        .iter()
        .map(|(xe, vs)| [*xe, vs.iter().sum::<f64>() / vs.len() as f64])
        .collect();
    p.line(Line::new(method, PlotPoints::from(means.clone())).color(colour));
    p.points(
        Points::new(method, PlotPoints::from(means))
            .radius(4.0)
            .color(colour),
    );
    for (xe, vs) in series.iter().filter(|(_, vs)| vs.len() > 1) {
        let lo = vs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = vs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        p.line(Line::new(method, PlotPoints::from(vec![[*xe, lo], [*xe, hi]])).color(colour));
    }
}
