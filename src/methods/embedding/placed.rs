//! The local frequencies of [`super::local_frequencies`], held by where they read instead
//! of as a dense [width, k] matrix that is zero off each frequency's square.
//!
//! Why: `mnist-local-long` puts 5,000 of its 10,000 frequencies on 5×5 squares of a
//! 28×28 digit. As dense columns each costs 794 multiply-adds a row, forward and back,
//! though it reads 25 pixels: half the arithmetic of every generator step went to
//! multiplying zeros. Held by place — the pixels under every square gathered once, then a
//! dot product of 25 for each frequency there — the squares' share takes a thirtieth of the
//! multiply-adds (for a batch of 200 digits, 21 ms forward and back instead of 47 ms, the
//! gathers being what is left; since the CPU's loops take blocks of rows, so
//! the multiply-adds vectorize: about 14 ms instead of 24). Same frequencies, drawn from
//! the same random stream in the same order, so the features (and the release, its
//! sensitivity and its statement) are those of the dense matrix up to float rounding; a
//! test holds the two side by side.

use candle_core::{DType, Tensor};

use super::squares::square_law;
use crate::methods::Result;
use crate::methods::image_nets::ImageLayout;
use crate::nn::host::{on_values, with_avx2};

/// k local frequencies, each N(0, ℓ⁻²) on one `patch`×`patch` square at a uniformly drawn
/// place, grouped by place.
#[derive(Debug, Clone)]
pub struct PlacedFrequencies {
    /// The column under each place's square, place-major and row-major within a square:
    /// [places · patch²] (u32).
    index: Tensor,
    /// Each place's frequencies as columns, padded with zeros to the most any place holds:
    /// [places, patch², most], and its transpose [places, most, patch²].
    w: Tensor,
    w_t: Tensor,
    /// For frequency j, its slot (place · most + position) among the padded columns: [k].
    pick: Tensor,
    /// For each padded slot, the frequency in it, or k for padding (a zero column): [places ·
    /// most].
    spread: Tensor,
    /// The same on the host for the CPU's loops: `index`, `spread`, the transposed weights
    /// [places · most · patch²], and how many frequencies each place holds (its first slots).
    cols: Vec<u32>,
    slots: Vec<u32>,
    wt: Vec<f32>,
    held: Vec<usize>,
    places: usize,
    patch2: usize,
    most: usize,
    k: usize,
    width: usize,
}

impl PlacedFrequencies {
    /// The frequencies [`super::local_frequencies`] draws with the same `rng` state: for
    /// each frequency in turn a place (row, then column), then its patch² entries.
    pub fn draw(
        width: usize,
        layout: &ImageLayout,
        k: usize,
        (patch, bandwidth): (usize, f64),
        rng: &mut impl rand::Rng,
        dev: &candle_core::Device,
    ) -> Result<Self> {
        use rand_distr::Distribution;
        let normal = square_law(layout, patch, bandwidth)?;
        let (k, side, start) = (k.max(1), layout.side, layout.pixel_start());
        let across = side - patch + 1;
        let (places, patch2) = (across * across, patch * patch);
        let mut drawn: Vec<(usize, Vec<f32>)> = Vec::with_capacity(k);
        for _ in 0..k {
            let (r0, c0) = (rng.random_range(0..across), rng.random_range(0..across));
            let w: Vec<f32> = (0..patch2).map(|_| normal.sample(rng)).collect();
            drawn.push((r0 * across + c0, w));
        }
        let mut held = vec![0usize; places];
        let mut slot_of = Vec::with_capacity(k);
        for (place, _) in &drawn {
            slot_of.push((*place, held[*place]));
            held[*place] += 1;
        }
        let most = held.iter().copied().max().unwrap_or(1).max(1);
        let mut w = vec![0f32; places * patch2 * most];
        let mut spread = vec![k as u32; places * most];
        let mut pick = Vec::with_capacity(k);
        for (j, ((place, pos), (_, entries))) in slot_of.iter().zip(&drawn).enumerate() {
            for (q, v) in entries.iter().enumerate() {
                w[(place * patch2 + q) * most + pos] = *v;
            }
            spread[place * most + pos] = j as u32;
            pick.push((place * most + pos) as u32);
        }
        let mut index = Vec::with_capacity(places * patch2);
        for r0 in 0..across {
            for c0 in 0..across {
                for r in r0..r0 + patch {
                    for c in c0..c0 + patch {
                        index.push((start + r * side + c) as u32);
                    }
                }
            }
        }
        let w = Tensor::from_vec(w, (places, patch2, most), dev)?;
        let w_t = w.transpose(1, 2)?.contiguous()?;
        Ok(Self {
            cols: index.clone(),
            slots: spread.clone(),
            wt: w_t.flatten_all()?.to_vec1()?,
            held,
            index: Tensor::from_vec(index, places * patch2, dev)?,
            w_t,
            w,
            pick: Tensor::from_vec(pick, k, dev)?,
            spread: Tensor::from_vec(spread.clone(), places * most, dev)?,
            places,
            patch2,
            most,
            k,
            width,
        })
    }

    pub fn count(&self) -> usize {
        self.k
    }

    /// t·x for every row of `x` [B, width] and every frequency, in drawn order: [B, k].
    pub fn project(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let b = x.dims()[0];
        if x.device().is_cpu() {
            let out = on_values(x, |rows| self.project_rows(rows))?;
            return Tensor::from_vec(out, (b, self.k), x.device());
        }
        self.project_tensors(x)
    }

    /// [`Self::project`] as tensor operations (other devices).
    fn project_tensors(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let b = x.dims()[0];
        let squares = x
            .index_select(&self.index, 1)?
            .reshape((b, self.places, self.patch2))?
            .transpose(0, 1)?
            .contiguous()?;
        squares
            .matmul(&self.w)?
            .transpose(0, 1)?
            .contiguous()?
            .reshape((b, self.places * self.most))?
            .index_select(&self.pick, 1)
    }

    /// The gradient with respect to the rows from `d` [B, k], one with respect to
    /// [`Self::project`]'s output: each frequency's share added back to its square's pixels.
    pub fn project_back(&self, d: &Tensor) -> candle_core::Result<Tensor> {
        let b = d.dims()[0];
        if d.device().is_cpu() {
            let out = on_values(d, |rows| self.back_rows(rows))?;
            return Tensor::from_vec(out, (b, self.width), d.device());
        }
        self.back_tensors(d)
    }

    /// [`Self::project_back`] as tensor operations (other devices).
    fn back_tensors(&self, d: &Tensor) -> candle_core::Result<Tensor> {
        let b = d.dims()[0];
        let padded = Tensor::cat(&[d, &Tensor::zeros((b, 1), DType::F32, d.device())?], 1)?
            .index_select(&self.spread, 1)?
            .reshape((b, self.places, self.most))?
            .transpose(0, 1)?
            .contiguous()?;
        let per_pixel = padded
            .matmul(&self.w_t)?
            .transpose(0, 1)?
            .contiguous()?
            .reshape((b, self.places * self.patch2))?;
        Tensor::zeros((b, self.width), DType::F32, d.device())?.index_add(
            &self.index,
            &per_pixel,
            1,
        )
    }

    /// [`Self::project`] on the CPU, [`ROWS`] rows at a time: the block transposed so each
    /// pixel's values across the rows are contiguous, then each frequency's output across
    /// the rows built by patch² multiply-adds of whole such columns, which vectorize. (One
    /// row at a time, each dot product was a chain of 25 dependent scalar adds with two
    /// loads per multiply: 16 % of a `mnist-local-long` step for a thirtieth of its
    /// arithmetic.)
    fn project_rows(&self, x: &[f32]) -> Vec<f32> {
        let (p2, most, k, width) = (self.patch2, self.most, self.k, self.width);
        let mut out = vec![0f32; x.len() / width * k];
        in_blocks(
            &mut out,
            x,
            (k, width),
            #[inline(always)]
            |o, block| {
                let r = block.len() / width;
                let xt = transposed(block, width);
                let mut ot = vec![0f32; k * r];
                for p in 0..self.places {
                    let cols = &self.cols[p * p2..(p + 1) * p2];
                    for slot in p * most..p * most + self.held[p] {
                        let j = self.slots[slot] as usize;
                        let acc = &mut ot[j * r..(j + 1) * r];
                        let w = &self.wt[slot * p2..(slot + 1) * p2];
                        for (col, wq) in cols.iter().zip(w) {
                            let c = *col as usize;
                            axpy(acc, &xt[c * r..(c + 1) * r], *wq);
                        }
                    }
                }
                untransposed(&ot, r, o);
            },
        );
        out
    }

    /// [`Self::project_back`] on the CPU, [`ROWS`] rows at a time: each place's
    /// frequencies' shares summed on its square across the rows, added to the square's
    /// pixels, and the block transposed back to rows at the end.
    fn back_rows(&self, d: &[f32]) -> Vec<f32> {
        let (p2, most, k, width) = (self.patch2, self.most, self.k, self.width);
        let mut out = vec![0f32; d.len() / k * width];
        in_blocks(
            &mut out,
            d,
            (width, k),
            #[inline(always)]
            |g, block| {
                let r = block.len() / k;
                let dt = transposed(block, k);
                let mut gt = vec![0f32; width * r];
                let mut acc = vec![0f32; p2 * r];
                for p in 0..self.places {
                    acc.iter_mut().for_each(|a| *a = 0.0);
                    for slot in p * most..p * most + self.held[p] {
                        let j = self.slots[slot] as usize;
                        let dv = &dt[j * r..(j + 1) * r];
                        let w = &self.wt[slot * p2..(slot + 1) * p2];
                        for (a, wq) in acc.chunks_mut(r).zip(w) {
                            axpy(a, dv, *wq);
                        }
                    }
                    for (a, col) in acc.chunks(r).zip(&self.cols[p * p2..(p + 1) * p2]) {
                        let c = *col as usize;
                        axpy(&mut gt[c * r..(c + 1) * r], a, 1.0);
                    }
                }
                untransposed(&gt, r, g);
            },
        );
        out
    }

    /// The dense [width, k] matrix these frequencies stand for (tests and the critic, which
    /// reads every frequency's entries).
    pub fn dense(&self) -> Result<Tensor> {
        let index: Vec<u32> = self.index.to_vec1()?;
        let w: Vec<f32> = self.w.flatten_all()?.to_vec1()?;
        let pick: Vec<u32> = self.pick.to_vec1()?;
        let mut v = vec![0f32; self.width * self.k];
        for (j, slot) in pick.iter().enumerate() {
            let (place, pos) = (*slot as usize / self.most, *slot as usize % self.most);
            let cols = &index[place * self.patch2..(place + 1) * self.patch2];
            for (q, col) in cols.iter().enumerate() {
                v[*col as usize * self.k + j] = w[(place * self.patch2 + q) * self.most + pos];
            }
        }
        Ok(Tensor::from_vec(
            v,
            (self.width, self.k),
            self.index.device(),
        )?)
    }
}

/// Rows handled together by the CPU's loops: long enough that a multiply-add over one
/// pixel's values across them vectorizes well, short enough that the block's transposed
/// pixels stay in the cache and a batch of 200 splits over the cores.
const ROWS: usize = 32;

/// `f(out_block, in_block)` over [`ROWS`]-row blocks of `out` (rows of `out_w` values) and
/// `input` (rows of `in_w`), in parallel, each block's work in the AVX2 copy where the CPU
/// has it. Mark `f` `#[inline(always)]` so that it is compiled into that copy.
fn in_blocks(
    out: &mut [f32],
    input: &[f32],
    (out_w, in_w): (usize, usize),
    f: impl Fn(&mut [f32], &[f32]) + Sync,
) {
    use rayon::prelude::*;
    out.par_chunks_mut(ROWS * out_w)
        .zip(input.par_chunks(ROWS * in_w))
        .for_each(|(o, block)| {
            with_avx2(
                #[inline(always)]
                || f(o, block),
            )
        });
}

/// `rows` [r, width] as [width, r]: each column's values across the rows, contiguous.
#[inline(always)]
fn transposed(rows: &[f32], width: usize) -> Vec<f32> {
    let r = rows.len() / width;
    let mut t = vec![0f32; rows.len()];
    for (l, row) in rows.chunks(width).enumerate() {
        for (t, v) in t[l..].iter_mut().step_by(r).zip(row) {
            *t = *v;
        }
    }
    t
}

/// The inverse of [`transposed`]: `t` [width, r] written as rows [r, width] into `rows`.
#[inline(always)]
fn untransposed(t: &[f32], r: usize, rows: &mut [f32]) {
    let width = t.len() / r;
    for (l, row) in rows.chunks_mut(width).enumerate() {
        for (v, col) in row.iter_mut().zip(t.chunks(r)) {
            *v = col[l];
        }
    }
}

/// acc += a·x, element by element (a loop the compiler vectorizes).
#[inline(always)]
fn axpy(acc: &mut [f32], x: &[f32], a: f32) {
    for (s, v) in acc.iter_mut().zip(x) {
        *s += a * v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::embedding::local_frequencies;
    use crate::nn::layers::loss_grad;
    use crate::nn::reference::max_gap as gap;
    use rand::SeedableRng;

    /// Drawn from the same seed, the placed frequencies are the dense matrix that
    /// `local_frequencies` (the slow, obvious form) draws, and they project, and pass a
    /// gradient back to the rows, as that matrix does under autograd. Labels first and
    /// last, more frequencies than places (several share a place), and a batch of one full
    /// block of rows and a part of one.
    #[test]
    fn placed_frequencies_are_the_dense_local_ones() {
        let dev = candle_core::Device::Cpu;
        for (label, k, seed) in [((0, 3), 40, 1u64), ((36, 4), 7, 2), ((0, 2), 300, 3)] {
            let (side, patch) = (6, 3);
            let width = side * side + label.1;
            let grid = ImageLayout::of_span(width, Some(label)).unwrap();
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let want = local_frequencies(width, &grid, k, (patch, 1.3), &mut rng, &dev).unwrap();
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let placed =
                PlacedFrequencies::draw(width, &grid, k, (patch, 1.3), &mut rng, &dev).unwrap();
            assert_eq!(placed.count(), k);
            assert_eq!(gap(&placed.dense().unwrap(), &want), 0.0, "k = {k}");
            let x = Tensor::rand(0f32, 1f32, (11, width), &dev).unwrap();
            // The CPU's loops and the tensor operations other devices run.
            let dense_proj = x.matmul(&want).unwrap();
            for proj in [placed.project(&x), placed.project_tensors(&x)] {
                let proj = proj.unwrap();
                assert_eq!(proj.dims(), &[11, k]);
                assert!(gap(&proj, &dense_proj) < 1e-4);
            }
            let g = Tensor::rand(-1f32, 1f32, (11, k), &dev).unwrap();
            let (_, grad) = loss_grad(&x, |x| (x.matmul(&want)? * &g)?.sum_all()).unwrap();
            assert!(gap(&placed.project_back(&g).unwrap(), &grad) < 1e-4);
            assert!(gap(&placed.back_tensors(&g).unwrap(), &grad) < 1e-4);
        }
        let grid = ImageLayout::of_span(39, Some((0, 3))).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        let dev = candle_core::Device::Cpu;
        assert!(PlacedFrequencies::draw(39, &grid, 4, (7, 1.0), &mut rng, &dev).is_err());
        assert!(PlacedFrequencies::draw(39, &grid, 4, (3, 0.0), &mut rng, &dev).is_err());
    }
}
