//! How much memory and time a run will take, known before it starts, from the method's
//! [`Footprint`] and the data's shape alone — and a refusal, with what to change, when the
//! memory is not there.
//!
//! The model (bytes):
//!
//! ```text
//! peak = BASE                                  process, libraries, allocator
//!      + n · columns · TABLE_CELL              the table as loaded
//!      + n · width · 4                         the encoded rows (f32), moved into the tensor
//!      + params · 4 · NET_COPIES               weights, gradients, two Adam moments, a copy
//!      + batch · widest · 4 · ACTIVATION_COPIES   one step's activations and their gradients
//!      + extra · 4                             random features, snapshots, a boosted set
//! ```
//!
//! and time = passes · FLOPS_PER_PASS / CPU_FLOPS + steps · (STEP_SECONDS + params ·
//! PARAM_STEP_SECONDS) + feature_evals · FEATURE_EVAL_SECONDS + feature_macs ·
//! FEATURE_MAC_SECONDS + SETUP, where a
//! pass is one row through one parameter, forward and backward (≈ 6 flops with DP-SGD's
//! clipping), and every optimizer step has a fixed cost besides. Random features (DP-MERF,
//! PEARL) have their own two rates: their projection is one large matrix product, several
//! times faster per multiply-add than a small network's passes, and each evaluation adds a
//! cosine, a sine and their derivatives whatever the row's width.
//! The constants were fitted on the 2-core development machine (see the README's
//! "Resources" section for the measurements). A GPU run has its own rates, fitted on one
//! GPU (an H200): a fixed cost per optimizer step (kernel launches: a GPU runs a small
//! network's step no faster than a CPU), the networks' arithmetic at [`GPU_FLOPS`], and the
//! random features at [`GPU_FEATURE_SPEEDUP`] times the CPU's rate: a rough figure, said
//! as such.

use serde::Serialize;

use crate::methods::Footprint;

const BASE: u64 = 150 << 20;
/// Bytes per table cell at the loading peak: polars' text columns while they are converted
/// (about 34 bytes a cell measured on Adult), then numbers as `Option<f64>` and text as
/// 4-byte dictionary codes (16 and 4); fitted to the peak RSS of `scripts/bench_scale.sh`.
pub const TABLE_CELL: u64 = 32;
const NET_COPIES: u64 = 8;
const ACTIVATION_COPIES: u64 = 20;
const FLOPS_PER_PASS: f64 = 6.0;
/// Effective training throughput on two cores (fitted: see the module doc).
const CPU_FLOPS: f64 = 1.6e10;
const SETUP_SECONDS: f64 = 1.0;
/// One random-feature evaluation (see the module doc; fitted on DP-MERF runs): the
/// cosine, the sine and the dozen passes over the [batch, 2k] features a training step
/// makes. Raised from 1e-9 when square filters (36,864 frequencies of 25 pixels each)
/// showed the evaluations, not the projections, set their time.
const FEATURE_EVAL_SECONDS: f64 = 5.0e-9;
/// One multiply-add of a random-feature projection. Both rates fitted on DP-MERF runs:
/// Adult `quick`, MNIST `mnist-conv`, `mnist-conv-wide`, `mnist-local` (with and without
/// `patch_filters`).
const FEATURE_MAC_SECONDS: f64 = 1.2e-11;
/// Fixed cost of one optimizer step (kernel launches, allocation, bookkeeping).
const STEP_SECONDS: f64 = 60e-6;
/// Cost per parameter per step besides the batch's arithmetic: DP-SGD's noise draw, the
/// clipped sum and the optimizer touch every parameter (dominant for wide networks on tiny
/// batches: two 256×256 images took about 6 s a step with 76 M parameters).
const PARAM_STEP_SECONDS: f64 = 5e-8;
/// A GPU's effective training throughput, its fixed cost per optimizer step and its speed-up
/// on the random features, fitted on one NVIDIA H200 (`scripts/gpu_check.sh`,
/// docs/gpu.md): `dp-gan --preset mnist-conv-gpu` (15,600 steps, 3.8e13 passes) took 208 s
/// beside another run (estimate 184 s), DP-MERF `mnist-conv-wide` 67 s (estimate 67 s).
/// One rate for everything would be wrong by 10× either way: the DCGAN runs 70× faster
/// than on two cores, DP-MERF 8×, the Adult networks' steps no faster at all.
pub const GPU_FLOPS: f64 = 1.5e12;
pub const GPU_STEP_SECONDS: f64 = 2e-3;
pub const GPU_FEATURE_SPEEDUP: f64 = 4.5;
/// Share of the available memory a run may plan to use.
const HEADROOM: f64 = 0.9;

/// A run's estimated peak memory and time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Resources {
    pub peak_bytes: u64,
    /// `None` when the figure would be meaningless (sizes beyond any machine).
    pub seconds: Option<f64>,
    /// The run trains on a GPU: `seconds` is at the GPU's rates ([`GPU_FLOPS`]).
    pub gpu: bool,
    /// Memory available to the process now (`None` where it cannot be read).
    pub available_bytes: Option<u64>,
    pub footprint: Footprint,
}

/// Training time of `f` without the setup: on two CPU cores, or at a GPU's rates.
fn seconds(f: &Footprint, cpu: bool) -> f64 {
    let features =
        f.feature_evals as f64 * FEATURE_EVAL_SECONDS + f.feature_macs as f64 * FEATURE_MAC_SECONDS;
    let arithmetic = f.passes as f64 * FLOPS_PER_PASS;
    if cpu {
        arithmetic / CPU_FLOPS
            + f.steps as f64 * (STEP_SECONDS + f.params as f64 * PARAM_STEP_SECONDS)
            + features
    } else {
        arithmetic / GPU_FLOPS + f.steps as f64 * GPU_STEP_SECONDS + features / GPU_FEATURE_SPEEDUP
    }
}

/// The estimate for `f` on `n` rows of `columns` table columns encoded into `width`.
pub fn estimate(f: &Footprint, n: usize, columns: usize, width: usize, cpu: bool) -> Resources {
    let (n, columns, width) = (n as u64, columns as u64, width as u64);
    let peak = BASE
        .saturating_add(n.saturating_mul(columns).saturating_mul(TABLE_CELL))
        .saturating_add(n.saturating_mul(width).saturating_mul(4))
        .saturating_add(f.params.saturating_mul(4 * NET_COPIES))
        .saturating_add(
            f.batch
                .saturating_mul(f.widest)
                .saturating_mul(4 * ACTIVATION_COPIES),
        )
        .saturating_add(f.extra_values.saturating_mul(4));
    Resources {
        peak_bytes: peak,
        seconds: Some(seconds(f, cpu) + SETUP_SECONDS).filter(|s| s.is_finite() && *s < 1e12),
        gpu: !cpu,
        available_bytes: available_memory(),
        footprint: *f,
    }
}

impl Resources {
    /// One line for `train`'s first lines.
    pub fn line(&self) -> String {
        self.describe(true)
    }

    /// [`Self::line`] without the machine's free memory, which changes from moment to
    /// moment (the window's preview; the refusal names it when it matters).
    pub fn line_without_available(&self) -> String {
        self.describe(false)
    }

    fn describe(&self, with_available: bool) -> String {
        let time = match self.seconds {
            Some(s) if self.gpu => format!(
                ", about {} on a GPU (one rate measured on an H200: rough)",
                duration(s)
            ),
            Some(s) => format!(", about {} on this machine's CPU", duration(s)),
            None => String::new(),
        };
        let avail = match self.available_bytes.filter(|_| with_available) {
            Some(a) => format!(" of {} available", bytes(a)),
            None => String::new(),
        };
        format!(
            "estimated peak memory {}{avail}{time}",
            bytes(self.peak_bytes)
        )
    }

    /// Why the run cannot start here, with what to change; `None` when it fits.
    pub fn refusal(&self) -> Option<String> {
        let avail = self.available_bytes?;
        if (self.peak_bytes as f64) <= HEADROOM * avail as f64 {
            return None;
        }
        Some(format!(
            "this run would need about {} of memory but {} are available, so it was stopped before reading the data or spending budget. Try the `tiny` preset, fewer categorical levels (merge rare ones, or mark a column ignored), fewer rows, or smaller images; --force-memory runs it anyway",
            bytes(self.peak_bytes),
            bytes(avail)
        ))
    }
}

/// `MemAvailable` from `/proc/meminfo`, capped by a cgroup limit when one is set.
pub fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = info
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    let mut avail = kb.saturating_mul(1024);
    if let Ok(limit) = std::fs::read_to_string("/sys/fs/cgroup/memory.max") {
        if let Ok(l) = limit.trim().parse::<u64>() {
            avail = avail.min(l);
        }
    }
    Some(avail)
}

/// Bytes in MB or GB, for people.
pub fn bytes(b: u64) -> String {
    let mb = b as f64 / (1u64 << 20) as f64;
    if mb < 1024.0 {
        format!("{mb:.0} MB")
    } else {
        format!("{:.1} GB", mb / 1024.0)
    }
}

/// A duration in words a person reads at a glance ("12 s", "4 min", "1.5 h").
pub fn duration(s: f64) -> String {
    if s < 90.0 {
        format!("{:.0} s", s.max(1.0))
    } else if s < 5400.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_does_not_fit_is_refused_with_advice() {
        let f = Footprint {
            params: 1_000,
            passes: (3.0 * CPU_FLOPS / FLOPS_PER_PASS) as u64,
            batch: 64,
            steps: 0,
            widest: 100,
            extra_values: 0,
            ..Default::default()
        };
        let mut r = estimate(&f, 1_000, 10, 100, true);
        assert!(r.peak_bytes > BASE && r.peak_bytes < BASE + (2 << 20));
        assert!(
            (r.seconds.unwrap() - (3.0 + SETUP_SECONDS)).abs() < 1e-6,
            "{r:?}"
        );
        r.available_bytes = Some(100 << 20);
        let why = r.refusal().unwrap();
        assert!(why.contains("tiny") && why.contains("MB"), "{why}");
        r.available_bytes = Some(64 << 30);
        assert!(r.refusal().is_none());
        // Sizes from user input saturate instead of overflowing.
        let huge = estimate(&f, usize::MAX, usize::MAX, usize::MAX, false);
        assert_eq!(huge.peak_bytes, u64::MAX);
        // A GPU run: at the GPU's rates, said as rough.
        let g = estimate(&f, 1_000, 10, 100, false);
        let want = f.passes as f64 * FLOPS_PER_PASS / GPU_FLOPS
            + f.steps as f64 * GPU_STEP_SECONDS
            + SETUP_SECONDS;
        assert!((g.seconds.unwrap() - want).abs() < 1e-6, "{g:?}");
        assert!(g.line().contains("on a GPU"), "{}", g.line());
    }
}
