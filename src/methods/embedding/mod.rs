//! Random-frequency embeddings of encoded rows, shared by DP-MERF and PEARL: the
//! frequencies, the feature map, per-class sums of it over the private rows, and the
//! moments that set the bandwidth. Computing these reads the private rows; releasing them
//! (with noise, and the charge) is the caller's job, which states the mechanism.
//!
//! The feature map is φ(x) = k^{−1/2} [cos(t_j·x), sin(t_j·x)]_{j ≤ k}: the empirical
//! characteristic function at k frequencies (PEARL), or equally the random Fourier
//! features of a Gaussian kernel (DP-MERF). ‖φ(x)‖₂ = 1 for every x, which is what makes
//! the sensitivities below exact rather than bounds found by clipping; the sums over the
//! rows are taken in integers ([`fixed`]) so that they hold for the computed numbers too.

use candle_core::{DType, Tensor};
use rand_distr::{Distribution, Normal};

use super::{MethodError, Result};
use crate::data::encode::{Encoding, SpanKind};

pub mod fixed;
mod frequencies;
mod placed;
mod squares;

pub use frequencies::Frequencies;
pub use placed::PlacedFrequencies;
pub use squares::{SquareFilters, local_frequencies};

/// The L2 sensitivity [`class_sums`] states under add/remove: one row's contribution is an
/// integer-checked vector of norm ≤ 1, plus [`fixed::ROUNDING_MARGIN`] for the final scaling.
pub const SUM_SENSITIVITY: f64 = 1.0 + fixed::ROUNDING_MARGIN;

/// The L2 sensitivity [`distance_moments`] states: √2 (see there), with the same margin.
pub const MOMENTS_SENSITIVITY: f64 = std::f64::consts::SQRT_2 * (1.0 + fixed::ROUNDING_MARGIN);

/// Rows per chunk when summing features: bounds the [chunk, 2k] intermediate.
const CHUNK: usize = 4_096;
/// Values in one [chunk, 2k] feature intermediate at most (32 MB of f32): with 10,000
/// frequencies a 4,096-row chunk's projection, cosines, sines and features held 1.2 GB at
/// once, twice the estimate; capped, the release's peak stays near [`FEATURE_CHUNK_VALUES`]
/// · 4 bytes · a handful of intermediates whatever k is.
pub const FEATURE_CHUNK_VALUES: usize = 1 << 23;

/// Rows per chunk for `k` frequencies: [`CHUNK`], fewer for wide embeddings.
fn feature_chunk(k: usize) -> usize {
    (FEATURE_CHUNK_VALUES / (2 * k.max(1))).clamp(64, CHUNK)
}

/// k frequencies for `width` encoded dimensions, each N(0, ℓ⁻²) per coordinate: a
/// [width, k] matrix drawn from the run's CSPRNG, independent of the data.
pub fn frequencies(
    width: usize,
    k: usize,
    bandwidth: f64,
    rng: &mut impl rand::Rng,
    dev: &candle_core::Device,
) -> Result<Tensor> {
    if !(bandwidth > 0.0 && bandwidth.is_finite()) {
        return Err(MethodError::Plan(format!(
            "the kernel bandwidth must be a positive number, got {bandwidth}"
        )));
    }
    let normal = Normal::new(0.0f32, (1.0 / bandwidth) as f32)
        .map_err(|e| MethodError::Plan(format!("bad bandwidth {bandwidth}: {e}")))?;
    let v: Vec<f32> = (0..width * k.max(1)).map(|_| normal.sample(rng)).collect();
    Ok(Tensor::from_vec(v, (width, k.max(1)), dev)?)
}

/// k frequencies dealt round-robin between the length scales `scales` (frequency j from
/// N(0, ℓ_{j mod m}⁻²)): the random features of the average of Gaussian kernels at those
/// scales. A coarse scale pins a digit's overall shape, a fine one its strokes; each
/// feature still has norm k^{−1/2} per frequency, so ‖φ(x)‖ = 1 and the sensitivities
/// are those of one scale. Public settings, drawn independently of the data.
pub fn mixed_frequencies(
    width: usize,
    k: usize,
    scales: &[f64],
    rng: &mut impl rand::Rng,
    dev: &candle_core::Device,
) -> Result<Tensor> {
    let Some((&first, rest)) = scales.split_first() else {
        return Err(MethodError::Plan(
            "at least one kernel bandwidth is needed".into(),
        ));
    };
    if rest.is_empty() {
        return frequencies(width, k, first, rng, dev);
    }
    let k = k.max(1);
    let mut normals = Vec::with_capacity(scales.len());
    for &ell in scales {
        if !(ell > 0.0 && ell.is_finite()) {
            return Err(MethodError::Plan(format!(
                "every kernel bandwidth must be a positive number, got {ell}"
            )));
        }
        normals.push(
            Normal::new(0.0f32, (1.0 / ell) as f32)
                .map_err(|e| MethodError::Plan(format!("bad bandwidth {ell}: {e}")))?,
        );
    }
    // Row-major [width, k]: column j belongs to scale j mod m.
    let v: Vec<f32> = (0..width * k)
        .map(|i| normals[(i % k) % normals.len()].sample(rng))
        .collect();
    Ok(Tensor::from_vec(v, (width, k), dev)?)
}

/// The public bandwidth rule: √(number of columns). Each column's span contributes at
/// most 1 to the squared distance between two encoded rows (a one-hot pair differs by
/// √2, but only with its level's probability; a [0,1] value by |a − b| ≤ 1), so √columns
/// is the scale of a typical distance, known before any row is read.
pub fn public_bandwidth(encoding: &Encoding) -> f64 {
    (encoding.schema.columns.len().max(1) as f64).sqrt()
}

/// φ(x) for every row of `x` [B, d]: [B, 2k], each row of L2 norm 1.
pub fn features(x: &Tensor, f: &Frequencies) -> candle_core::Result<Tensor> {
    let proj = f.project(x)?;
    f.weigh_pairs(&Tensor::cat(&[proj.cos()?, proj.sin()?], 1)?)
}

/// The label span a class-conditional embedding groups rows by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LabelSpan {
    pub start: usize,
    /// Number of classes: the span's width, or 2 for a binary column (one 0/1 value).
    pub classes: usize,
    pub binary: bool,
}

impl LabelSpan {
    /// The span of column `name` in `encoding`; it must be categorical or binary.
    pub fn find(encoding: &Encoding, name: &str) -> Result<Self> {
        let col = encoding
            .schema
            .columns
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| {
                MethodError::Plan(format!(
                    "the label column '{name}' is not in the data (columns: {})",
                    encoding
                        .schema
                        .columns
                        .iter()
                        .map(|c| c.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
        let span = encoding
            .spans
            .iter()
            .find(|s| s.column == col && s.kind != SpanKind::MissingIndicator)
            .ok_or_else(|| MethodError::Plan(format!("column '{name}' has no encoding")))?;
        match span.kind {
            SpanKind::Categorical => Ok(Self {
                start: span.start,
                classes: span.len,
                binary: false,
            }),
            SpanKind::Binary => Ok(Self {
                start: span.start,
                classes: 2,
                binary: true,
            }),
            _ => Err(MethodError::Plan(format!(
                "the label column '{name}' is continuous: a class-conditional embedding needs a binary or categorical label"
            ))),
        }
    }

    /// Encoded columns the span takes (one for a binary column).
    pub fn width(&self) -> usize {
        if self.binary { 1 } else { self.classes }
    }

    /// Class membership of each row of `x` [B, d] as [B, C] weights: one-hot for real
    /// rows, the head's (soft) probabilities for generated ones.
    pub fn membership(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        if self.binary {
            let p = x.narrow(1, self.start, 1)?;
            Tensor::cat(&[(1.0 - &p)?, p], 1)
        } else {
            // Contiguous: CUDA's matrix product refuses a strided view once transposed
            // (found on the first GPU run; the CPU's accepts any strides).
            x.narrow(1, self.start, self.classes)?.contiguous()
        }
    }
}

/// Σᵢ m_i ⊗ φ(xᵢ) over the private rows, as an f64 [C, 2k] matrix (C = 1 without a
/// label): row c is the sum of φ over class c. Each row falls in one class (its label's
/// largest entry), and its cosine-sine pairs are put on the integer grid of [`fixed`] with
/// each pair's norm ≤ 1, so adding or removing one record moves the matrix by at most
/// [`SUM_SENSITIVITY`] in Frobenius norm, exactly as computed. Chunked on the data's device.
pub fn class_sums(data: &Tensor, f: &Frequencies, label: Option<LabelSpan>) -> Result<Tensor> {
    let (rows, _) = data.dims2()?;
    let classes = label.map_or(1, |l| l.classes);
    let k = f.count();
    let chunk = feature_chunk(k);
    let mut acc = vec![0i64; classes * 2 * k];
    let mut start = 0;
    while start < rows {
        let len = chunk.min(rows - start);
        let x = data.narrow(0, start, len)?;
        let proj = f.project(&x)?;
        let cos: Vec<f32> = proj.cos()?.flatten_all()?.to_vec1()?;
        let sin: Vec<f32> = proj.sin()?.flatten_all()?.to_vec1()?;
        for (i, &c) in row_classes(&x, label)?.iter().enumerate() {
            let sums = &mut acc[c as usize * 2 * k..(c as usize + 1) * 2 * k];
            let (cos, sin) = (&cos[i * k..(i + 1) * k], &sin[i * k..(i + 1) * k]);
            for j in 0..k {
                let (a, b) = fixed::unit_pair(cos[j], sin[j]);
                sums[j] += a;
                sums[k + j] += b;
            }
        }
        start += len;
    }
    scaled_sums(&acc, &f.pair_weights()?, (classes, k), data.device())
}

/// Each row's class: the largest entry of its label span (one-hot for real rows).
fn row_classes(x: &Tensor, label: Option<LabelSpan>) -> Result<Vec<u32>> {
    match label {
        Some(l) => Ok(l
            .membership(x)?
            .argmax(1)?
            .to_dtype(DType::U32)?
            .to_vec1()?),
        None => Ok(vec![0; x.dims2()?.0]),
    }
}

/// The exact integer sums `acc` [C, 2k] as f64 values a_j · q / [`fixed::ONE`]: one
/// rounding per value (the product with a_j), which the stated margin covers.
fn scaled_sums(
    acc: &[i64],
    weights: &[f32],
    (classes, k): (usize, usize),
    dev: &candle_core::Device,
) -> Result<Tensor> {
    fixed::check_weights(weights).map_err(MethodError::Plan)?;
    let one = fixed::ONE as f64;
    let v: Vec<f64> = acc
        .iter()
        .enumerate()
        .map(|(i, &q)| q as f64 * weights[i % k] as f64 / one)
        .collect();
    Ok(Tensor::from_vec(v, (classes, 2 * k), dev)?)
}

/// Where the embedding's sums are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedDevice {
    /// A hardware GPU when there is one (the WGSL kernel), else the CPU.
    #[default]
    Auto,
    Cpu,
    /// The WGSL kernel on whatever adapter wgpu finds (a software one included).
    Gpu,
}

/// [`class_sums`] on the device `on` asks for: the same statistic (same sensitivity),
/// up to float rounding. Returns the sums and the device that computed them.
pub fn class_sums_on(
    data: &Tensor,
    f: &Frequencies,
    label: Option<LabelSpan>,
    on: EmbedDevice,
) -> Result<(Tensor, String)> {
    let classes = label.map_or(1, |l| l.classes);
    // The WGSL kernel multiplies by a dense matrix at equal weights: square filters are
    // computed on the CPU.
    let omega = match (on, f.matrix()) {
        (EmbedDevice::Gpu, None) => {
            return Err(MethodError::Plan(
                "embed_device = gpu computes dense frequencies only; local square filters (patch_filters) need embed_device = cpu or auto".into(),
            ));
        }
        (_, omega) => omega,
    };
    let gpu = match (on, omega) {
        (_, None) | (EmbedDevice::Cpu, _) => None,
        (EmbedDevice::Gpu, _) => Some(crate::gpu::context().map_err(MethodError::Plan)?),
        (EmbedDevice::Auto, _) => crate::gpu::context()
            .ok()
            .filter(|g| !g.software && classes <= crate::gpu::embed::MAX_CLASSES),
    };
    let (Some(gpu), Some(omega)) = (gpu, omega) else {
        return Ok((class_sums(data, f, label)?, "cpu".into()));
    };
    let width = data.dims2()?.1;
    let k = omega.dims()[1];
    let class = row_classes(data, label)?;
    let x: Vec<f32> = data.flatten_all()?.to_vec1()?;
    let w: Vec<f32> = omega.flatten_all()?.to_vec1()?;
    let acc = crate::gpu::embed::class_sums(gpu, &x, width, &w, k, &class, classes)
        .map_err(MethodError::Plan)?;
    let weights = f.pair_weights()?;
    Ok((
        scaled_sums(&acc, &weights, (classes, k), data.device())?,
        gpu.name.clone(),
    ))
}

/// Per-class counts [C] of the private rows (C = 1 without a label), exact integers held
/// in f64 (exact to 2⁵³ rows): one record moves one count by 1 (L2 sensitivity 1 under
/// add/remove).
pub fn class_counts(data: &Tensor, label: LabelSpan) -> Result<Tensor> {
    let (rows, _) = data.dims2()?;
    let mut counts = vec![0u64; label.classes];
    let mut start = 0;
    while start < rows {
        let len = CHUNK.min(rows - start);
        for c in row_classes(&data.narrow(0, start, len)?, Some(label))? {
            counts[c as usize] += 1;
        }
        start += len;
    }
    let v: Vec<f64> = counts.iter().map(|&c| c as f64).collect();
    Ok(Tensor::from_vec(v, label.classes, data.device())?)
}

/// The moments that give the root-mean-square distance between two rows:
/// u(x) = [x / √c, ‖x‖² / c] summed over the rows ([width + 1], f64), where c bounds ‖x‖².
///
/// Sensitivity: for encoded rows ‖x‖² ≤ c (each span adds at most 1: one-hot spans exactly
/// 1, values in [0,1] at most 1 each), so ‖u(x)‖² = ‖x‖²/c + ‖x‖⁴/c² ≤ 2. Each row's u is
/// put on the integer grid of [`fixed`] and clipped there to ‖u‖² ≤ 2 (a guard: a row
/// outside the encoding's range cannot move the sum further), and the sum is exact:
/// adding or removing one record moves it by at most √2 ([`MOMENTS_SENSITIVITY`]).
pub fn distance_moments(data: &Tensor, c: f64) -> Result<Tensor> {
    let (rows, width) = data.dims2()?;
    let mut acc = vec![0i128; width + 1];
    let (mut u, mut q) = (vec![0f64; width + 1], vec![0i64; width + 1]);
    let root = c.sqrt();
    let mut start = 0;
    while start < rows {
        let len = CHUNK.min(rows - start);
        let x: Vec<f32> = data.narrow(0, start, len)?.flatten_all()?.to_vec1()?;
        for row in x.chunks(width.max(1)) {
            let sq: f64 = row.iter().map(|&t| (t as f64) * (t as f64)).sum();
            for (o, &t) in u.iter_mut().zip(row) {
                *o = t as f64 / root;
            }
            u[width] = sq / c;
            fixed::within_norm(&u, 2.0, &mut q);
            for (a, &b) in acc.iter_mut().zip(&q) {
                *a += b as i128;
            }
        }
        start += len;
    }
    let one = fixed::ONE as f64;
    let v: Vec<f64> = acc.iter().map(|&a| a as f64 / one).collect();
    Ok(Tensor::from_vec(v, width + 1, data.device())?)
}

/// The bound c on ‖x‖² of an encoded row: one per span.
pub fn norm_bound(encoding: &Encoding) -> f64 {
    encoding.spans.len().max(1) as f64
}

/// The RMS pairwise distance from (noisy) moments: E‖x − x'‖² = 2 (E‖x‖² − ‖E x‖²) for
/// two independent rows. Post-processing of the released sum; floored at a small
/// positive value so that a very noisy release still gives a usable bandwidth.
pub fn rms_distance(moments: &[f64], c: f64, n: f64) -> f64 {
    let width = moments.len() - 1;
    let mean_sq = moments[width] * c / n;
    let mean_norm2: f64 = moments[..width]
        .iter()
        .map(|m| (m * c.sqrt() / n).powi(2))
        .sum();
    (2.0 * (mean_sq - mean_norm2)).max(0.0).sqrt().max(0.1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn norm(t: &Tensor) -> f64 {
        let v: Vec<f64> = t
            .to_dtype(DType::F64)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        v.iter().map(|x| x * x).sum::<f64>().sqrt()
    }

    fn omega(d: usize, k: usize) -> Frequencies {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        Frequencies::whole_row(frequencies(d, k, 0.4, &mut rng, &candle_core::Device::Cpu).unwrap())
            .unwrap()
    }

    /// Rows in [0,1]^7 whose first two values are a one-hot label.
    fn rows(n: usize) -> Tensor {
        let v: Vec<f32> = (0..n)
            .flat_map(|i| {
                let c = (i % 2) as f32;
                let rest: Vec<f32> = (0..5)
                    .map(|j| ((i * 37 + j * 11) % 13) as f32 / 12.0)
                    .collect();
                [vec![1.0 - c, c], rest].concat()
            })
            .collect();
        Tensor::from_vec(v, (n, 7), &candle_core::Device::Cpu).unwrap()
    }

    const LABEL: LabelSpan = LabelSpan {
        start: 0,
        classes: 2,
        binary: false,
    };

    /// The sensitivities the methods state, on neighbouring tables (one row added):
    /// class sums move by 1 (up to the grid), never more than stated; counts by 1;
    /// moments by at most √2.
    #[test]
    fn one_row_moves_each_statistic_by_its_stated_sensitivity() {
        let (x, w) = (rows(20), omega(7, 300));
        let less = x.narrow(0, 0, 19).unwrap();
        for label in [None, Some(LABEL)] {
            let moved = (class_sums(&x, &w, label).unwrap()
                - class_sums(&less, &w, label).unwrap())
            .unwrap();
            let n = norm(&moved);
            assert!(n <= SUM_SENSITIVITY && n > 1.0 - 1e-3, "{label:?}: {n}");
        }
        let counts =
            (class_counts(&x, LABEL).unwrap() - class_counts(&less, LABEL).unwrap()).unwrap();
        assert_eq!(norm(&counts), 1.0);
        // c = 6 spans bound ‖x‖² here (one-hot + five values).
        let m =
            (distance_moments(&x, 6.0).unwrap() - distance_moments(&less, 6.0).unwrap()).unwrap();
        assert!(norm(&m) <= MOMENTS_SENSITIVITY, "{}", norm(&m));
        // The worst row (all ones) reaches the bound's order: √(5/6 + 25/36).
        let ones = Tensor::ones((1, 7), DType::F32, &candle_core::Device::Cpu).unwrap();
        let m1 = norm(&distance_moments(&ones, 7.0).unwrap());
        assert!((m1 - 2f64.sqrt()).abs() < 1e-4, "{m1}");
        // A row outside the encoding's range is clipped to the bound, not let through.
        let wild =
            (Tensor::ones((1, 7), DType::F32, &candle_core::Device::Cpu).unwrap() * 50.0).unwrap();
        assert!(norm(&distance_moments(&wild, 7.0).unwrap()) <= MOMENTS_SENSITIVITY);
    }

    /// On a large table the sums once taken in f32 moved by one row's features plus the
    /// rounding of every later addition: more than the stated sensitivity. Summed on the
    /// integer grid, a row added at the front (every chunk shifts) or a hostile row at
    /// the end moves them by at most what the release states.
    #[test]
    fn a_large_table_and_its_neighbours_differ_by_at_most_the_stated_sensitivity() {
        let n = 60_000;
        let base = rows(n);
        let w = omega(7, 64);
        let dev = candle_core::Device::Cpu;
        let ones = Tensor::ones((1, 7), DType::F32, &dev).unwrap();
        let front = Tensor::cat(&[&ones, &base], 0).unwrap();
        let back = Tensor::cat(&[&base, &rows(1)], 0).unwrap();
        for label in [None, Some(LABEL)] {
            let s0 = class_sums(&base, &w, label).unwrap();
            for neighbour in [&front, &back] {
                let moved = (class_sums(neighbour, &w, label).unwrap() - &s0).unwrap();
                assert!(
                    norm(&moved) <= SUM_SENSITIVITY,
                    "{label:?}: {}",
                    norm(&moved)
                );
            }
        }
        let m0 = distance_moments(&base, 6.0).unwrap();
        let moved = (distance_moments(&front, 6.0).unwrap() - m0).unwrap();
        assert!(norm(&moved) <= MOMENTS_SENSITIVITY, "{}", norm(&moved));
    }

    /// Counts are exact past 2²⁴ rows, where an f32 sum stops counting.
    #[test]
    fn class_counts_are_exact_past_the_f32_range() {
        let n = (1usize << 24) + 3;
        let x = Tensor::ones((n, 1), DType::F32, &candle_core::Device::Cpu).unwrap();
        let label = LabelSpan {
            start: 0,
            classes: 2,
            binary: true,
        };
        let counts: Vec<f64> = class_counts(&x, label).unwrap().to_vec1().unwrap();
        assert_eq!(counts, vec![0.0, n as f64]);
    }

    /// The GPU kernel's grid is the CPU's: both devices release the same statistic.
    #[test]
    fn the_kernel_and_the_cpu_share_one_grid() {
        assert_eq!(crate::gpu::embed::GRID, fixed::ONE);
        assert_eq!(crate::gpu::embed::MAX_CHUNK_ROWS, fixed::MAX_CHUNK_ROWS);
        let shader = include_str!("../../../shaders/embedding.wgsl");
        assert!(shader.contains(&format!("const ONE: i32 = {};", fixed::ONE)));
    }

    /// Against a slow reference: the mean over all pairs of ‖x − x'‖².
    #[test]
    fn mixed_frequencies_take_each_scale_in_turn_and_keep_unit_features() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        let dev = candle_core::Device::Cpu;
        let w = mixed_frequencies(400, 6, &[1.0, 10.0], &mut rng, &dev).unwrap();
        let cols: Vec<Vec<f32>> = w.t().unwrap().to_vec2().unwrap();
        let sd = |c: &[f32]| (c.iter().map(|v| v * v).sum::<f32>() / c.len() as f32).sqrt();
        for (j, col) in cols.iter().enumerate() {
            let want = if j % 2 == 0 { 1.0 } else { 0.1 };
            assert!(
                (sd(col) - want).abs() < 0.15 * want,
                "frequency {j}: sd {}",
                sd(col)
            );
        }
        let f = Frequencies::whole_row(w.clone()).unwrap();
        let phi = features(&rows(5).pad_with_zeros(1, 0, 393).unwrap(), &f).unwrap();
        for n in phi.sqr().unwrap().sum(1).unwrap().to_vec1::<f32>().unwrap() {
            assert!((n - 1.0).abs() < 1e-5, "‖φ(x)‖² = {n}");
        }
        assert!(mixed_frequencies(4, 2, &[1.0, 0.0], &mut rng, &dev).is_err());
        assert!(mixed_frequencies(4, 2, &[], &mut rng, &dev).is_err());
    }

    #[test]
    fn rms_distance_matches_all_pairs() {
        let x = rows(30);
        let v: Vec<Vec<f32>> = x.to_vec2().unwrap();
        let mut s = 0.0;
        let mut pairs = 0.0;
        for a in &v {
            for b in &v {
                s += a
                    .iter()
                    .zip(b)
                    .map(|(p, q)| ((p - q) as f64).powi(2))
                    .sum::<f64>();
                pairs += 1.0;
            }
        }
        let want = (s / pairs).sqrt();
        let m: Vec<f64> = distance_moments(&x, 6.0).unwrap().to_vec1().unwrap();
        let got = rms_distance(&m, 6.0, 30.0);
        assert!((got - want).abs() < 1e-4, "{got} vs {want}");
    }

    /// The WGSL kernel against the CPU path, on more rows than one chunk and with a
    /// label; CI runs it on Mesa's lavapipe (a machine with no Vulkan driver at all
    /// skips it, saying so).
    #[test]
    fn the_wgsl_kernel_matches_the_cpu_path() {
        if let Err(e) = crate::gpu::context() {
            eprintln!("skipped: {e}");
            return;
        }
        let (x, w) = (rows(1_000), omega(7, 300));
        for label in [None, Some(LABEL)] {
            let cpu: Vec<Vec<f64>> = class_sums(&x, &w, label).unwrap().to_vec2().unwrap();
            let (gpu, on) = class_sums_on(&x, &w, label, EmbedDevice::Gpu).unwrap();
            assert_ne!(on, "cpu");
            let gpu: Vec<Vec<f64>> = gpu.to_vec2().unwrap();
            for (a, b) in cpu.iter().flatten().zip(gpu.iter().flatten()) {
                assert!((a - b).abs() < 1e-3 * (1.0 + a.abs()), "{a} vs {b} ({on})");
            }
        }
    }

    /// Per-class sums against a row-by-row reference.
    #[test]
    fn class_sums_match_a_loop_over_rows() {
        let (x, w) = (rows(9), omega(7, 50));
        let got: Vec<Vec<f64>> = class_sums(&x, &w, Some(LABEL)).unwrap().to_vec2().unwrap();
        let phi: Vec<Vec<f32>> = features(&x, &w).unwrap().to_vec2().unwrap();
        for c in 0..2 {
            for j in 0..100 {
                let want: f32 = (0..9).filter(|i| i % 2 == c).map(|i| phi[i][j]).sum();
                // Each row's value is on a grid of 2⁻¹⁵ before its weight 1/10.
                assert!((got[c][j] - want as f64).abs() < 1e-4);
            }
        }
    }
}
