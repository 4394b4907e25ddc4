//! A sweep's finished points on disk, so that a sweep stopped, failed or interrupted by a
//! restart resumes instead of starting over (and charging again), and the folder a sweep
//! as set lives in, so that running the same sweep again finds them.

use super::points::{SweepConfig, SweepPoint, SweepReport};
use crate::job::JobError;

/// The file in a sweep's folder that keeps its finished points, written after each one.
pub const POINTS_FILE: &str = "sweep-points.json";

/// What [`POINTS_FILE`] holds.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct KeptPoints {
    /// The sweep these points belong to: the data file, δ, preset, seed and settings.
    data: String,
    delta: f64,
    preset: String,
    seed: Option<u64>,
    #[serde(default)]
    overrides: serde_json::Map<String, serde_json::Value>,
    pub(super) points: Vec<SweepPoint>,
    pub(super) real_accuracy: Option<f64>,
    pub(super) real_auroc: Option<f64>,
    pub(super) majority_accuracy: Option<f64>,
}

impl KeptPoints {
    fn of(cfg: &SweepConfig) -> Self {
        Self {
            data: cfg.base.data.display().to_string(),
            delta: cfg.base.delta,
            preset: cfg.base.preset.clone(),
            seed: cfg.base.seed,
            overrides: cfg.base.overrides.clone(),
            points: Vec::new(),
            real_accuracy: None,
            real_auroc: None,
            majority_accuracy: None,
        }
    }

    fn matches(&self, cfg: &SweepConfig) -> bool {
        let me = Self::of(cfg);
        (
            &self.data,
            self.delta,
            &self.preset,
            self.seed,
            &self.overrides,
        ) == (&me.data, me.delta, &me.preset, me.seed, &me.overrides)
    }
}

/// The finished points a previous sweep with the same data, δ, preset, seed and settings
/// left in `cfg.out_dir`, whose models are still there (failed points are tried again).
pub fn kept_points(cfg: &SweepConfig) -> Vec<SweepPoint> {
    read_kept(cfg).map(|k| k.points).unwrap_or_default()
}

/// What a previous sweep as set left in its folder, as a report of its own (the finished
/// points in the plan's order, with the reference lines): the window shows a kept sweep's
/// figure after a restart without running anything. `None` when no point is kept.
pub fn kept_report(cfg: &SweepConfig) -> Option<SweepReport> {
    let k = read_kept(cfg)?;
    let mut points = Vec::new();
    for method in &cfg.methods {
        for &eps in &cfg.epsilons {
            let asked = eps.is_finite().then_some(eps);
            for repeat in 0..cfg.repeats.max(1) {
                if let Some(p) = k
                    .points
                    .iter()
                    .find(|p| p.method == *method && p.epsilon == asked && p.repeat == repeat)
                {
                    points.push(p.clone());
                }
            }
        }
    }
    (!points.is_empty()).then(|| SweepReport {
        data: cfg.base.data.display().to_string(),
        delta: cfg.base.delta,
        label: None,
        points,
        real_accuracy: k.real_accuracy,
        real_auroc: k.real_auroc,
        majority_accuracy: k.majority_accuracy,
        charged: !cfg.public,
        planned_total: cfg.planned_total(),
    })
}

pub(super) fn read_kept(cfg: &SweepConfig) -> Option<KeptPoints> {
    let text = std::fs::read_to_string(cfg.out_dir.join(POINTS_FILE)).ok()?;
    let mut k: KeptPoints = serde_json::from_str(&text).ok()?;
    if !k.matches(cfg) {
        return None;
    }
    k.points.retain(|p| p.failed.is_none() && p.model.is_file());
    Some(k)
}

/// Writes the points so far (atomically), with the reference lines.
pub(super) fn save(
    cfg: &SweepConfig,
    points: &[SweepPoint],
    refs: (Option<f64>, Option<f64>, Option<f64>),
) -> Result<(), JobError> {
    let file = KeptPoints {
        points: points.to_vec(),
        real_accuracy: refs.0,
        real_auroc: refs.1,
        majority_accuracy: refs.2,
        ..KeptPoints::of(cfg)
    };
    let path = cfg.out_dir.join(POINTS_FILE);
    let text = serde_json::to_string_pretty(&file).map_err(|e| JobError::write(&path, e))?;
    crate::util::atomic::write_atomic(&path, text.as_bytes()).map_err(|e| JobError::write(&path, e))
}

/// The folder name of a sweep as set: the data file's stem and a digest of everything that
/// makes two sweeps the same, so the same sweep lands in the same folder and resumes.
pub fn folder_name(
    data: &std::path::Path,
    methods: &[String],
    epsilons: &[f64],
    repeats: usize,
    base: &crate::job::RunConfig,
    public: bool,
) -> String {
    use sha2::{Digest as _, Sha256};
    let what = format!(
        "{}|{methods:?}|{epsilons:?}|{repeats}|{}|{}|{:?}|{:?}|{public}",
        data.display(),
        base.preset,
        base.delta,
        base.seed,
        base.overrides
    );
    let digest: String = Sha256::digest(what.as_bytes())
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!(
        "{}-{digest}",
        data.file_stem()
            .map_or("data".into(), |s| s.to_string_lossy().into_owned())
    )
}
