//! The report of a linked pair: the figures across the link first, then each table's own
//! report, one page.

use std::fmt::Write as _;

use super::charts::esc;
use super::{Inputs, render};
use crate::eval::linked::LinkedReport;
use crate::eval::report::Report;

/// One page: the cross-table section, then the parents' report, then the children's.
pub fn render_linked(
    parents: (&Report, &Inputs),
    children: (&Report, &Inputs),
    l: &LinkedReport,
) -> String {
    let p = render(parents.0, parents.1);
    let c = render(children.0, children.1);
    // The children's report without its page header: from its first section on.
    let c_body = c.find("<h2>").map_or(c.as_str(), |i| &c[i..]);
    let c_body = c_body.trim_end_matches("</html>");
    let mut cross = String::new();
    cross_section(&mut cross, l);
    let split = p.find("<h2>").unwrap_or(p.len());
    let (head, rest) = p.split_at(split);
    let rest = rest.trim_end_matches("</html>");
    format!("{head}{cross}<h1>The parent table</h1>{rest}<h1>The child table</h1>{c_body}</html>")
}

fn cross_section(h: &mut String, l: &LinkedReport) {
    let _ = write!(
        h,
        "<h2>Across the link</h2><p>Synthetic children whose key is a synthetic parent's: <b>{:.1} %</b>.</p>",
        100.0 * l.keys_found
    );
    let _ = write!(h, "<table><tr><th>children per parent</th>");
    for k in 0..l.children_real.len() {
        let _ = write!(h, "<th>{k}</th>");
    }
    let _ = write!(h, "</tr>");
    for (name, v) in [
        ("real", &l.children_real),
        ("synthetic", &l.children_synthetic),
    ] {
        let _ = write!(h, "<tr><td>{name}</td>");
        for x in v {
            let _ = write!(h, "<td>{:.1} %</td>", 100.0 * x);
        }
        let _ = write!(h, "</tr>");
    }
    let _ = write!(
        h,
        "</table><p>Total variation between the two: <b>{:.3}</b>.</p><p>Each parent column against each child column on the joined rows (a child beside its parent): mean total variation <b>{:.3}</b> over {} tables.</p><table><tr><th>parent column</th><th>child column</th><th>total variation</th></tr>",
        l.children_tv,
        l.cross_mean_tv,
        l.cross.len()
    );
    for c in &l.cross {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{:.3}</td></tr>",
            esc(&c.parent),
            esc(&c.child),
            c.tv
        );
    }
    let _ = write!(h, "</table>");
    if let Some(t) = &l.task {
        let _ = write!(
            h,
            "<p>A task that needs both tables — a parent's <code>{}</code> from its other columns and its children's (their number, means and shares) — scored on the held-out real parents ({}): trained on the synthetic pair <b>{:.3}</b>, on the real training pair {:.3}.</p>",
            esc(&t.label),
            esc(&t.score),
            t.synthetic,
            t.real
        );
    }
}
