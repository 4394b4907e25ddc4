//! Local frequencies for images: frequencies that read one square of pixels and are zero
//! on every other column. Their random features are those of the kernel
//! E_square exp(−‖x_sq − x'_sq‖²/2ℓ²), the average over squares of a Gaussian kernel on
//! that square alone — a digit's strokes, a stray speck of ink, where a kernel on all 784
//! pixels at once sees a speck as a tiny change in a long distance.
//!
//! Two ways to draw them, with the same kernel in expectation: [`local_frequencies`] puts
//! each frequency on one uniformly drawn square (a dense [width, k] matrix, mostly zeros),
//! and [`SquareFilters`] slides each of a few random filters over every square (a
//! convolution: `places` frequencies per filter for the arithmetic of one dense one's
//! `patch²/width` share). Both are public settings drawn independently of the data, so
//! neither changes a sensitivity; the feature map keeps ‖φ(x)‖ = 1 (see
//! [`super::Frequencies`]).

use candle_core::{DType, Tensor};
use rand_distr::{Distribution, Normal};

use crate::methods::image_nets::ImageLayout;
use crate::methods::{MethodError, Result};

/// The normal law of a square's frequency entries, after checking the square fits.
pub(super) fn square_law(
    layout: &ImageLayout,
    patch: usize,
    bandwidth: f64,
) -> Result<Normal<f32>> {
    if patch == 0 || patch > layout.side {
        return Err(MethodError::Plan(format!(
            "the local frequencies' square must be 1 to {} pixels wide, got {patch}",
            layout.side
        )));
    }
    if !(bandwidth > 0.0 && bandwidth.is_finite()) {
        return Err(MethodError::Plan(format!(
            "the local kernel bandwidth must be a positive number, got {bandwidth}"
        )));
    }
    Normal::new(0.0f32, (1.0 / bandwidth) as f32)
        .map_err(|e| MethodError::Plan(format!("bad bandwidth {bandwidth}: {e}")))
}

/// k local frequencies: each is N(0, ℓ⁻²) on the pixels of one `patch`×`patch` square at
/// a uniformly drawn place and zero on every other column, so t·x reads only that square.
pub fn local_frequencies(
    width: usize,
    layout: &ImageLayout,
    k: usize,
    (patch, bandwidth): (usize, f64),
    rng: &mut impl rand::Rng,
    dev: &candle_core::Device,
) -> Result<Tensor> {
    let normal = square_law(layout, patch, bandwidth)?;
    let (k, side, start) = (k.max(1), layout.side, layout.pixel_start());
    let places = side - patch + 1;
    // Row-major [width, k]: frequency j is column j.
    let mut v = vec![0f32; width * k];
    for j in 0..k {
        let (r0, c0) = (rng.random_range(0..places), rng.random_range(0..places));
        for r in r0..r0 + patch {
            for c in c0..c0 + patch {
                v[(start + r * side + c) * k + j] = normal.sample(rng);
            }
        }
    }
    Ok(Tensor::from_vec(v, (width, k), dev)?)
}

/// `filters` random `patch`×`patch` filters, each N(0, ℓ⁻²) per pixel and read at every
/// place of the image: frequency (place p, filter f) is filter f on the square at p and
/// zero elsewhere. Each such frequency, on its own, is a local frequency at a uniformly
/// drawn place, so the features estimate the same kernel as [`local_frequencies`]; drawn
/// this way there are places × filters of them (576 × 64 = 36,864 on MNIST at 5×5) for
/// the arithmetic of a few thousand dense ones, since a frequency reads patch² pixels and
/// a dense one reads the whole row.
#[derive(Debug, Clone)]
pub struct SquareFilters {
    /// The column under each place's square, place-major and row-major within a square:
    /// [places · patch²] (u32).
    index: Tensor,
    /// The filters [patch², filters] and their transpose.
    w: Tensor,
    w_t: Tensor,
    places: usize,
    patch2: usize,
    filters: usize,
    width: usize,
}

impl SquareFilters {
    pub fn draw(
        width: usize,
        layout: &ImageLayout,
        filters: usize,
        (patch, bandwidth): (usize, f64),
        rng: &mut impl rand::Rng,
        dev: &candle_core::Device,
    ) -> Result<Self> {
        let normal = square_law(layout, patch, bandwidth)?;
        let filters = filters.max(1);
        let (side, start) = (layout.side, layout.pixel_start());
        let across = side - patch + 1;
        let mut index = Vec::with_capacity(across * across * patch * patch);
        for r0 in 0..across {
            for c0 in 0..across {
                for r in r0..r0 + patch {
                    for c in c0..c0 + patch {
                        index.push((start + r * side + c) as u32);
                    }
                }
            }
        }
        let patch2 = patch * patch;
        let v: Vec<f32> = (0..patch2 * filters).map(|_| normal.sample(rng)).collect();
        let w = Tensor::from_vec(v, (patch2, filters), dev)?;
        Ok(Self {
            places: across * across,
            index: Tensor::from_vec(index, across * across * patch2, dev)?,
            w_t: w.t()?.contiguous()?,
            w,
            patch2,
            filters,
            width,
        })
    }

    pub fn device(&self) -> candle_core::Device {
        self.index.device().clone()
    }

    /// Frequencies: places × filters.
    pub fn count(&self) -> usize {
        self.places * self.filters
    }

    /// t·x for every row of `x` [B, width] and every (place, filter): [B, places · filters].
    pub fn project(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let b = x.dims()[0];
        x.index_select(&self.index, 1)?
            .reshape((b * self.places, self.patch2))?
            .matmul(&self.w)?
            .reshape((b, self.count()))
    }

    /// The gradient with respect to the rows of a gradient `d` [B, places · filters] with
    /// respect to [`Self::project`]'s output: each square's share added back to its pixels.
    pub fn project_back(&self, d: &Tensor) -> candle_core::Result<Tensor> {
        let b = d.dims()[0];
        let per_pixel = d
            .reshape((b * self.places, self.filters))?
            .matmul(&self.w_t)?
            .reshape((b, self.places * self.patch2))?;
        Tensor::zeros((b, self.width), DType::F32, d.device())?.index_add(
            &self.index,
            &per_pixel,
            1,
        )
    }

    /// The filters as the dense [width, places · filters] matrix they stand for (tests and
    /// checks: it is mostly zeros, which is why the filters are not stored this way).
    pub fn dense(&self) -> Result<Tensor> {
        let index: Vec<u32> = self.index.to_vec1()?;
        let w: Vec<Vec<f32>> = self.w.to_vec2()?;
        let k = self.count();
        let mut v = vec![0f32; self.width * k];
        for p in 0..self.places {
            for (q, col) in index[p * self.patch2..(p + 1) * self.patch2]
                .iter()
                .enumerate()
            {
                for f in 0..self.filters {
                    v[*col as usize * k + p * self.filters + f] = w[q][f];
                }
            }
        }
        Ok(Tensor::from_vec(v, (self.width, k), self.index.device())?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::embedding::{Frequencies, features};
    use crate::nn::layers::loss_grad;
    use rand::SeedableRng;

    fn layout(width: usize, label: (usize, usize)) -> ImageLayout {
        ImageLayout::of_span(width, Some(label)).unwrap()
    }

    fn norm(t: &Tensor) -> f32 {
        t.sqr()
            .unwrap()
            .sum_all()
            .unwrap()
            .sqrt()
            .unwrap()
            .to_scalar()
            .unwrap()
    }

    /// Every local frequency reads exactly one square of pixels inside the image (never the
    /// label's columns), the squares land all over the image, and the features keep norm 1.
    #[test]
    fn local_frequencies_read_one_square_each() {
        let dev = candle_core::Device::Cpu;
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let (side, patch, k) = (6, 3, 400);
        let width = 3 + side * side;
        let grid = layout(width, (0, 3));
        assert_eq!((grid.pixel_start(), grid.side), (3, side));
        let t = local_frequencies(width, &grid, k, (patch, 1.0), &mut rng, &dev).unwrap();
        let v: Vec<Vec<f32>> = t.to_vec2().unwrap();
        let mut corners = std::collections::HashSet::new();
        for j in 0..k {
            let on: Vec<usize> = (0..width).filter(|&i| v[i][j] != 0.0).collect();
            assert_eq!(on.len(), patch * patch, "frequency {j}");
            assert!(on.iter().all(|&i| i >= 3), "frequency {j} reads the label");
            let (rows, cols): (Vec<usize>, Vec<usize>) =
                on.iter().map(|&i| ((i - 3) / side, (i - 3) % side)).unzip();
            let (r0, c0) = (*rows.iter().min().unwrap(), *cols.iter().min().unwrap());
            assert!(rows.iter().all(|r| r - r0 < patch) && cols.iter().all(|c| c - c0 < patch));
            corners.insert((r0, c0));
        }
        assert_eq!(
            corners.len(),
            (side - patch + 1).pow(2),
            "every place is drawn"
        );
        let x = Tensor::rand(0f32, 1f32, (5, width), &dev).unwrap();
        let phi = features(&x, &Frequencies::whole_row(t).unwrap()).unwrap();
        for r in 0..5 {
            assert!((norm(&phi.get(r).unwrap()) - 1.0).abs() < 1e-5);
        }
        // The label last, and rows that are not square images, are told apart.
        assert_eq!(layout(width, (36, 3)).pixel_start(), 0);
        assert!(ImageLayout::of_span(width + 1, Some((0, 3))).is_err());
        assert!(local_frequencies(width, &grid, 4, (7, 1.0), &mut rng, &dev).is_err());
    }

    /// The filters at every place are the dense matrix they stand for: the same
    /// projections, and the same gradient back to the rows as autograd through that
    /// matrix; every frequency reads one whole square of pixels and never the label.
    #[test]
    fn square_filters_project_like_the_dense_matrix_they_stand_for() {
        let dev = candle_core::Device::Cpu;
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let (side, patch, filters) = (6, 3, 5);
        let width = side * side + 4;
        let grid = layout(width, (side * side, 4));
        let sq = SquareFilters::draw(width, &grid, filters, (patch, 1.0), &mut rng, &dev).unwrap();
        assert_eq!(sq.count(), 16 * filters);
        let dense = sq.dense().unwrap();
        let v: Vec<Vec<f32>> = dense.to_vec2().unwrap();
        for j in 0..sq.count() {
            let on = (0..width).filter(|&i| v[i][j] != 0.0).count();
            assert_eq!(on, patch * patch, "frequency {j}");
            assert!(
                (side * side..width).all(|i| v[i][j] == 0.0),
                "frequency {j} reads the label"
            );
        }
        let x = Tensor::rand(0f32, 1f32, (7, width), &dev).unwrap();
        let a = sq.project(&x).unwrap();
        let b = x.matmul(&dense).unwrap();
        assert!(norm(&(a - b).unwrap()) < 1e-4);
        // The backward pass: Σ g ⊙ (x·Ω) differentiated by autograd against project_back.
        let g = Tensor::rand(-1f32, 1f32, (7, sq.count()), &dev).unwrap();
        let (_, want) = loss_grad(&x, |x| (x.matmul(&dense)? * &g)?.sum_all()).unwrap();
        let got = sq.project_back(&g).unwrap();
        assert!(norm(&(got - want).unwrap()) < 1e-4);
        assert!(SquareFilters::draw(width, &grid, 2, (7, 1.0), &mut rng, &dev).is_err());
        assert!(SquareFilters::draw(width, &grid, 2, (3, 0.0), &mut rng, &dev).is_err());
    }
}
