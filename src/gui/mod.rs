//! The desktop window. This is the minimal shell of the foundation: it opens, offers the
//! bundled samples, and shows each column's kind, domain and provenance. Panels read data
//! and job events only; they never train or evaluate on the UI thread.

use std::path::PathBuf;

use eframe::egui;

use crate::data::{self, Dataset};

/// Opens the window and blocks until it closes.
pub fn run() -> anyhow::Result<()> {
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("dpsynth — differentially private synthetic data")
            .with_inner_size([1100.0, 720.0]),
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

/// The window's state.
#[derive(Default)]
pub struct App {
    path_input: String,
    loaded: Option<Loaded>,
    error: Option<String>,
}

struct Loaded {
    path: String,
    summary: Summary,
}

enum Summary {
    Table {
        rows: usize,
        columns: Vec<[String; 5]>,
        non_private: usize,
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

/// Tiles the first `rows × cols` images into one grayscale picture.
fn image_grid(set: &crate::data::image::ImageSet, rows: usize, cols: usize) -> egui::ColorImage {
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
    fn open(&mut self, path: PathBuf) {
        self.error = None;
        let shown = path.display().to_string();
        match data::open(&path, &data::csv::LoadOptions::default()) {
            Ok(Dataset::Table(t)) => match data::infer::infer_schema(&t) {
                Ok(inf) => {
                    let columns = inf
                        .schema
                        .columns
                        .iter()
                        .map(|c| {
                            let col = t.column(&c.name);
                            [
                                c.name.clone(),
                                if c.integer {
                                    format!("{} (integer)", c.kind.label())
                                } else {
                                    c.kind.label().into()
                                },
                                c.domain_summary(40),
                                c.provenance.badge(),
                                col.map_or(0, |c| c.missing_count()).to_string(),
                            ]
                        })
                        .collect();
                    self.loaded = Some(Loaded {
                        path: shown,
                        summary: Summary::Table {
                            rows: t.n_rows,
                            columns,
                            non_private: inf.schema.non_private_domains().len(),
                        },
                    });
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
                    path: shown,
                    summary: Summary::Images {
                        count: set.len(),
                        side: set.width,
                        labels,
                        grid: image_grid(&set, 10, 10),
                        texture: None,
                    },
                });
            }
            Err(e) => self.error = Some(e.to_string()),
        }
    }
}

impl eframe::App for App {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        egui::Panel::top("top").show(ui, |ui| {
            ui.horizontal(|ui| {
                ui.heading("dpsynth");
                ui.label("differentially private synthetic data");
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
            });
            ui.horizontal(|ui| {
                let l = ui.label("File path:");
                let r = ui.text_edit_singleline(&mut self.path_input).labelled_by(l.id);
                let enter = r.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
                if ui.button("Open").clicked() || enter {
                    open = Some(PathBuf::from(self.path_input.trim()));
                }
            });
            if let Some(p) = open {
                self.open(p);
            }
            if let Some(e) = &self.error {
                ui.colored_label(ui.visuals().error_fg_color, e);
            }
            ui.separator();
            let Some(loaded) = &mut self.loaded else {
                ui.label("Open a CSV file or an MNIST IDX file, or try a bundled sample.");
                return;
            };
            match &mut loaded.summary {
                Summary::Table {
                    rows,
                    columns,
                    non_private,
                } => {
                    ui.label(format!("{}: {rows} rows × {} columns", loaded.path, columns.len()));
                    if *non_private > 0 {
                        ui.colored_label(
                            ui.visuals().warn_fg_color,
                            format!(
                                "{non_private} column domains come from the data: not protected until you enter or confirm public values."
                            ),
                        );
                    }
                    egui::ScrollArea::vertical().show(ui, |ui| {
                        egui::Grid::new("columns").striped(true).show(ui, |ui| {
                            for h in ["column", "kind", "domain", "provenance", "missing"] {
                                ui.strong(h);
                            }
                            ui.end_row();
                            for row in columns {
                                for (i, cell) in row.iter().enumerate() {
                                    if i == 3 && cell.starts_with("FROM DATA") {
                                        ui.colored_label(ui.visuals().warn_fg_color, cell);
                                    } else {
                                        ui.label(cell);
                                    }
                                }
                                ui.end_row();
                            }
                        });
                    });
                }
                Summary::Images {
                    count,
                    side,
                    labels,
                    grid,
                    texture,
                } => {
                    ui.label(format!("{}: {count} images of {side}×{side} pixels", loaded.path));
                    ui.label(format!("labels: {labels}"));
                    let tex = texture.get_or_insert_with(|| {
                        ui.ctx().load_texture("real-digits", grid.clone(), egui::TextureOptions::NEAREST)
                    });
                    ui.label("The first 100 images:");
                    ui.add(egui::Image::new(&*tex).fit_to_exact_size(egui::vec2(420.0, 420.0)));
                }
            }
        });
    }
}
