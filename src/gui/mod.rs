//! The desktop window. Panels read data, job events and reports; they never train or
//! evaluate on the UI thread (a frame must stay under 16 ms): training runs in the `job`
//! worker, which wakes the window when it has news.
//!
//! - [`data_panel::DataPanel`]: the loaded table's columns — kind, domain, provenance.
//! - [`train_panel::TrainPanel`]: method, (ε, δ), the cost preview from the ledger, the
//!   live run (progress, ETA, losses, budget gauge, cancel, a digit grid for images) and
//!   the export of samples.
//! - [`results_panel::ResultsPanel`]: each finished run evaluated in a worker thread,
//!   with tabs for every figure of the evaluation suite and a comparison of runs.

mod data_panel;
mod results_panel;
mod train_panel;

use std::path::{Path, PathBuf};

use eframe::egui;

use crate::data::schema::Schema;
use crate::data::{self, Dataset, Table};

/// Opens the window and blocks until it closes.
pub fn run() -> anyhow::Result<()> {
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("dpsynth — differentially private synthetic data")
            .with_inner_size([1200.0, 780.0]),
        ..Default::default()
    };
    eframe::run_native(
        "dpsynth",
        options,
        Box::new(|_cc| Ok(Box::new(App::default()))),
    )
    .map_err(|e| anyhow::anyhow!("{e}"))
}

/// Bundled samples, relative to the crate root (the README's run command starts there).
pub fn sample_path(rel: &str) -> PathBuf {
    let local = PathBuf::from("assets").join(rel);
    if local.exists() {
        return local;
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("assets")
        .join(rel)
}

/// A dataset the window has open.
pub struct Loaded {
    pub path: PathBuf,
    pub content: Content,
}

/// What was opened.
pub enum Content {
    Table {
        table: Table,
        schema: Schema,
        notes: Vec<(String, String)>,
    },
    Images {
        count: usize,
        side: usize,
        labels: String,
        /// The first 100 images as one 10×10 grid.
        grid: egui::ColorImage,
        texture: Option<egui::TextureHandle>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Tab {
    #[default]
    Data,
    Train,
    Results,
}

/// The window's state.
#[derive(Default)]
pub struct App {
    tab: Tab,
    path_input: String,
    loaded: Option<Loaded>,
    error: Option<String>,
    data_panel: data_panel::DataPanel,
    train_panel: train_panel::TrainPanel,
    results_panel: results_panel::ResultsPanel,
}

/// Tiles the first `rows × cols` images into one grayscale picture.
pub(crate) fn image_grid(
    set: &crate::data::image::ImageSet,
    rows: usize,
    cols: usize,
) -> egui::ColorImage {
    let (w, h) = (set.width, set.height);
    let mut img = egui::ColorImage::new(
        [cols * w, rows * h],
        vec![egui::Color32::BLACK; cols * w * rows * h],
    );
    for k in 0..(rows * cols).min(set.len()) {
        let (r0, c0) = ((k / cols) * h, (k % cols) * w);
        for (p, v) in set.image(k).iter().enumerate() {
            let (y, x) = (r0 + p / w, c0 + p % w);
            img.pixels[y * cols * w + x] = egui::Color32::from_gray(*v);
        }
    }
    img
}

impl App {
    fn open(&mut self, path: &Path) {
        self.error = None;
        let shown = path.display().to_string();
        match data::open(path, &data::csv::LoadOptions::default()) {
            Ok(Dataset::Table(table)) => match data::infer::infer_schema(&table) {
                Ok(inf) => {
                    self.loaded = Some(Loaded {
                        path: path.to_path_buf(),
                        content: Content::Table {
                            table,
                            schema: inf.schema,
                            notes: inf.notes,
                        },
                    });
                    self.train_panel.dataset_changed(self.loaded.as_ref());
                    self.results_panel.clear();
                }
                Err(e) => self.error = Some(format!("{shown}: {e}")),
            },
            Ok(Dataset::Images(set)) => {
                let labels = set
                    .label_counts()
                    .iter()
                    .map(|(l, c)| format!("{l}: {c}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                self.loaded = Some(Loaded {
                    path: path.to_path_buf(),
                    content: Content::Images {
                        count: set.len(),
                        side: set.width,
                        labels,
                        grid: image_grid(&set, 10, 10),
                        texture: None,
                    },
                });
                self.train_panel.dataset_changed(self.loaded.as_ref());
            }
            Err(e) => self.error = Some(e.to_string()),
        }
    }
}

impl eframe::App for App {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        self.train_panel.poll();
        if let Some((title, model)) = self.train_panel.take_finished() {
            if let Some(Loaded {
                path,
                content: Content::Table { table, schema, .. },
            }) = &self.loaded
            {
                self.results_panel
                    .add_run(title, &model, path, table, schema, ui.ctx());
                // A newcomer should not have to find the results: show them.
                self.tab = Tab::Results;
            }
        }
        egui::Panel::top("top").show(ui, |ui| {
            ui.horizontal(|ui| {
                ui.heading("dpsynth");
                ui.separator();
                ui.selectable_value(&mut self.tab, Tab::Data, "1 · Data");
                ui.selectable_value(&mut self.tab, Tab::Train, "2 · Train and export");
                ui.selectable_value(&mut self.tab, Tab::Results, "3 · Results");
            });
        });
        egui::CentralPanel::default().show(ui, |ui| {
            let mut open: Option<PathBuf> = None;
            ui.horizontal(|ui| {
                if ui.button("Try it with the Adult census sample").clicked() {
                    open = Some(sample_path("adult/adult_train.csv"));
                }
                if ui.button("Try it with MNIST digits").clicked() {
                    open = Some(sample_path("mnist/train-images-idx3-ubyte.gz"));
                }
                ui.separator();
                let l = ui.label("File path:");
                let r = ui
                    .text_edit_singleline(&mut self.path_input)
                    .labelled_by(l.id);
                let enter = r.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
                if ui.button("Open").clicked() || enter {
                    open = Some(PathBuf::from(self.path_input.trim()));
                }
            });
            // Drag and drop: the first dropped file with a path opens.
            if let Some(p) = ui.ctx().input(|i| i.raw.dropped_files.first().map(|f| f.path().to_path_buf()).filter(|p| !p.as_os_str().is_empty())) {
                open = Some(p);
            }
            if let Some(p) = open {
                self.path_input = p.display().to_string();
                self.open(&p);
            }
            if let Some(e) = &self.error {
                ui.colored_label(ui.visuals().error_fg_color, e);
            }
            ui.separator();
            match self.tab {
                Tab::Data => match &mut self.loaded {
                    None => {
                        ui.label("Open a CSV file or an MNIST IDX file (type its path or drop it on the window), or try a bundled sample.");
                    }
                    Some(l) => {
                        if self.data_panel.ui(ui, l) {
                            self.train_panel.dataset_changed(self.loaded.as_ref());
                        }
                    }
                },
                Tab::Train => self.train_panel.ui(ui, self.loaded.as_ref()),
                Tab::Results => self.results_panel.ui(ui),
            }
        });
    }
}
