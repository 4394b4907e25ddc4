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
    /// The points were charged to the dataset's ledger (a private sweep), not to a scratch
    /// one; a file without it predates the distinction and counts as uncharged.
    #[serde(default)]
    charged: bool,
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
            charged: !cfg.public,
            points: Vec::new(),
            real_accuracy: None,
            real_auroc: None,
            majority_accuracy: None,
        }
    }

    /// Same sweep, and its points may stand for this one's: a private sweep reuses only
    /// points charged to the dataset's ledger (a public sweep's were charged to a scratch
    /// book, and would pass off uncharged runs as charged); a public one may reuse either.
    fn matches(&self, cfg: &SweepConfig) -> bool {
        let me = Self::of(cfg);
        if me.charged && !self.charged {
            return false;
        }
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
/// (and, for a private sweep, charged as this one will be) left in `cfg.out_dir`, whose models are still there (failed points are tried again).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::RunConfig;

    fn cfg(dir: &std::path::Path, public: bool) -> SweepConfig {
        SweepConfig {
            base: RunConfig::new(dir.join("data.csv"), "aim", 1.0, 1e-5),
            methods: vec!["aim".into()],
            epsilons: vec![1.0],
            repeats: 1,
            public,
            out_dir: dir.to_path_buf(),
        }
    }

    /// A public sweep's points were charged to a scratch ledger: a private sweep in the
    /// same folder must run (and charge) them again, never reuse them as charged.
    #[test]
    fn a_private_sweep_never_reuses_a_public_sweeps_points() {
        let dir = tempfile::tempdir().unwrap();
        save(&cfg(dir.path(), true), &[], (Some(0.8), None, None)).unwrap();
        assert!(read_kept(&cfg(dir.path(), true)).is_some());
        assert!(read_kept(&cfg(dir.path(), false)).is_none());
        // A private sweep's points may stand for a public one's.
        save(&cfg(dir.path(), false), &[], (Some(0.8), None, None)).unwrap();
        assert!(read_kept(&cfg(dir.path(), false)).is_some());
        assert!(read_kept(&cfg(dir.path(), true)).is_some());
    }
}
