//! Sampling a conditional image generator through its labeller: each row's class is drawn
//! from the released proportions first, and a generated image is kept only when the
//! labeller reads it as that class; the rest are drawn again. So the classes keep the
//! released proportions, and every value written is a generator's output chosen by a
//! DP-SGD classifier's reading of generated rows: post-processing, no privacy cost.

use candle_core::{Device, Tensor};
use rand_distr::{Distribution, StandardNormal};

use super::{Conditioning, LABELLER_PREFIX, Labeller, ModelHeader, ReleasedModel, Result};
use crate::data::encode::Encoding;
use crate::nn::spec::ordered_params;

/// Rounds of drawing again before the rows still unread as their class are kept as they
/// are: a class the generator almost never makes recognisably would otherwise never end.
/// At the acceptance rates seen on MNIST (most classes over 90 %) a row is kept within
/// three rounds; twenty leave about one row in a million to a class accepted half the time.
pub const ROUNDS: usize = 20;

impl ReleasedModel {
    /// `n` rows whose images the labeller reads as their drawn class.
    pub(super) fn agreed(
        &self,
        n: usize,
        labeller: &Labeller,
        cond: &Conditioning,
        rng: &mut impl rand::Rng,
    ) -> Result<Vec<f32>> {
        let width = Encoding::new(&self.header.schema)?.width;
        self.agreed_by(n, cond, rng, |rows| labeller.classes_of(rows, width))
    }

    /// The rejection loop with any reader of rows (`read`: one class per row): the
    /// labeller's in [`Self::generate`], a stand-in whose answers are known in tests.
    /// `None` without conditioning (there is no class to agree with).
    pub fn generate_read_by(
        &self,
        n: usize,
        rng: &mut impl rand::Rng,
        read: impl Fn(&[f32]) -> Result<Vec<usize>>,
    ) -> Option<Result<Vec<f32>>> {
        let cond = self.header.conditioning.as_ref()?;
        Some(self.agreed_by(n, cond, rng, read))
    }

    fn agreed_by(
        &self,
        n: usize,
        cond: &Conditioning,
        rng: &mut impl rand::Rng,
        read: impl Fn(&[f32]) -> Result<Vec<usize>>,
    ) -> Result<Vec<f32>> {
        let width = Encoding::new(&self.header.schema)?.width;
        let wanted = cond.draw(n, &mut *rng);
        let mut out = vec![0f32; n.saturating_mul(width)];
        let mut pending: Vec<usize> = (0..n).collect();
        for round in 0..ROUNDS {
            if pending.is_empty() {
                break;
            }
            let classes: Vec<usize> = pending.iter().map(|&i| wanted[i]).collect();
            let rows = self.rows_of(&classes, cond, width, &mut *rng)?;
            let got = read(&rows)?;
            let last = round + 1 == ROUNDS;
            let mut again = Vec::new();
            for (j, &i) in pending.iter().enumerate() {
                if last || got.get(j) == Some(&classes[j]) {
                    out[i * width..(i + 1) * width]
                        .copy_from_slice(&rows[j * width..(j + 1) * width]);
                } else {
                    again.push(i);
                }
            }
            pending = again;
        }
        Ok(out)
    }

    /// One generated row per class in `classes`, the label span set to it.
    fn rows_of(
        &self,
        classes: &[usize],
        cond: &Conditioning,
        width: usize,
        rng: &mut impl rand::Rng,
    ) -> Result<Vec<f32>> {
        let dev = self.generator.device.clone();
        let d = self.header.latent_dim;
        let mut values = Vec::with_capacity(classes.len().saturating_mul(width));
        for chunk in classes.chunks(4096) {
            let z: Vec<f32> = (0..chunk.len() * d)
                .map(|_| StandardNormal.sample(&mut *rng))
                .collect();
            let z = Tensor::from_vec(z, (chunk.len(), d), &dev)?;
            let y = self.generator.forward(&cond.input(&z, chunk)?, None)?;
            let mut rows = y.flatten_all()?.to_vec1::<f32>()?;
            let w = cond.span_width();
            let span = cond.span_values(chunk);
            for (i, row) in rows.chunks_mut(width).enumerate() {
                row[cond.start..cond.start + w].copy_from_slice(&span[i * w..(i + 1) * w]);
            }
            values.extend(rows);
        }
        Ok(values)
    }
}

/// The labeller a model file holds, checked against its header: it reads pixels inside
/// the row, names one class per conditioning class, and runs.
pub(super) fn labeller_of(
    header: &ModelHeader,
    tensors: Vec<(String, Tensor)>,
    dev: &Device,
) -> std::result::Result<Option<Labeller>, String> {
    let Some(h) = &header.labeller else {
        return match tensors.is_empty() {
            true => Ok(None),
            false => Err("it holds a labeller its header does not describe".into()),
        };
    };
    let Some(cond) = &header.conditioning else {
        return Err("it holds a labeller but no classes to check".into());
    };
    let width = Encoding::new(&header.schema)
        .map_err(|e| e.to_string())?
        .width;
    if h.pixel_start
        .checked_add(h.pixels)
        .is_none_or(|end| end > width)
    {
        return Err("the labeller reads past the end of a row; the file is damaged".into());
    }
    let params = ordered_params(&h.spec, tensors, LABELLER_PREFIX).map_err(|e| e.to_string())?;
    let l = Labeller::from_parts(h.clone(), &params, dev).map_err(|e| e.to_string())?;
    let z =
        Tensor::zeros((1, h.pixels), candle_core::DType::F32, dev).map_err(|e| e.to_string())?;
    let out = l
        .net
        .forward(&z, None)
        .map_err(|e| format!("the labeller cannot run: {e}"))?;
    if out.dims() != [1, cond.classes] {
        return Err(format!(
            "the labeller names {:?} classes but the generator draws {}; the file is damaged",
            out.dims(),
            cond.classes
        ));
    }
    Ok(Some(l))
}
