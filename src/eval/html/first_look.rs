//! The report's first-look section: exact values and decimals per number column, the
//! rules' broken rows, and random rows side by side.

use std::fmt::Write as _;

use super::charts::esc;
use crate::eval::results::FirstLook;

fn pct(x: f64) -> String {
    format!("{:.1} %", 100.0 * x)
}

pub(super) fn first_look_section(h: &mut String, l: &FirstLook) {
    let _ = write!(
        h,
        "<h2>First look</h2><p>What a reader who knows the data sees in the rows before any score. {}</p>",
        match &l.worst {
            Some(w) => format!("<b>The worst:</b> {}.", esc(w)),
            None =>
                "Nothing stands out: common exact values, decimals and rules match within 3 points."
                    .into(),
        }
    );
    if !l.exact.is_empty() {
        h.push_str("<table><tr><th>column</th><th>value</th><th>real</th><th>synthetic</th><th>decimals (real → synthetic)</th></tr>");
        for e in &l.exact {
            for (i, v) in e.values.iter().enumerate() {
                let _ = write!(
                    h,
                    "<tr><td>{}</td><td>= {}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    if i == 0 {
                        esc(&e.column)
                    } else {
                        String::new()
                    },
                    esc(&v.value),
                    pct(v.real),
                    pct(v.synthetic),
                    if i == 0 {
                        format!("{} → {}", e.real_decimals, e.synthetic_decimals)
                    } else {
                        String::new()
                    }
                );
            }
        }
        h.push_str("</table>");
    }
    if !l.rules.is_empty() {
        h.push_str("<h3>Rules: share of rows that break each, and where its condition and consequence hold</h3><table><tr><th>rule</th><th>break: real</th><th>synthetic</th><th>condition holds: real</th><th>synthetic</th><th>consequence holds: real</th><th>synthetic</th></tr>");
        let pair = |p: Option<(f64, f64)>| match p {
            Some((a, b)) => format!("<td>{}</td><td>{}</td>", pct(a), pct(b)),
            None => "<td></td><td></td>".to_string(),
        };
        for r in &l.rules {
            let _ = write!(
                h,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td>{}{}</tr>",
                esc(&r.rule),
                pct(r.real),
                pct(r.synthetic),
                pair(r.when),
                pair(r.then)
            );
        }
        h.push_str("</table>");
    }
    rows_tables(h, l);
}

/// The random synthetic rows, and the real ones where the report keeps them.
fn rows_tables(h: &mut String, l: &FirstLook) {
    for (title, rows) in [
        ("Random synthetic rows", &l.synthetic_rows),
        (
            "Random real rows (local: this report shows real rows)",
            &l.real_rows,
        ),
    ] {
        if rows.is_empty() {
            // A report to hand on holds no real row (they stay in the window).
            continue;
        }
        let _ = write!(
            h,
            "<h3>{title}</h3><div style=\"overflow-x:auto\"><table><tr>"
        );
        for c in &l.header {
            let _ = write!(h, "<th>{}</th>", esc(c));
        }
        h.push_str("</tr>");
        for row in rows {
            h.push_str("<tr>");
            for c in row {
                let _ = write!(h, "<td>{}</td>", esc(c));
            }
            h.push_str("</tr>");
        }
        h.push_str("</table></div>");
    }
}
