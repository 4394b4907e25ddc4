//! Help → Guide: the user's guide (`guide/*.md`, written for someone using the installed
//! app, not for a contributor: the README and `docs/` are the developers' pages), built
//! into the binary so the guide always matches the version that shows it and needs no
//! network, browser or installed documentation. Only these pages are compiled in, so a
//! change to the developers' docs rebuilds nothing. The pages are shown with a small
//! Markdown reader (headings, paragraphs, lists, code and tables drawn as grids);
//! egui_commonmark, the usual crate, did not support this egui version when this was
//! written. Every character of every page has a glyph in the window's fonts (a test).

use eframe::egui;

/// (title, Markdown) of each page, in reading order.
const PAGES: &[(&str, &str)] = &[
    ("Start here", include_str!("../../guide/start.md")),
    ("Your data", include_str!("../../guide/data.md")),
    ("Privacy", include_str!("../../guide/privacy.md")),
    ("Methods", include_str!("../../guide/methods.md")),
    ("Results", include_str!("../../guide/results.md")),
    ("Teaching", include_str!("../../guide/teaching.md")),
    ("Command line", include_str!("../../guide/cli.md")),
];

/// The guide's window: whether it is open and which page it shows.
#[derive(Default)]
pub struct Guide {
    pub open: bool,
    page: usize,
}

impl Guide {
    /// The top bar's Help menu.
    pub fn menu(&mut self, ui: &mut egui::Ui) {
        ui.menu_button("Help", |ui| {
            if ui.button("Guide").clicked() {
                self.open = true;
                ui.close();
            }
            ui.separator();
            ui.weak(format!("dpsynth {}", env!("CARGO_PKG_VERSION")));
        });
    }

    pub fn show(&mut self, ctx: &egui::Context) {
        let mut open = self.open;
        egui::Window::new("Guide")
            .open(&mut open)
            .default_size([760.0, 620.0])
            .show(ctx, |ui| {
                ui.horizontal(|ui| {
                    for (i, (title, _)) in PAGES.iter().enumerate() {
                        ui.selectable_value(&mut self.page, i, *title);
                    }
                });
                ui.separator();
                egui::ScrollArea::vertical()
                    .id_salt(("guide", self.page))
                    .show(ui, |ui| render(ui, PAGES[self.page].1));
            });
        self.open = open;
    }
}

/// One block of a page.
#[derive(Debug, PartialEq)]
enum Block {
    Heading(usize, String),
    Paragraph(String),
    Item(String),
    Code(String),
    /// Rows of cells, the header first (the `|---|` line dropped).
    Table(Vec<Vec<String>>),
}

/// Splits Markdown into blocks; tables stay as code (their columns line up in monospace).
fn blocks(md: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut para: Vec<&str> = Vec::new();
    let mut code: Option<Vec<&str>> = None;
    let mut table: Vec<&str> = Vec::new();
    let flush = |para: &mut Vec<&str>, table: &mut Vec<&str>, out: &mut Vec<Block>| {
        if !para.is_empty() {
            out.push(Block::Paragraph(inline(&para.join(" "))));
            para.clear();
        }
        if !table.is_empty() {
            out.push(Block::Table(table_rows(table)));
            table.clear();
        }
    };
    for line in md.lines() {
        if let Some(c) = code.as_mut() {
            if line.trim_start().starts_with("```") {
                out.push(Block::Code(c.join("\n")));
                code = None;
            } else {
                c.push(line);
            }
            continue;
        }
        let t = line.trim();
        if t.starts_with("```") {
            flush(&mut para, &mut table, &mut out);
            code = Some(Vec::new());
        } else if t.starts_with('|') {
            if !para.is_empty() {
                flush(&mut para, &mut Vec::new(), &mut out);
            }
            table.push(t);
        } else if t.is_empty() {
            flush(&mut para, &mut table, &mut out);
        } else if let Some(h) = t.strip_prefix('#') {
            flush(&mut para, &mut table, &mut out);
            let level = 1 + h.chars().take_while(|c| *c == '#').count();
            out.push(Block::Heading(
                level,
                inline(h.trim_start_matches('#').trim()),
            ));
        } else if let Some(item) = list_item(t) {
            flush(&mut para, &mut table, &mut out);
            out.push(Block::Item(inline(item)));
        } else if t.starts_with("![") {
            flush(&mut para, &mut table, &mut out);
        } else if line.starts_with("  ")
            && matches!(out.last(), Some(Block::Item(_)))
            && para.is_empty()
        {
            // A list item's continuation line.
            if let Some(Block::Item(s)) = out.last_mut() {
                s.push(' ');
                s.push_str(&inline(t));
            }
        } else {
            if !table.is_empty() {
                flush(&mut Vec::new(), &mut table, &mut out);
            }
            para.push(t);
        }
    }
    if let Some(c) = code {
        out.push(Block::Code(c.join("\n")));
    }
    flush(&mut para, &mut table, &mut out);
    out
}

/// The cells of a Markdown table's lines, without the header's `|---|` rule.
fn table_rows(lines: &[&str]) -> Vec<Vec<String>> {
    lines
        .iter()
        .filter(|l| !l.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ')))
        .map(|l| {
            l.trim()
                .trim_matches('|')
                .split('|')
                .map(|c| inline(c.trim()))
                .collect()
        })
        .collect()
}

/// The text of a list item (`- `, `* ` or `1. `), if the line is one.
fn list_item(t: &str) -> Option<&str> {
    if let Some(rest) = t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")) {
        return Some(rest);
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    (digits > 0)
        .then(|| t[digits..].strip_prefix(". "))
        .flatten()
}

/// Inline Markdown as plain text: `[text](link)` → text, emphasis marks dropped.
fn inline(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(open) = rest.find('[') {
        let (before, after) = rest.split_at(open);
        out.push_str(before);
        match after
            .find("](")
            .and_then(|m| after[m..].find(')').map(|c| (m, m + c)))
        {
            Some((mid, close)) => {
                out.push_str(&after[1..mid]);
                rest = &after[close + 1..];
            }
            None => {
                out.push('[');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    without_emphasis(&out.replace("**", "").replace('`', ""))
}

/// Drops the single `*` that open or close emphasis (`*Your data*`), keeping a `*` with
/// spaces on both sides (`2 * 3`).
fn without_emphasis(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let spaced = |i: Option<usize>| {
        i.and_then(|i| chars.get(i))
            .is_none_or(|c| c.is_whitespace())
    };
    chars
        .iter()
        .enumerate()
        .filter(|(i, c)| **c != '*' || (spaced(i.checked_sub(1)) && spaced(Some(i + 1))))
        .map(|(_, c)| *c)
        .collect()
}

fn render(ui: &mut egui::Ui, md: &str) {
    for b in blocks(md) {
        match b {
            Block::Heading(level, text) => {
                ui.add_space(6.0);
                let size = match level {
                    1 => 22.0,
                    2 => 18.0,
                    _ => 15.0,
                };
                ui.label(egui::RichText::new(text).size(size).strong());
            }
            Block::Paragraph(text) => {
                ui.label(text);
                ui.add_space(4.0);
            }
            Block::Item(text) => {
                ui.horizontal_wrapped(|ui| {
                    ui.label("•");
                    ui.label(text);
                });
            }
            Block::Table(rows) => table_ui(ui, &rows),
            Block::Code(text) => {
                egui::Frame::group(ui.style()).show(ui, |ui| {
                    egui::ScrollArea::horizontal()
                        .id_salt(text.len())
                        .show(ui, |ui| ui.label(egui::RichText::new(text).monospace()));
                });
            }
        }
    }
}

/// A table as a striped grid, its header row strong.
fn table_ui(ui: &mut egui::Ui, rows: &[Vec<String>]) {
    egui::Grid::new(("guide-table", rows.len(), rows.first().map(Vec::len)))
        .striped(true)
        .spacing([12.0, 4.0])
        .show(ui, |ui| {
            for (i, row) in rows.iter().enumerate() {
                for cell in row {
                    if i == 0 {
                        ui.strong(cell);
                    } else {
                        ui.add(egui::Label::new(cell).wrap());
                    }
                }
                ui.end_row();
            }
        });
    ui.add_space(4.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_headings_paragraphs_items_and_code() {
        let md = "# Title\n\nSome **bold** text\nwith a [link](docs/a.md).\n\n- one\n  more\n- two\n\n```sh\ncargo test\n```\n| a | b |\n|---|---|\n![pic](x.png)\n";
        assert_eq!(
            blocks(md),
            vec![
                Block::Heading(1, "Title".into()),
                Block::Paragraph("Some bold text with a link.".into()),
                Block::Item("one more".into()),
                Block::Item("two".into()),
                Block::Code("cargo test".into()),
                Block::Table(vec![vec!["a".into(), "b".into()]]),
            ]
        );
    }

    /// The guide is a user's: no build steps, no contributors' talk, and every character
    /// drawable (a missing glyph shows as an empty box).
    #[test]
    fn every_page_speaks_to_a_user_and_draws() {
        let ctx = egui::Context::default();
        let _ = ctx.run_ui(Default::default(), |_| {});
        for (title, md) in PAGES {
            for word in ["cargo ", "session ", "issue #", "CI ", "git "] {
                assert!(!md.contains(word), "{title} mentions '{word}'");
            }
            let font = egui::FontId::proportional(14.0);
            let missing: Vec<char> = md
                .chars()
                .filter(|c| !c.is_control())
                .filter(|c| !ctx.fonts_mut(|f| f.has_glyph(&font, *c)))
                .collect();
            assert!(missing.is_empty(), "{title} has no glyph for {missing:?}");
            assert!(
                !ctx.fonts_mut(|f| f.has_glyph(&font, '⟶')),
                "the check sees a missing glyph"
            );
        }
    }

    #[test]
    fn emphasis_marks_are_dropped_and_a_spaced_star_kept() {
        assert_eq!(
            inline("*Your data*: kinds, **rules**"),
            "Your data: kinds, rules"
        );
        assert_eq!(inline("2 * 3 and [a *b*](x.md)"), "2 * 3 and a b");
    }

    #[test]
    fn every_page_has_a_heading() {
        for (title, md) in PAGES {
            assert!(
                matches!(blocks(md).first(), Some(Block::Heading(1, _))),
                "{title} does not start with a heading"
            );
        }
    }
}
