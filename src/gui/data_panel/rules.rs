//! The rules editor of the Data tab: rules between columns as public facts, one per line
//! (`relationship = "Husband" => sex = "Male"`), checked as they are typed, with the
//! column names and levels that complete the word being typed, and how many of the
//! file's rows break each rule (a local diagnostic: shown here, never released).

use eframe::egui;

use crate::data::Table;
use crate::data::rules;
use crate::data::schema::{Kind, Schema};

/// The brace that opens a set of values (a named constant keeps brace-matching tools of
/// the source, such as the size check, from reading a lone brace literal).
const OPEN_BRACE: char = '\u{7b}';
/// Completions offered at most.
const MAX_COMPLETIONS: usize = 8;

/// The editor's text and what the last check of it found.
#[derive(Default)]
pub struct RulesEditor {
    text: String,
    /// The schema rules the text was last synced with: a schema loaded or guessed anew
    /// replaces the text.
    synced: Vec<String>,
    /// The last check: per rule, its text and the rows that break it; or the error.
    status: Option<Result<Vec<(String, usize)>, String>>,
    /// The header was just opened: bring the editor into view (it opens below the column
    /// table, out of sight in a short window) and put the cursor in it.
    reveal: bool,
}

impl RulesEditor {
    /// Draws the editor; true when the schema's rules changed.
    pub fn ui(&mut self, ui: &mut egui::Ui, table: &Table, schema: &mut Schema) -> bool {
        if schema.rules != self.synced {
            self.text = schema.rules.join("\n");
            self.synced = schema.rules.clone();
            self.status = None;
        }
        let mut changed = false;
        let title = if schema.rules.is_empty() {
            "Rules between columns".to_string()
        } else {
            format!("Rules between columns ({})", schema.rules.len())
        };
        let shown = egui::CollapsingHeader::new(title)
            .id_salt("rules-editor")
            .show(ui, |ui| {
                ui.label("Facts about every row, one per line, as public as a domain: they cost no ε, the statement lists them, and every synthetic row obeys them. e.g. education -> education-num · relationship = \"Husband\" => sex = \"Male\" · capital-gain > 0 => capital-loss = 0 · age >= 17");
                let edit = egui::TextEdit::multiline(&mut self.text)
                    .desired_rows(4)
                    .desired_width(f32::INFINITY)
                    .code_editor()
                    .hint_text("one rule per line; # starts a comment");
                let r = ui
                    .add(edit)
                    .accessible_name("Rules")
                    .on_hover_text("Names with spaces or other characters go in `backquotes`; levels in \"quotes\"");
                if std::mem::take(&mut self.reveal) {
                    r.scroll_to_me(Some(egui::Align::Center));
                    r.request_focus();
                }
                if r.changed() || self.status.is_none() {
                    changed = self.check(table, schema);
                }
                if let Some(extra) = completions_ui(ui, &self.text, schema)
                    .or_else(|| map_template_ui(ui, &self.text, schema))
                {
                    self.text.push_str(&extra);
                    changed |= self.check(table, schema);
                }
                self.status_ui(ui, table.n_rows);
            });
        // Clicked while (nearly) closed: it is opening.
        if shown.header_response.clicked() && shown.openness < 0.5 {
            self.reveal = true;
        }
        changed
    }

    /// Parses and checks the text; a text that passes becomes the schema's rules.
    fn check(&mut self, table: &Table, schema: &mut Schema) -> bool {
        let checked = rules::parse_text(&self.text, "rules")
            .and_then(|r| rules::check(&r, schema).map(|()| r))
            .map_err(|e| e.to_string());
        match checked {
            Ok(stated) => {
                let broken = rules::broken_counts(&stated, schema, table)
                    .unwrap_or_else(|_| vec![0; stated.len()]);
                let texts: Vec<String> = stated.iter().map(|s| s.text.clone()).collect();
                self.status = Some(Ok(texts.iter().cloned().zip(broken).collect()));
                let changed = schema.rules != texts;
                schema.rules = texts.clone();
                self.synced = texts;
                changed
            }
            Err(e) => {
                self.status = Some(Err(e));
                false
            }
        }
    }

    fn status_ui(&self, ui: &mut egui::Ui, rows: usize) {
        match &self.status {
            Some(Err(e)) => {
                ui.colored_label(ui.visuals().error_fg_color, format!("not applied: {e}"));
            }
            Some(Ok(list)) if !list.is_empty() => {
                let n = list.len();
                // Nothing to list when no row breaks a rule: one line the eye does not
                // have to scroll for.
                if list.iter().all(|(_, broken)| *broken == 0) {
                    ui.label(format!(
                        "{n} {} no row of this file breaks {} (a local check, never released).",
                        if n == 1 {
                            "rule applies;"
                        } else {
                            "rules apply;"
                        },
                        if n == 1 { "it" } else { "any" }
                    ));
                    return;
                }
                ui.label(format!(
                    "{n} {} Rows of this file that break each (a local check, never released):",
                    if n == 1 {
                        "rule applies."
                    } else {
                        "rules apply."
                    }
                ));
                for (text, broken) in list {
                    let line = format!("{broken} of {rows}: {text}");
                    if *broken > 0 {
                        ui.colored_label(ui.visuals().warn_fg_color, line);
                    } else {
                        ui.label(line);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Most levels a map template lists (past it the codebook's table is better a file).
const MAX_TEMPLATE_LEVELS: usize = 200;

/// Where the last line is a `->` rule with no map and its left column has categories, a
/// button that appends the map with every level of the left column from the schema, each
/// waiting for its right value (`{"Bachelors": , "HS-grad": }`): the codebook's table,
/// typed once. The text appended when clicked.
fn map_template_ui(ui: &mut egui::Ui, text: &str, schema: &Schema) -> Option<String> {
    let line = text.rsplit('\n').next().unwrap_or("");
    let Ok(Some(rules::Rule::Determines { left, right, map })) = rules::parse_line(line) else {
        return None;
    };
    let levels = schema.column(&left)?.categories()?;
    if !map.is_empty() || levels.len() > MAX_TEMPLATE_LEVELS {
        return None;
    }
    let clicked = ui
        .small_button(format!("add the map: each {left}'s {right}"))
        .on_hover_text("Lists every level of the left column, each waiting for its value on the right: type the codebook's table, and every synthetic row follows it (a public fact, no ε)")
        .clicked();
    clicked.then(|| {
        let keys: Vec<String> = levels
            .iter()
            .map(|l| format!("\"{}\": ", l.replace('\\', "\\\\").replace('"', "\\\"")))
            .collect();
        format!(" {OPEN_BRACE}{}{}", keys.join(", "), '\u{7d}')
    })
}

/// The word being typed at the end of the text, and whether it is inside quotes.
fn last_word(text: &str) -> (&str, bool) {
    let line = text.rsplit('\n').next().unwrap_or("");
    let quotes = line.matches('"').count();
    if quotes % 2 == 1 {
        let at = line.rfind('"').map_or(0, |i| i + 1);
        return (&line[at..], true);
    }
    let at = line
        .rfind(|c: char| c.is_whitespace() || c == ',' || c == '`' || c == OPEN_BRACE)
        .map_or(0, |i| i + 1);
    (&line[at..], false)
}

/// The column a level being typed belongs to: the last column name on the line.
fn column_before<'a>(
    text: &str,
    schema: &'a Schema,
) -> Option<&'a crate::data::schema::ColumnSpec> {
    let line = text.rsplit('\n').next().unwrap_or("");
    let upto = line.rfind('"').map_or(line, |i| &line[..i]);
    schema
        .columns
        .iter()
        .filter(|c| c.categories().is_some())
        .filter_map(|c| upto.rfind(c.name.as_str()).map(|at| (at, c)))
        .max_by_key(|(at, c)| (*at, c.name.len()))
        .map(|(_, c)| c)
}

/// Buttons completing the word being typed (a column name, or a level inside quotes);
/// the text a click appends.
fn completions_ui(ui: &mut egui::Ui, text: &str, schema: &Schema) -> Option<String> {
    let (word, quoted) = last_word(text);
    if word.is_empty() && !quoted {
        return None;
    }
    let options: Vec<String> = if quoted {
        let spec = column_before(text, schema)?;
        spec.categories()?
            .iter()
            .filter(|l| l.starts_with(word))
            .map(|l| format!("{l}\""))
            .collect()
    } else {
        schema
            .columns
            .iter()
            .filter(|c| c.kind != Kind::Ignored && c.name.starts_with(word))
            .map(|c| c.name.clone())
            .collect()
    };
    let options: Vec<&String> = options
        .iter()
        .filter(|o| o.len() > word.len() || (quoted && o.as_str() != word))
        .take(MAX_COMPLETIONS)
        .collect();
    if options.is_empty() {
        return None;
    }
    let mut picked = None;
    ui.horizontal_wrapped(|ui| {
        ui.label("complete:");
        for o in options {
            if ui.small_button(o.as_str()).clicked() {
                picked = Some(o[word.len()..].to_string());
            }
        }
    });
    picked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_being_typed_is_found() {
        assert_eq!(last_word("age >= 17\nrelat"), ("relat", false));
        assert_eq!(last_word("relationship = \"Hus"), ("Hus", true));
        assert_eq!(last_word("x in {\"a\", \"b"), ("b", true));
        assert_eq!(last_word("sex = "), ("", false));
    }
}
