//! Help → Guide: the README and the `docs/` pages, built into the binary so the guide
//! always matches the version that shows it and needs no network, browser or installed
//! documentation. The pages are shown with a small Markdown reader (headings, paragraphs,
//! lists, code and tables); egui_commonmark, the usual crate, did not support this egui
//! version when this was written.

use eframe::egui;

/// (title, Markdown) of each page, in reading order.
const PAGES: &[(&str, &str)] = &[
    ("Start here", include_str!("../../README.md")),
    ("The window", include_str!("../../docs/window.md")),
    ("Privacy", include_str!("../../docs/privacy.md")),
    ("Data and schemas", include_str!("../../docs/data.md")),
    ("Results", include_str!("../../docs/results.md")),
    ("Teaching", include_str!("../../docs/teaching.md")),
    ("Audit", include_str!("../../docs/audit.md")),
    ("Command line", include_str!("../../docs/cli.md")),
    ("Development", include_str!("../../docs/development.md")),
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
            out.push(Block::Code(table.join("\n")));
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
    out.replace("**", "").replace('`', "")
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
                Block::Code("| a | b |\n|---|---|".into()),
            ]
        );
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
