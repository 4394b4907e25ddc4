//! Two facts about a column the user states, as a codebook would: whether it may be blank,
//! and how many decimals its values carry. Neither is read off the rows into the schema:
//! a typed domain starts with "no blanks" and "any decimals"
//! ([`crate::data::schema::ColumnSpec::made_public`]), and what the user picks here stays
//! theirs when they type the bounds after picking.

use eframe::egui;

use crate::data::schema::{ColumnSpec, Kind, Provenance};

use super::DataPanel;
use super::summary::ColumnStats;

/// The precisions offered: whole, one to four decimals, any.
const PRECISIONS: [Option<u32>; 6] = [Some(0), Some(1), Some(2), Some(3), Some(4), None];

/// Which facts the user picked for a column (kept when the domain later becomes theirs).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Stated {
    blanks: Option<bool>,
    precision: Option<Option<u32>>,
}

fn precision_label(p: Option<u32>) -> String {
    match p {
        Some(0) => "whole".into(),
        Some(1) => "1 decimal".into(),
        Some(d) => format!("{d} decimals"),
        None => "any decimals".into(),
    }
}

impl DataPanel {
    /// Puts back what the user picked, after the domain became theirs (which resets the
    /// guessed flags to public defaults).
    pub(super) fn keep_stated(&self, spec: &mut ColumnSpec) {
        let Some(s) = self.stated.get(&spec.name) else {
            return;
        };
        if let Some(b) = s.blanks {
            spec.missing = b;
        }
        if let Some(p) = s.precision {
            spec.set_precision(p);
        }
    }

    /// The "may be blank" box, with the file's count of blanks beside it as a hint read
    /// off the rows (shown to the data's owner only, never released). Whether it changed.
    pub(super) fn blanks_cell(
        &mut self,
        ui: &mut egui::Ui,
        spec: &mut ColumnSpec,
        st: ColumnStats,
    ) -> bool {
        if spec.kind == Kind::Ignored || spec.provenance == Provenance::ToEstimate {
            // A private estimate finds the blanks' share itself.
            ui.label(format!("{} blank", st.missing));
            return false;
        }
        ui.horizontal(|ui| {
            let changed = ui
                .checkbox(&mut spec.missing, "may be blank")
                .on_hover_text("Whether this column can be empty, as the codebook says: a public fact like the bounds. Off, the synthetic file has no blank in it (and a file with blanks here is refused before anything is spent); on, the model learns the blanks' share with noise and writes none where that share is within the noise.")
                .accessible_name(format!("{} may be blank", spec.name))
                .changed();
            ui.weak(format!("{} in the file", st.missing))
                .on_hover_text("Counted on your rows: shown to you only, never released");
            if changed {
                self.stated.entry(spec.name.clone()).or_default().blanks = Some(spec.missing);
            }
            changed
        })
        .inner
    }

    /// A number column's precision: whole, a fixed number of decimals, or any. Whether
    /// it changed.
    pub(super) fn precision_ui(
        &mut self,
        ui: &mut egui::Ui,
        name: &str,
        (integer, decimals): (&mut bool, &mut Option<u32>),
    ) -> bool {
        let now = if *integer { Some(0) } else { *decimals };
        let mut chosen = now;
        egui::ComboBox::from_id_salt(("precision", name))
            .selected_text(precision_label(now))
            .width(100.0)
            .show_ui(ui, |ui| {
                for p in PRECISIONS {
                    ui.selectable_value(&mut chosen, p, precision_label(p));
                }
            })
            .response
            .accessible_name(format!("decimals of {name}"))
            .on_hover_text("How the synthetic values are written: whole numbers, a fixed number of decimals (money to the cent: 2), or any. A public fact like the bounds: whole bounds (0 to 1) do not make whole values.");
        if chosen == now {
            return false;
        }
        *integer = chosen == Some(0);
        *decimals = chosen.filter(|d| *d > 0);
        self.stated.entry(name.to_string()).or_default().precision = Some(chosen);
        true
    }
}

/// The warning of a column the file has blanks in while the user says it has none.
pub(super) fn blanks_warning(spec: &ColumnSpec, st: ColumnStats) -> Option<String> {
    let applies = spec.kind != Kind::Ignored
        && spec.provenance != Provenance::ToEstimate
        && !spec.missing
        && st.missing > 0;
    applies.then(|| {
        format!(
            "{} blank cells in the file, but \"may be blank\" is off: training refuses until it is ticked (or the blanks are filled)",
            st.missing
        )
    })
}
