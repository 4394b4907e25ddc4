//! Small grayscale images: MNIST IDX files (raw or `.gz`) and `label,pixel0..pixelN` CSVs.
//!
//! IDX headers are checked against the file's real length before anything is allocated,
//! so a truncated or lying file gives a message, never a huge allocation or a panic.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::error::DataError;
use super::table::{Table, Values};

/// Largest image side accepted (MNIST is 28).
pub const MAX_SIDE: usize = 256;
/// Largest decompressed IDX payload accepted.
const MAX_IDX_BYTES: u64 = 1 << 30;

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

/// An IDX file read header first: its dimensions and its payload.
struct Idx {
    dims: Vec<usize>,
    payload: Vec<u8>,
}

/// Reads an IDX file (raw or gzip'd) header first: the header is checked, the payload
/// size it declares is computed with checked arithmetic and bounded ([`MAX_IDX_BYTES`]),
/// and then exactly that many bytes are read. A gzip bomb, or a header that declares
/// terabytes, is refused after reading a few bytes instead of after filling memory.
/// `ndim` is what the caller expects (1 for labels, 3 for images).
fn read_idx(path: &Path, ndim: usize) -> Result<Idx, DataError> {
    let file = std::fs::File::open(path).map_err(|e| DataError::io(path, e))?;
    read_idx_from(
        std::io::BufReader::new(file),
        &path.display().to_string(),
        ndim,
    )
}

/// [`read_idx`] from any buffered reader; `name` is used in messages.
fn read_idx_from(
    mut file: impl std::io::BufRead,
    name: &str,
    ndim: usize,
) -> Result<Idx, DataError> {
    let bad = |m: String| DataError::file(name, m);
    let gz = file
        .fill_buf()
        .map_err(|e| bad(format!("could not be read: {e}")))?
        .starts_with(&[0x1f, 0x8b]);
    let mut reader: Box<dyn Read + '_> = if gz {
        Box::new(flate2::read::GzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let damaged = |e: std::io::Error| {
        if gz {
            bad(format!(
                "the gzip stream is damaged or truncated ({e}); download the file again"
            ))
        } else {
            bad(format!("could not be read: {e}"))
        }
    };
    // The header: 4 magic bytes, then 4 bytes per dimension.
    let mut head = [0u8; 16];
    let got = read_up_to(&mut reader, &mut head[..4]).map_err(damaged)?;
    let declared_ndim = head[3] as usize;
    let head_len = if got == 4 && (1..=3).contains(&declared_ndim) {
        4 + 4 * declared_ndim
    } else {
        got
    };
    let got = got + read_up_to(&mut reader, &mut head[got..head_len]).map_err(damaged)?;
    let (_, dims) = idx_header(&head[..got], name)?;
    let declared = check_dims(&dims, ndim).map_err(bad)?;
    let mut payload = Vec::with_capacity(declared);
    (&mut reader)
        .take(declared as u64 + 1)
        .read_to_end(&mut payload)
        .map_err(damaged)?;
    if payload.len() != declared {
        let what = payload_mismatch(&dims, declared, payload.len());
        return Err(bad(format!("{what} (truncated or wrong header)")));
    }
    Ok(Idx { dims, payload })
}

/// Reads until `buf` is full or the stream ends; returns how many bytes were read.
fn read_up_to(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Parses an IDX header; returns (type code, dims).
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
    let idx = read_idx(path, 3)?;
    Ok(ImageSet {
        width: idx.dims[2],
        height: idx.dims[1],
        pixels: idx.payload,
        labels: None,
    })
}

/// Parses the bytes of an IDX file (raw or gzip'd): images when it has three
/// dimensions, else labels as one-pixel images. For the fuzz targets and for tests.
pub fn parse_idx(bytes: &[u8], name: &str) -> Result<ImageSet, DataError> {
    let ndim = if bytes.starts_with(&[0x1f, 0x8b]) || bytes.get(3) == Some(&3) {
        3
    } else {
        1
    };
    let idx = read_idx_from(bytes, name, ndim)?;
    Ok(match ndim {
        3 => ImageSet {
            width: idx.dims[2],
            height: idx.dims[1],
            pixels: idx.payload,
            labels: None,
        },
        _ => ImageSet {
            width: 1,
            height: 1,
            labels: Some(idx.payload.clone()),
            pixels: idx.payload,
        },
    })
}

/// Loads an `idx1` label file.
pub fn load_idx_labels(path: &Path) -> Result<Vec<u8>, DataError> {
    Ok(read_idx(path, 1)?.payload)
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
/// The image side when `schema` is the `label, pixel0, …` layout of square images (the
/// one rule: the job's model summary and the sampler's jitter both ask it).
pub fn image_side(schema: &crate::data::schema::Schema) -> Option<usize> {
    let cols = &schema.columns;
    let px = cols.iter().filter(|c| c.name.starts_with("pixel")).count();
    let side = (px as f64).sqrt().round() as usize;
    (px >= 4 && side * side == px && cols.first().is_some_and(|c| c.name == "label"))
        .then_some(side)
}

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
            time_format: None,
            domain: Some(Domain::Categories((0..10).map(|d| d.to_string()).collect())),
            point_masses: Vec::new(),
            point_masses_estimated: false,
            no_point_masses: false,
            decimals: None,
            kind_from_data: false,
            blank_share: None,
            codebook: false,
            provenance: Provenance::UserProvided,
        });
    }
    for k in 0..width * height {
        cols.push(ColumnSpec {
            name: format!("pixel{k}"),
            kind: Kind::Continuous,
            integer: true,
            missing: false,
            time_format: None,
            domain: Some(Domain::Bounds {
                lower: 0.0,
                upper: 255.0,
            }),
            point_masses: Vec::new(),
            point_masses_estimated: false,
            no_point_masses: false,
            decimals: None,
            kind_from_data: false,
            blank_share: None,
            codebook: false,
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

/// The payload's size in bytes an IDX header's `dims` declare, refused unless they are
/// `ndim` dimensions (3 for images, 1 for labels) of a readable size.
fn check_dims(dims: &[usize], ndim: usize) -> Result<usize, String> {
    if dims.len() != ndim {
        return Err(if ndim == 3 {
            format!(
                "has {} IDX dimensions; an image file has 3 (count, rows, columns)",
                dims.len()
            )
        } else {
            format!("has {} IDX dimensions; a label file has 1", dims.len())
        });
    }
    if ndim == 3 {
        let (h, w) = (dims[1], dims[2]);
        if h == 0 || w == 0 || h > MAX_SIDE || w > MAX_SIDE {
            return Err(format!(
                "declares {h}×{w} images; sides must be 1..={MAX_SIDE}"
            ));
        }
        if dims[0] == 0 {
            return Err("declares zero images".into());
        }
    }
    let declared = dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64))
        .filter(|&b| b <= MAX_IDX_BYTES);
    declared.map(|b| b as usize).ok_or_else(|| {
        format!(
            "declares {} ({} bytes of payload); dpsynth reads IDX files of at most {} MB",
            dims.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join("×"),
            dims.iter().map(|&d| d as u128).product::<u128>(),
            MAX_IDX_BYTES >> 20
        )
    })
}

/// What a payload of `got` bytes lacks (or has too much of) against the `declared` size.
fn payload_mismatch(dims: &[usize], declared: usize, got: usize) -> String {
    let more = if got > declared { "more than " } else { "" };
    let got = got.min(declared);
    if dims.len() == 3 {
        format!(
            "declares {} images of {}×{} ({declared} bytes) but holds {more}{got} bytes of pixels",
            dims[0], dims[1], dims[2]
        )
    } else {
        format!("declares {declared} labels but holds {more}{got}")
    }
}
