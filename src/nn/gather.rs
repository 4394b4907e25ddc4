//! A convolution's gather map and its adjoint, on any device: the patches of an image as
//! rows (im2col), and the sum of the patch entries back onto the pixels they read.
//!
//! On the CPU both are loops over the precomputed map and its inverse, parallel over
//! examples (candle's generic `index_select`/`index_add` were 10–50× slower there). Other
//! devices gather with `index_select`, and scatter by gathering too: each input value's
//! readers, padded to the most any value has, then a sum. (candle's CUDA `index_add` gives
//! one thread to each example and walks the whole map in it: 256 threads on a GPU, each
//! 25,000 dependent steps for the DCGAN critic's second layer, which made the private step
//! on an H200 only 3.4× faster than two CPU cores; gathered, 40×.)

use std::sync::Arc;

use candle_core::{Device, Tensor};

use super::host::on_values;
use super::{NnError, Result};

/// A gather map and its inverse, on the host and (for other devices) on the device.
#[derive(Debug, Clone)]
pub(super) struct Gather {
    /// Values per example on the gathered side (the convolution's input).
    dim: usize,
    /// Entries per row: L·p.
    map: Arc<[u32]>,
    /// For each gathered value i, the entries `inv[inv_start[i]..inv_start[i + 1]]`
    /// that read it (the scatter as a gather, with no write conflicts).
    inv_start: Arc<[u32]>,
    inv: Arc<[u32]>,
    device_map: Tensor,
    /// The inverse padded to `readers` entries per gathered value, [dim · readers], on
    /// the layer's device; a padding entry points one past the last map entry (a zero).
    device_inv: Tensor,
    readers: usize,
}

impl Gather {
    pub(super) fn new(map: Vec<u32>, dim: usize, dev: &Device) -> Result<Self> {
        let mut start = vec![0u32; dim + 1];
        for &m in &map {
            if (m as usize) < dim {
                start[m as usize + 1] += 1;
            }
        }
        for i in 0..dim {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut inv = vec![0u32; start[dim] as usize];
        for (j, &m) in map.iter().enumerate() {
            if (m as usize) < dim {
                inv[fill[m as usize] as usize] = j as u32;
                fill[m as usize] += 1;
            }
        }
        let n = map.len();
        let readers = (0..dim)
            .map(|i| (start[i + 1] - start[i]) as usize)
            .max()
            .unwrap_or(0)
            .max(1);
        let none = u32::try_from(n)
            .map_err(|_| NnError::Invalid("the convolution's gather map is too large".into()))?;
        let mut padded = vec![none; dim * readers];
        for (i, row) in padded.chunks_mut(readers).enumerate() {
            let (a, b) = (start[i] as usize, start[i + 1] as usize);
            row[..b - a].copy_from_slice(&inv[a..b]);
        }
        Ok(Self {
            dim,
            device_map: Tensor::from_vec(map.clone(), n, dev)?,
            device_inv: Tensor::from_vec(padded, dim * readers, dev)?,
            readers,
            map: map.into(),
            inv_start: start.into(),
            inv: inv.into(),
        })
    }

    /// x [B, dim] → [B, L·p] (padding reads zero).
    pub(super) fn gather(&self, x: &Tensor) -> Result<Tensor> {
        let (bsz, d) = x.dims2()?;
        if x.device().is_cpu() {
            use rayon::prelude::*;
            let m = self.map.len();
            let run = |xv: &[f32]| {
                let mut out = vec![0f32; bsz * m];
                out.par_chunks_mut(m)
                    .zip(xv.par_chunks(d))
                    .for_each(|(o, xr)| {
                        for (o, &k) in o.iter_mut().zip(self.map.iter()) {
                            *o = xr.get(k as usize).copied().unwrap_or(0.0);
                        }
                    });
                out
            };
            let out = on_values(x, run)?;
            return Ok(Tensor::from_vec(out, (bsz, m), x.device())?);
        }
        let padded = Tensor::cat(&[x, &Tensor::zeros((bsz, 1), x.dtype(), x.device())?], 1)?;
        Ok(padded.index_select(&self.device_map, 1)?)
    }

    /// The adjoint: cols [B, L·p] → [B, dim], each value the sum of the entries that
    /// read it.
    pub(super) fn scatter(&self, cols: &Tensor) -> Result<Tensor> {
        let (bsz, m) = cols.dims2()?;
        let d = self.dim;
        if cols.device().is_cpu() {
            use rayon::prelude::*;
            let run = |cv: &[f32]| {
                let mut out = vec![0f32; bsz * d];
                out.par_chunks_mut(d)
                    .zip(cv.par_chunks(m))
                    .for_each(|(o, cr)| {
                        for (i, o) in o.iter_mut().enumerate() {
                            let (a, b) =
                                (self.inv_start[i] as usize, self.inv_start[i + 1] as usize);
                            *o = self.inv[a..b].iter().map(|&j| cr[j as usize]).sum();
                        }
                    });
                out
            };
            let out = on_values(cols, run)?;
            return Ok(Tensor::from_vec(out, (bsz, d), cols.device())?);
        }
        self.scatter_by_gathering(cols)
    }

    /// [`Self::scatter`] with device ops only: every value's readers gathered (a zero for
    /// padding) and summed, so each output value is one thread's short sum.
    fn scatter_by_gathering(&self, cols: &Tensor) -> Result<Tensor> {
        let (bsz, m) = cols.dims2()?;
        if m != self.map.len() {
            return Err(NnError::Invalid(format!(
                "a scatter over {} entries got {m}",
                self.map.len()
            )));
        }
        let padded = Tensor::cat(
            &[cols, &Tensor::zeros((bsz, 1), cols.dtype(), cols.device())?],
            1,
        )?;
        Ok(padded
            .index_select(&self.device_inv, 1)?
            .reshape((bsz, self.dim, self.readers))?
            .sum(2)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::conv::tests::{random, shape};

    /// The devices' scatter (gather the readers, then sum) equals the CPU's loop, for both
    /// kinds of layer and a stride that gives values different numbers of readers.
    #[test]
    fn the_device_scatter_equals_the_cpu_one() {
        for transposed in [false, true] {
            let g = shape(transposed).gathering().unwrap();
            let gather = Gather::new(g.gather_map().unwrap(), g.in_dim(), &Device::Cpu).unwrap();
            let cols = random((3, gather.map.len()), 6);
            let want = gather.scatter(&cols).unwrap();
            let got = gather.scatter_by_gathering(&cols).unwrap();
            assert_eq!(got.dims(), want.dims());
            let err = crate::nn::reference::max_gap(&got, &want);
            assert!(err < 1e-5, "transposed {transposed}: {err}");
            assert!(gather.readers > 1);
        }
    }
}
