//! The self-contained HTML report: one file, plots as inline SVG (plotters' SVG backend, no
//! fonts or images to ship), readable by someone who never saw the app.

use std::fmt::Write as _;

use super::report::{Report, Scores};

mod charts;
mod first_look;
mod linked;
use charts::*;
pub use linked::render_linked;

/// Where the compared tables came from (shown in the report's header).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Inputs {
    pub real_train: String,
    pub real_test: String,
    pub synthetic: String,
}

/// Renders the report: one self-contained HTML page, a section per metric.
pub fn render(r: &Report, inputs: &Inputs) -> String {
    render_with_audit(r, inputs, None)
}

/// [`render`] with a privacy audit's figure (claimed ε beside the measured lower bounds).
pub fn render_with_audit(r: &Report, inputs: &Inputs, audit: Option<&AuditFigure>) -> String {
    let mut h = String::new();
    header_section(&mut h, r, inputs);
    summary_section(&mut h, r);
    if let Some(l) = &r.first_look {
        first_look::first_look_section(&mut h, l);
    }
    tstr_section(&mut h, r);
    dimwise_section(&mut h, r);
    marginals_section(&mut h, r);
    pca_section(&mut h, r);
    privacy_section(&mut h, r);
    if let Some(a) = audit {
        audit_section(&mut h, a);
    }
    footer_section(&mut h, r);
    h
}

/// What a privacy audit measured, as the report shows it (plain numbers, so the report
/// needs nothing of the job that ran the audit).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditFigure {
    /// The guarantee's ε (`None`: not private).
    pub claimed: Option<f64>,
    pub delta: f64,
    /// (attack, proved lower bound on ε).
    pub bounds: Vec<(String, f64)>,
    pub confidence: f64,
    pub canaries: usize,
    pub verdict: String,
}

impl AuditFigure {
    /// The figure of a `dpsynth audit --json` object (`None` when it is not one).
    pub fn from_json(v: &serde_json::Value) -> Option<Self> {
        let bound = |k: &str| {
            v.get(k)
                .and_then(|b| b.get("lower_bound"))
                .and_then(|x| x.as_f64())
        };
        let mut bounds = Vec::new();
        if let Some(w) = bound("white_box") {
            bounds.push(("white-box (critic score)".to_string(), w));
        }
        bounds.push((
            "black-box (nearest synthetic row)".to_string(),
            bound("black_box")?,
        ));
        Some(Self {
            claimed: v.get("claimed_epsilon").and_then(|x| x.as_f64()),
            delta: v.get("delta")?.as_f64()?,
            bounds,
            confidence: v.get("confidence")?.as_f64()?,
            canaries: v.get("canaries")?.as_u64()? as usize,
            verdict: v.get("verdict")?.as_str()?.to_string(),
        })
    }
}

/// The audit: one bar per attack's proved lower bound, a line at the claimed ε.
fn audit_section(h: &mut String, a: &AuditFigure) {
    let top = a
        .bounds
        .iter()
        .map(|b| b.1)
        .chain(a.claimed)
        .fold(1.0f64, f64::max)
        * 1.15;
    let (w, row, left) = (640.0, 34.0, 250.0);
    let height = row * a.bounds.len() as f64 + 50.0;
    let x = |v: f64| left + (w - left - 20.0) * (v / top).clamp(0.0, 1.0);
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    for (i, (name, b)) in a.bounds.iter().enumerate() {
        let y = 10.0 + row * i as f64;
        let _ = write!(
            svg,
            r##"<text x="{}" y="{}" text-anchor="end">{}</text><rect x="{left}" y="{y}" width="{}" height="{}" fill="#1f77b4"/><text x="{}" y="{}">ε ≥ {b:.2}</text>"##,
            left - 6.0,
            y + row / 2.0,
            esc(name),
            (x(*b) - left).max(1.0),
            row - 10.0,
            x(*b) + 4.0,
            y + row / 2.0
        );
    }
    let base = 10.0 + row * a.bounds.len() as f64;
    match a.claimed {
        Some(c) => {
            let _ = write!(
                svg,
                r##"<line x1="{0}" y1="4" x2="{0}" y2="{base}" stroke="#d62728" stroke-width="2" stroke-dasharray="5,3"/><text x="{0}" y="{1}" fill="#d62728" text-anchor="middle">claimed ε ≤ {c:.2}</text>"##,
                x(c),
                base + 16.0
            );
        }
        None => {
            let _ = write!(
                svg,
                r##"<text x="{left}" y="{}" fill="#d62728">claimed: none (ε = ∞, not private)</text>"##,
                base + 16.0
            );
        }
    }
    let _ = write!(
        svg,
        r##"<line x1="{left}" y1="{base}" x2="{}" y2="{base}" stroke="#555"/><text x="{left}" y="{}" fill="#555">0</text></svg>"##,
        w - 20.0,
        base + 32.0
    );
    let _ = write!(
        h,
        "<h2>Privacy audit</h2><p>{}</p><figure>{svg}<figcaption>Lower bounds on ε proved at {:.0} % confidence by a one-run canary audit ({} canaries, each added with probability ½; Steinke, Nasr &amp; Jagielski 2023), beside the claimed ε at δ = {}. A bound from one attack is evidence, not proof: it shows what this attack could prove, never that no attack could do better.</figcaption></figure>",
        esc(&a.verdict),
        100.0 * a.confidence,
        a.canaries,
        a.delta
    );
}

/// The page head: style, inputs and their sizes, out-of-domain warnings.
fn header_section(h: &mut String, r: &Report, inputs: &Inputs) {
    let _ = write!(
        h,
        r#"<!doctype html><html lang=en><meta charset=utf-8><title>dpsynth evaluation report</title>
<style>body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}}
table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}
th{{background:#f3f3f3}}td:first-child,th:first-child{{text-align:left}}figure{{display:inline-block;margin:.5em}}
figcaption{{font-size:.85em;color:#555;max-width:500px}}.warn{{color:#a40}}.note{{color:#555;font-size:.9em}}
h2{{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}}</style>
<h1>Synthetic data evaluation</h1>
<p>Real-train <code>{}</code> ({} rows) · real-test <code>{}</code> ({} rows) · synthetic <code>{}</code> ({} rows).
Encoded width {} columns. dpsynth {}.</p>
<p class=note>This report compares synthetic rows with the real ones. It reads the real data in the clear and is
meant for the data's custodian: do not publish it alongside the synthetic data. Blue is real, orange synthetic.</p>"#,
        esc(&inputs.real_train),
        r.sizes.real_train,
        esc(&inputs.real_test),
        r.sizes.real_test,
        esc(&inputs.synthetic),
        r.sizes.synthetic,
        r.sizes.encoded_width,
        esc(&r.dpsynth_version)
    );
    if !r.not_synthesized.is_empty() {
        let list: Vec<String> = r.not_synthesized.iter().map(|c| esc(c)).collect();
        let _ = write!(
            h,
            "<p class=warn>Columns the synthetic data does not have (the model dropped them; scored as all missing): {}.</p>",
            list.join(", ")
        );
    }
    if !r.synthetic_out_of_domain.is_empty() {
        let list: Vec<String> = r
            .synthetic_out_of_domain
            .iter()
            .map(|(c, n)| format!("{} ({n})", esc(c)))
            .collect();
        let _ = write!(
            h,
            "<p class=warn>Synthetic values the real data does not have (outside its categories or range, or blank where it never is): {}.</p>",
            list.join(", ")
        );
    }
    if r.has_real_rows() {
        h.push_str("<p style=\"background:#fde2e1;border:2px solid #b00;padding:.6em 1em;font-weight:bold\">This report contains real records: the first look below shows rows of the real data verbatim. Do not hand it on or publish it; a report written without real rows holds none.</p>");
    }
}

/// The headline figures, each with what good looks like.
fn summary_section(h: &mut String, r: &Report) {
    let v = super::verdict::verdict(r);
    let _ = write!(h, "<h2>Verdict</h2><p><b>{}</b></p><ul>", esc(&v.headline));
    for reason in &v.reasons {
        let _ = write!(h, "<li>{}</li>", esc(reason));
    }
    h.push_str("</ul>");
    // Summary.
    let mean_tv =
        r.histograms.iter().map(|x| x.tvd).sum::<f64>() / r.histograms.len().max(1) as f64;
    let _ = write!(
        h,
        "<h2>Summary</h2><table><tr><th>metric</th><th>value</th><th>what good looks like</th></tr>\
<tr><td>dimension-wise prediction, mean |real − synthetic|</td><td>{}</td><td>0</td></tr>\
<tr><td>1-way total variation (mean over columns)</td><td>{}</td><td>0</td></tr>\
<tr><td>3-way marginal total variation (mean of {} triples)</td><td>{}</td><td>0</td></tr>\
<tr><td>2-way PCA Wasserstein score (W1 {})</td><td>{}</td><td>1 (sampling noise keeps real-vs-real below 1)</td></tr>\
<tr><td>whole-data Wasserstein score (W1 {})</td><td>{}</td><td>1</td></tr>\
<tr><td>pMSE ({} rows per side; ratio to its null expectation)</td><td>{} (ratio {})</td><td>ratio ≈ 1</td></tr>\
<tr><td>MMD² unbiased (Gaussian kernel, bandwidth {})</td><td>{}</td><td>≈ 0</td></tr></table>",
        fmt(Some(r.prediction.mean_abs_difference), 3),
        fmt(Some(mean_tv), 3),
        r.three_way.triples,
        fmt(Some(r.three_way.mean_tv), 3),
        fmt(Some(r.pca.wasserstein.w1_mean), 4),
        fmt(Some(r.pca.wasserstein.score), 4),
        fmt(Some(r.whole_data_wasserstein.w1_mean), 4),
        fmt(Some(r.whole_data_wasserstein.score), 4),
        r.pmse.rows_per_side,
        fmt(Some(r.pmse.fit.pmse), 5),
        fmt(Some(r.pmse.fit.ratio), 2),
        fmt(Some(r.mmd.bandwidth), 3),
        fmt(Some(r.mmd.mmd2_unbiased), 5),
    );
}

/// Train on synthetic, test on real, with the agreed ranking.
fn tstr_section(h: &mut String, r: &Report) {
    // TSTR.
    if let Some(t) = &r.tstr {
        let _ = write!(
            h,
            "<h2>Train on synthetic, test on real: predicting <code>{}</code></h2>\
<p>Each model is trained once on real-train and once on synthetic rows, and scored on the {} real-test rows. \
AUROC and AUPRC use predicted probabilities. Always guessing the majority class scores accuracy {}.</p>\
<table><tr><th>model</th><th>rows</th><th>accuracy real</th><th>accuracy synthetic</th><th>AUROC real</th>\
<th>AUROC synthetic</th><th>AUPRC real</th><th>AUPRC synthetic</th></tr>",
            esc(&t.label),
            t.test_rows,
            fmt(Some(t.majority_accuracy), 3)
        );
        for row in &t.rows {
            let g = |s: &Result<Scores, String>| s.as_ref().ok().copied();
            let (a, b) = (g(&row.real), g(&row.synthetic));
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&row.label),
                row.train_rows,
                fmt(a.map(|s| s.accuracy), 3),
                fmt(b.map(|s| s.accuracy), 3),
                fmt(a.and_then(|s| s.auroc), 3),
                fmt(b.and_then(|s| s.auroc), 3),
                fmt(a.and_then(|s| s.auprc), 3),
                fmt(b.and_then(|s| s.auprc), 3),
            );
        }
        let _ = write!(
            h,
            "</table><p>Agreed ranking probability (PATE-GAN eq. 8): {} on AUROC, {} on accuracy \
(1 = the synthetic data ranks the models as the real data does).</p>",
            fmt(t.agreed_ranking_auroc, 3),
            fmt(t.agreed_ranking_accuracy, 3)
        );
    }
}

/// Dimension-wise prediction (scatter and table) and probability.
fn dimwise_section(h: &mut String, r: &Report) {
    // Dimension-wise prediction and probability.
    let _ = write!(
        h,
        "<h2>Dimension-wise prediction</h2><p>Every column is predicted from all the others, by models trained on {} \
real-train rows and on as many synthetic rows, scored on real-test. Points on the line y = x mean the synthetic \
data keeps the relationships between columns.</p>",
        r.prediction.train_rows
    );
    for metric in ["auroc", "f1_micro", "r2"] {
        let pts: Vec<(f64, f64, String)> = r
            .prediction
            .points
            .iter()
            .filter(|p| p.metric == metric)
            .filter_map(|p| Some((p.real?, p.synthetic?, p.column.clone())))
            .collect();
        if pts.is_empty() {
            continue;
        }
        let (lo, title) = match metric {
            "auroc" => (0.0, "binary columns: AUROC"),
            "f1_micro" => (0.0, "categorical columns: F1 (micro)"),
            _ => (
                pts.iter()
                    .map(|p| p.0.min(p.1))
                    .fold(0.0f64, f64::min)
                    .max(-1.0),
                "continuous columns: R²",
            ),
        };
        figure(
            h,
            scatter_xy(title, &pts, lo, 1.0),
            &format!(
                "{} points (logistic regression / random forest; linear regression / lasso)",
                pts.len()
            ),
        );
    }
    let _ = write!(
        h,
        "<table><tr><th>column</th><th>model</th><th>metric</th><th>real</th><th>synthetic</th></tr>"
    );
    for p in &r.prediction.points {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&p.column),
            esc(&p.model),
            esc(&p.metric),
            fmt(p.real, 3),
            fmt(p.synthetic, 3)
        );
    }
    h.push_str("</table>");
    if !r.probability.is_empty() {
        let pts: Vec<(f64, f64, String)> = r
            .probability
            .iter()
            .map(|p| (p.real, p.synthetic, p.column.clone()))
            .collect();
        h.push_str("<h2>Dimension-wise probability</h2>");
        figure(
            h,
            scatter_xy("share of the second value, binary columns", &pts, 0.0, 1.0),
            "x: real-test, y: synthetic",
        );
    }
}

/// 1-way histograms and the 3-way marginal summary.
fn marginals_section(h: &mut String, r: &Report) {
    // Marginals.
    let _ = write!(
        h,
        "<h2>1-way histograms</h2><p>Share of rows per category (continuous columns: 20 equal bins over the real range). \
TV is the total variation distance (0 = identical).</p>"
    );
    for hist in &r.histograms {
        figure(
            h,
            histogram(
                &format!("{} (TV {:.3})", hist.column, hist.tvd),
                &hist.bins,
                &hist.real,
                &hist.synthetic,
            ),
            &format!("{} · {}", hist.column, hist.kind.label()),
        );
    }
    let _ = write!(
        h,
        "<p>3-way marginals (NIST binning, {} triples): mean TV {}, worst {} for ({}).</p>",
        r.three_way.triples,
        fmt(Some(r.three_way.mean_tv), 3),
        fmt(Some(r.three_way.max_tv), 3),
        esc(&r.three_way.worst_triple.join(", "))
    );
}

/// The 2-way PCA projection with its Wasserstein score.
fn pca_section(h: &mut String, r: &Report) {
    // PCA.
    h.push_str("<h2>2-way PCA</h2>");
    figure(
        h,
        pca_plot(&r.pca.real_points, &r.pca.synthetic_points),
        &format!(
            "Explained variance ratio {}. Wasserstein score {} (exact W1 {} ± {} between {}-point samples, {} repeats).",
            r.pca
                .explained_variance_ratio
                .iter()
                .map(|v| format!("{v:.3}"))
                .collect::<Vec<_>>()
                .join(" + "),
            fmt(Some(r.pca.wasserstein.score), 4),
            fmt(Some(r.pca.wasserstein.w1_mean), 4),
            fmt(Some(r.pca.wasserstein.w1_std), 4),
            r.pca.wasserstein.points_per_side,
            r.pca.wasserstein.repeats
        ),
    );
}

/// Distance to closest record, membership inference, and timings.
fn privacy_section(h: &mut String, r: &Report) {
    // Privacy.
    let p = &r.privacy_risk;
    let _ = write!(
        h,
        "<h2>Privacy risk</h2><p>Distance to the closest real-train row (encoded scale), for {} synthetic rows and, \
as the baseline, for {} real-test rows (people the model never saw). Synthetic rows much closer than the baseline \
suggest memorised records.</p><table><tr><th></th><th>median</th><th>5th percentile</th></tr>\
<tr><td>synthetic → real-train</td><td>{}</td><td>{}</td></tr><tr><td>real-test → real-train</td><td>{}</td><td>{}</td></tr></table>\
<p>Exact copies of a real-train row: {}. Membership inference (distance to the closest synthetic row; 0.5 = no \
signal): AUC {}.</p>",
        p.rows,
        p.rows,
        fmt(Some(p.dcr_synthetic_median), 4),
        fmt(Some(p.dcr_synthetic_p5), 4),
        fmt(Some(p.dcr_test_median), 4),
        fmt(Some(p.dcr_test_p5), 4),
        p.exact_copies,
        fmt(p.membership_auc, 3)
    );
}

/// Timings, and the end of the page.
fn footer_section(h: &mut String, r: &Report) {
    let _ = write!(
        h,
        "<h2>How this was computed</h2><p class=note>Timings: {}.</p></html>",
        r.timings
            .iter()
            .map(|(k, v)| format!("{} {v:.1} s", esc(k)))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// The image report: the grid (inline PNG) and the classifier table.
pub fn render_images(r: &super::images::ImageReport, grid_png: Option<&[u8]>) -> String {
    use base64::Engine as _;
    let mut h = String::from(
        "<!doctype html><html lang=en><meta charset=utf-8><title>dpsynth image evaluation</title>\
<style>body{font-family:system-ui,sans-serif;max-width:900px;margin:2em auto}td,th{border:1px solid #ccc;padding:4px 8px}\
table{border-collapse:collapse}img{image-rendering:pixelated;width:420px}</style><h1>Synthetic images</h1>",
    );
    if let Some(png) = grid_png {
        let _ = write!(
            h,
            "<img alt=\"10 by 10 grid of synthetic images\" src=\"data:image/png;base64,{}\">",
            base64::engine::general_purpose::STANDARD.encode(png)
        );
    }
    let _ = write!(
        h,
        "<table><tr><th>classifier</th><th>trained on real ({} images)</th><th>trained on synthetic ({} images)</th></tr>\
<tr><td>CNN (two 3×3 convolutions)</td><td>{:.3}</td><td>{:.3}</td></tr>\
<tr><td>logistic regression</td><td>{:.3}</td><td>{:.3}</td></tr><tr><td>MLP (100 ReLU)</td><td>{:.3}</td><td>{:.3}</td></tr></table>\
<p>Accuracy on {} real test images. Fréchet distance in the real-trained MLP's features: {:.3} (0 = same distribution).</p></html>",
        r.real_train_rows,
        r.synthetic_rows,
        r.real_cnn_accuracy,
        r.synthetic_cnn_accuracy,
        r.real_logistic_accuracy,
        r.synthetic_logistic_accuracy,
        r.real_mlp_accuracy,
        r.synthetic_mlp_accuracy,
        r.real_test_rows,
        r.frechet_distance
    );
    h
}
