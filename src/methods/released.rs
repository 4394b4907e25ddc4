//! The released model file (`.dpsynth`): a safetensors file whose metadata carries a JSON
//! header. It holds the generator and nothing else that saw private data: no critic, no
//! encoder, no rows, no statistics beyond the schema's domains (whose provenance the
//! statement lists). `dpsynth sample` needs only this file.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{Device, Tensor};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use super::{MethodError, Result};
use crate::data::Table;
use crate::data::encode::{DecodeMode, Encoding};
use crate::data::schema::Schema;
use crate::nn::layers::{BlockSpec, Net};
use crate::nn::spec::{named_params, ordered_params};
use crate::privacy::Charge;

pub const MODEL_FORMAT: &str = "dpsynth-model/1";
const HEADER_KEY: &str = "dpsynth";

/// What the release is guaranteed to be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrivacyStatement {
    /// The reported ε at `delta` (the tighter sound figure of the accountants run);
    /// `None` for a non-private reference model (ε = ∞, no guarantee).
    pub epsilon: Option<f64>,
    pub delta: f64,
    /// Which accountant gave `epsilon`: `rdp`, `pld`, or `none` for a non-private run.
    pub accountant: String,
    pub epsilon_rdp: Option<f64>,
    pub epsilon_pld: Option<f64>,
    /// Every mechanism run on the private rows, with its parameters and count.
    pub mechanisms: Vec<Charge>,
    /// Columns whose domain was read off the data: the guarantee does not cover them.
    pub non_private_domains: Vec<String>,
    /// True when a fixed seed was used: reproducible, not for release.
    pub not_for_release: bool,
    /// The number of records the user gave as a public fact, which sampling rates and σ
    /// were computed from; `None`: the data's row count was used and is treated as public
    /// (the usual convention; q = batch / N in the statement reveals it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_rows: Option<usize>,
}

/// A class-conditional generator: its input is the latent vector followed by a one-hot
/// class, and its output's label span is set to that class. Sampling draws the class from
/// `proportions` — a DP release (PEARL's noisy class counts) or a public uniform default —
/// so the file holds nothing beyond what the statement covers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conditioning {
    /// The label's span in the encoding.
    pub start: usize,
    pub classes: usize,
    /// A binary label is one 0/1 value, not a one-hot span.
    pub binary: bool,
    pub proportions: Vec<f64>,
}

impl Conditioning {
    /// Whether a header's conditioning fits an encoding of `width` (a damaged or
    /// hand-edited file must not make sampling index out of range).
    pub fn check(&self, width: usize) -> std::result::Result<(), String> {
        if self.classes == 0 || self.proportions.len() != self.classes {
            return Err(format!(
                "the conditioning names {} classes with {} proportions",
                self.classes,
                self.proportions.len()
            ));
        }
        if self.binary && self.classes != 2 {
            return Err("a binary label's conditioning must have 2 classes".into());
        }
        if self.start + self.span_width() > width {
            return Err(format!(
                "the conditioning's label span ({}..{}) is outside the {width} encoded columns",
                self.start,
                self.start + self.span_width()
            ));
        }
        Ok(())
    }

    /// `m` classes drawn from the proportions.
    pub fn draw(&self, m: usize, rng: &mut impl rand::Rng) -> Vec<usize> {
        let total: f64 = self
            .proportions
            .iter()
            .filter(|p| p.is_finite())
            .map(|p| p.max(0.0))
            .sum();
        (0..m)
            .map(|_| {
                if total <= 0.0 {
                    return rng.random_range(0..self.classes.max(1));
                }
                let mut u = rng.random::<f64>() * total;
                for (c, p) in self.proportions.iter().enumerate() {
                    let p = if p.is_finite() { p.max(0.0) } else { 0.0 };
                    if u < p {
                        return c;
                    }
                    u -= p;
                }
                self.classes - 1
            })
            .collect()
    }

    /// One-hot rows [m, classes] for `classes`.
    pub fn one_hot(&self, classes: &[usize]) -> Vec<f32> {
        let mut v = vec![0f32; classes.len() * self.classes];
        for (i, c) in classes.iter().enumerate() {
            v[i * self.classes + c.min(&(self.classes - 1))] = 1.0;
        }
        v
    }

    /// The label span's values for `classes` (one-hot, or 0/1 for a binary label), as
    /// rows of `span_width()`.
    pub fn span_values(&self, classes: &[usize]) -> Vec<f32> {
        if self.binary {
            classes.iter().map(|c| (*c == 1) as u8 as f32).collect()
        } else {
            self.one_hot(classes)
        }
    }

    pub fn span_width(&self) -> usize {
        if self.binary { 1 } else { self.classes }
    }
}

/// The JSON header of a model file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelHeader {
    pub format: String,
    pub method: String,
    pub preset: String,
    pub library_version: String,
    pub schema: Schema,
    pub latent_dim: usize,
    pub generator: Vec<BlockSpec>,
    pub privacy: PrivacyStatement,
    /// The run configuration, as given (everything needed to reproduce the run).
    pub config: serde_json::Value,
    /// Set for a class-conditional generator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditioning: Option<Conditioning>,
}

/// A trained generator with its header.
#[derive(Debug, Clone)]
pub struct ReleasedModel {
    pub header: ModelHeader,
    pub generator: Net,
}

impl ReleasedModel {
    /// Serialises to bytes (safetensors with the header in its metadata).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let tensors = named_params(&self.generator, "generator.")?;
        let header = serde_json::to_string(&self.header)
            .map_err(|e| MethodError::Model(format!("cannot write the header: {e}")))?;
        let meta: HashMap<String, String> =
            [(HEADER_KEY.to_string(), header)].into_iter().collect();
        safetensors::serialize(tensors.iter().map(|(k, v)| (k.as_str(), v)), Some(meta))
            .map_err(|e| MethodError::Model(format!("cannot write the weights: {e}")))
    }

    /// Writes the model file atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        let bytes = self.to_bytes()?;
        crate::util::atomic::write_atomic(path, &bytes)
            .map_err(|e| MethodError::Model(format!("{}: {e}", path.display())))
    }

    /// Reads a model file.
    pub fn load(path: &Path, dev: &Device) -> Result<Self> {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| MethodError::Model(format!("{name}: {e}")))?;
        Self::from_bytes(&bytes, &name, dev)
    }

    /// Parses a model file's bytes; `name` is for messages.
    pub fn from_bytes(bytes: &[u8], name: &str, dev: &Device) -> Result<Self> {
        let bad = |m: String| MethodError::Model(format!("{name}: {m}"));
        let (_, meta) = safetensors::SafeTensors::read_metadata(bytes)
            .map_err(|e| bad(format!("not a dpsynth model file ({e})")))?;
        let header = meta
            .metadata()
            .as_ref()
            .and_then(|m| m.get(HEADER_KEY))
            .ok_or_else(|| {
                bad("a safetensors file without a dpsynth header (not a released model)".into())
            })?;
        let header: ModelHeader =
            serde_json::from_str(header).map_err(|e| bad(format!("the header is damaged: {e}")))?;
        if header.format != MODEL_FORMAT {
            return Err(bad(format!(
                "format '{}' is not {MODEL_FORMAT}",
                header.format
            )));
        }
        if let Some(c) = &header.conditioning {
            let width = Encoding::new(&header.schema)
                .map_err(|e| bad(e.to_string()))?
                .width;
            c.check(width).map_err(bad)?;
        }
        let tensors: Vec<(String, Tensor)> = candle_core::safetensors::load_buffer(bytes, dev)
            .map_err(|e| bad(format!("the weights are damaged: {e}")))?
            .into_iter()
            .collect();
        // Named by layer since 0.1 of this format; files that numbered them still load.
        let params = ordered_params(&header.generator, tensors, "generator.")
            .map_err(|e| bad(e.to_string()))?;
        let generator =
            Net::from_spec(&header.generator, &params, dev).map_err(|e| bad(e.to_string()))?;
        Ok(Self { header, generator })
    }

    /// A copy whose generator no longer moves with training (for checkpoints).
    pub fn snapshot(&self) -> Result<Self> {
        Ok(Self {
            header: self.header.clone(),
            generator: self.generator.snapshot()?,
        })
    }

    /// Generates `n` rows and decodes them to a table. No private data is touched.
    pub fn sample(&self, n: usize, seed: Option<u64>) -> Result<Table> {
        let enc = Encoding::new(&self.header.schema)?;
        let mut rng = match seed {
            Some(s) => StdRng::seed_from_u64(s),
            None => StdRng::from_os_rng(),
        };
        let dev = self.generator.device.clone();
        let mut values: Vec<f32> = Vec::with_capacity(n * enc.width);
        let chunk = 4096;
        let mut done = 0;
        while done < n {
            let m = chunk.min(n - done);
            let z: Vec<f32> = (0..m * self.header.latent_dim)
                .map(|_| StandardNormal.sample(&mut rng))
                .collect();
            let (z, classes) = match &self.header.conditioning {
                Some(c) => {
                    let classes = c.draw(m, &mut rng);
                    let h = Tensor::from_vec(c.one_hot(&classes), (m, c.classes), &dev)?;
                    let z = Tensor::from_vec(z, (m, self.header.latent_dim), &dev)?;
                    (Tensor::cat(&[z, h], 1)?, Some(classes))
                }
                None => (
                    Tensor::from_vec(z, (m, self.header.latent_dim), &dev)?,
                    None,
                ),
            };
            let y = self.generator.forward(&z, None)?;
            let mut rows = y.flatten_all()?.to_vec1::<f32>()?;
            if let (Some(c), Some(classes)) = (&self.header.conditioning, classes) {
                let w = c.span_width();
                let span = c.span_values(&classes);
                for (i, row) in rows.chunks_mut(enc.width).enumerate() {
                    row[c.start..c.start + w].copy_from_slice(&span[i * w..(i + 1) * w]);
                }
            }
            values.extend(rows);
            done += m;
        }
        Ok(enc.decode(&values, DecodeMode::Sample, &mut rng)?)
    }
}

/// Writes a network that is not a released model — a run's critic checkpoint — as
/// safetensors with its architecture under the metadata key `dpsynth-net`.
pub fn save_net(net: &Net, path: &Path) -> Result<()> {
    let tensors = named_params(net, "net.")?;
    let spec = serde_json::to_string(&net.spec()?)
        .map_err(|e| MethodError::Model(format!("cannot write the architecture: {e}")))?;
    let meta: HashMap<String, String> = [("dpsynth-net".to_string(), spec)].into_iter().collect();
    let bytes = safetensors::serialize(tensors.iter().map(|(k, v)| (k.as_str(), v)), Some(meta))
        .map_err(|e| MethodError::Model(format!("cannot write the weights: {e}")))?;
    crate::util::atomic::write_atomic(path, &bytes)
        .map_err(|e| MethodError::Model(format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(classes: usize, proportions: Vec<f64>) -> Conditioning {
        Conditioning {
            start: 0,
            classes,
            binary: false,
            proportions,
        }
    }

    /// A damaged header is refused instead of panicking when sampling.
    #[test]
    fn conditioning_that_does_not_fit_is_refused() {
        assert!(cond(3, vec![0.2, 0.3, 0.5]).check(10).is_ok());
        assert!(cond(0, vec![]).check(10).is_err());
        assert!(cond(3, vec![0.5, 0.5]).check(10).is_err());
        assert!(cond(3, vec![0.2, 0.3, 0.5]).check(2).is_err());
        let mut b = cond(3, vec![0.2, 0.3, 0.5]);
        b.binary = true;
        assert!(b.check(10).is_err());
    }

    /// Classes follow the released proportions; junk proportions fall back to uniform.
    #[test]
    fn draws_follow_the_proportions() {
        let mut rng = StdRng::seed_from_u64(3);
        let d = cond(3, vec![0.1, 0.0, 0.9]).draw(20_000, &mut rng);
        let share = |c| d.iter().filter(|x| **x == c).count() as f64 / d.len() as f64;
        assert!(
            (share(0) - 0.1).abs() < 0.01 && share(1) == 0.0,
            "{}",
            share(0)
        );
        let d = cond(2, vec![f64::NAN, -1.0]).draw(2_000, &mut rng);
        assert!(d.iter().any(|c| *c == 0) && d.iter().any(|c| *c == 1));
    }
}
