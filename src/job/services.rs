//! Released models as the window and the CLI use them: read a model's statement, sample
//! it, export samples as CSV, copy it. All of it is post-processing of a DP release: no
//! private row is read and nothing is charged.

use std::path::Path;

use super::{JobError, PrivacyStatement};
use crate::data::Table;
use crate::data::schema::Schema;
use crate::methods::released::ReleasedModel;

/// What a model file says about itself.
#[derive(Debug, Clone)]
pub struct ModelSummary {
    pub method: String,
    pub preset: String,
    pub statement: PrivacyStatement,
    pub schema: Schema,
    /// The image side when the model generates `label, pixel0, …` images.
    pub image_side: Option<usize>,
}

fn load(path: &Path) -> Result<ReleasedModel, JobError> {
    ReleasedModel::load(path, &candle_core::Device::Cpu).map_err(|e| JobError::file(path, e))
}

/// Reads a model file's header (and checks its weights load).
pub fn read_model(path: &Path) -> Result<ModelSummary, JobError> {
    let m = load(path)?;
    let schema = m.header.schema.clone();
    Ok(ModelSummary {
        method: m.header.method.clone(),
        preset: m.header.preset.clone(),
        statement: m.header.privacy.clone(),
        image_side: image_side(&schema),
        schema,
    })
}

/// `rows` synthetic rows from a model file, decoded (a fixed `seed` reproduces them).
pub fn sample(model: &Path, rows: usize, seed: Option<u64>) -> Result<Table, JobError> {
    load(model)?
        .sample(rows, seed)
        .map_err(|e| JobError::Training(format!("sampling {}: {e}", model.display())))
}

/// Samples `rows` rows from the model file and writes them as CSV (atomically).
pub fn export_csv(model: &Path, rows: usize, out: &Path) -> Result<(), JobError> {
    if out.as_os_str().is_empty() {
        return Err(JobError::Usage(
            "type a file path to export to first".into(),
        ));
    }
    let t = sample(model, rows, None)?;
    crate::data::export::write_csv(&t, out).map_err(|e| JobError::write(out, e))
}

/// Copies the released model file. It holds the generator and its privacy statement only
/// (no critic, no encoder, no training rows): safe to hand out as it is.
pub fn copy_model(model: &Path, to: &Path) -> Result<(), JobError> {
    let bytes = std::fs::read(model).map_err(|e| JobError::file(model, e))?;
    crate::util::atomic::write_atomic(to, &bytes).map_err(|e| JobError::write(to, e))
}

/// The image side of a schema of images (columns `label, pixel0, …` with a square count).
pub fn image_side(schema: &Schema) -> Option<usize> {
    let cols = &schema.columns;
    let px = cols.iter().filter(|c| c.name.starts_with("pixel")).count();
    let side = (px as f64).sqrt().round() as usize;
    (px >= 4 && side * side == px && cols.first().is_some_and(|c| c.name == "label"))
        .then_some(side)
}
