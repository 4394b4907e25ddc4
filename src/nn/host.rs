//! Reading a CPU tensor's values where they lie, and the element-wise passes that are
//! cheaper as one loop over them than as a chain of tensor operations.
//!
//! Why: a training step on two cores spends a fifth of its time with one core idle in
//! candle's single-threaded element-wise operations and in copies (`to_vec1` before a
//! hand-written loop). Each helper here returns None where it does not apply (another
//! device, dtype or a strided layout), and its caller then takes the tensor path, which
//! the tests hold it to.

use candle_core::{CpuStorage, DType, Storage, Tensor};
use rayon::prelude::*;

use super::Result;

/// Elements per parallel chunk: large enough that rayon's overhead is noise.
const CHUNK: usize = 1 << 14;

/// Runs `f` on a contiguous F32 CPU tensor's values without copying them; None for any
/// other tensor. The tensor's storage is read-locked while `f` runs.
pub(crate) fn with_host_f32<T>(t: &Tensor, f: impl FnOnce(&[f32]) -> T) -> Option<T> {
    let (storage, layout) = t.storage_and_layout();
    let Storage::Cpu(cpu) = &*storage else {
        return None;
    };
    let (start, end) = layout.contiguous_offsets()?;
    let values: &[f32] = match cpu {
        CpuStorage::F32(v) => v.get(start..end)?,
        _ => return None,
    };
    Some(f(values))
}

/// Runs `f` on a CPU tensor's values: in place where [`with_host_f32`] can, else on an F32
/// copy (a strided view, another dtype).
pub(crate) fn on_values<T>(t: &Tensor, f: impl Fn(&[f32]) -> T) -> candle_core::Result<T> {
    match with_host_f32(t, &f) {
        Some(out) => Ok(out),
        None => Ok(f(&t.to_dtype(DType::F32)?.flatten_all()?.to_vec1()?)),
    }
}

/// Runs `f` compiled for AVX2 when the CPU has it, else as built. The release is built for
/// baseline x86-64 (SSE2), so hand-written loops ran four lanes wide where the CPU has
/// eight (gemm already picks its kernels at run time). Call it inside each parallel task,
/// around the loop itself, and mark the closure `#[inline(always)]`: only code inlined
/// into the AVX2 copy is compiled for it (a plain closure with two callers is not
/// inlined, and then runs narrow). Without FMA contraction (Rust never contracts), every lane
/// does the same adds and multiplies as the narrow build, so results are bit-identical.
#[inline(always)]
pub(crate) fn with_avx2<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU was just found to support AVX2, the only precondition.
            return unsafe { avx2(f) };
        }
    }
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// `t` [B, R, C] as a contiguous [B, C, R]: `t.transpose(1, 2)?.contiguous()?`, with a
/// loop parallel over the batch on the CPU. (candle's strided copy walks an index
/// iterator per element: the convolutions' layout changes took 5 % of a `mnist-local-long`
/// step that way.)
pub(super) fn swap_last_two(t: &Tensor) -> Result<Tensor> {
    let (b, r, c) = t.dims3()?;
    if r * c == 0 {
        return Ok(t.transpose(1, 2)?.contiguous()?);
    }
    let out = with_host_f32(t, |v| {
        let mut out = vec![0f32; v.len()];
        out.par_chunks_mut(r * c)
            .zip(v.par_chunks(r * c))
            .for_each(|(o, m)| {
                // Row i of the input is column i of the output (stride r); iterators, so
                // no index arithmetic to check. One example's matrix sits in L1/L2.
                for (i, row) in m.chunks_exact(c).enumerate() {
                    for (o, &v) in o[i..].iter_mut().step_by(r).zip(row) {
                        *o = v;
                    }
                }
            });
        out
    });
    Ok(match out {
        Some(v) => Tensor::from_vec(v, (b, c, r), t.device())?,
        None => t.transpose(1, 2)?.contiguous()?,
    })
}

/// `f` applied to each value of `a`, in one parallel pass: [`Tensor`] of `a`'s shape, or
/// None where `a` is not read in place.
pub(crate) fn map(a: &Tensor, f: impl Fn(f32) -> f32 + Sync) -> Result<Option<Tensor>> {
    let out = with_host_f32(a, |v| {
        let mut out = vec![0f32; v.len()];
        out.par_chunks_mut(CHUNK)
            .zip(v.par_chunks(CHUNK))
            .for_each(|(o, v)| {
                for (o, &v) in o.iter_mut().zip(v) {
                    *o = f(v);
                }
            });
        out
    });
    match out {
        Some(v) => Ok(Some(Tensor::from_vec(v, a.shape(), a.device())?)),
        None => Ok(None),
    }
}

/// `f(a, b)` for each pair of values of two tensors of one shape, in one parallel pass;
/// None where either is not read in place or the shapes differ.
pub(crate) fn zip_map(
    a: &Tensor,
    b: &Tensor,
    f: impl Fn(f32, f32) -> f32 + Sync,
) -> Result<Option<Tensor>> {
    if a.dims() != b.dims() {
        return Ok(None);
    }
    let out = with_host_f32(a, |av| {
        with_host_f32(b, |bv| {
            let mut out = vec![0f32; av.len()];
            out.par_chunks_mut(CHUNK)
                .zip(av.par_chunks(CHUNK).zip(bv.par_chunks(CHUNK)))
                .for_each(|(o, (a, b))| {
                    for ((o, &a), &b) in o.iter_mut().zip(a).zip(b) {
                        *o = f(a, b);
                    }
                });
            out
        })
    })
    .flatten();
    match out {
        Some(v) => Ok(Some(Tensor::from_vec(v, a.shape(), a.device())?)),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    /// The transpose equals candle's strided copy; the passes cross chunk boundaries; a
    /// strided tensor is not read in place (its caller takes the tensor path).
    #[test]
    fn host_passes_match_the_tensor_operations() {
        let dev = Device::Cpu;
        let t3 = Tensor::randn(0f32, 1.0, (3, 37, 21), &dev).unwrap();
        let swapped = swap_last_two(&t3).unwrap();
        let reference = t3.transpose(1, 2).unwrap().contiguous().unwrap();
        assert_eq!(swapped.dims(), reference.dims());
        assert_eq!(
            swapped.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
            reference.flatten_all().unwrap().to_vec1::<f32>().unwrap()
        );
        let n = (2, CHUNK + 37);
        let a = Tensor::randn(0f32, 1.0, n, &dev).unwrap();
        let b = Tensor::randn(0f32, 1.0, n, &dev).unwrap();
        let ours = zip_map(&a, &b, |x, y| x * y - 1.0)
            .unwrap()
            .expect("CPU tensors");
        let theirs = ((&a * &b).unwrap() - 1.0).unwrap();
        let sq = map(&a, |x| x * x).unwrap().expect("a CPU tensor");
        for (x, y) in [(ours, theirs), (sq, a.sqr().unwrap())] {
            assert_eq!(
                x.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
                y.flatten_all().unwrap().to_vec1::<f32>().unwrap()
            );
        }
        let t = b.t().unwrap();
        assert!(with_host_f32(&t, |v| v.len()).is_none());
        assert!(map(&t, |x| x).unwrap().is_none());
    }
}
