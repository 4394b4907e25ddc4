//! Opening a data file off the UI thread. Reading and parsing a large CSV takes seconds, and
//! a window that stops drawing looks crashed; the worker reports how many bytes it has read
//! and which stage it is in, and the window draws a progress bar from that.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError, channel};
use std::time::Instant;

use eframe::egui;

use crate::data::schema::Schema;
use crate::data::{self, Table};
use crate::job::workspace::{self, Rows, Shared};

/// A kept link opened again: the child and the pair's last results, or why not.
type KeptLink = Result<(super::linked::Child, Option<super::linked::results::Shown>), String>;

/// What the worker hands back: everything heavy is computed there.
pub enum Opened {
    Table {
        table: Arc<Table>,
        schema: Schema,
        notes: Vec<(String, String)>,
        stats: Vec<super::data_panel::ColumnStats>,
        profile: std::sync::Arc<Vec<crate::data::domain_check::LevelProfile>>,
    },
    Images {
        count: usize,
        side: usize,
        labels: String,
        /// The first 100 images tiled 10 × 10.
        grid: egui::ColorImage,
    },
    /// A table a query engine holds: only its public schema and record count come here.
    Engine {
        schema: Schema,
        records: usize,
        /// The schema file, to say where the kinds and domains came from.
        schema_path: PathBuf,
    },
}

/// What the worker hands back: the dataset as the job holds it (rows and ledger keys,
/// handed to the runs) and what the window shows of it.
pub struct Done {
    /// The rows a run trains on (none for an engine's table, counted where it lies).
    pub dataset: Option<crate::job::workspace::Shared>,
    pub shown: Opened,
    /// The user's column settings kept for this file, when they still fit it.
    pub kept_schema: Option<Schema>,
    /// A bundled sample's public schema and its file (used when nothing was kept).
    pub sample_schema: Option<(Schema, std::path::PathBuf)>,
    /// The runs kept for this file (tables), read here rather than on the UI thread.
    pub kept_runs: Vec<super::results::KeptRun>,
    /// The child table linked to this file last time (opened again) and the pair's last
    /// results; or why it could not be opened.
    pub kept_link: Option<KeptLink>,
}

const READING: u8 = 0;
const PARSING: u8 = 1;
const INFERRING: u8 = 2;
const SURVEYING: u8 = 3;

/// A file being opened.
pub struct Loading {
    pub path: PathBuf,
    started: Instant,
    read: Arc<AtomicU64>,
    size: Arc<AtomicU64>,
    stage: Arc<AtomicU8>,
    rx: Receiver<Result<Done, String>>,
    key: Arc<std::sync::Mutex<Option<String>>>,
}

impl Opened {
    /// What the Data tab shows of an opened image set: its size, labels and a grid.
    fn of_images(set: &data::image::ImageSet) -> Self {
        Opened::Images {
            count: set.len(),
            side: set.width,
            labels: set
                .label_counts()
                .iter()
                .map(|(l, c)| format!("{l}: {c}"))
                .collect::<Vec<_>>()
                .join(", "),
            grid: super::image_grid(set, 10, 10),
        }
    }
}

impl Loading {
    /// Starts reading `path` in a worker thread; `ctx` is woken as bytes arrive.
    pub fn start(path: &Path, ctx: &egui::Context) -> Self {
        let (tx, rx) = channel();
        let read = Arc::new(AtomicU64::new(0));
        let size = Arc::new(AtomicU64::new(
            std::fs::metadata(path).map_or(0, |m| m.len()),
        ));
        let stage = Arc::new(AtomicU8::new(READING));
        let key = Arc::new(std::sync::Mutex::new(None));
        let k = key.clone();
        let (r, s, st, ctx, p) = (
            read.clone(),
            size.clone(),
            stage.clone(),
            ctx.clone(),
            path.to_path_buf(),
        );
        std::thread::spawn(move || {
            crate::job::priority::yield_to_window();
            let mut progress = |got: u64, total: u64| {
                r.store(got, Ordering::Relaxed);
                s.store(total, Ordering::Relaxed);
                if got >= total {
                    st.store(PARSING, Ordering::Relaxed);
                }
                ctx.request_repaint();
            };
            let shown = p.display().to_string();
            let result = workspace::open(&p, &mut progress)
                .map_err(|e| e.to_string())
                .and_then(|o| {
                    // The ledger learns the file's bytes are these rows: the key needs no
                    // second parse, now or at the next open.
                    let _ = workspace::remember(&o, &crate::job::paths::default_ledger_path());
                    if let Ok(mut g) = k.lock() {
                        *g = Some(o.content_key.clone());
                    }
                    let dataset = Shared(Arc::new(o));
                    let (mut kept_schema, mut sample_schema) = (None, None);
                    let mut kept_runs = Vec::new();
                    let mut kept_link = None;
                    let shown = match &dataset.0.rows {
                        Rows::Table(table) => {
                            st.store(INFERRING, Ordering::Relaxed);
                            ctx.request_repaint();
                            let inf = data::infer::infer_schema(table)
                                .map_err(|e| format!("{shown}: {e}"))?;
                            (kept_schema, sample_schema, kept_runs, kept_link) =
                                kept_for(&p, table);
                            Opened::Table {
                                stats: super::data_panel::ColumnStats::of(table),
                                profile: Arc::new(data::domain_check::profile(table)),
                                table: table.clone(),
                                schema: inf.schema,
                                notes: inf.notes,
                            }
                        }
                        Rows::Images(set) => Opened::of_images(set),
                    };
                    Ok(Done {
                        dataset: Some(dataset),
                        shown,
                        kept_schema,
                        sample_schema,
                        kept_runs,
                        kept_link,
                    })
                });
            let _ = tx.send(result);
            ctx.request_repaint();
        });
        Self {
            path: path.to_path_buf(),
            started: Instant::now(),
            read,
            size,
            stage,
            rx,
            key,
        }
    }

    /// Starts connecting to the engine table `url` in a worker, with its public schema:
    /// the engine counts its records and checks them against the schema there
    /// ([`workspace::connect`]); a large table takes as long as the engine needs.
    pub fn connect(url: &Path, schema: &Path, ctx: &egui::Context) -> Self {
        let (tx, rx) = channel();
        let key = Arc::new(std::sync::Mutex::new(None));
        let (k, ctx2, u, sp) = (
            key.clone(),
            ctx.clone(),
            url.to_path_buf(),
            schema.to_path_buf(),
        );
        std::thread::spawn(move || {
            crate::job::priority::yield_to_window();
            let result = workspace::connect(&u, &sp)
                .map(|c| {
                    if let Ok(mut g) = k.lock() {
                        *g = Some(c.content_key.clone());
                    }
                    Done {
                        dataset: None,
                        shown: Opened::Engine {
                            schema: c.schema,
                            records: c.records,
                            schema_path: sp,
                        },
                        kept_schema: None,
                        sample_schema: None,
                        kept_runs: Vec::new(),
                        kept_link: None,
                    }
                })
                .map_err(|e| e.to_string());
            let _ = tx.send(result);
            ctx2.request_repaint();
        });
        Self {
            path: url.to_path_buf(),
            started: Instant::now(),
            read: Arc::new(AtomicU64::new(0)),
            size: Arc::new(AtomicU64::new(0)),
            stage: Arc::new(AtomicU8::new(SURVEYING)),
            rx,
            key,
        }
    }

    /// The ledger key of the file, once the worker has finished.
    pub fn key(&self) -> Option<String> {
        self.key.lock().ok().and_then(|g| g.clone())
    }

    /// The result once the worker is done.
    pub fn poll(&self) -> Option<Result<Done, String>> {
        match self.rx.try_recv() {
            Ok(r) => Some(r),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err(format!(
                "{}: the loader stopped unexpectedly",
                self.path.display()
            ))),
        }
    }

    /// A progress bar with the stage, the bytes read and the time so far.
    pub fn ui(&self, ui: &mut egui::Ui) {
        let (read, size) = (
            self.read.load(Ordering::Relaxed),
            self.size.load(Ordering::Relaxed),
        );
        let secs = self.started.elapsed().as_secs_f32();
        let (frac, text) = match self.stage.load(Ordering::Relaxed) {
            READING if size > 0 && read > 0 => (
                0.8 * read as f32 / size as f32,
                format!(
                    "reading {:.1} of {:.1} MB",
                    read as f64 / 1e6,
                    size as f64 / 1e6
                ),
            ),
            READING => (0.0, "reading and decoding".to_string()),
            PARSING => (0.85, "parsing the columns".to_string()),
            SURVEYING => (
                0.5,
                "the engine counts the records and checks them against the schema".to_string(),
            ),
            _ => (0.95, "inferring each column's kind and domain".to_string()),
        };
        ui.horizontal(|ui| {
            crate::gui::busy::spinner(ui);
            let verb = if self.stage.load(Ordering::Relaxed) == SURVEYING {
                "Connecting to"
            } else {
                "Opening"
            };
            ui.label(format!("{verb} {}", self.path.display()));
        });
        ui.add(
            egui::ProgressBar::new(frac)
                .text(format!("{text} · {secs:.1} s"))
                .animate(true),
        );
        ui.label("The window stays usable meanwhile.");
    }
}

/// What is kept for the file at `p` from before: its column settings (else a bundled
/// sample's public schema), its runs and its linked child table.
#[allow(clippy::type_complexity)]
fn kept_for(
    p: &Path,
    table: &Table,
) -> (
    Option<Schema>,
    Option<(Schema, std::path::PathBuf)>,
    Vec<super::results::KeptRun>,
    Option<KeptLink>,
) {
    let (schema, sample) = schemas_for(p, table);
    let runs = super::results::find_kept(p);
    let link = super::link_store::kept(p).map(|l| l.reopen());
    (schema, sample, runs, link)
}

/// The user's column settings kept for the file at `p`, else (nothing kept) a bundled
/// sample's public schema with its file.
fn schemas_for(
    p: &Path,
    table: &crate::data::Table,
) -> (Option<Schema>, Option<(Schema, PathBuf)>) {
    match super::schema_store::kept(p, table) {
        Some(kept) => (Some(kept), None),
        None => (None, super::samples::sample_schema(p, table)),
    }
}
