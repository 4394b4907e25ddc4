//! A model file's header: what was trained, on which schema, under which privacy
//! statement, and how sampling is conditioned. It is JSON in the safetensors metadata and
//! holds only DP outputs and public facts.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::data::schema::Schema;
use crate::methods::pgm::GraphicalHeader;
use crate::methods::{MethodError, Result};
use crate::nn::spec::BlockSpec;
use crate::privacy::Charge;

use super::mixture::*;
use super::{HEADER_KEY, MODEL_FORMAT};

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
    /// Columns whose kind (binary / categorical / continuous / ignored) or date format was
    /// guessed from the private rows: the guarantee does not cover those facts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub non_private_kinds: Vec<String>,
    /// Columns the private domain estimate dropped: no value of theirs was frequent enough
    /// to pass its threshold, so the model does not synthesize them (the data's owner
    /// learns it here and in the cost preview's diagnostic, not from a broken file).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped_columns: Vec<String>,
    /// True when a fixed seed was used: reproducible, not for release.
    pub not_for_release: bool,
    /// The number of records the user gave as a public fact, which sampling rates and σ
    /// were computed from; `None`: the data's row count was used and is treated as public
    /// (the usual convention; q = batch / N in the statement reveals it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_rows: Option<usize>,
    /// Where the records were counted when not here: an opaque reference to the query
    /// engine's table (`engine table 3fa2…`, a digest of its address, which is not
    /// released). Only exact counts left it; the noise was added here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted_by: Option<String>,
    /// Rules between columns the user stated as public facts (no privacy cost): every
    /// released row obeys them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
    /// Columns with point masses the user named (values many rows hold exactly, kept
    /// exact): public facts, like their bounds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub point_masses: Vec<String>,
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

    /// A conditional generator's input: latent rows `z` followed by `classes` one-hot.
    pub fn input(&self, z: &Tensor, classes: &[usize]) -> candle_core::Result<Tensor> {
        let h = Tensor::from_vec(
            self.one_hot(classes),
            (classes.len(), self.classes),
            z.device(),
        )?;
        Tensor::cat(&[z, &h], 1)
    }

    /// The mask [1, width] and fill [rows, width] that set generated rows' label span to
    /// `classes` while training (`rows · mask + fill`), as sampling does.
    pub fn fix(
        &self,
        classes: &[usize],
        width: usize,
        dev: &Device,
    ) -> candle_core::Result<(Tensor, Tensor)> {
        let w = self.span_width();
        let mut mask = vec![1f32; width];
        mask[self.start..self.start + w]
            .iter_mut()
            .for_each(|m| *m = 0.0);
        let span = self.span_values(classes);
        let mut fill = vec![0f32; classes.len() * width];
        for (i, row) in fill.chunks_mut(width).enumerate() {
            row[self.start..self.start + w].copy_from_slice(&span[i * w..(i + 1) * w]);
        }
        Ok((
            Tensor::from_vec(mask, (1, width), dev)?,
            Tensor::from_vec(fill, (classes.len(), width), dev)?,
        ))
    }
}

/// `y` with its label span set by `fix` (a [`Conditioning::fix`]; unchanged without one):
/// what a class-conditional generator's rows are while it trains.
pub(crate) fn with_label(
    y: &Tensor,
    fix: &Option<(Tensor, Tensor)>,
) -> candle_core::Result<Tensor> {
    match fix {
        Some((mask, fill)) => y.broadcast_mul(mask)? + fill,
        None => Ok(y.clone()),
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
    /// Set for a model boosted by post-GAN boosting: how its weighted sample set was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mixture: Option<Mixture>,
    /// Set for a marginal method's graphical model (MST, AIM): its domain and junction
    /// tree; the node tables are the `pgm.*` tensors, and there is no generator network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graphical: Option<GraphicalHeader>,
    /// Set for an image generator released with a labeller (a DP-SGD classifier): its
    /// architecture and where it reads a row; the weights are the `labeller.*` tensors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labeller: Option<super::LabellerHeader>,
}

impl super::ReleasedModel {
    /// A model file's header alone, without reading its weights: the safetensors length
    /// prefix, then the JSON it counts, whose metadata holds the dpsynth header. For lists
    /// of kept runs, where loading every model's weights to show its statement would cost
    /// seconds. Checked for format only: the checksum covers the weights too, so a model is
    /// [`Self::load`]ed (and checked) before anything samples from it.
    pub fn read_header(path: &Path) -> Result<ModelHeader> {
        let name = path.display().to_string();
        let f =
            std::fs::File::open(path).map_err(|e| MethodError::Model(format!("{name}: {e}")))?;
        Self::header_from(f, &name)
    }

    /// [`Self::read_header`] from any reader (the fuzzer feeds it bytes); `name` is for
    /// messages.
    pub fn header_from(mut f: impl std::io::Read, name: &str) -> Result<ModelHeader> {
        use std::io::Read as _;
        let bad = |m: String| MethodError::Model(format!("{name}: {m}"));
        let mut len = [0u8; 8];
        f.read_exact(&mut len)
            .map_err(|_| bad("not a dpsynth model file (shorter than its length prefix)".into()))?;
        let n = u64::from_le_bytes(len);
        // safetensors' own limit on a header.
        if n > 100_000_000 {
            return Err(bad(format!(
                "not a dpsynth model file (a header of {n} bytes)"
            )));
        }
        let mut text = Vec::with_capacity(n as usize);
        f.take(n)
            .read_to_end(&mut text)
            .map_err(|e| bad(e.to_string()))?;
        if text.len() as u64 != n {
            return Err(bad("the header is cut short".into()));
        }
        #[derive(serde::Deserialize)]
        struct Outer {
            #[serde(rename = "__metadata__")]
            metadata: Option<HashMap<String, String>>,
        }
        let outer: Outer = serde_json::from_slice(&text)
            .map_err(|e| bad(format!("not a dpsynth model file ({e})")))?;
        let header = outer
            .metadata
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
        Ok(header)
    }
}
