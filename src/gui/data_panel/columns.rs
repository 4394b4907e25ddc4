//! The column table: each column's kind, domain and provenance cells, and what changing a
//! kind does to its domain.

use eframe::egui;

use crate::data::schema::{ColumnSpec, Domain, Kind, Provenance, Schema};

use super::DataPanel;
use super::summary::*;

impl DataPanel {
    pub(super) fn columns_ui(
        &mut self,
        ui: &mut egui::Ui,
        table: &crate::data::Table,
        schema: &mut Schema,
        stats: &[ColumnStats],
    ) -> bool {
        let mut changed = false;
        egui::Grid::new("columns").striped(true).show(ui, |ui| {
            let heads = ["column", "kind", "domain", "provenance", "blanks", "", "warnings"];
            for h in heads {
                ui.strong(h);
            }
            ui.end_row();
            for (i, spec) in schema.columns.iter_mut().enumerate() {
                let col = table.column(&spec.name);
                let st = stats.get(i).copied().unwrap_or_default();
                ui.label(&spec.name);
                let before = (spec.kind, spec.time_format.is_some());
                let mut chosen = before;
                egui::ComboBox::from_id_salt(("kind", &spec.name))
                    .selected_text(spec.kind_label())
                    .show_ui(ui, |ui| {
                        for k in Kind::ALL {
                            ui.selectable_value(&mut chosen, (k, false), k.label());
                        }
                        ui.selectable_value(&mut chosen, (Kind::Continuous, true), "date/time")
                            .on_hover_text("Dates or times, learned as a number (days since 1970) between public bounds and written back in the file's own format");
                    })
                    .response
                    .accessible_name(format!("kind of {}", spec.name));
                if chosen != before {
                    if let Some(col) = col {
                        let old = spec.clone();
                        spec.kind = chosen.0;
                        spec.time_format = None;
                        if chosen.1 {
                            match date_format_of(col) {
                                Some(f) => spec.time_format = Some(f.to_string()),
                                None => {
                                    *spec = old.clone();
                                    self.message = Some(Err(format!(
                                        "{}: no date/time format reads every cell (tried {}); fix the cells or give the format in a schema file (\"time_format\")",
                                        spec.name,
                                        crate::data::times::CANDIDATES.join(", ")
                                    )));
                                }
                            }
                        }
                        if spec.kind != old.kind || spec.time_format != old.time_format {
                            // A kind the user picks is theirs; a date format is still read
                            // off the cells, so a date pick stays a guess until confirmed.
                            spec.kind_from_data = chosen.1;
                            retarget(spec, col);
                            self.date_text.remove(&spec.name);
                            self.point_text.remove(&spec.name);
                            changed = true;
                        }
                    }
                }
                changed |= self.domain_cell(ui, spec);
                provenance_badge(ui, spec);
                changed |= self.blanks_cell(ui, spec, st);
                if self.no_estimates {
                    ui.label("");
                } else {
                    changed |= estimate_button(ui, spec);
                }
                self.warnings_cell(ui, spec, st, table.n_rows);
                ui.end_row();
            }
        });
        changed
    }

    /// Every warning a column has earned, in one cell.
    fn warnings_cell(&self, ui: &mut egui::Ui, spec: &ColumnSpec, st: ColumnStats, rows: usize) {
        let mut w = warnings(spec, st, rows);
        w.extend(super::facts::blanks_warning(spec, st));
        let typed_here = self.typed.get(&spec.name).is_some_and(|t| t[0] || t[1]);
        if typed_here && spec.provenance == Provenance::UserProvided {
            if let Some(b) = spec.bounds() {
                w.extend(super::bounds::extreme_warning(b, st.range));
            }
        }
        if w.is_empty() {
            ui.label("");
        } else {
            ui.colored_label(ui.visuals().warn_fg_color, w.join("; "));
        }
    }

    /// A date column's bounds as text in its format, red while it does not parse; which
    /// of the two were typed this frame.
    fn date_bounds_ui(
        &mut self,
        ui: &mut egui::Ui,
        name: &str,
        f: &str,
        lower: &mut f64,
        upper: &mut f64,
    ) -> [bool; 2] {
        let text = self.date_text.entry(name.to_string()).or_insert_with(|| {
            [
                crate::data::times::format(*lower, f),
                crate::data::times::format(*upper, f),
            ]
        });
        let mut typed = [false; 2];
        ui.horizontal(|ui| {
            for (i, (prefix, bound)) in [("from", lower), ("to", upper)].into_iter().enumerate() {
                ui.label(prefix);
                let parsed = crate::data::times::parse(&text[i], f);
                let mut edit = egui::TextEdit::singleline(&mut text[i]).desired_width(130.0);
                if parsed.is_none() {
                    edit = edit.text_color(ui.visuals().error_fg_color);
                }
                let r = ui
                    .add(edit)
                    .accessible_name(format!(
                        "{} bound of {name}",
                        if i == 0 { "lower" } else { "upper" }
                    ))
                    .on_hover_text(format!("a date/time in the format {f}"));
                if r.changed() {
                    if let Some(x) = crate::data::times::parse(&text[i], f) {
                        *bound = x;
                        typed[i] = true;
                    }
                }
            }
            ui.weak(f);
        });
        typed
    }

    /// Remembers which bounds of `name` the user typed; the domain becomes the user's once
    /// both are (or at once where it was estimated privately). Whether anything was typed.
    fn mark_typed(&mut self, name: &str, typed: [bool; 2], provenance: &mut Provenance) -> bool {
        if !(typed[0] || typed[1]) {
            return false;
        }
        let t = self.typed.entry(name.to_string()).or_default();
        t[0] |= typed[0];
        t[1] |= typed[1];
        if provenance.is_private() || (t[0] && t[1]) {
            *provenance = Provenance::UserProvided;
        }
        true
    }

    /// Says what is missing when one bound of a column was typed and the other is still
    /// the data's (the domain becomes public only with both).
    fn other_bound_hint(&self, ui: &mut egui::Ui, name: &str, provenance: Provenance) {
        if provenance.is_private() {
            return;
        }
        let missing = match self.typed.get(name) {
            Some([true, false]) => "upper",
            Some([false, true]) => "lower",
            _ => return,
        };
        ui.colored_label(
            ui.visuals().warn_fg_color,
            format!("type the {missing} bound too: a domain is public once both bounds are typed"),
        );
    }

    /// A number column's point masses: values many rows hold exactly (0, a top code), typed
    /// as public facts ("0, 99999"). Applied once every value reads as a number inside the
    /// bounds (a whole one for an integer column); red until then. True when applied.
    fn point_masses_ui(
        &mut self,
        ui: &mut egui::Ui,
        name: &str,
        (lower, upper, integer): (f64, f64, bool),
        points: &mut Vec<f64>,
    ) -> bool {
        let shown = || {
            points
                .iter()
                .map(|p| crate::util::fmt::number(*p))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let parse = |text: &str| -> Option<Vec<f64>> {
            text.split(|c: char| c == ',' || c.is_whitespace())
                .filter(|w| !w.is_empty())
                .map(|w| {
                    crate::util::fmt::parse_number(w)
                        .filter(|x| *x >= lower && *x <= upper && (!integer || x.fract() == 0.0))
                })
                .collect()
        };
        let id = ui.make_persistent_id(("exact values", name));
        let editing = ui.memory(|m| m.has_focus(id));
        let text = self
            .point_text
            .entry(name.to_string())
            .or_insert_with(shown);
        // The schema changed under a field no one is typing in (a run found exact values
        // privately, a schema was loaded): the field shows the schema's.
        if !editing && parse(text).is_some_and(|p| p != *points) {
            *text = shown();
        }
        // Coloured by the text as it stood before this frame's keys (the field is drawn
        // before they land); the schema takes the text as it stands after them, so the
        // last keystroke reaches the model without waiting for another frame.
        let shown_ok = parse(text).is_some();
        let mut edit = egui::TextEdit::singleline(text)
            .id(id)
            .desired_width(90.0)
            .hint_text("exact values");
        if !shown_ok {
            edit = edit.text_color(ui.visuals().error_fg_color);
        }
        let r = ui
            .add(edit)
            .accessible_name(format!("exact values of {name}"))
            .on_hover_text("Values many rows hold exactly (0 gains, 40 hours, a top code such as 99999), separated by commas: a public fact like the bounds. Each comes back exactly in the synthetic rows instead of being smeared over its bin.");
        super::bounds::end_editing(ui, &r);
        let parsed = parse(self.point_text.get(name).map_or("", String::as_str));
        match parsed {
            Some(typed) if r.changed() || r.lost_focus() => {
                let mut p: Vec<f64> = Vec::new();
                for x in typed {
                    if !p.contains(&x) {
                        p.push(x);
                    }
                }
                p.truncate(crate::data::schema::MAX_POINT_MASSES);
                let changed = *points != p;
                *points = p;
                changed
            }
            _ => false,
        }
    }

    /// A column's domain: two bound fields, or the category summary with its editor.
    pub(super) fn domain_cell(&mut self, ui: &mut egui::Ui, spec: &mut ColumnSpec) -> bool {
        let was_public = spec.provenance == Provenance::UserProvided;
        let changed = self.domain_fields(ui, spec);
        if !was_public && spec.provenance == Provenance::UserProvided {
            spec.made_public();
            self.keep_stated(spec);
        }
        changed
    }

    fn domain_fields(&mut self, ui: &mut egui::Ui, spec: &mut ColumnSpec) -> bool {
        let mut changed = false;
        let name = spec.name.clone();
        let time_format = spec.time_format.clone();
        // Whole-number columns show whole bounds (17 to 100, not 17.0 to 100.0).
        let decimals = if spec.integer { 0 } else { 6 };
        match &mut spec.domain {
            Some(Domain::Bounds { lower, upper }) if time_format.is_some() => {
                let f = time_format.unwrap_or_default();
                let typed = self.date_bounds_ui(ui, &name, &f, lower, upper);
                changed = self.mark_typed(&name, typed, &mut spec.provenance);
            }
            Some(Domain::Bounds { lower, upper }) => {
                let mut typed = [false; 2];
                let public = spec.provenance.is_private();
                ui.horizontal(|ui| {
                    // One child ui for the bound fields, whichever kind they are: the row's
                    // later widgets keep their ids when the fields change kind (a checkbox
                    // that inherited a field's id took the Return that ended the typing).
                    ui.push_id(("bounds", &name), |ui| {
                        if public {
                            typed = public_bounds(ui, &name, (lower, upper), decimals);
                        } else {
                            // Still the data's: empty fields, the rows' range a hint only.
                            typed = self.bounds_to_type(ui, &name, (lower, upper), spec.integer);
                        }
                    });
                    changed |=
                        self.precision_ui(ui, &name, (&mut spec.integer, &mut spec.decimals));
                    let typed_masses = if spec.no_point_masses {
                        false
                    } else {
                        self.point_masses_ui(
                            ui,
                            &name,
                            (*lower, *upper, spec.integer),
                            &mut spec.point_masses,
                        )
                    };
                    // Typed, they are the user's: no longer the estimate's.
                    spec.point_masses_estimated &= !typed_masses;
                    changed |= typed_masses;
                    changed |= no_masses_ui(
                        ui,
                        &name,
                        spec.point_masses.is_empty(),
                        &mut spec.no_point_masses,
                    );
                    self.other_bound_hint(ui, &name, spec.provenance);
                });
                changed |= self.mark_typed(&name, typed, &mut spec.provenance);
            }
            Some(Domain::Categories(levels)) => {
                let from_data = !spec.provenance.is_private();
                self.categories_cell(ui, &name, levels, from_data);
            }
            None => {
                ui.label("-");
            }
        }
        changed
    }
}

impl DataPanel {
    /// A category column's summary and the button that opens its editor (empty, with the
    /// data's levels as a hint only, while they are the data's).
    fn categories_cell(
        &mut self,
        ui: &mut egui::Ui,
        name: &str,
        levels: &[String],
        from_data: bool,
    ) {
        ui.horizontal(|ui| {
            ui.label(spec_summary(levels, 40));
            if ui
                .small_button("edit")
                .accessible_name(format!("edit the categories of {name}"))
                .on_hover_text("Edit the category list (one per line)")
                .clicked()
            {
                self.editing = Some(crate::gui::category_editor::CategoryEdit {
                    column: name.to_string(),
                    text: if from_data {
                        String::new()
                    } else {
                        levels.join("\n")
                    },
                    hint: from_data.then(|| levels.join(", ")),
                    error: None,
                });
            }
        });
    }
}

/// The "none" box beside a number column's exact values, while none are typed: the user
/// says the column has none, so a private run spends nothing looking for them. Whether
/// it was clicked.
fn no_masses_ui(ui: &mut egui::Ui, name: &str, no_masses_typed: bool, none: &mut bool) -> bool {
    if !no_masses_typed {
        return false;
    }
    ui.checkbox(none, "none")
        .on_hover_text("This column has no value many rows hold exactly (or none that matters): a private run then spends nothing looking for one. Unticked, a column with public bounds and no exact values typed has them found privately when it trains (a small share of ε, shown in the cost), so a 0 most rows hold comes back exactly.")
        .accessible_name(format!("no exact values in {name}"))
        .changed()
}

/// Whether the user typed into a bound's field this frame: a changed value, or keys typed
/// while it has the keyboard (a typed value equal to the one shown is still the user's).
fn typed_into(ui: &egui::Ui, r: &egui::Response) -> bool {
    r.changed()
        || (r.has_focus()
            && ui.input(|i| {
                i.events
                    .iter()
                    .any(|e| matches!(e, egui::Event::Text(t) if !t.trim().is_empty()))
            }))
}

/// A column's provenance badge.
fn provenance_badge(ui: &mut egui::Ui, spec: &ColumnSpec) {
    if spec.kind == Kind::Ignored {
        ui.label("-");
    } else if spec.provenance.is_private() {
        ui.colored_label(
            egui::Color32::from_rgb(80, 170, 90),
            spec.provenance.badge(),
        );
    } else if spec.provenance == Provenance::ToEstimate {
        ui.colored_label(
            ui.visuals().warn_fg_color,
            "estimated privately when training",
        )
        .on_hover_text(
            "The values shown are the data's, a hint only: the model gets a noisy estimate",
        );
    } else {
        ui.colored_label(ui.visuals().warn_fg_color, "from the data: not protected");
    }
}

/// The "Estimate privately" button of a column whose domain was read off the rows.
fn estimate_button(ui: &mut egui::Ui, spec: &mut ColumnSpec) -> bool {
    if spec.kind != Kind::Ignored && spec.provenance == Provenance::FromData {
        if ui
            .button("Estimate privately")
            .on_hover_text(
                "Estimate this domain with noise when training (charged to the run) instead of copying the data's values",
            )
            .clicked()
        {
            spec.provenance = Provenance::ToEstimate;
            return true;
        }
    } else {
        ui.label("");
    }
    false
}

/// "a, b, c, … (12)" within `max_chars`.
pub(super) fn spec_summary(levels: &[String], max_chars: usize) -> String {
    let mut s = String::new();
    for (i, l) in levels.iter().enumerate() {
        let next = if i == 0 { l.clone() } else { format!(", {l}") };
        if s.chars().count() + next.chars().count() > max_chars {
            s.push_str(", …");
            break;
        }
        s.push_str(&next);
    }
    format!("{s} ({})", levels.len())
}

/// The date/time format that reads every cell of a text column.
pub(super) fn date_format_of(col: &crate::data::Column) -> Option<&'static str> {
    let levels = col.levels();
    crate::data::times::detect(levels.iter().map(String::as_str))
}

/// After a kind change, give the column a domain of the new shape read off the data
/// (marked `FromData` until the user confirms it).
pub(super) fn retarget(spec: &mut ColumnSpec, col: &crate::data::Column) {
    use crate::data::Values;
    spec.provenance = Provenance::FromData;
    spec.integer = false;
    spec.point_masses.clear();
    spec.point_masses_estimated = false;
    spec.no_point_masses = false;
    spec.domain = match spec.kind {
        Kind::Ignored => None,
        Kind::Binary | Kind::Categorical => {
            let mut levels = col.levels();
            if spec.kind == Kind::Binary {
                levels.truncate(2);
                if levels.len() < 2 {
                    levels.push("other".into());
                }
            }
            Some(Domain::Categories(levels))
        }
        Kind::Continuous if spec.time_format.is_some() => {
            let days = spec.numbers(col).unwrap_or_default();
            let f = spec.time_format.as_deref().unwrap_or_default();
            spec.integer = !crate::data::times::has_time(f);
            Some(crate::data::infer::bounds_around(&days))
        }
        Kind::Continuous => match &col.values {
            Values::Number(v) => {
                spec.integer = v.iter().flatten().all(|x| x.fract() == 0.0);
                Some(crate::data::infer::bounds_around(v))
            }
            Values::Text(_) => {
                // Text cannot be continuous: fall back.
                spec.kind = Kind::Categorical;
                Some(Domain::Categories(col.levels()))
            }
        },
    };
}

/// The bounds of a column whose domain is public (the user's, or a private estimate's):
/// two number fields. Which were typed this frame.
fn public_bounds(
    ui: &mut egui::Ui,
    name: &str,
    (lower, upper): (&mut f64, &mut f64),
    decimals: usize,
) -> [bool; 2] {
    let mut typed = [false; 2];
    let speed = ((*upper - *lower).abs() / 200.0).max(1e-6);
    for (i, (prefix, which, bound)) in [("from ", "lower", lower), ("to ", "upper", upper)]
        .into_iter()
        .enumerate()
    {
        let r = ui
            .add(
                egui::DragValue::new(bound)
                    .prefix(prefix)
                    .speed(speed)
                    .max_decimals(decimals),
            )
            .accessible_name(format!("{which} bound of {name}"));
        super::bounds::end_editing(ui, &r);
        typed[i] = typed_into(ui, &r);
    }
    typed
}
