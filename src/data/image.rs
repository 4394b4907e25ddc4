//! Small grayscale images: MNIST IDX files (raw or `.gz`) and `label,pixel0..pixelN` CSVs.
//!
//! IDX headers are checked against the file's real length before anything is allocated,
//! so a truncated or lying file gives a message, never a huge allocation or a panic.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use super::error::DataError;
use super::table::{Table, Values};

/// Largest image side accepted (MNIST is 28).
pub const MAX_SIDE: usize = 256;
/// Largest decompressed IDX payload accepted.
const MAX_IDX_BYTES: u64 = 1 << 31;

/// A set of `n` images of `height × width` bytes (0 = black … 255 = white), row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageSet {
    pub width: usize,
    pub height: usize,
    pub pixels: Vec<u8>,
    pub labels: Option<Vec<u8>>,
}

impl ImageSet {
    pub fn len(&self) -> usize {
        self.pixels.len() / (self.width * self.height).max(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn image(&self, i: usize) -> &[u8] {
        let s = self.width * self.height;
        &self.pixels[i * s..(i + 1) * s]
    }

    /// How many images carry each label 0..=255 (empty when unlabelled).
    pub fn label_counts(&self) -> Vec<(u8, usize)> {
        let Some(labels) = &self.labels else {
            return vec![];
        };
        let mut counts = [0usize; 256];
        for &l in labels {
            counts[l as usize] += 1;
        }
        counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(l, c)| (l as u8, *c))
            .collect()
    }

    /// The first `n` images.
    pub fn head(&self, n: usize) -> ImageSet {
        let n = n.min(self.len());
        ImageSet {
            width: self.width,
            height: self.height,
            pixels: self.pixels[..n * self.width * self.height].to_vec(),
            labels: self.labels.as_ref().map(|l| l[..n].to_vec()),
        }
    }
}

/// True when the file starts like an IDX file (raw or gzip'd) or is named like one.
pub fn looks_like_idx(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    name.contains("-idx")
        || name.ends_with(".idx")
        || name.ends_with("ubyte")
        || name.ends_with("ubyte.gz")
}

/// Reads an IDX file's bytes, decompressing gzip when the magic says so.
fn read_maybe_gz(path: &Path) -> Result<Vec<u8>, DataError> {
    let raw = std::fs::read(path).map_err(|e| DataError::io(path, e))?;
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&raw[..])
            .take(MAX_IDX_BYTES)
            .read_to_end(&mut out)
            .map_err(|e| {
                DataError::file(
                    &path.display().to_string(),
                    format!(
                        "the gzip stream is damaged or truncated ({e}); download the file again"
                    ),
                )
            })?;
        Ok(out)
    } else {
        Ok(raw)
    }
}

/// Parses an IDX header; returns (type code, dims, payload offset).
fn idx_header(bytes: &[u8], name: &str) -> Result<(u8, Vec<usize>), DataError> {
    if bytes.len() < 4 || bytes[0] != 0 || bytes[1] != 0 {
        return Err(DataError::file(
            name,
            "is not an IDX file (the first two bytes of an IDX file are zero); expected an MNIST file such as train-images-idx3-ubyte",
        ));
    }
    let ty = bytes[2];
    if ty != 0x08 {
        return Err(DataError::file(
            name,
            format!("has IDX element type 0x{ty:02x}; only unsigned bytes (0x08) are supported"),
        ));
    }
    let ndim = bytes[3] as usize;
    if ndim == 0 || ndim > 3 {
        return Err(DataError::file(
            name,
            format!("has {ndim} IDX dimensions; expected 1 (labels) or 3 (images)"),
        ));
    }
    if bytes.len() < 4 + 4 * ndim {
        return Err(DataError::file(
            name,
            "ends inside the IDX header (the file is truncated)",
        ));
    }
    let dims = (0..ndim)
        .map(|k| {
            let o = 4 + 4 * k;
            u32::from_be_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]) as usize
        })
        .collect();
    Ok((ty, dims))
}

/// Loads an `idx3` image file.
pub fn load_idx_images(path: &Path) -> Result<ImageSet, DataError> {
    let name = path.display().to_string();
    let bytes = read_maybe_gz(path)?;
    let (_, dims) = idx_header(&bytes, &name)?;
    if dims.len() != 3 {
        return Err(DataError::file(
            &name,
            format!(
                "has {} IDX dimensions; an image file has 3 (count, rows, columns)",
                dims.len()
            ),
        ));
    }
    let (n, h, w) = (dims[0], dims[1], dims[2]);
    if h == 0 || w == 0 || h > MAX_SIDE || w > MAX_SIDE {
        return Err(DataError::file(
            &name,
            format!("declares {h}×{w} images; sides must be 1..={MAX_SIDE}"),
        ));
    }
    if n == 0 {
        return Err(DataError::file(&name, "declares zero images"));
    }
    let expected = n as u128 * h as u128 * w as u128;
    let payload = (bytes.len() - 16) as u128;
    if payload != expected {
        return Err(DataError::file(
            &name,
            format!(
                "declares {n} images of {h}×{w} ({expected} bytes) but holds {payload} bytes of pixels (truncated or wrong header)"
            ),
        ));
    }
    Ok(ImageSet {
        width: w,
        height: h,
        pixels: bytes[16..].to_vec(),
        labels: None,
    })
}

/// Loads an `idx1` label file.
pub fn load_idx_labels(path: &Path) -> Result<Vec<u8>, DataError> {
    let name = path.display().to_string();
    let bytes = read_maybe_gz(path)?;
    let (_, dims) = idx_header(&bytes, &name)?;
    if dims.len() != 1 {
        return Err(DataError::file(
            &name,
            format!("has {} IDX dimensions; a label file has 1", dims.len()),
        ));
    }
    let n = dims[0];
    if bytes.len() - 8 != n {
        return Err(DataError::file(
            &name,
            format!(
                "declares {n} labels but holds {} (truncated or wrong header)",
                bytes.len() - 8
            ),
        ));
    }
    Ok(bytes[8..].to_vec())
}

/// The label file that belongs to an image file (`…-images-idx3-ubyte[.gz]` →
/// `…-labels-idx1-ubyte[.gz]`), if it exists.
pub fn sibling_labels(images: &Path) -> Option<PathBuf> {
    let name = images.file_name()?.to_string_lossy().to_string();
    if !name.contains("images-idx3") {
        return None;
    }
    let cand = images.with_file_name(name.replace("images-idx3", "labels-idx1"));
    cand.exists().then_some(cand)
}

/// Loads an IDX image file with its labels, or a folder with MNIST's training files
/// (`train-images-idx3-ubyte[.gz]` and `train-labels-idx1-ubyte[.gz]`).
pub fn load_idx_dataset(path: &Path) -> Result<ImageSet, DataError> {
    let images = if path.is_dir() {
        let found = ["train-images-idx3-ubyte.gz", "train-images-idx3-ubyte"]
            .iter()
            .map(|n| path.join(n))
            .find(|p| p.exists());
        match found {
            Some(p) => p,
            None => {
                return Err(DataError::file(
                    &path.display().to_string(),
                    "is a folder without train-images-idx3-ubyte[.gz]; open a CSV file or an MNIST IDX image file",
                ));
            }
        }
    } else {
        path.to_path_buf()
    };
    let mut set = load_idx_images(&images)?;
    if let Some(lp) = sibling_labels(&images) {
        let labels = load_idx_labels(&lp)?;
        if labels.len() != set.len() {
            return Err(DataError::file(
                &lp.display().to_string(),
                format!(
                    "holds {} labels but its image file holds {} images",
                    labels.len(),
                    set.len()
                ),
            ));
        }
        set.labels = Some(labels);
    }
    Ok(set)
}

/// True for a header `label, pixel0, …, pixel{N-1}` with N a square number ≥ 4.
pub fn is_image_header(t: &Table) -> bool {
    let n = t.columns.len();
    if n < 5 || t.columns[0].name != "label" {
        return false;
    }
    let px = n - 1;
    let side = (px as f64).sqrt().round() as usize;
    side * side == px
        && t.columns[1..]
            .iter()
            .enumerate()
            .all(|(k, c)| c.name == format!("pixel{k}"))
}

/// Turns a `label,pixel0..` table into images; every pixel must be an integer 0..=255.
pub fn from_pixel_table(t: &Table, name: &str) -> Result<ImageSet, DataError> {
    let px = t.columns.len() - 1;
    let side = (px as f64).sqrt().round() as usize;
    let n = t.n_rows;
    let mut pixels = vec![0u8; n * px];
    let mut labels = vec![0u8; n];
    let as_byte = |v: &Values, r: usize, col: &str| -> Result<u8, DataError> {
        let x = match v {
            Values::Number(v) => v[r],
            Values::Text(_) => None,
        };
        match x {
            Some(x) if x.fract() == 0.0 && (0.0..=255.0).contains(&x) => Ok(x as u8),
            _ => Err(DataError::file(
                name,
                format!(
                    "row {} column '{col}' is not an integer 0..255 (image CSVs hold label,pixel0.. as bytes)",
                    r + 1
                ),
            )),
        }
    };
    for r in 0..n {
        labels[r] = as_byte(&t.columns[0].values, r, "label")?;
    }
    for (k, c) in t.columns[1..].iter().enumerate() {
        for r in 0..n {
            pixels[r * px + k] = as_byte(&c.values, r, &c.name)?;
        }
    }
    Ok(ImageSet {
        width: side,
        height: side,
        pixels,
        labels: Some(labels),
    })
}

/// The fixed schema of an image set: `label` (categorical, "0"–"9") when the set is
/// labelled, then `pixel0…` (continuous, whole numbers in [0, 255]).
///
/// Every domain here is the file format's, not the data's — the 256 grey levels of a byte
/// and MNIST's ten digit classes — so it is public and marked user-provided: the privacy
/// guarantee covers it without reading a pixel.
pub fn image_schema(width: usize, height: usize, labelled: bool) -> crate::data::schema::Schema {
    use crate::data::schema::{ColumnSpec, Domain, Kind, Provenance, Schema};
    let mut cols = Vec::with_capacity(width * height + 1);
    if labelled {
        cols.push(ColumnSpec {
            name: "label".into(),
            kind: Kind::Categorical,
            integer: false,
            missing: false,
            domain: Some(Domain::Categories((0..10).map(|d| d.to_string()).collect())),
            provenance: Provenance::UserProvided,
        });
    }
    for k in 0..width * height {
        cols.push(ColumnSpec {
            name: format!("pixel{k}"),
            kind: Kind::Continuous,
            integer: true,
            missing: false,
            domain: Some(Domain::Bounds {
                lower: 0.0,
                upper: 255.0,
            }),
            provenance: Provenance::UserProvided,
        });
    }
    Schema::new(cols)
}

impl ImageSet {
    /// The schema [`image_schema`] gives this set.
    pub fn schema(&self) -> crate::data::schema::Schema {
        image_schema(self.width, self.height, self.labels.is_some())
    }

    /// Encodes the images straight into the layout of `self.schema()`: the label one-hot,
    /// then each pixel / 255. Equal to `Encoding::encode(&self.to_table())` (a test checks
    /// it) without the table's 16 bytes a cell: 60,000 MNIST images would need 750 MB.
    pub fn encode(&self) -> Result<crate::data::encode::EncodedData, DataError> {
        let px = self.width * self.height;
        let lw = if self.labels.is_some() { 10 } else { 0 };
        let w = lw + px;
        let n = self.len();
        let mut values = vec![0f32; n * w];
        for i in 0..n {
            let row = &mut values[i * w..(i + 1) * w];
            if let Some(labels) = &self.labels {
                let l = usize::from(labels[i]);
                if l >= 10 {
                    return Err(DataError::Schema(format!(
                        "image {} has label {l}; image sets take digit labels 0–9",
                        i + 1
                    )));
                }
                row[l] = 1.0;
            }
            for (v, p) in row[lw..].iter_mut().zip(self.image(i)) {
                *v = f32::from(*p) / 255.0;
            }
        }
        Ok(crate::data::encode::EncodedData {
            n_rows: n,
            width: w,
            values,
            clamped: vec![0; lw.min(1) + px],
            unknown: vec![0; lw.min(1) + px],
        })
    }

    /// The set as a `label, pixel0, …` table (for export and for checking [`Self::encode`]).
    pub fn to_table(&self) -> Table {
        use super::table::Column;
        let n = self.len();
        let px = self.width * self.height;
        let mut columns = Vec::with_capacity(px + 1);
        if let Some(labels) = &self.labels {
            columns.push(Column {
                name: "label".into(),
                values: Values::Text(labels.iter().map(|l| Some(l.to_string())).collect()),
            });
        }
        for k in 0..px {
            columns.push(Column {
                name: format!("pixel{k}"),
                values: Values::Number(
                    (0..n)
                        .map(|i| Some(f64::from(self.pixels[i * px + k])))
                        .collect(),
                ),
            });
        }
        Table { columns, n_rows: n }
    }
}
