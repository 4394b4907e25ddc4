//! The report's figures as inline SVG (plotters' SVG backend): scatter plots, histograms,
//! the PCA projection, and the `<figure>` that holds each; and the escaping every section
//! uses.

use std::fmt::Write as _;

use plotters::prelude::*;

pub(super) const REAL: RGBColor = RGBColor(31, 119, 180);
pub(super) const SYN: RGBColor = RGBColor(255, 127, 14);

pub(super) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub(super) fn fmt(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.digits$}"),
        _ => "—".into(),
    }
}

type Plot = Result<String, String>;

pub(super) fn e<T: std::fmt::Debug>(x: T) -> String {
    format!("{x:?}")
}

/// Scatter of (real, synthetic) scores with the y = x line.
pub(super) fn scatter_xy(title: &str, pts: &[(f64, f64, String)], lo: f64, hi: f64) -> Plot {
    svg_chart(
        (420, 380),
        title,
        (lo..hi, lo..hi),
        36,
        Legend::None,
        |chart| {
            chart
                .configure_mesh()
                .light_line_style(RGBColor(245, 245, 245))
                .bold_line_style(RGBColor(225, 225, 225))
                .x_desc("trained on real")
                .y_desc("trained on synthetic")
                .draw()
                .map_err(e)?;
            chart
                .draw_series(LineSeries::new(vec![(lo, lo), (hi, hi)], BLACK.mix(0.4)))
                .map_err(e)?;
            chart
                .draw_series(
                    pts.iter()
                        .map(|(x, y, _)| Circle::new((*x, *y), 4, SYN.mix(0.8).filled())),
                )
                .map_err(e)?;
            Ok(())
        },
    )
}

/// The chart every report figure is drawn on: a white SVG canvas of `size` pixels with a
/// caption and axes over `ranges`; `draw` adds the mesh and the series.
pub(super) fn svg_chart(
    size: (u32, u32),
    title: &str,
    ranges: (std::ops::Range<f64>, std::ops::Range<f64>),
    x_label_area: u32,
    legend: Legend,
    draw: impl FnOnce(&mut Chart<'_, '_>) -> Result<(), String>,
) -> Plot {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(12)
            .x_label_area_size(x_label_area)
            .y_label_area_size(46)
            .build_cartesian_2d(ranges.0, ranges.1)
            .map_err(e)?;
        draw(&mut chart)?;
        if !matches!(legend, Legend::None) {
            let mut labels = chart.configure_series_labels();
            labels
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK.mix(0.3));
            if let Legend::At(at) = legend {
                labels.position(at);
            }
            labels.draw().map_err(e)?;
        }
        root.present().map_err(e)?;
    }
    Ok(buf)
}

type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// Where a chart's legend goes: none (unlabelled series), plotters' default place, or a
/// given corner.
pub(super) enum Legend {
    None,
    Default,
    At(SeriesLabelPosition),
}

pub(super) fn histogram(title: &str, bins: &[String], real: &[f64], syn: &[f64]) -> Plot {
    let n = bins.len().max(1);
    let top = real
        .iter()
        .chain(syn)
        .copied()
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.1;
    let labels: Vec<String> = bins.iter().map(|b| b.chars().take(10).collect()).collect();
    let legend = Legend::At(SeriesLabelPosition::UpperRight);
    svg_chart(
        (520, 300),
        title,
        (0f64..n as f64, 0f64..top),
        40,
        legend,
        |chart| {
            chart
                .configure_mesh()
                .light_line_style(RGBColor(245, 245, 245))
                .bold_line_style(RGBColor(225, 225, 225))
                .disable_x_mesh()
                .x_labels(n.min(12))
                .x_label_formatter(&|x| labels.get(*x as usize).cloned().unwrap_or_default())
                .y_desc("share of rows")
                .draw()
                .map_err(e)?;
            chart
                .draw_series(real.iter().enumerate().map(|(i, &v)| {
                    Rectangle::new(
                        [(i as f64 + 0.08, 0.0), (i as f64 + 0.48, v)],
                        REAL.filled(),
                    )
                }))
                .map_err(e)?
                .label("real-train")
                .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], REAL.filled()));
            chart
                .draw_series(syn.iter().enumerate().map(|(i, &v)| {
                    Rectangle::new([(i as f64 + 0.52, 0.0), (i as f64 + 0.92, v)], SYN.filled())
                }))
                .map_err(e)?
                .label("synthetic")
                .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], SYN.filled()));
            Ok(())
        },
    )
}

pub(super) fn pca_plot(real: &[[f64; 2]], syn: &[[f64; 2]]) -> Plot {
    {
        let all = real.iter().chain(syn);
        let (mut x0, mut x1, mut y0, mut y1) = (
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
        );
        for p in all {
            x0 = x0.min(p[0]);
            x1 = x1.max(p[0]);
            y0 = y0.min(p[1]);
            y1 = y1.max(p[1]);
        }
        if !x0.is_finite() || x1 <= x0 {
            (x0, x1) = (-1.0, 1.0);
        }
        if !y0.is_finite() || y1 <= y0 {
            (y0, y1) = (-1.0, 1.0);
        }
        svg_chart(
            (520, 440),
            "2-way PCA projection (axes from real-train)",
            (x0..x1, y0..y1),
            36,
            Legend::Default,
            |chart| {
                chart
                    .configure_mesh()
                    .light_line_style(RGBColor(245, 245, 245))
                    .bold_line_style(RGBColor(225, 225, 225))
                    .x_desc("PC 1")
                    .y_desc("PC 2")
                    .draw()
                    .map_err(e)?;
                chart
                    .draw_series(
                        real.iter()
                            .map(|p| Circle::new((p[0], p[1]), 2, REAL.mix(0.35).filled())),
                    )
                    .map_err(e)?
                    .label("real-train")
                    .legend(|(x, y)| Circle::new((x + 5, y), 4, REAL.filled()));
                chart
                    .draw_series(
                        syn.iter()
                            .map(|p| Circle::new((p[0], p[1]), 2, SYN.mix(0.35).filled())),
                    )
                    .map_err(e)?
                    .label("synthetic")
                    .legend(|(x, y)| Circle::new((x + 5, y), 4, SYN.filled()));
                Ok(())
            },
        )
    }
}

pub(super) fn figure(out: &mut String, plot: Plot, caption: &str) {
    match plot {
        Ok(svg) => {
            let _ = write!(
                out,
                "<figure>{svg}<figcaption>{}</figcaption></figure>",
                esc(caption)
            );
        }
        Err(m) => {
            let _ = write!(out, "<p class=warn>Plot failed: {}</p>", esc(&m));
        }
    }
}
