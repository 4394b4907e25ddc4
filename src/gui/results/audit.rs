//! The "Privacy audit" view of one run: the job's one-run canary audit in a worker, and
//! what it proved beside what the guarantee claims, in words a non-programmer reads.

use eframe::egui;
use egui_plot::{Bar, BarChart, Legend, Plot};

use crate::eval::html::AuditFigure;
use crate::job::RunConfig;
use crate::job::audit::{AuditConfig, AuditEvent, AuditHandle, AuditReport, spawn_audit};

enum State {
    Idle,
    Running { handle: AuditHandle, line: String },
    Done(Box<AuditReport>),
    Failed(String),
}

/// One run's audit: its settings, and what it found.
pub struct AuditView {
    canaries: usize,
    /// Rows drawn from the data for the audit (0: all of them).
    rows: usize,
    /// The data is public (a bundled sample): the audit charges nothing.
    public: bool,
    state: State,
}

impl AuditView {
    /// `sample`: the run's data is one of the bundled public samples.
    pub fn new(sample: bool) -> Self {
        Self {
            canaries: 512,
            rows: 1_000,
            public: sample,
            state: State::Idle,
        }
    }

    /// The attacks' measured (FPR, TPR) points, once the audit has run.
    pub fn measured_points(&self) -> Vec<(String, f64, f64)> {
        match &self.state {
            State::Done(r) => r.measured_points(),
            _ => Vec::new(),
        }
    }

    /// The audit's figure for the HTML report, once it has run.
    pub fn figure(&self) -> Option<AuditFigure> {
        let State::Done(r) = &self.state else {
            return None;
        };
        let mut bounds = Vec::new();
        if let Some(w) = &r.white_box {
            bounds.push(("white-box (critic score)".to_string(), w.lower_bound));
        }
        bounds.push((
            "black-box (nearest synthetic row)".to_string(),
            r.black_box.lower_bound,
        ));
        Some(AuditFigure {
            claimed: r.claimed_epsilon,
            delta: r.delta,
            bounds,
            confidence: r.confidence,
            canaries: r.canaries,
            verdict: r.verdict.clone(),
        })
    }

    fn drain(&mut self) {
        let State::Running { handle, line } = &mut self.state else {
            return;
        };
        let mut done = None;
        while let Ok(ev) = handle.events.try_recv() {
            match ev {
                AuditEvent::Run(crate::job::Event::Progress(p)) => {
                    *line = format!(
                        "training with canaries: {} step {}/{}",
                        p.phase, p.step, p.total
                    );
                }
                AuditEvent::Run(_) => {}
                AuditEvent::Done(r) => done = Some(r),
            }
        }
        if let Some(r) = done {
            self.state = match r {
                Ok(rep) => State::Done(Box::new(rep)),
                Err(e) => State::Failed(e.to_string()),
            };
        }
    }

    pub fn ui(&mut self, ui: &mut egui::Ui, config: Option<&RunConfig>, claimed: Option<f64>) {
        self.drain();
        ui.label(
            "An audit checks the guarantee against an attack. It trains this method again, with the same settings, on a copy of the data to which it adds made-up \"canary\" rows, each with probability ½. Then it tries to tell which canaries were added: from the synthetic rows (black-box: is a synthetic row close to the canary?) and from the critic the training left (white-box). How often it guesses right proves a lower bound on ε.",
        );
        ui.label("A bound from one attack is evidence, not proof: it shows what this attack could prove, never that no attack could do better. A bound above the claimed ε would prove a bug.");
        let Some(config) = config else {
            ui.label("This run's settings are not known (it was opened from a file): audit it from the command line, `dpsynth audit`.");
            return;
        };
        if matches!(self.state, State::Running { .. }) {
            let State::Running { handle, line } = &self.state else {
                return;
            };
            ui.horizontal(|ui| {
                crate::gui::busy::spinner(ui);
                ui.label(line.as_str());
                if ui.button("Stop").clicked() {
                    handle.cancel();
                }
            });
            ui.ctx()
                .request_repaint_after(std::time::Duration::from_millis(250));
            return;
        }
        ui.horizontal(|ui| {
            ui.label("canaries");
            ui.add(egui::DragValue::new(&mut self.canaries).range(20..=2000))
                .on_hover_text("Made-up rows, each added with probability ½. More canaries can prove larger bounds but disturb the data more.");
            ui.label("rows");
            ui.add(egui::DragValue::new(&mut self.rows).range(0..=10_000_000))
                .on_hover_text("The audit trains on this many rows drawn at random from the data (0: all). Fewer rows make each canary weigh more: a stronger test of the same guarantee, and a faster one.");
            ui.checkbox(&mut self.public, "the data is public (charge nothing)")
                .on_hover_text("Tick only for public data such as the bundled samples. On private data the audit is a training run like any other, charged to this dataset's ledger.");
        });
        ui.label(self.cost_line(config));
        if ui
            .button("Run the audit")
            .on_hover_text(
                "Trains the method once more (as long as the run took) and scores the canaries.",
            )
            .clicked()
        {
            let cfg = AuditConfig {
                run: config.clone(),
                canaries: self.canaries,
                public: self.public,
                rows: (self.rows > 0).then_some(self.rows),
            };
            let ctx = ui.ctx().clone();
            let handle = spawn_audit(
                cfg,
                crate::job::paths::default_ledger_path(),
                Some(Box::new(move || crate::gui::busy::wake(&ctx))),
            );
            self.state = State::Running {
                handle,
                line: "starting".into(),
            };
            return;
        }
        match &self.state {
            State::Failed(e) => {
                ui.colored_label(
                    ui.visuals().error_fg_color,
                    format!("the audit failed: {e}"),
                );
            }
            State::Done(r) => report_ui(ui, r, claimed),
            _ => {}
        }
    }

    /// What the audit will charge, in words.
    fn cost_line(&self, config: &RunConfig) -> String {
        if self.public {
            "It charges nothing: the data is declared public.".to_string()
        } else if config.epsilon.is_finite() {
            format!(
                "It is a training run on private data: it is charged to this dataset's ledger like the run it repeats (ε {}).",
                config.epsilon
            )
        } else {
            "The run it repeats is not private: nothing is charged, and the ledger records that the data were read without protection.".to_string()
        }
    }
}

/// The verdict in words and the bars: each attack's bound beside the claimed ε.
fn report_ui(ui: &mut egui::Ui, r: &AuditReport, claimed: Option<f64>) {
    let claimed = r.claimed_epsilon.or(claimed);
    ui.separator();
    ui.heading(&r.verdict);
    ui.label(format!(
        "{} canaries, {} added to {} rows; {:.0} % confidence; {:.0} s; {}.",
        r.canaries,
        r.included,
        r.rows,
        100.0 * r.confidence,
        r.seconds,
        if r.charged {
            "charged to the dataset's ledger"
        } else {
            "charged nothing"
        }
    ));
    ui.label("Save HTML report… (on the other views of this run) includes this figure.");
    let mut lines = Vec::new();
    let mut bars = Vec::new();
    let mut labels = vec!["claimed ε (guarantee)".to_string()];
    if let Some(w) = &r.white_box {
        labels.push("white-box (critic)".into());
        bars.push(Bar::new(1.0, w.lower_bound).name("white-box"));
        lines.push(format!(
            "white-box: ε ≥ {:.2} ({} of {} guesses right)",
            w.lower_bound, w.correct, w.guesses
        ));
    }
    labels.push("black-box (synthetic rows)".into());
    bars.push(Bar::new(bars.len() as f64 + 1.0, r.black_box.lower_bound).name("black-box"));
    lines.push(format!(
        "black-box: ε ≥ {:.2} ({} of {} guesses right)",
        r.black_box.lower_bound, r.black_box.correct, r.black_box.guesses
    ));
    for l in &lines {
        ui.label(l);
    }
    if claimed.is_none() {
        ui.label("The run was not private: there is no claimed ε to compare with.");
    }
    bounds_chart(ui, labels, bars, claimed);
}

/// The proved lower bounds beside the claimed ε, as bars on a shared ε axis.
fn bounds_chart(ui: &mut egui::Ui, labels: Vec<String>, bars: Vec<Bar>, claimed: Option<f64>) {
    let top = bars
        .iter()
        .map(|b| b.value)
        .chain(claimed)
        .fold(1.0f64, f64::max);
    let n = labels.len();
    Plot::new("audit-bars")
        .height(220.0)
        .legend(Legend::default())
        .allow_scroll(false)
        .allow_drag(false)
        .allow_zoom(false)
        .show_grid([false, true])
        .y_axis_label("ε")
        .include_y(0.0)
        .include_y(top * 1.15)
        .include_x(-0.6)
        .include_x(n as f64 - 0.4)
        .x_axis_formatter(move |mark, _| {
            let i = mark.value.round();
            if (mark.value - i).abs() < 1e-6 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .show(ui, |p| {
            if let Some(b) = claimed.map(|c| Bar::new(0.0, c).name("claimed ε")) {
                p.bar_chart(
                    BarChart::new("claimed ε (upper bound)", vec![b])
                        .width(0.5)
                        .color(egui::Color32::from_rgb(214, 39, 40)),
                );
            }
            p.bar_chart(
                BarChart::new("proved ε (lower bounds)", bars)
                    .width(0.5)
                    .color(egui::Color32::from_rgb(31, 119, 180)),
            );
        });
}
