//! The run form: method cards and preset (from the registry), ε and δ, advanced settings,
//! and the cost preview, which the job computes off the UI thread when the form changes.

use eframe::egui;

use crate::gui::background::Latest;
use crate::job::{self, JobError, MethodInfo, cost::Cost, cost::CostRequest};

mod cost_view;

/// The advanced settings: the preset's values, editable one by one.
#[derive(Default)]
pub(super) struct Advanced {
    /// (method, preset) the rows below belong to.
    of: (String, String),
    /// (name, text the user edits, the preset's value as text).
    rows: Vec<(String, String, String)>,
    pub seed: String,
    pub threads: usize,
    /// Where the networks train; `auto` takes a GPU this build can drive.
    pub device: job::DeviceChoice,
    /// The number of records as a public fact (empty: the file's count, treated as public).
    pub public_rows: String,
    /// The share of ε that estimates the domains marked "estimate privately", as typed
    /// (empty: the default share).
    pub domain_share: String,
}

impl Advanced {
    fn refresh(&mut self, method: &str, preset: &str) {
        if self.of == (method.to_string(), preset.to_string()) {
            return;
        }
        self.of = (method.to_string(), preset.to_string());
        self.rows = job::preset_settings(method, preset)
            .map(|m| {
                m.into_iter()
                    .map(|(k, v)| {
                        let t = value_text(&v);
                        (k, t.clone(), t)
                    })
                    .collect()
            })
            .unwrap_or_default();
    }

    /// The edited settings as overrides (only those that differ from the preset).
    pub fn overrides(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        for (k, text, default) in &self.rows {
            if text.trim() == default.trim() {
                continue;
            }
            let v = serde_json::from_str(text.trim())
                .unwrap_or_else(|_| serde_json::Value::String(text.trim().to_string()));
            m.insert(k.clone(), v);
        }
        m
    }

    pub fn seed(&self) -> Result<Option<u64>, String> {
        let t = self.seed.trim();
        if t.is_empty() {
            return Ok(None);
        }
        t.parse().map(Some).map_err(|_| {
            format!("seed '{t}' is not a whole number (leave it empty for a random seed)")
        })
    }

    /// The domain policy of the window's runs: domains read off the rows are let through
    /// (and named as not covered); the marked ones are estimated at the typed share.
    pub fn domain_policy(&self) -> Result<job::DomainPolicy, String> {
        let t = self.domain_share.trim();
        if t.is_empty() {
            return Ok(job::DomainPolicy::AllowData);
        }
        match t.parse::<f64>() {
            Ok(share) if share > 0.0 && share < 1.0 => {
                Ok(job::DomainPolicy::AllowDataWithShare { share })
            }
            _ => Err(format!(
                "the domain share of ε must be a number between 0 and 1, e.g. 0.2 (got '{t}')"
            )),
        }
    }

    pub fn public_rows(&self) -> Result<Option<usize>, String> {
        let t = self.public_rows.trim();
        if t.is_empty() {
            return Ok(None);
        }
        t.parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .map(Some)
            .ok_or_else(|| {
                format!("public number of records '{t}' is not a positive whole number (leave it empty to use the file's count)")
            })
    }

    fn ui(&mut self, ui: &mut egui::Ui) {
        ui.label("The preset's values; change one to override it. The cost above follows.");
        // Wide enough for a list setting such as `[128, 128]` and a row count.
        egui::Grid::new("advanced")
            .striped(true)
            .min_col_width(160.0)
            .show(ui, |ui| {
            let l = ui.label("public number of records");
            ui.add(
                egui::TextEdit::singleline(&mut self.public_rows)
                    .hint_text("the file's count")
                    .desired_width(120.0),
            )
            .labelled_by(l.id)
            .on_hover_text(
                "A count you know from a public source (e.g. a census table). Sampling rates and noise are then computed from it, and the file's exact row count is not revealed. Empty: the file's count is used and treated as public, the usual convention.",
            );
            ui.end_row();
            let l = ui.label("domain share of ε");
            ui.add(
                egui::TextEdit::singleline(&mut self.domain_share)
                    .hint_text(format!("{}", crate::data::estimate::DEFAULT_SHARE))
                    .desired_width(120.0),
            )
            .labelled_by(l.id)
            .on_hover_text(
                "The share of this run's ε spent estimating the domains of columns marked \"Estimate privately\" (the rest trains the model). More keeps rarer categories and steadier bounds on a small table; the cost preview's diagnostic follows.",
            );
            ui.end_row();
            let l = ui.label("seed");
            ui.add(
                egui::TextEdit::singleline(&mut self.seed)
                    .hint_text("random")
                    .desired_width(120.0),
            )
            .labelled_by(l.id)
            .on_hover_text(
                "A fixed seed makes a run reproducible, and marks its model NOT for release",
            );
            ui.end_row();
            let l = ui.label("training threads");
            ui.add(egui::DragValue::new(&mut self.threads).range(1..=256))
                .labelled_by(l.id);
            ui.end_row();
            let l = ui.label("training device");
            egui::ComboBox::from_id_salt("device")
                .selected_text(self.device.name())
                .show_ui(ui, |ui| {
                    for d in job::DeviceChoice::offered() {
                        ui.selectable_value(&mut self.device, d, d.name());
                    }
                })
                .response
                .labelled_by(l.id)
                .on_hover_text(
                    "auto trains on a GPU this build can drive when one answers, else on the CPU; the cost preview says which. GPU training needs the CUDA build (dpsynth-cuda) or, on a Mac, the Metal build.",
                );
            ui.end_row();
            for (k, text, default) in &mut self.rows {
                let l = ui.label(k.as_str());
                ui.add(egui::TextEdit::singleline(text).desired_width(160.0))
                    .labelled_by(l.id);
                if text.trim() != default.trim() {
                    ui.weak(format!("preset: {default}"));
                }
                ui.end_row();
            }
        });
        if ui.button("Reset to the preset").clicked() {
            for (_, t, d) in &mut self.rows {
                *t = d.clone();
            }
            self.seed.clear();
        }
    }
}

/// A setting's value as the user edits it: strings without quotes, the rest as JSON.
fn value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// Training threads by default: every core. The window's workers run below its thread's
/// priority ([`crate::job::priority`]), so the window stays smooth without a core kept
/// idle for it; keeping one back (as this once did) made a sweep on two cores take twice
/// the command line's time.
fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Whether the form may start a run.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Verdict {
    /// Priced, and it fits the dataset's budget.
    Ready,
    /// The job is still pricing the form as it stands.
    Pending,
    /// It cannot start, and why.
    Refused(String),
}

/// The form's state.
pub(super) struct Form {
    pub method: usize,
    pub preset: String,
    pub epsilon: String,
    pub delta: String,
    pub advanced: Advanced,
    pub dataset_key: Option<String>,
    pub rows: usize,
    /// The table's schema: columns marked for a private estimate add to the cost.
    pub schema: Option<crate::data::schema::Schema>,
    /// An image set's fixed schema (for the memory and time estimate).
    pub image_schema: Option<crate::data::schema::Schema>,
    /// The open table's level counts, for the domain estimate's diagnostic.
    pub profile: Option<std::sync::Arc<Vec<crate::data::domain_check::LevelProfile>>>,
    cost: Latest<CostRequest, Result<Cost, JobError>>,
    /// The dataset's total ε as the user edits it, and what setting it said.
    total_input: String,
    total_for: Option<String>,
    total_msg: Option<String>,
    /// A new total typed and asked about, awaiting the user's answer.
    total_confirm: Option<f64>,
    /// The dataset whose ledger δ the δ field was last set to.
    delta_synced_for: Option<String>,
    /// Private post-GAN boosting after training (GAN methods), and its share of ε as typed.
    pub boost: bool,
    pub boost_share: String,
    /// "What ε means": the attack curve and the budget stated as an accepted risk.
    risk: crate::gui::risk_view::RiskView,
    /// The sweep sets ε itself: the form hides its ε field and boosting.
    pub sweep_mode: bool,
    /// The user picked the method on a card; until then the form follows
    /// [`job::recommended`] for the open data.
    pub chosen: bool,
    /// The open table is a query engine's (or a file read in parts): only methods that
    /// count through a count source (MST, AIM) train on it.
    pub engine: bool,
    /// Rows a run holds at once on such a table: one part of a file, none of an engine's.
    pub held: Option<usize>,
}

impl Default for Form {
    fn default() -> Self {
        Self {
            method: 0,
            preset: job::methods()
                .first()
                .map_or(job::DEFAULT_PRESET, |m| m.default_preset())
                .into(),
            epsilon: "1".into(),
            profile: None,
            delta: String::new(),
            advanced: Advanced {
                threads: default_threads(),
                ..Default::default()
            },
            dataset_key: None,
            rows: 0,
            schema: None,
            image_schema: None,
            cost: Latest::default(),
            total_input: String::new(),
            total_for: None,
            total_msg: None,
            total_confirm: None,
            delta_synced_for: None,
            boost: false,
            boost_share: "0.1".into(),
            risk: Default::default(),
            sweep_mode: false,
            chosen: false,
            engine: false,
            held: None,
        }
    }
}

impl Form {
    /// The kind of the open data (tables until an image set is open).
    fn data_kind(&self) -> job::DataKind {
        if self.image_schema.is_some() {
            job::DataKind::Images
        } else {
            job::DataKind::Table
        }
    }

    /// Selects the recommended method and preset for the open data, unless the user
    /// picked a method.
    pub fn follow_recommendation(&mut self) {
        if self.chosen {
            return;
        }
        let (id, preset) = job::recommended(self.data_kind());
        if let Some(i) = job::methods().iter().position(|m| m.id == id) {
            self.method = i;
            self.preset = preset.into();
        }
    }

    pub fn info(&self) -> &'static MethodInfo {
        let all = job::methods();
        all[self.method.min(all.len() - 1)]
    }

    /// ε as typed (∞ for the non-private reference).
    pub fn epsilon(&self) -> Result<f64, String> {
        if !self.info().private {
            return Ok(f64::INFINITY);
        }
        self.epsilon
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|e| *e > 0.0 && e.is_finite())
            .ok_or_else(|| format!("ε '{}' is not a positive number", self.epsilon.trim()))
    }

    /// N as the run will use it: the public count typed in Advanced, else the file's.
    fn records(&self) -> usize {
        self.advanced
            .public_rows()
            .ok()
            .flatten()
            .unwrap_or(self.rows)
    }

    pub fn delta(&self) -> Result<f64, String> {
        let d = self
            .delta
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|d| *d > 0.0 && *d < 1.0)
            .ok_or_else(|| format!("δ '{}' is not a number between 0 and 1", self.delta.trim()))?;
        let n = self.records();
        if self.info().private && n > 0 && d * n as f64 >= 1.0 {
            return Err(format!(
                "δ = {d} is at least 1/n = 1/{n}: with such a δ a run may publish a record outright. Use δ well below 1/n"
            ));
        }
        Ok(d)
    }

    /// The boosting settings when the method can be boosted and the switch is on.
    pub fn boost_config(&self) -> Result<Option<job::BoostConfig>, String> {
        if !(self.boost && self.info().critic) {
            return Ok(None);
        }
        let share = self
            .boost_share
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|s| *s > 0.0 && *s < 1.0)
            .ok_or_else(|| {
                format!(
                    "boosting share '{}' is not a number between 0 and 1 (0.1 spends a tenth of ε on boosting)",
                    self.boost_share.trim()
                )
            })?;
        Ok(Some(job::BoostConfig {
            share,
            ..Default::default()
        }))
    }

    /// The cost preview's question at another ε (the sweep's sum), without boosting.
    pub fn cost_request_at(&self, epsilon: f64) -> Result<CostRequest, String> {
        self.cost_request_with(epsilon)
    }

    /// The cost preview's question, or why the form cannot ask it yet.
    fn cost_request(&self) -> Result<CostRequest, String> {
        self.cost_request_with(self.epsilon()?)
    }

    fn cost_request_with(&self, epsilon: f64) -> Result<CostRequest, String> {
        let dataset = self.dataset_key.clone().ok_or("no dataset is open")?;
        self.advanced.seed()?;
        self.advanced.public_rows()?;
        Ok(CostRequest {
            dataset,
            ledger: job::paths::default_ledger_path(),
            method: self.info().id.to_string(),
            preset: self.preset.clone(),
            epsilon,
            delta: self.delta()?,
            rows: self.records(),
            overrides: self.advanced.overrides(),
            schema: self.schema.clone(),
            domains: self.advanced.domain_policy()?,
            boost: if self.sweep_mode {
                None
            } else {
                self.boost_config()?
            },
            fixed_schema: self.image_schema.clone(),
            profile: self.profile.clone(),
            device: self.advanced.device,
            held: self.held,
            exact_values: true,
        })
    }

    /// Why the chosen method cannot train on the open table, when it is a query engine's
    /// and the method needs the rows in memory.
    pub(super) fn engine_refusal(&self) -> Option<String> {
        (self.engine && !self.info().streams).then(|| {
            format!(
                "{} trains on rows in memory; a table in a query engine (or a file read in parts) is counted where it lies, which MST and AIM do: pick one of them",
                self.info().title
            )
        })
    }

    /// Whether the form, as it stands, may start a run.
    pub fn verdict(&self) -> Verdict {
        let req = match self.cost_request() {
            Ok(r) => r,
            Err(e) => return Verdict::Refused(e),
        };
        if let Some(why) = self.engine_refusal() {
            return Verdict::Refused(why);
        }
        match self.cost.value() {
            Some(Ok(c)) if self.cost.is_current(&req) => match &c.refused {
                Some(r) => Verdict::Refused(r.clone()),
                None => Verdict::Ready,
            },
            Some(Err(e)) if self.cost.is_current(&req) => Verdict::Refused(e.to_string()),
            _ => Verdict::Pending,
        }
    }

    /// The preview's sentence when the run is hopeless ([`job::cost::Cost::hopeless`]).
    pub fn hopeless(&self) -> Option<String> {
        match self.cost.value() {
            Some(Ok(c)) => c.hopeless.clone(),
            _ => None,
        }
    }

    /// Another dataset: its cost starts from nothing (no figures of the last one).
    pub fn forget_cost(&mut self) {
        self.cost.reset();
    }

    /// The ledger changed (a run settled, the total was set): price the form again.
    pub fn ledger_changed(&mut self) {
        self.cost.invalidate();
    }

    /// Asks the job for the cost of the form as it stands (a no-op when unchanged).
    pub fn refresh_cost(&mut self, ctx: &egui::Context) {
        if let Ok(req) = self.cost_request() {
            self.cost.want(ctx, req, |r| job::cost::cost(&r));
        }
    }

    pub fn ui(&mut self, ui: &mut egui::Ui) {
        ui.strong("Method");
        let before = self.method;
        let kind = self.data_kind();
        super::method_cards::grid(ui, &mut self.method, kind);
        if self.method != before {
            self.chosen = true;
        }
        let info = self.info();
        if !info.has_preset(&self.preset) {
            self.preset = info.default_preset().to_string();
        }
        ui.horizontal(|ui| {
            let l = ui.label("Preset:");
            egui::ComboBox::from_id_salt("preset")
                .selected_text(self.preset.clone())
                .show_ui(ui, |ui| {
                    for p in info.presets {
                        ui.selectable_value(&mut self.preset, p.name.to_string(), p.name)
                            .on_hover_text(p.doc);
                    }
                })
                .response
                .labelled_by(l.id);
            ui.separator();
            if !self.sweep_mode {
                let l = ui.label("ε");
                ui.add_enabled(
                    info.private,
                    egui::TextEdit::singleline(&mut self.epsilon).desired_width(60.0),
                )
                .labelled_by(l.id);
            }
            let l = ui.label("δ");
            ui.add(egui::TextEdit::singleline(&mut self.delta).desired_width(80.0))
                .labelled_by(l.id);
        });
        if info.critic && !self.sweep_mode {
            ui.horizontal(|ui| {
                let d = job::BoostConfig::default();
                ui.checkbox(&mut self.boost, "Boost: private post-GAN boosting")
                    .on_hover_text(format!("After training, combine the last {} generators into one weighted mixture: each of {} rounds picks the critic that best tells the mixture from the real rows (the exponential mechanism, paid from this run's ε) and re-weights the generated rows against it. Fixes mode collapse and bad marginals (Neunhoeffer et al. 2021); on ADULT it lowered the 1-way total variation distance in every run measured. The results tab shows the last generator and the boosted mixture side by side.", d.generators, d.rounds));
                if self.boost {
                    let l = ui.label("share of ε for boosting");
                    ui.add(egui::TextEdit::singleline(&mut self.boost_share).desired_width(50.0))
                        .labelled_by(l.id)
                        .on_hover_text("The paper spends 0.1–0.2 of ε on boosting; the GAN's noise is calibrated to the rest.");
                }
            });
        }
        ui.label(format!(
            "Guidance: ε ≤ 1 is strong protection, ε ≤ 5 moderate. δ should be far below 1/n (n = {}); proposed: 1/(10 n).",
            self.rows
        ));
        self.advanced.refresh(info.id, &self.preset);
        egui::CollapsingHeader::new("Advanced settings")
            .default_open(false)
            .show(ui, |ui| self.advanced.ui(ui));
    }
}
