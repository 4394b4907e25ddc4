//! The frequencies an embedding projects rows on: a dense matrix over the whole row, and
//! for images optionally filters slid over every square ([`SquareFilters`]), each part
//! with its weight in the kernel.

use candle_core::Tensor;

use super::placed::PlacedFrequencies;
use super::squares::SquareFilters;
use crate::methods::{MethodError, Result};

/// k frequencies t_j and their weights a_j in the feature map
/// φ(x) = [a_j cos(t_j·x), a_j sin(t_j·x)]_{j ≤ k} with Σ_j a_j² = 1, so ‖φ(x)‖ = 1 for
/// every x whatever the frequencies: that is what makes the embeddings' sensitivities
/// exact (one record moves a class sum by exactly 1). Uniform weights k^{−1/2} give the
/// random features of one kernel; with squares, the whole-row part carries weight
/// 1 − share and the squares `share`, so φ·φ' estimates the mixture
/// (1 − share)·k_row + share·k_square whatever the two parts' counts.
#[derive(Debug, Clone)]
pub struct Frequencies {
    /// Over the whole row: [width, k_row] and its transpose (the backward pass's).
    row: Option<(Tensor, Tensor)>,
    squares: Option<Local>,
    /// a_j for each frequency, twice ([1, 2k]: the cosine and the sine); None: k^{−1/2}.
    weights: Option<Tensor>,
    k: usize,
}

impl Frequencies {
    /// Frequencies over the whole row, `omega` [width, k], at equal weights.
    pub fn whole_row(omega: Tensor) -> Result<Self> {
        let k = omega.dims2()?.1;
        let t = omega.t()?.contiguous()?;
        Ok(Self {
            row: Some((omega, t)),
            squares: None,
            weights: None,
            k,
        })
    }

    /// `row` (if any) at kernel weight 1 − `share` beside `squares` at `share`.
    pub fn with_squares(row: Option<Tensor>, squares: SquareFilters, share: f64) -> Result<Self> {
        let k_row = match &row {
            Some(r) => r.dims2()?.1,
            None => 0,
        };
        let share = if k_row == 0 { 1.0 } else { share };
        if !(share > 0.0 && share <= 1.0) {
            return Err(MethodError::Plan(format!(
                "the squares' share of the kernel must be in (0, 1], got {share}"
            )));
        }
        let k_sq = squares.count();
        let a_row = ((1.0 - share) / k_row.max(1) as f64).sqrt() as f32;
        let a_sq = (share / k_sq as f64).sqrt() as f32;
        let one: Vec<f32> = std::iter::repeat_n(a_row, k_row)
            .chain(std::iter::repeat_n(a_sq, k_sq))
            .collect();
        let both = [one.as_slice(), one.as_slice()].concat();
        let dev = squares.device();
        let k = k_row + k_sq;
        let row = with_transpose(row)?;
        Ok(Self {
            row,
            squares: Some(Local::Filters(squares)),
            weights: Some(Tensor::from_vec(both, (1, 2 * k), &dev)?),
            k,
        })
    }

    /// `row` [width, k_row] (if any) and then local frequencies held by place, all at equal
    /// weights: the features of the dense matrix [row | placed.dense()], column for column.
    pub fn with_placed(row: Option<Tensor>, placed: PlacedFrequencies) -> Result<Self> {
        let k = row.as_ref().map_or(Ok(0), |r| r.dims2().map(|d| d.1))? + placed.count();
        let row = with_transpose(row)?;
        Ok(Self {
            row,
            squares: Some(Local::Placed(placed)),
            weights: None,
            k,
        })
    }

    /// Frequencies in all (the embedding has 2k numbers per class).
    pub fn count(&self) -> usize {
        self.k
    }

    /// The dense [width, k] matrix when that is all there is (the GPU kernel and PEARL's
    /// critic read it); None with squares or placed frequencies.
    pub fn matrix(&self) -> Option<&Tensor> {
        match (&self.row, &self.squares) {
            (Some((m, _)), None) => Some(m),
            _ => None,
        }
    }

    /// t_j·x for every row of `x` [B, width]: [B, k], the whole-row part first.
    pub fn project(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match (&self.row, &self.squares) {
            (Some((m, _)), None) => x.matmul(m),
            (None, Some(s)) => s.project(x),
            (Some((m, _)), Some(s)) => Tensor::cat(&[x.matmul(m)?, s.project(x)?], 1),
            (None, None) => candle_core::bail!("an embedding needs frequencies"),
        }
    }

    /// The gradient with respect to the rows, from one with respect to [`Self::project`]'s
    /// output `d` [B, k]: [B, width].
    pub fn project_back(&self, d: &Tensor) -> candle_core::Result<Tensor> {
        match (&self.row, &self.squares) {
            (Some((_, t)), None) => d.matmul(t),
            (None, Some(s)) => s.project_back(d),
            (Some((m, t)), Some(s)) => {
                let k_row = m.dims()[1];
                let row = d.narrow(1, 0, k_row)?.contiguous()?.matmul(t)?;
                let sq = d.narrow(1, k_row, self.k - k_row)?.contiguous()?;
                row + s.project_back(&sq)?
            }
            (None, None) => candle_core::bail!("an embedding needs frequencies"),
        }
    }

    /// The frequencies `idx` (u32, distinct) of a dense set, keeping each one's weight in
    /// the whole: φ restricted to them is the whole φ's columns `idx` and `k + idx`, so a
    /// distance over them is that many of the whole distance's terms (a step's unbiased
    /// estimate, scaled by k / m). Dense frequencies only.
    pub fn subset(&self, idx: &Tensor) -> Result<Self> {
        let Some(m) = self.matrix() else {
            return Err(MethodError::Plan(
                "step_features needs frequencies over the whole row (not patch_filters)".into(),
            ));
        };
        let picked = m.index_select(idx, 1)?;
        let len = picked.dims2()?.1;
        let a = (1.0 / (self.k as f64).sqrt()) as f32;
        let weights = Tensor::full(a, (1, 2 * len), m.device())?;
        let t = picked.t()?.contiguous()?;
        Ok(Self {
            row: Some((picked, t)),
            squares: None,
            weights: Some(weights),
            k: len,
        })
    }

    /// `pairs` [B, 2k] (cosine then sine columns) times each frequency's weight.
    pub fn weigh_pairs(&self, pairs: &Tensor) -> candle_core::Result<Tensor> {
        match &self.weights {
            Some(w) => pairs.broadcast_mul(w),
            None => pairs / (self.k as f64).sqrt(),
        }
    }

    /// Each frequency's weight a_j in the feature map ([k]).
    pub fn pair_weights(&self) -> candle_core::Result<Vec<f32>> {
        match &self.weights {
            Some(w) => w.narrow(1, 0, self.k)?.flatten_all()?.to_vec1(),
            None => Ok(vec![(1.0 / (self.k as f64).sqrt()) as f32; self.k]),
        }
    }

    /// `t` [B, k] (one column per frequency) times each frequency's weight.
    pub fn weigh(&self, t: &Tensor) -> candle_core::Result<Tensor> {
        match &self.weights {
            Some(w) => t.broadcast_mul(&w.narrow(1, 0, self.k)?),
            None => t / (self.k as f64).sqrt(),
        }
    }
}

/// The row matrix with its transpose made contiguous once: every step multiplies by both.
fn with_transpose(row: Option<Tensor>) -> Result<Option<(Tensor, Tensor)>> {
    match row {
        Some(r) => {
            let t = r.t()?.contiguous()?;
            Ok(Some((r, t)))
        }
        None => Ok(None),
    }
}

/// The part of the frequencies that reads squares of an image, in one of two layouts.
#[derive(Debug, Clone)]
enum Local {
    Filters(SquareFilters),
    Placed(PlacedFrequencies),
}

impl Local {
    fn project(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Local::Filters(s) => s.project(x),
            Local::Placed(p) => p.project(x),
        }
    }

    fn project_back(&self, d: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Local::Filters(s) => s.project_back(d),
            Local::Placed(p) => p.project_back(d),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::embedding::{features, frequencies};
    use crate::methods::image_nets::ImageLayout;
    use rand::SeedableRng;

    /// A whole-row part beside squares: unit features whatever the counts (so one row moves
    /// a class sum by exactly 1), the parts' weights as set, and the projection's backward
    /// pass equal to autograd's.
    #[test]
    fn mixed_parts_keep_unit_features_and_their_weights() {
        let dev = candle_core::Device::Cpu;
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        let width = 26;
        let layout = ImageLayout::of_span(width, Some((0, 1))).unwrap();
        let sq = SquareFilters::draw(width, &layout, 3, (2, 1.0), &mut rng, &dev).unwrap();
        let row = frequencies(width, 7, 2.0, &mut rng, &dev).unwrap();
        let f = Frequencies::with_squares(Some(row), sq, 0.25).unwrap();
        assert_eq!(f.count(), 7 + 16 * 3);
        assert!(f.matrix().is_none());
        let x = Tensor::rand(0f32, 1f32, (4, width), &dev).unwrap();
        let phi: Vec<Vec<f32>> = features(&x, &f).unwrap().to_vec2().unwrap();
        for r in &phi {
            let whole: f32 = r.iter().map(|v| v * v).sum();
            let row_part: f32 = r[..7]
                .iter()
                .chain(&r[f.count()..f.count() + 7])
                .map(|v| v * v)
                .sum();
            assert!((whole - 1.0).abs() < 1e-5, "‖φ‖² = {whole}");
            assert!(
                (row_part - 0.75).abs() < 1e-5,
                "the whole row's weight {row_part}"
            );
        }
        let g = Tensor::rand(-1f32, 1f32, (4, f.count()), &dev).unwrap();
        let (_, want) =
            crate::nn::layers::loss_grad(&x, |x| (f.project(x)? * &g)?.sum_all()).unwrap();
        let back = f.project_back(&g).unwrap();
        assert!(crate::nn::reference::max_gap(&back, &want) < 1e-4);
        // Neighbouring tables (one row more): the class sum moves by ‖φ‖ = 1 (up to the
        // grid), never by more than stated.
        let sums = |x: &Tensor| crate::methods::embedding::class_sums(x, &f, None).unwrap();
        let moved = (sums(&x) - sums(&x.narrow(0, 0, 3).unwrap())).unwrap();
        let moved: f64 = moved
            .sqr()
            .unwrap()
            .sum_all()
            .unwrap()
            .sqrt()
            .unwrap()
            .to_scalar()
            .unwrap();
        assert!(
            moved <= crate::methods::embedding::SUM_SENSITIVITY && moved > 0.999,
            "{moved}"
        );
        let again = SquareFilters::draw(width, &layout, 3, (2, 1.0), &mut rng, &dev).unwrap();
        assert!(
            Frequencies::with_squares(None, again, 0.0).is_ok(),
            "squares alone take it all"
        );
    }
}
