//! A sweep's report as a table (CSV) and as the seed papers' figure (SVG, one panel per
//! score against ε), drawn without a plotting crate so the headless build can write it.

use std::fmt::Write as _;
use std::path::Path;

use super::points::{SweepPoint, SweepReport, mean};
use crate::job::JobError;

/// The table as CSV: one row per run.
pub fn to_csv(r: &SweepReport) -> String {
    let mut s = String::from(
        "method,epsilon,epsilon_spent,repeat,tstr_accuracy,tstr_auroc,tv_1way,pca_score,seconds,failed\n",
    );
    for p in &r.points {
        let cells: Vec<String> = p
            .scores()
            .iter()
            .map(|v| v.map_or(String::new(), |x| format!("{x:.6}")))
            .collect();
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{:.1},{}",
            p.method,
            p.epsilon.map_or("inf".to_string(), |e| e.to_string()),
            cells[0],
            p.repeat,
            cells[1],
            cells[2],
            cells[3],
            cells[4],
            p.seconds,
            p.failed
                .as_deref()
                .map_or(String::new(), |f| format!("\"{}\"", f.replace('"', "'")))
        );
    }
    s
}

/// One metric of the figure.
struct Panel {
    title: &'static str,
    get: fn(&SweepPoint) -> Option<f64>,
    /// (name, value) reference lines.
    refs: Vec<(&'static str, f64)>,
}

const COLOURS: [&str; 6] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
];

/// The headline scores a sweep has (images have no TV or PCA; a table without a label has
/// no classifier scores), each with its reference lines.
fn panels(r: &SweepReport) -> Vec<Panel> {
    let images = r.label.as_deref() == Some("digit") && r.points.iter().all(|p| p.tv_1way.is_nan());
    let mut panels = vec![
        Panel {
            title: if images {
                "accuracy on real test digits (MLP trained on generated)"
            } else {
                "TSTR accuracy (mean of 8 classifiers)"
            },
            get: |p| p.tstr_accuracy,
            refs: [
                ("real data", r.real_accuracy),
                ("majority class", r.majority_accuracy),
            ]
            .into_iter()
            .filter_map(|(n, v)| v.map(|v| (n, v)))
            .collect(),
        },
        Panel {
            title: "TSTR AUROC (mean of 8 classifiers)",
            get: |p| p.tstr_auroc,
            refs: [("real data", r.real_auroc), ("chance", Some(0.5))]
                .into_iter()
                .filter_map(|(n, v)| v.map(|v| (n, v)))
                .collect(),
        },
        Panel {
            title: "1-way TV distance (lower is better)",
            get: |p| Some(p.tv_1way),
            refs: vec![],
        },
        Panel {
            title: "2-way PCA Wasserstein score",
            get: |p| Some(p.pca_score),
            refs: vec![],
        },
    ];
    // Panels with nothing to draw go.
    panels.retain(|p| {
        r.points
            .iter()
            .any(|pt| (p.get)(pt).is_some_and(f64::is_finite))
    });
    panels
}

/// Where one panel sits and what its axes span: ε in decades `lo..=hi` on a log axis (∞ one
/// decade past `hi` when a point has it), the score in `y0..y1`.
struct Frame {
    ox: f64,
    oy: f64,
    pw: f64,
    ph: f64,
    lo: f64,
    hi: f64,
    has_inf: bool,
    y0: f64,
    y1: f64,
}

impl Frame {
    fn x_max(&self) -> f64 {
        if self.has_inf { self.hi + 1.0 } else { self.hi }
    }

    fn x(&self, e: Option<f64>) -> f64 {
        let lx = e.map_or(self.x_max(), |e| e.log10());
        self.ox + self.pw * (lx - self.lo) / (self.x_max() - self.lo).max(1e-9)
    }

    fn y(&self, v: f64) -> f64 {
        self.oy + self.ph * (1.0 - (v - self.y0) / (self.y1 - self.y0))
    }

    /// The title, the box, the ε decades (and ∞), the score ticks and the reference lines.
    fn axes(&self, s: &mut String, panel: &Panel) {
        let (ox, oy, pw, ph) = (self.ox, self.oy, self.pw, self.ph);
        let _ = write!(
            s,
            r##"<text x="{ox}" y="{}" font-weight="bold">{}</text><rect x="{ox}" y="{oy}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>"##,
            oy - 8.0,
            panel.title
        );
        let mut d = self.lo;
        while d <= self.hi + 1e-9 {
            let x = self.x(Some(10f64.powf(d)));
            let label = crate::util::fmt::number(10f64.powf(d));
            let _ = write!(
                s,
                r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#ddd"/><text x="{x}" y="{}" text-anchor="middle">{label}</text>"##,
                oy,
                oy + ph,
                oy + ph + 15.0
            );
            d += 1.0;
        }
        if self.has_inf {
            let x = self.x(None);
            let _ = write!(
                s,
                r##"<text x="{x}" y="{}" text-anchor="middle">∞</text>"##,
                oy + ph + 15.0
            );
        }
        let _ = write!(
            s,
            r##"<text x="{}" y="{}" text-anchor="middle">ε (log scale)</text>"##,
            ox + pw / 2.0,
            oy + ph + 32.0
        );
        for t in 0..=4 {
            let v = self.y0 + (self.y1 - self.y0) * t as f64 / 4.0;
            let _ = write!(
                s,
                r##"<text x="{}" y="{}" text-anchor="end">{v:.3}</text>"##,
                ox - 4.0,
                self.y(v) + 4.0
            );
        }
        for (name, v) in &panel.refs {
            let _ = write!(
                s,
                r##"<line x1="{ox}" y1="{0}" x2="{1}" y2="{0}" stroke="#555" stroke-dasharray="6,4"/><text x="{2}" y="{3}" text-anchor="end" fill="#555">{name}</text>"##,
                self.y(*v),
                ox + pw,
                ox + pw - 4.0,
                self.y(*v) - 4.0
            );
        }
    }

    /// One method's line: the mean over repeats at each ε, a bar from the smallest to the
    /// largest when there are repeats, and its legend entry in the first panel.
    fn method_line(
        &self,
        s: &mut String,
        r: &SweepReport,
        panel: &Panel,
        m: usize,
        method: &str,
        legend: bool,
    ) {
        let colour = COLOURS[m % COLOURS.len()];
        let mut eps: Vec<Option<f64>> = r
            .points
            .iter()
            .filter(|p| p.method == *method)
            .map(|p| p.epsilon)
            .collect();
        eps.sort_by(|a, b| {
            a.unwrap_or(f64::INFINITY)
                .total_cmp(&b.unwrap_or(f64::INFINITY))
        });
        eps.dedup();
        let mut line = Vec::new();
        for e in eps {
            let v: Vec<f64> = r
                .points
                .iter()
                .filter(|p| p.method == *method && p.epsilon == e)
                .filter_map(|p| (panel.get)(p))
                .filter(|v| v.is_finite())
                .collect();
            let Some(avg) = mean(v.iter().copied()) else {
                continue;
            };
            let (vmin, vmax) = (
                v.iter().copied().fold(f64::INFINITY, f64::min),
                v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            );
            let x = self.x(e);
            if v.len() > 1 {
                let _ = write!(
                    s,
                    r#"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="{colour}"/>"#,
                    self.y(vmin),
                    self.y(vmax)
                );
            }
            let _ = write!(
                s,
                r#"<circle cx="{x}" cy="{}" r="4" fill="{colour}"/>"#,
                self.y(avg)
            );
            line.push(format!("{x},{}", self.y(avg)));
        }
        let _ = write!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
            line.join(" ")
        );
        if legend {
            let _ = write!(
                s,
                r#"<rect x="{}" y="{}" width="12" height="12" fill="{colour}"/><text x="{}" y="{}">{method}</text>"#,
                self.ox + 8.0,
                self.oy + 8.0 + 16.0 * m as f64,
                self.ox + 24.0,
                self.oy + 18.0 + 16.0 * m as f64
            );
        }
    }
}

/// The score range a panel's axis spans: its points and reference lines, padded by a tenth.
fn y_range(r: &SweepReport, panel: &Panel) -> (f64, f64) {
    let vals: Vec<f64> = r
        .points
        .iter()
        .filter_map(|p| (panel.get)(p))
        .chain(panel.refs.iter().map(|x| x.1))
        .filter(|v| v.is_finite())
        .collect();
    let (mut y0, mut y1) = (
        vals.iter().copied().fold(f64::INFINITY, f64::min),
        vals.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    if !(y0.is_finite() && y1.is_finite()) {
        (y0, y1) = (0.0, 1.0);
    }
    let pad = ((y1 - y0) * 0.1).max(0.01);
    (y0 - pad, y1 + pad)
}

/// The figure as one self-contained SVG: a panel per headline score, score against ε on a
/// log axis (∞ at the right), one line per method (the mean over repeats, bars from the
/// smallest to the largest), the real-data ceiling and the majority-class floor dashed.
pub fn to_svg(r: &SweepReport) -> String {
    let panels = panels(r);
    let finite: Vec<f64> = r.points.iter().filter_map(|p| p.epsilon).collect();
    let lo = finite
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .min(1.0)
        .log10()
        .floor();
    let hi = finite
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max)
        .max(1.0)
        .log10()
        .ceil();
    let has_inf = r.points.iter().any(|p| p.epsilon.is_none());
    let (pw, ph, ml, mt) = (420.0, 260.0, 60.0, 40.0);
    let cols = 2usize;
    let rows = panels.len().div_ceil(cols);
    let (w, h) = (
        cols as f64 * (pw + ml + 20.0),
        rows as f64 * (ph + mt + 50.0) + 40.0,
    );
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/>"#
    );
    let mut methods: Vec<&str> = r.points.iter().map(|p| p.method.as_str()).collect();
    methods.dedup();
    methods.sort();
    methods.dedup();
    for (i, panel) in panels.iter().enumerate() {
        let (y0, y1) = y_range(r, panel);
        let frame = Frame {
            ox: (i % cols) as f64 * (pw + ml + 20.0) + ml,
            oy: (i / cols) as f64 * (ph + mt + 50.0) + mt,
            pw,
            ph,
            lo,
            hi,
            has_inf,
            y0,
            y1,
        };
        frame.axes(&mut s, panel);
        for (m, method) in methods.iter().enumerate() {
            frame.method_line(&mut s, r, panel, m, method, i == 0);
        }
    }
    // The reference lines are scores of classifiers trained on the private rows, without
    // noise: the figure says so where it ends up (a slide, a report), not only here.
    if panels.iter().any(|p| !p.refs.is_empty()) {
        let _ = write!(
            s,
            r##"<text x="{}" y="{}" fill="#b00000">NOT FOR RELEASE: the dashed "real data" lines are scores on the private rows, computed without noise; only the method lines are differentially private.</text>"##,
            ml,
            h - 12.0
        );
    }
    s.push_str("</svg>");
    s
}

/// Writes `text` to `path` atomically.
pub fn write(path: &Path, text: &str) -> Result<(), JobError> {
    crate::util::atomic::write_atomic(path, text.as_bytes()).map_err(|e| JobError::write(path, e))
}
