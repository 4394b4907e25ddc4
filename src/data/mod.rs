//! Brief overview: everything between a file on disk and the matrix a method trains on.
//!
//! - [`table::Table`]: a loaded CSV, column by column (numbers or text, `None` = missing).
//! - [`csv`]: the polars-backed CSV loader with delimiter sniffing and clear limits.
//! - [`source`]: a `--data` path split into file, sheet and header row, and its format.
//! - [`workbook`], [`columnar`], [`stat_files`]: Excel/ODS, Parquet/Arrow IPC and
//!   SPSS/Stata readers, all finished by [`cells`] under the CSV's rules.
//! - [`image`]: MNIST IDX files and `label,pixel0..` CSVs as an [`image::ImageSet`].
//! - [`schema`]: each column's kind and public domain, with the domain's provenance.
//! - [`infer`]: a first guess at the schema from the data (marked `FromData`: not private).
//! - [`times`]: date/time cells as days since 1970 and back, in the file's own format.
//! - [`encode`]: schema-driven encoding into `[0,1]` columns with spans, and decoding back.
//! - [`export`]: atomic CSV export of a decoded table.
//! - [`stream`], [`engine`]: a table read in parts, or counted by a query engine where it
//!   lies (Ballista, cargo feature `ballista`), for the methods that need only counts.
//!
//! Layering: this module may use `privacy` (to charge DP domain estimates) but never
//! `nn`, `methods`, `gui` or `cli`. Polars types stay inside [`csv`].

pub mod bound_trials;
pub mod cells;
pub mod columnar;
pub mod csv;
pub mod digest;
pub mod domain_check;
pub mod encode;
pub mod engine;
pub mod error;
pub mod estimate;
pub mod export;
pub mod image;
pub mod infer;
pub mod linked;
pub mod measured_map;
pub mod rules;
pub mod schema;
pub mod source;
pub mod stat_files;
pub mod stream;
pub mod table;
pub mod times;
pub mod workbook;

pub use error::DataError;
pub use table::{Column, Table, Values};

use std::path::Path;

/// What a data file turned out to hold.
#[derive(Debug, Clone)]
pub enum Dataset {
    /// A table of mixed columns.
    Table(Table),
    /// Small grayscale images with optional labels.
    Images(image::ImageSet),
}

/// Opens a table (CSV/TSV, Excel or ODS sheet, Parquet, Arrow IPC, SPSS, Stata), an image
/// CSV (`label,pixel0..pixelN`), an MNIST IDX file, or a folder holding MNIST IDX files;
/// the file's content decides, not only its name. `path` may select a sheet and header row
/// ([`source::Source`]).
pub fn open(path: &Path, opts: &csv::LoadOptions) -> Result<Dataset, DataError> {
    open_with_progress(path, opts, &mut |_, _| {})
}

/// [`open`], reporting `(bytes_read, file_size)` while a CSV file is read.
pub fn open_with_progress(
    path: &Path,
    opts: &csv::LoadOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Dataset, DataError> {
    crate::util::tally::note(crate::util::tally::Work::Parse, path);
    if path.is_dir() || image::looks_like_idx(path) {
        return image::load_idx_dataset(path).map(Dataset::Images);
    }
    let src = source::Source::parse(path);
    let format = source::detect(&src.file);
    if format != source::Format::Workbook && (src.sheet.is_some() || src.header_row.is_some()) {
        return Err(DataError::file(
            &path.display().to_string(),
            "no such file (a '#sheet' selector applies to spreadsheets only)",
        ));
    }
    if format != source::Format::Csv && !src.file.is_file() {
        return Err(DataError::io(
            &src.file,
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
        ));
    }
    let name = src.file.display().to_string();
    let table = match format {
        source::Format::Csv => csv::load_csv_with_progress(&src.file, opts, progress)?,
        source::Format::Workbook => cells::finish(&name, workbook::read(&src)?, opts)?,
        source::Format::Parquet | source::Format::ArrowIpc => {
            cells::finish(&name, columnar::read(&src, format)?, opts)?
        }
        source::Format::Spss => cells::finish(&name, stat_files::read_spss(&src.file)?, opts)?,
        source::Format::Stata => cells::finish(&name, stat_files::read_stata(&src.file)?, opts)?,
    };
    if image::is_image_header(&table) {
        return image::from_pixel_table(&table, &path.display().to_string()).map(Dataset::Images);
    }
    Ok(Dataset::Table(table))
}
