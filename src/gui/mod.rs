//! The desktop window. Panels read data, job events and reports; they never train or
//! evaluate on the UI thread (a frame must stay under 16 ms): training runs in the `job`
//! worker, which wakes the window when it has news.
//!
//! - [`data_panel::DataPanel`]: the loaded table's columns — kind, domain, provenance,
//!   warnings — a virtual-scrolling preview of its rows, and schema save/load.
//! - [`train::TrainPanel`]: method, (ε, δ), the cost preview from the ledger, the
//!   live run (progress, ETA, losses, budget gauge, cancel, a digit grid for images) and
//!   the export of samples.
//! - [`results::ResultsPanel`]: each finished run evaluated in a worker thread,
//!   with tabs for every figure of the evaluation suite and a comparison of runs.

mod background;
mod busy;
mod category_editor;
mod chrome;
mod connect;
mod data_panel;
mod dialogs;
mod frame_stats;
mod guide;
mod link_store;
mod linked;
mod loader;
mod model_view;
mod panel;
mod results;
mod risk_view;
mod samples;
mod schema_store;
mod settings;
mod train;

pub use samples::sample_path;

use std::path::{Path, PathBuf};

use eframe::egui;

use crate::data::Table;
use crate::data::schema::Schema;
use dialogs::{Dialogs, Purpose};
use loader::{Loading, Opened};
use panel::{Command, Ctx, Panel};

/// Opens the window and blocks until it closes.
pub fn run() -> anyhow::Result<()> {
    run_with(None)
}

/// [`run`], opening `file` (a table, digits or a `.dpsynth` model) once the window is up:
/// what a desktop's "Open with dpsynth" and a double-clicked model file do.
pub fn run_with(file: Option<PathBuf>) -> anyhow::Result<()> {
    // Work the window hands to rayon (scoring, columnar reads) runs below the window's
    // thread; an error means a pool already exists, which only costs smoothness.
    let _ = rayon::ThreadPoolBuilder::new()
        .start_handler(|_| crate::job::priority::yield_to_window())
        .build_global();
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("dpsynth — differentially private synthetic data")
            .with_inner_size([1200.0, 780.0])
            .with_min_inner_size([720.0, 480.0]),
        ..Default::default()
    };
    eframe::run_native(
        "dpsynth",
        options,
        Box::new(move |cc| {
            let mut app = App::new(cc);
            if let Some(f) = file {
                app.open(&f, &cc.egui_ctx);
            }
            Ok(Box::new(app))
        }),
    )
    .map_err(|e| anyhow::anyhow!("{e}"))
}

/// A dataset the window has open.
pub struct Loaded {
    pub path: PathBuf,
    /// The ledger's key for this file (a content hash, computed by the loader: hashing a
    /// big file would cost the UI thread frames).
    pub key: Option<String>,
    pub content: Content,
    /// The rows as the job holds them: a run trains on these, not on the file read again.
    pub dataset: Option<crate::job::workspace::Shared>,
    /// A child table linked to this one (Data tab), trained with it as a pair.
    pub linked: Option<linked::Child>,
}

/// What was opened.
pub enum Content {
    Table {
        table: std::sync::Arc<Table>,
        schema: Schema,
        notes: Vec<(String, String)>,
        stats: Vec<data_panel::ColumnStats>,
        /// Level counts for the private domain estimate's diagnostic (computed with the
        /// load, off the UI thread).
        profile: std::sync::Arc<Vec<crate::data::domain_check::LevelProfile>>,
    },
    Images {
        count: usize,
        side: usize,
        labels: String,
        /// The first 100 images as one 10×10 grid.
        texture: egui::TextureHandle,
    },
    /// A table a query engine holds ([`connect`]): its public schema and record count; a
    /// run counts its rows where they lie.
    Engine {
        schema: Schema,
        records: usize,
        schema_path: PathBuf,
    },
}

impl Content {
    /// What the loader's worker found, as the window keeps it: a table under the user's
    /// kept column settings when there are some, digits as a texture.
    fn shown(opened: Opened, kept_schema: Option<Schema>, ctx: &egui::Context) -> Self {
        match opened {
            Opened::Table {
                table,
                schema,
                notes,
                stats,
                profile,
            } => Content::Table {
                table,
                schema: kept_schema.unwrap_or(schema),
                notes,
                stats,
                profile,
            },
            Opened::Images {
                count,
                side,
                labels,
                grid,
            } => Content::Images {
                count,
                side,
                labels,
                texture: ctx.load_texture("real-digits", grid, egui::TextureOptions::NEAREST),
            },
            Opened::Engine {
                schema,
                records,
                schema_path,
            } => Content::Engine {
                schema,
                records,
                schema_path,
            },
        }
    }

    /// The real digits' grid of an image dataset.
    pub fn real_grid(&self) -> Option<&egui::TextureHandle> {
        match self {
            Content::Images { texture, .. } => Some(texture),
            Content::Table { .. } | Content::Engine { .. } => None,
        }
    }
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
    loading: Option<Loading>,
    error: Option<String>,
    settings: settings::Settings,
    dialogs: Dialogs,
    frames: frame_stats::FrameStats,
    data_panel: data_panel::DataPanel,
    train_panel: train::TrainPanel,
    results_panel: results::ResultsPanel,
    /// A released model opened on its own (`.dpsynth`).
    model_view: Option<model_view::ModelView>,
    /// Writes the column settings kept per file, off the UI thread.
    schema_keeper: schema_store::Keeper,
    guide: guide::Guide,
    /// "Connect…": a query engine's table, or a file read in parts.
    connect: connect::ConnectDialog,
    /// The linked sample was asked for: its child table joins these parents once open.
    pending_child: Option<PathBuf>,
    /// The last linked run on the open pair, for the Results tab.
    linked_results: Option<linked::results::Shown>,
    /// Keeps the open parent's link and its results for the next open.
    link_keeper: link_store::Keeper,
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
    /// The window as it was left: recent files and last settings from eframe's storage.
    pub fn new(cc: &eframe::CreationContext<'_>) -> Self {
        let settings: settings::Settings = cc
            .storage
            .and_then(|s| eframe::get_value(s, eframe::APP_KEY))
            .unwrap_or_default();
        let mut app = Self::default();
        app.train_panel.apply_settings(&settings);
        app.settings = settings;
        app
    }

    /// Answers the next file dialog with `path` instead of showing one, for tests and
    /// scripted demonstrations; everything after the dialog runs as usual.
    pub fn answer_next_dialog(&mut self, path: PathBuf) {
        self.dialogs.script_answer(path);
    }

    /// Asks for every path in the window's own prompt, as on a desktop with no system
    /// file dialog (tests of that path use it).
    pub fn use_path_prompt(&mut self) {
        self.dialogs.use_path_prompt();
    }

    /// Starts opening `path` in a worker; the current dataset stays until it succeeds.
    fn open(&mut self, path: &Path, ctx: &egui::Context) {
        self.error = None;
        self.path_input = path.display().to_string();
        // A released model opens beside the dataset, which stays as it is.
        if path.extension().is_some_and(|e| e == "dpsynth") {
            self.model_view = Some(model_view::ModelView::open(path, ctx));
            return;
        }
        // A table in a query engine needs its public schema too: ask for it.
        if crate::data::engine::EngineSource::parse(path).is_some() {
            self.connect.show(path.to_str());
            return;
        }
        self.loading = Some(Loading::start(path, ctx));
    }

    fn finish_loading(&mut self, ctx: &egui::Context) {
        let Some(result) = self.loading.as_ref().and_then(|l| l.poll()) else {
            return;
        };
        let Some(loading) = self.loading.take() else {
            return;
        };
        let key = loading.key();
        let path = loading.path;
        let done = match result {
            Ok(done) => done,
            Err(e) => {
                // A file that no longer opens is not offered again as a recent one.
                self.settings.forget(&path);
                self.error = Some(e);
                return;
            }
        };
        // The user's own column settings for this file, from last time; else a bundled
        // sample's public schema.
        let restored = done.kept_schema.is_some();
        let sample_schema = done.sample_schema.as_ref().map(|(_, f)| f.clone());
        let schema = done.kept_schema.or(done.sample_schema.map(|(s, _)| s));
        let content = Content::shown(done.shown, schema, ctx);
        // Bundled samples are not "recent files": they are always one click away; an
        // engine's table is no file to reopen (it needs its schema too).
        if let Content::Engine { schema_path, .. } = &content {
            self.connect.remember(&path, schema_path);
        } else if !path.starts_with(sample_path("")) {
            self.settings.opened(&path);
        }
        // The linked sample's child comes with its parents; else the child linked to this
        // file last time, with the pair's last results.
        let mut results = None;
        let linked = match (self.pending_child.take(), done.kept_link) {
            (Some(want), _) if want == path => match linked::sample_child() {
                Ok(c) => Some(c),
                Err(e) => {
                    self.error = Some(format!("the sample's child table: {e}"));
                    None
                }
            },
            (_, Some(Ok((c, shown)))) => {
                results = shown;
                Some(c)
            }
            (_, Some(Err(e))) => {
                self.error = Some(format!(
                    "the child table linked to this file last time: {e}"
                ));
                None
            }
            _ => None,
        };
        self.loaded = Some(Loaded {
            path,
            key,
            dataset: done.dataset,
            content,
            linked,
        });
        self.data_panel = Default::default();
        self.linked_results = results;
        if restored {
            self.data_panel.restored();
        } else if let Some(file) = sample_schema {
            self.data_panel.from_sample_schema(&file);
        }
        self.train_panel.dataset_opened(self.loaded.as_ref());
        self.results_panel.clear();
        // Kept runs were read with the file (tables only), off this thread.
        self.results_panel.restore(done.kept_runs);
        self.tab = Tab::Data;
    }

    /// Carries out what the panels asked for while they drew.
    fn apply(&mut self, commands: Vec<Command>, ctx: &egui::Context) {
        for c in commands {
            match c {
                Command::SchemaChanged => {
                    self.keep_schema();
                    self.train_panel.dataset_changed(self.loaded.as_ref());
                }
                Command::Open(path) => self.open(&path, ctx),
                Command::ShowLinked(s) => self.linked_results = Some(*s),
                Command::ShowRun {
                    title,
                    model,
                    config,
                } => {
                    match &self.loaded {
                        Some(Loaded {
                            path,
                            content: Content::Table { table, schema, .. },
                            ..
                        }) => {
                            self.results_panel
                                .add_run(title, &model, path, table, schema, config, ctx);
                        }
                        Some(Loaded {
                            content: Content::Engine { .. },
                            ..
                        }) => {
                            // The real rows stay in the engine: nothing to compare here.
                            // The released model opens beside, to read and sample.
                            self.model_view = Some(model_view::ModelView::open(&model, ctx));
                            continue;
                        }
                        Some(Loaded { path, content, .. }) => {
                            let real = content.real_grid().cloned();
                            self.results_panel
                                .add_image_run(title, &model, path, real, ctx);
                        }
                        None => {}
                    }
                    // A newcomer should not have to find the results: show them.
                    self.tab = Tab::Results;
                }
            }
        }
    }

    /// Keeps the open table's column settings for the next time it is opened.
    fn keep_schema(&mut self) {
        if let Some(Loaded {
            path,
            content: Content::Table { schema, .. },
            ..
        }) = &self.loaded
        {
            self.schema_keeper.keep(path, schema);
        }
    }

    /// Routes a dialog's answer to the panel that asked.
    fn dialog_answered(&mut self, purpose: Purpose, path: PathBuf, ctx: &egui::Context) {
        if let Some(d) = path.parent() {
            self.settings.last_dir = Some(d.to_path_buf());
        }
        match purpose {
            Purpose::OpenData => self.open(&path, ctx),
            Purpose::EngineSchema => self.connect.schema_chosen(&path),
            Purpose::LoadSchema
                if matches!(
                    self.loaded.as_ref().map(|l| &l.content),
                    Some(Content::Engine { .. })
                ) =>
            {
                // Another schema for an engine's table: the engine checks the rows
                // against it again.
                if let Some(l) = &self.loaded {
                    self.loading = Some(Loading::connect(&l.path, &path, ctx));
                }
            }
            Purpose::LoadSchema | Purpose::SaveSchema => {
                if let Some(l) = &mut self.loaded {
                    if self.data_panel.schema_file(purpose, &path, l) {
                        self.keep_schema();
                        self.train_panel.dataset_changed(self.loaded.as_ref());
                    }
                }
            }
            Purpose::ExportCsv | Purpose::SaveModel => {
                self.train_panel.export_to(purpose, &path, ctx)
            }
            Purpose::SaveReport => self.results_panel.save_report(&path),
            Purpose::OpenChild | Purpose::ChildSchema => {
                self.data_panel.child.chosen(purpose, &path)
            }
            Purpose::SaveChildSchema => {
                if let Some(c) = self.loaded.as_ref().and_then(|l| l.linked.as_ref()) {
                    self.data_panel.child.save_schema(&c.schema, &path);
                }
            }
            Purpose::ExportRunCsv | Purpose::SaveRunModel => {
                self.results_panel.export_to(purpose, &path, ctx)
            }
            Purpose::SampleModel => {
                if let Some(m) = &mut self.model_view {
                    m.export_to(purpose, &path, ctx);
                }
            }
        }
    }
}

impl eframe::App for App {
    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        self.train_panel.store_settings(&mut self.settings);
        eframe::set_value(storage, eframe::APP_KEY, &self.settings);
    }

    fn ui(&mut self, ui: &mut egui::Ui, frame: &mut eframe::Frame) {
        self.record_frame(frame);
        let ctx = ui.ctx().clone();
        self.finish_loading(&ctx);
        if let Some(e) = self.schema_keeper.failure() {
            self.error = Some(format!(
                "could not keep the column settings for next time: {e}"
            ));
        }
        if let Some(e) = self.link_keeper.failure() {
            self.error = Some(format!(
                "could not keep the linked table for next time: {e}"
            ));
        }
        self.link_keeper.track(self.loaded.as_ref().map(|l| {
            let link = l.linked.as_ref();
            let results = self.linked_results.as_ref();
            (
                l.path.as_path(),
                link.map(|c| link_store::KeptLink::of(c, results)),
            )
        }));
        if let Some((purpose, path)) = self.dialogs.poll() {
            self.dialog_answered(purpose, path, &ctx);
        }
        let polled = {
            let mut cx = Ctx {
                loaded: self.loaded.as_mut(),
                dialogs: &mut self.dialogs,
            };
            self.train_panel.poll(&ctx, &mut cx)
        };
        self.apply(polled, &ctx);
        self.tabs_and_status(ui);
        let mut commands = Vec::new();
        egui::CentralPanel::default().show(ui, |ui| {
            self.toolbar(ui);
            ui.separator();
            if self.tab == Tab::Data && self.loaded.is_none() {
                self.start_screen(ui);
                return;
            }
            let panel: &mut dyn Panel = match self.tab {
                Tab::Data => &mut self.data_panel,
                Tab::Train => &mut self.train_panel,
                Tab::Results => {
                    if let Some(l) = &self.linked_results {
                        l.ui(ui);
                        ui.separator();
                    }
                    &mut self.results_panel
                }
            };
            let mut cx = Ctx {
                loaded: self.loaded.as_mut(),
                dialogs: &mut self.dialogs,
            };
            commands = panel.ui(ui, &mut cx);
        });
        if let Some(c) = self.connect.ui(&ctx, &mut self.dialogs) {
            self.error = None;
            self.loading = Some(Loading::connect(&c.url, &c.schema, &ctx));
        }
        if let Some(m) = &mut self.model_view {
            m.ui(&ctx, &mut self.dialogs);
            if m.closed() {
                self.model_view = None;
            }
        }
        self.apply(commands, &ctx);
    }
}
