//! The ε sweep in the window, for a teaching lab: the form's method (and any others ticked)
//! trained once per ε (and repeat) by the job's sweep on a worker thread, each run charged
//! like any other; the headline scores drawn against ε as the runs finish, with the
//! real-data ceiling and the majority-class floor; a click on a point (or its row in the
//! table) opens that run's results. The figure exports as SVG, the table as CSV.

use std::path::{Path, PathBuf};

use eframe::egui;

use crate::job::sweep::{SweepConfig, SweepEvent, SweepHandle, SweepPoint, SweepReport};
use crate::job::{self, RunConfig};

mod figure;

/// A finished run to show in the results: title, model, settings.
pub(super) type Open = (String, PathBuf, Option<Box<RunConfig>>);

/// What the user asked the sweep view for.
pub(super) enum Action {
    /// Start this sweep (the panel saves the schema its runs read first).
    Start(Box<SweepConfig>),
    Open(Open),
}

/// The score drawn against ε.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Metric {
    Accuracy,
    /// The default: it ranks, so a skewed label does not flatten it (accuracy starts at
    /// the majority class's share even for useless rows).
    #[default]
    Auroc,
    Tv,
    Pca,
}

impl Metric {
    const ALL: [(Metric, &'static str, &'static str); 4] = [
        (
            Metric::Accuracy,
            "TSTR accuracy",
            "Classifiers trained on the synthetic rows, tested on real ones: the share they get right (mean of the classifiers).",
        ),
        (
            Metric::Auroc,
            "TSTR AUROC",
            "The same classifiers' area under the ROC curve: 0.5 is guessing, 1 perfect ranking.",
        ),
        (
            Metric::Tv,
            "1-way TV distance",
            "How far each column's histogram is from the real one (mean total variation distance): 0 is identical, lower is better.",
        ),
        (
            Metric::Pca,
            "2-way PCA score",
            "How close the synthetic cloud is to the real one in the real data's first two principal components (1 = they coincide). It can look good on collapsed data.",
        ),
    ];

    /// The y axis in words for the two scores whose name is a term of art.
    fn axis_words(self) -> Option<&'static str> {
        match self {
            Metric::Accuracy => Some("trained on synthetic: share right on real rows"),
            Metric::Auroc => Some("trained on synthetic: AUROC on real rows"),
            Metric::Tv | Metric::Pca => None,
        }
    }

    fn get(self, p: &SweepPoint) -> Option<f64> {
        match self {
            Metric::Accuracy => p.tstr_accuracy,
            Metric::Auroc => p.tstr_auroc,
            Metric::Tv => Some(p.tv_1way),
            Metric::Pca => Some(p.pca_score),
        }
        .filter(|v| v.is_finite())
    }
}

enum State {
    Idle,
    /// `stopping`: Stop was pressed; the worker ends at its next check.
    Running {
        handle: SweepHandle,
        line: String,
        stopping: bool,
        /// When it started and how many points it has in all: the time left is estimated
        /// from the points finished so far.
        started: std::time::Instant,
        total: usize,
    },
    Done(Box<SweepReport>),
    Failed(String),
}

/// The sweep's clock: the time so far and, once a point is in, the time the rest should
/// take at the pace of the points finished (resumed points count as finished at once).
/// Before that, from the first run's training pace (its `step s/t` in `line`): a floor,
/// since each run's scores come after its training.
fn time_left(elapsed: f64, finished: usize, total: usize, line: &str) -> String {
    let so_far = crate::job::resources::duration(elapsed);
    let runs = if total == 1 { "run" } else { "runs" };
    let left = total.saturating_sub(finished);
    if finished == 0 && left > 0 {
        if let Some(f) = training_share(line).filter(|f| *f >= 0.05) {
            let rest = (elapsed / f * total as f64 - elapsed).max(0.0);
            return format!(
                "{so_far} so far, 0 of {total} {runs} done: at least about {} left (the first run's training pace; each run's scores add to it)",
                crate::job::resources::duration(rest)
            );
        }
    }
    if finished == 0 || left == 0 {
        return format!("{so_far} so far, {finished} of {total} {runs} done");
    }
    let rest = elapsed / finished as f64 * left as f64;
    format!(
        "{so_far} so far, {finished} of {total} {runs} done: about {} left",
        crate::job::resources::duration(rest)
    )
}

/// How far the first run's training is, from its progress line (`… step s/t`).
fn training_share(line: &str) -> Option<f64> {
    let at = line.rfind("step ")?;
    let (s, t) = line[at + 5..].split_once('/')?;
    let t: String = t.chars().take_while(char::is_ascii_digit).collect();
    let (s, t) = (s.trim().parse::<f64>().ok()?, t.parse::<f64>().ok()?);
    (t > 0.0).then(|| (s / t).clamp(0.0, 1.0))
}

/// The sweep's settings and what it found.
pub(super) struct SweepView {
    /// Further methods swept beside the form's (by registry index).
    also: Vec<bool>,
    epsilons: String,
    repeats: usize,
    public: bool,
    /// The data file the public switch was set for.
    public_for: Option<PathBuf>,
    state: State,
    /// The runs so far, as they finish.
    points: Vec<SweepPoint>,
    /// The data file the points belong to.
    data: Option<PathBuf>,
    /// Σ ε of the sweep as set (for the panel's ledger check).
    pub planned: Option<f64>,
    metric: Metric,
    export_path: String,
    export_msg: Option<String>,
    /// A path that exists, asked about before overwriting.
    overwrite: Option<PathBuf>,
    /// Where the chart was drawn last frame (a PNG is cut from a screenshot there).
    chart_rect: Option<egui::Rect>,
    /// The PNG writer's answer, from the screenshot callback.
    png_answer: Option<std::sync::mpsc::Receiver<String>>,
    /// The sweep folder last looked at, and how many finished points it keeps (read
    /// once per folder, not every frame).
    kept: Option<(PathBuf, usize)>,
    /// The points shown were read from a sweep's folder, not made by a sweep run here.
    from_disk: bool,
}

impl Default for SweepView {
    fn default() -> Self {
        Self {
            also: vec![false; job::methods().len()],
            // A lesson's defaults, with the recommended method (AIM on Adult: TSTR AUROC
            // about 0.63, 0.73, 0.80 and 0.85 at these ε, the real rows' 0.86; two repeats
            // draw the spread as bars): 8 runs, most of the time scoring. Measured on two
            // cores: 5 min 51 s with `dpsynth sweep … --public`, about 9 min in the window.
            epsilons: "0.01, 0.03, 0.1, 1".into(),
            repeats: 2,
            public: false,
            public_for: None,
            state: State::Idle,
            points: Vec::new(),
            data: None,
            planned: None,
            metric: Metric::default(),
            export_path: String::new(),
            export_msg: None,
            overwrite: None,
            chart_rect: None,
            png_answer: None,
            kept: None,
            from_disk: false,
        }
    }
}

/// Parses "0.3, 1, 3, inf": positive numbers, `inf` (or ∞) for the non-private point.
fn parse_epsilons(s: &str) -> Result<Vec<f64>, String> {
    let mut v = Vec::new();
    for t in s.split([',', ' ', ';']).filter(|t| !t.trim().is_empty()) {
        let t = t.trim();
        let e = match t.to_ascii_lowercase().as_str() {
            "inf" | "∞" | "infinity" => f64::INFINITY,
            _ => t
                .parse::<f64>()
                .ok()
                .filter(|e| *e > 0.0 && e.is_finite())
                .ok_or_else(|| {
                    format!("'{t}' is not a positive number (or inf for the non-private point)")
                })?,
        };
        if !v.contains(&e) {
            v.push(e);
        }
    }
    if v.is_empty() {
        return Err("type at least one ε, e.g. 0.3, 1, 3, inf".into());
    }
    v.sort_by(f64::total_cmp);
    Ok(v)
}

impl SweepView {
    pub fn is_running(&self) -> bool {
        matches!(self.state, State::Running { .. })
    }

    /// The methods swept: the form's first, then any ticked (private ones that train
    /// tables with `preset`).
    fn methods(&self, chosen: &str, preset: &str) -> Vec<String> {
        let mut v = vec![chosen.to_string()];
        for (i, m) in job::methods().iter().enumerate() {
            if self.also.get(i).copied().unwrap_or(false)
                && m.id != chosen
                && m.private
                && m.has_preset(preset)
            {
                v.push(m.id.to_string());
            }
        }
        v
    }

    fn drain(&mut self) {
        let State::Running { handle, line, .. } = &mut self.state else {
            return;
        };
        let mut done = None;
        while let Ok(ev) = handle.events.try_recv() {
            match ev {
                SweepEvent::Progress(l) => *line = l,
                SweepEvent::Point(p) => self.points.push(*p),
                SweepEvent::Done(r) => done = Some(r),
            }
        }
        if let Some(r) = done {
            // The folder's kept points changed: read them again next frame.
            self.kept = None;
            self.state = match r {
                Ok(rep) => State::Done(rep),
                Err(e) => State::Failed(e.to_string()),
            };
        }
    }

    /// Shows the points a sweep as set kept on disk (after a restart, or when the settings
    /// come back to a sweep run before), unless a sweep runs or shows points of its own.
    fn show_kept(&mut self, kept: Option<SweepReport>, data: &Path, running: bool) {
        if running || !(self.points.is_empty() || self.from_disk) {
            return;
        }
        match kept {
            Some(r) => {
                self.points = r.points.clone();
                self.data = Some(data.to_path_buf());
                self.state = State::Done(Box::new(r));
                self.from_disk = true;
            }
            None if self.from_disk => {
                self.points.clear();
                self.from_disk = false;
                self.state = State::Idle;
                self.from_disk = false;
            }
            None => {}
        }
    }

    /// Starts `cfg` on a worker thread.
    pub fn start(&mut self, cfg: SweepConfig, data: &Path, ctx: &egui::Context) {
        let ctx = ctx.clone();
        let total = cfg.methods.len() * cfg.epsilons.len() * cfg.repeats.max(1);
        let handle = job::sweep::spawn_sweep(
            cfg,
            job::paths::default_ledger_path(),
            Some(Box::new(move || crate::gui::busy::wake(&ctx))),
        );
        self.points.clear();
        self.export_msg = None;
        self.data = Some(data.to_path_buf());
        self.state = State::Running {
            handle,
            line: "starting".into(),
            stopping: false,
            started: std::time::Instant::now(),
            total,
        };
    }

    /// While a sweep runs: Stop first (so that the status text after it cannot move it),
    /// then the busy sign and the status; once pressed, Stop says it is stopping.
    fn running_controls(&mut self, ui: &mut egui::Ui) {
        let finished = self.points.len();
        if let State::Running {
            handle,
            line,
            stopping,
            started,
            total,
        } = &mut self.state
        {
            let label = if *stopping { "Stopping…" } else { "Stop" };
            if ui
                .add_enabled(!*stopping, egui::Button::new(label))
                .on_hover_text("Stops the run in progress; finished runs stay charged and listed.")
                .clicked()
            {
                handle.cancel();
                *stopping = true;
            }
            crate::gui::busy::spinner(ui);
            if *stopping {
                ui.label("stopping: the run in progress ends at its next step or score; finished runs stay listed");
            } else {
                ui.label(line.as_str());
            }
            ui.weak(time_left(
                started.elapsed().as_secs_f64(),
                finished,
                *total,
                line,
            ));
        }
    }

    /// Draws the sweep; `base` is the form's run (its method, preset, δ and settings), or
    /// why the form cannot make one; `budget` is the dataset's standing after the sweep,
    /// or why the ledger refuses it.
    /// The sweep's settings: the ε values, repeats, the methods beside the chosen one,
    /// and whether the data is public.
    fn settings_ui(&mut self, ui: &mut egui::Ui, running: bool, base: &Result<RunConfig, String>) {
        ui.add_enabled_ui(!running, |ui| {
            ui.horizontal(|ui| {
                let l = ui.label("ε values");
                ui.add(egui::TextEdit::singleline(&mut self.epsilons).desired_width(200.0))
                    .labelled_by(l.id)
                    .on_hover_text("Comma-separated; inf adds the non-private reference point (never to be released).");
                let l = ui.label("repeats");
                ui.add(egui::DragValue::new(&mut self.repeats).range(1..=10))
                    .labelled_by(l.id)
                    .on_hover_text("Runs per (method, ε) with different randomness: the bars span the smallest to the largest score. Each repeat is charged.");
            });
            if let Ok(b) = &base {
                ui.horizontal_wrapped(|ui| {
                    ui.label(format!("methods: {} (chosen above), and also", b.method));
                    for (i, m) in job::methods().iter().enumerate() {
                        if m.id == b.method || !m.private || !m.has_preset(&b.preset) {
                            continue;
                        }
                        if let Some(t) = self.also.get_mut(i) {
                            ui.checkbox(t, m.id).on_hover_text(m.sentence);
                        }
                    }
                });
            }
            ui.checkbox(&mut self.public, "the data is public (charge nothing)")
                .on_hover_text("Tick only for public data such as the bundled samples: the runs then use a scratch ledger. On private data every run of the sweep is charged to this dataset's ledger.");
        });
    }

    /// The sweep the settings describe, on the form's run (`base`).
    fn plan(&self, data: &Path, base: &Result<RunConfig, String>) -> Result<SweepConfig, String> {
        parse_epsilons(&self.epsilons).and_then(|eps| {
            let base = base.clone()?;
            let methods = self.methods(&base.method, &base.preset);
            // One folder per sweep as set (data, methods, ε list, repeats, preset, δ,
            // seed): running the same sweep again resumes from its kept points.
            let out_dir =
                job::paths::data_dir()
                    .join("sweeps")
                    .join(job::sweep::store::folder_name(
                        data,
                        &methods,
                        &eps,
                        self.repeats.max(1),
                        &base,
                        self.public,
                    ));
            Ok(SweepConfig {
                base,
                methods,
                epsilons: eps,
                repeats: self.repeats.max(1),
                public: self.public,
                out_dir,
            })
        })
    }

    /// What the sweep will charge (or that it charges nothing on public data), and the
    /// runs kept from an earlier sweep. False when it cannot start yet.
    fn cost_ui(
        &mut self,
        ui: &mut egui::Ui,
        plan: &Result<SweepConfig, String>,
        budget: Option<&Result<String, String>>,
        data: &Path,
        running: bool,
    ) -> bool {
        let mut can = true;
        ui.group(|ui| {
            ui.strong("Cost of this sweep");
            match plan {
                Err(e) => {
                    can = false;
                    ui.colored_label(ui.visuals().error_fg_color, e);
                }
                Ok(p) => {
                    if self.kept.as_ref().is_none_or(|(d, _)| *d != p.out_dir) {
                        let kept = job::sweep::store::kept_report(p);
                        self.kept = Some((p.out_dir.clone(), kept.as_ref().map_or(0, |r| r.points.len())));
                        self.show_kept(kept, data, running);
                    }
                    if let Some(n) = self.kept.as_ref().map(|(_, n)| *n).filter(|n| *n > 0) {
                        ui.label(format!("{n} of these runs finished in an earlier sweep and are kept: they are not run or charged again."));
                    }
                    let runs = p.methods.len() * p.epsilons.len() * p.repeats;
                    let total = p.planned_total();
                    let runs = format!("{runs} run{}", if runs == 1 { "" } else { "s" });
                    if p.public {
                        ui.label(format!("{runs} on data declared public: nothing is charged (their ε add up to {total:.3}). The bundled Adult and MNIST files are public samples."));
                    } else {
                        ui.label(format!("{runs}, each charged to this dataset's ledger: at most ε {total:.3} in all (the sum; the ledger composes the runs, which costs less)."));
                        match budget {
                            Some(Ok(t)) => {
                                ui.label(t);
                            }
                            Some(Err(e)) => {
                                can = false;
                                ui.colored_label(ui.visuals().error_fg_color, e);
                            }
                            None => {
                                can = false;
                                ui.horizontal(|ui| {
                                    crate::gui::busy::spinner(ui);
                                    ui.label("reading the ledger…");
                                });
                            }
                        }
                    }
                    if p.epsilons.iter().any(|e| e.is_infinite()) {
                        ui.label("The ∞ point trains without noise: a reference, never to be released; the ledger records that the data were read without protection.");
                    }
                }
            }
        });
        can
    }

    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        data: &Path,
        base: Result<RunConfig, String>,
        budget: Option<Result<String, String>>,
    ) -> Option<Action> {
        self.drain();
        if self.public_for.as_deref() != Some(data) {
            self.public = data.starts_with(crate::gui::sample_path(""));
            self.public_for = Some(data.to_path_buf());
        }
        let running = self.is_running();
        ui.label("One run per ε for each method, each scored like a run of its own (train on synthetic, test on real, 1-way TV, PCA), and the scores drawn against ε: the papers' central figure, for your data.");
        self.settings_ui(ui, running, &base);
        let plan = self.plan(data, &base);
        self.planned = plan.as_ref().ok().map(|p| p.planned_total());
        let can = !running && self.cost_ui(ui, &plan, budget.as_ref(), data, running);
        let mut action = None;
        ui.horizontal(|ui| {
            if ui
                .add_enabled(can && plan.is_ok(), egui::Button::new("Run the sweep"))
                .on_hover_text("Trains and scores every run in turn on a worker thread.")
                .clicked()
            {
                if let Ok(p) = plan.clone() {
                    action = Some(Action::Start(Box::new(p)));
                }
            }
            self.running_controls(ui);
        });
        if let State::Failed(e) = &self.state {
            ui.colored_label(
                ui.visuals().error_fg_color,
                format!("the sweep stopped: {e}"),
            );
        }
        if self.points.is_empty() {
            return action;
        }
        let here = self.data.as_deref() == Some(data);
        if !here {
            ui.label("These points belong to another file: open it again to see their results.");
        }
        let report = match &self.state {
            State::Done(r) => Some(r.as_ref().clone()),
            _ => None,
        };
        ui.horizontal(|ui| {
            ui.label("score:");
            for (m, name, help) in Metric::ALL {
                ui.selectable_value(&mut self.metric, m, name)
                    .on_hover_text(help);
            }
        });
        let mut open = self.chart(ui, report.as_ref(), here);
        if let Some(o) = self.table(ui, here) {
            open = Some(o);
        }
        if let Some(r) = &report {
            self.export_ui(ui, r, data);
        }
        open.map(Action::Open).or(action)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_estimates_from_the_first_runs_training() {
        let line = "run 1/6: mst at ε = 1: measure step 25/100";
        assert_eq!(training_share(line), Some(0.25));
        assert_eq!(training_share("run 1/6: scoring"), None);
        let s = time_left(60.0, 0, 6, line);
        // 60 s for a quarter of one run: 240 s a run, 1,440 s for six, 1,380 s left.
        assert!(s.contains("at least about 23 min"), "{s}");
        assert!(!time_left(1.0, 0, 6, "starting").contains("left"));
    }
}
