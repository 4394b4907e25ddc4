//! The labeller as a model file holds it: a classifier released beside a conditional
//! image generator, and the class it reads off each generated row. Trained by DP-SGD in
//! [`crate::methods::labeller`]; everything here is post-processing of that release.

use candle_core::{D, Device, Tensor};

use super::Result;
use crate::methods::MethodError;
use crate::nn::layers::Net;
use crate::nn::spec::BlockSpec;

/// Where a labeller reads a row: the pixels (the label span is never an input).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LabellerHeader {
    pub spec: Vec<BlockSpec>,
    pub pixel_start: usize,
    pub pixels: usize,
}

/// A trained labeller.
#[derive(Debug, Clone)]
pub struct Labeller {
    pub header: LabellerHeader,
    pub net: Net,
}

impl Labeller {
    /// The class each of the rows (`width` values each) reads as.
    pub fn classes_of(&self, rows: &[f32], width: usize) -> Result<Vec<usize>> {
        let n = rows.len() / width.max(1);
        let dev = self.net.device.clone();
        let mut px = Vec::with_capacity(n * self.header.pixels);
        for row in rows.chunks(width) {
            let start = self.header.pixel_start;
            let Some(p) = row.get(start..start.saturating_add(self.header.pixels)) else {
                return Err(MethodError::Model(
                    "the labeller reads more pixels than the rows hold; the file is damaged".into(),
                ));
            };
            px.extend_from_slice(p);
        }
        let x = Tensor::from_vec(px, (n, self.header.pixels), &dev)?;
        let y = self.net.forward(&x, None)?;
        Ok(y.argmax(D::Minus1)?
            .to_vec1::<u32>()?
            .into_iter()
            .map(|c| c as usize)
            .collect())
    }

    /// The labeller from a model file's header and weights.
    pub fn from_parts(header: LabellerHeader, params: &[Tensor], dev: &Device) -> Result<Self> {
        let net = Net::from_spec(&header.spec, params, dev)?;
        Ok(Self { header, net })
    }
}
