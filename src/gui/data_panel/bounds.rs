//! Bounds of a number column the user has not yet given: two empty fields, like the
//! category editor's empty list, with the file's smallest and largest values shown only as
//! a hint marked as read off the rows. A field that started with the data's extreme would
//! make one keystroke (or a drag) turn a row's value into a "public" bound the statement
//! then claims is covered.

use eframe::egui;

use super::DataPanel;

impl DataPanel {
    /// The two empty bound fields of a column whose domain is still the data's. A field's
    /// text becomes its bound once it reads as a number; returns which were typed.
    pub(super) fn bounds_to_type(
        &mut self,
        ui: &mut egui::Ui,
        name: &str,
        (lower, upper): (&mut f64, &mut f64),
        integer: bool,
    ) -> [bool; 2] {
        let shown = |x: f64| crate::util::fmt::number(if integer { x.round() } else { x });
        let hints = [shown(*lower), shown(*upper)];
        let text = self.bound_text.entry(name.to_string()).or_default();
        let mut typed = [false; 2];
        for (i, (prefix, bound)) in [("from", lower), ("to", upper)].into_iter().enumerate() {
            ui.label(prefix);
            let bad = !text[i].trim().is_empty()
                && crate::util::fmt::parse_number(text[i].trim()).is_none();
            let mut edit = egui::TextEdit::singleline(&mut text[i])
                .desired_width(96.0)
                .hint_text(format!("{} (rows)", hints[i]));
            if bad {
                edit = edit.text_color(ui.visuals().error_fg_color);
            }
            let r = ui
                .add(edit)
                .accessible_name(format!(
                    "{} bound of {name}",
                    if i == 0 { "lower" } else { "upper" }
                ))
                .on_hover_text(format!(
                    "Type the {} bound the codebook gives. The grey {} is the file's {} value, read off the rows: a hint for you only, never a public fact.",
                    if i == 0 { "lower" } else { "upper" },
                    hints[i],
                    if i == 0 { "smallest" } else { "largest" }
                ));
            end_editing(ui, &r);
            if r.changed() || r.lost_focus() {
                if let Some(x) = crate::util::fmt::parse_number(text[i].trim()) {
                    *bound = x;
                    typed[i] = true;
                }
            }
        }
        typed
    }
}

/// The Return that ends typing in a field is the field's: consumed, so no widget after it
/// in the row (the "none" box beside the exact values) takes it for a click.
pub(super) fn end_editing(ui: &egui::Ui, r: &egui::Response) {
    if r.lost_focus() {
        ui.input_mut(|i| i.consume_key(egui::Modifiers::NONE, egui::Key::Enter));
    }
}

/// The warning of a typed bound equal to the file's own extreme: a codebook's bound that
/// happens to match is fine, a value copied off the rows is not public.
pub(super) fn extreme_warning(
    (lower, upper): (f64, f64),
    range: Option<(f64, f64)>,
) -> Option<String> {
    let (lo, hi) = range?;
    let which = match (lower == lo, upper == hi) {
        (true, true) => "both bounds equal",
        (true, false) => "the lower bound equals",
        (false, true) => "the upper bound equals",
        (false, false) => return None,
    };
    Some(format!(
        "{which} the file's own extreme: fine if the codebook says so, but a bound copied off the rows is not public (one person's value becomes a published fact)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_equal_to_the_rows_extreme_is_named() {
        assert!(extreme_warning((0.0, 10.0), Some((1.0, 9.0))).is_none());
        assert!(
            extreme_warning((1.0, 10.0), Some((1.0, 9.0)))
                .unwrap()
                .starts_with("the lower")
        );
        assert!(
            extreme_warning((1.0, 9.0), Some((1.0, 9.0)))
                .unwrap()
                .starts_with("both")
        );
        assert!(extreme_warning((1.0, 9.0), None).is_none());
    }
}
