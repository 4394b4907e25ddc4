//! The first look: what a person who knows the data sees in the rows before any score —
//! each number column's commonest exact values and its decimals, the rules' broken rows,
//! and random rows side by side (real rows are a local view for the data's owner).

use eframe::egui;

use crate::eval::results::FirstLook;

fn pct(x: f64) -> String {
    format!("{:.1} %", 100.0 * x)
}

/// The first-look section of a report.
pub(super) fn first_look_ui(ui: &mut egui::Ui, look: Option<&FirstLook>) {
    let Some(l) = look else {
        ui.label(
            "This report was made before the first look existed: evaluate the run again to see it.",
        );
        return;
    };
    egui::ScrollArea::vertical().id_salt("first-look").show(ui, |ui| {
        match &l.worst {
            Some(w) => ui.colored_label(ui.visuals().warn_fg_color, format!("The worst thing a reader sees first: {w}.")),
            None => ui.label("Nothing stands out at first look: common exact values, decimals and rules match the real rows within 3 points."),
        };
        exact_ui(ui, l);
        if !l.rules.is_empty() {
            ui.add_space(6.0);
            ui.strong("Rules: share of rows that break each, and where its condition and consequence hold");
            egui::Grid::new("first-look-rules").striped(true).show(ui, |ui| {
                for h in [
                    "rule",
                    "break: real",
                    "synthetic",
                    "condition: real",
                    "synthetic",
                    "consequence: real",
                    "synthetic",
                ] {
                    ui.strong(h);
                }
                ui.end_row();
                for r in &l.rules {
                    ui.monospace(&r.rule);
                    ui.label(pct(r.real));
                    ui.label(pct(r.synthetic));
                    for part in [r.when, r.then] {
                        match part {
                            Some((a, b)) => {
                                ui.label(pct(a));
                                ui.label(pct(b));
                            }
                            None => {
                                ui.label("");
                                ui.label("");
                            }
                        }
                    }
                    ui.end_row();
                }
            });
        }
        ui.add_space(6.0);
        rows_ui(ui, l);
    });
}

fn exact_ui(ui: &mut egui::Ui, l: &FirstLook) {
    if l.exact.is_empty() {
        return;
    }
    ui.strong("Number columns: rows at their commonest exact values, and decimals");
    egui::Grid::new("first-look-exact")
        .striped(true)
        .show(ui, |ui| {
            for h in [
                "column",
                "value",
                "real",
                "synthetic",
                "decimals (real / synthetic)",
            ] {
                ui.strong(h);
            }
            ui.end_row();
            for e in &l.exact {
                let decimals = format!("{} / {}", e.real_decimals, e.synthetic_decimals);
                if e.values.is_empty() {
                    ui.label(&e.column);
                    ui.label("no value in 1 % of rows");
                    ui.label("");
                    ui.label("");
                    ui.label(decimals.clone());
                    ui.end_row();
                }
                for (i, v) in e.values.iter().enumerate() {
                    ui.label(if i == 0 { e.column.as_str() } else { "" });
                    ui.label(format!("= {}", v.value));
                    ui.label(pct(v.real));
                    let off = (v.real - v.synthetic).abs() >= 0.03;
                    if off {
                        ui.colored_label(ui.visuals().warn_fg_color, pct(v.synthetic));
                    } else {
                        ui.label(pct(v.synthetic));
                    }
                    ui.label(if i == 0 {
                        decimals.clone()
                    } else {
                        String::new()
                    });
                    ui.end_row();
                }
            }
        });
}

fn rows_ui(ui: &mut egui::Ui, l: &FirstLook) {
    for (title, rows, id) in [
        (
            "Random synthetic rows",
            &l.synthetic_rows,
            "first-look-synthetic",
        ),
        (
            "Random real rows (shown here only: never released)",
            &l.real_rows,
            "first-look-real",
        ),
    ] {
        ui.strong(title);
        if rows.is_empty() {
            ui.weak("Real rows are shown only in the window that evaluated: reports kept on disk or saved hold none.");
            continue;
        }
        egui::ScrollArea::horizontal().id_salt(id).show(ui, |ui| {
            egui::Grid::new(id).striped(true).show(ui, |ui| {
                for h in &l.header {
                    ui.strong(h);
                }
                ui.end_row();
                for row in rows {
                    for cell in row {
                        ui.label(cell);
                    }
                    ui.end_row();
                }
            });
        });
        ui.add_space(4.0);
    }
}
