//! The window's frame around the panels: the toolbar (open, type a path, connect, the
//! samples), the start screen, the tabs with Help and the theme, and the status bar.
//! Here so that `gui/mod.rs` keeps the state and its routing only.

use std::path::PathBuf;

use eframe::egui;

use super::dialogs::Purpose;
use super::{App, Tab, sample_path};

impl App {
    pub(super) fn toolbar(&mut self, ui: &mut egui::Ui) {
        let mut open: Option<PathBuf> = None;
        // Wraps on a narrow window instead of cutting the sample buttons off.
        ui.horizontal_wrapped(|ui| {
            let b = ui
                .add_enabled(!self.dialogs.busy(), egui::Button::new("Open… (Ctrl+O)"))
                .on_hover_text(
                    "Open a table (CSV, TSV, Excel, ODS, Parquet, Arrow, SPSS, Stata), MNIST digits or a released model with the system's file dialog",
                );
            let shortcut = ui.input_mut(|i| {
                i.consume_shortcut(&egui::KeyboardShortcut::new(
                    egui::Modifiers::COMMAND,
                    egui::Key::O,
                ))
            });
            if b.clicked() || (shortcut && !self.dialogs.busy()) {
                self.dialogs.request(
                    Purpose::OpenData,
                    self.settings.last_dir.clone(),
                    "",
                    ui.ctx(),
                );
            }
            let l = ui.label("or type a path:");
            let r = ui
                .add(egui::TextEdit::singleline(&mut self.path_input).desired_width(280.0))
                .labelled_by(l.id);
            let enter = r.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
            if ui.button("Open").clicked() || enter {
                open = Some(PathBuf::from(self.path_input.trim()));
            }
            if ui
                .button("Connect…")
                .on_hover_text("Connect to a table a query engine (Ballista) holds, or to a CSV or Parquet file too large to open: its rows are counted where they lie, part by part for a file, and never held here (MST and AIM)")
                .clicked()
            {
                self.connect.show(None);
            }
            ui.separator();
            if ui.button("Try it with the Adult census sample").clicked() {
                open = Some(sample_path("adult/adult_train.csv"));
            }
            if ui.button("Try it with MNIST digits").clicked() {
                open = Some(sample_path("mnist/train-images-idx3-ubyte.gz"));
            }
        });
        // Drag and drop: the first dropped file with a path opens.
        let dropped = ui.ctx().input(|i| {
            i.raw
                .dropped_files
                .first()
                .map(|f| f.path().to_path_buf())
                .filter(|p| !p.as_os_str().is_empty())
        });
        if let Some(p) = dropped.or(open) {
            if p.as_os_str().is_empty() {
                self.error = Some("Type the path of a CSV or MNIST IDX file first.".into());
            } else {
                self.open(&p, ui.ctx());
            }
        }
        self.dialogs.ui(ui);
        if let Some(l) = &self.loading {
            l.ui(ui);
        }
        if let Some(e) = &self.error {
            ui.colored_label(ui.visuals().error_fg_color, e);
        }
    }

    /// The start screen: what the app does, and recent files.
    pub(super) fn start_screen(&mut self, ui: &mut egui::Ui) {
        ui.add_space(12.0);
        ui.heading("Differentially private synthetic data");
        ui.label("dpsynth learns a generator of fake rows from a sensitive table (or small images), with a mathematical bound (ε, δ) on what the result can reveal about any one person.");
        ui.add_space(6.0);
        ui.label("1 · Open a table — CSV, Excel, ODS, Parquet, SPSS or Stata — with the button above, a typed path or a drop on the window; or try a bundled sample. A table too big to move can stay in a query engine: connect to it with its public schema.");
        ui.label("2 · Mark each column's kind; type its public range or categories, or let each run estimate them privately.");
        ui.label("3 · Pick a method and a privacy budget, see what it costs, and train.");
        ui.label("4 · Compare the synthetic data with the real data, then export it.");
        ui.add_space(8.0);
        let mut open = None;
        ui.horizontal(|ui| {
            ui.label("A third bundled table, with many exact zeros:");
            if ui
                .button("Try it with a survey of working hours")
                .on_hover_text("Married women in the 1991 Current Population Survey: 42 % work 0 hours a week, and the codebook ties hours to being in the labour force (its rules: assets/cps91/cps91.rules)")
                .clicked()
            {
                open = Some(sample_path("cps91/cps91_train.csv"));
            }
        });
        ui.horizontal(|ui| {
            ui.label("Two linked tables:");
            if ui
                .button("Try it with persons and their years")
                .on_hover_text("4,902 persons of a German health panel and their 15,687 yearly interviews, linked by id: trained as one pair, each person with all their years one record of the guarantee (Train tab, \"Linked tables\")")
                .clicked()
            {
                let p = sample_path("gsoep/persons_train.csv");
                self.pending_child = Some(p.clone());
                open = Some(p);
            }
        });
        ui.add_space(12.0);
        ui.strong("Recent files");
        if self.settings.recent.is_empty() {
            ui.label("none yet");
        }
        for p in &self.settings.recent {
            let exists = p.exists();
            let name = p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            ui.horizontal(|ui| {
                let b = ui
                    .add_enabled(exists, egui::Button::new(name))
                    .on_hover_text(p.display().to_string());
                if b.clicked() {
                    open = Some(p.clone());
                }
                ui.weak(if exists {
                    p.parent()
                        .map_or(String::new(), |d| d.display().to_string())
                } else {
                    "(no longer there)".into()
                });
            });
        }
        if let Some(p) = open {
            self.open(&p, ui.ctx());
        }
    }
    /// The frame just drawn, with the tab it showed and what was in flight.
    pub(super) fn record_frame(&mut self, frame: &eframe::Frame) {
        let place = format!(
            "{:?}{}{}",
            self.tab,
            if self.loading.is_some() {
                ", loading"
            } else {
                ""
            },
            if self.results_panel.is_evaluating() {
                ", evaluating"
            } else {
                ""
            }
        );
        self.frames.record(
            frame.info().cpu_usage,
            self.train_panel.is_running(),
            &place,
        );
    }

    /// The tabs, Help and the theme along the top; what is open and the frame times
    /// along the bottom.
    pub(super) fn tabs_and_status(&mut self, ui: &mut egui::Ui) {
        let tab_before = self.tab;
        egui::Panel::top("top").show(ui, |ui| {
            ui.horizontal(|ui| {
                ui.heading("dpsynth");
                ui.separator();
                ui.selectable_value(&mut self.tab, Tab::Data, "1 · Data");
                ui.selectable_value(&mut self.tab, Tab::Train, "2 · Train and export");
                ui.selectable_value(&mut self.tab, Tab::Results, "3 · Results");
                ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                    theme_switch(ui);
                    self.guide.menu(ui);
                });
            });
        });
        self.guide.show(ui.ctx());
        if self.tab != tab_before {
            // An error about opening a file belongs to the moment it happened.
            self.error = None;
        }
        egui::Panel::bottom("status").show(ui, |ui| {
            ui.horizontal(|ui| {
                match &self.loaded {
                    Some(l) => ui.weak(format!("open: {}", l.path.display())),
                    None => ui.weak("no dataset open"),
                };
                // Frame times are a measurement for whoever tunes the window, shown
                // while one is taken (`DPSYNTH_FRAME_LOG`), not a user's concern.
                if std::env::var_os("DPSYNTH_FRAME_LOG").is_some() {
                    ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                        ui.weak(self.frames.status());
                    });
                }
            });
        });
    }
}

/// Light, dark or the system's theme, in words (egui's own switch uses emoji glyphs that
/// the bundled fonts lack). egui remembers the choice with the window's state.
fn theme_switch(ui: &mut egui::Ui) {
    use egui::ThemePreference as T;
    let mut pref = ui.options(|o| o.theme_preference);
    let before = pref;
    // Right-to-left layout: the last one added sits leftmost.
    for (p, name) in [
        (T::System, "system"),
        (T::Dark, "dark"),
        (T::Light, "light"),
    ] {
        ui.selectable_value(&mut pref, p, name)
            .on_hover_text(format!("{name} theme"));
    }
    ui.label("Theme:");
    if pref != before {
        ui.ctx().set_theme(pref);
    }
}
