//! SPSS (`.sav`, `.zsav`) and Stata (`.dta`) files: the formats survey and administrative
//! data arrive in, read with pure-Rust crates (ambers for SPSS, dta for Stata; no C
//! ReadStat to build), so the value labels and missing-value codes a conversion to CSV
//! would lose are kept.
//!
//! - **Value labels** (the file's codebook): a numeric column whose every present value is
//!   labelled is read as its labels, and the whole label set, used or not, becomes the
//!   column's category list marked as the codebook ([`super::table::TextColumn::codebook`]).
//!   It stays not-covered (`FromData`) until the user says the codebook is public: a label
//!   set may have been written from the rows. A column with only some values labelled
//!   (a 0–10 scale with its ends named) stays numeric.
//! - **Missing values**: SPSS's system-missing and its user-missing codes (discrete values
//!   and ranges, e.g. 97–99 "refused"), and Stata's `.` and `.a`–`.z`, are missing cells;
//!   labels of user-missing codes are not categories.
//! - Stata `float` cells are read at their float precision (0.1 stays 0.1), so the table
//!   and its digest match the CSV the same data exports to.

use std::path::Path;

use super::cells::{Cell, RawColumn};
use super::error::DataError;

/// Labels a column's values when every present value has one; `None` otherwise.
fn apply_labels(cells: &mut [Cell], label: impl Fn(f64) -> Option<String>) -> bool {
    let all = cells.iter().all(|c| match c {
        Cell::Number(x) => label(*x).is_some(),
        _ => true,
    });
    let any = cells.iter().any(|c| matches!(c, Cell::Number(_)));
    if !all || !any {
        return false;
    }
    for c in cells.iter_mut() {
        if let Cell::Number(x) = c {
            if let Some(l) = label(*x) {
                *c = Cell::Text(l);
            }
        }
    }
    true
}

// ---------------------------------------------------------------------------------------
// SPSS

/// The columns of an SPSS file.
pub fn read_spss(file: &Path) -> Result<Vec<RawColumn>, DataError> {
    use ambers::{MissingSpec, Value};
    let name = file.display().to_string();
    let (batch, meta) = open_sav(file, &name)?;
    let schema = batch.schema();
    let mut out = Vec::with_capacity(batch.num_columns());
    for (j, field) in schema.fields().iter().enumerate() {
        let var = field.name().clone();
        let Some(mut cells) = arrow_cells(batch.column(j).as_ref()) else {
            return Err(DataError::file(
                &name,
                format!(
                    "column '{var}' has a type dpsynth cannot read ({})",
                    field.data_type()
                ),
            ));
        };
        // User-missing codes are missing.
        let specs: &[MissingSpec] = meta
            .variable_missing_values
            .get(&var)
            .map(|v| v.as_slice())
            .unwrap_or(&[]);
        let is_missing = |c: &Cell| {
            specs.iter().any(|s| match (s, c) {
                (MissingSpec::Value(v), Cell::Number(x)) => x == v,
                (MissingSpec::Range { lo, hi }, Cell::Number(x)) => lo <= x && x <= hi,
                (MissingSpec::StringValue(v), Cell::Text(t)) => t.trim() == v.trim(),
                _ => false,
            })
        };
        for c in cells.iter_mut() {
            if is_missing(c) {
                *c = Cell::Missing;
            }
        }
        let mut codebook = Vec::new();
        if let Some(labels) = meta.variable_value_labels.get(&var) {
            let numeric: Vec<(f64, &String)> = labels
                .iter()
                .filter_map(|(v, l)| match v {
                    Value::Numeric(x) if !is_missing(&Cell::Number(*x)) => Some((*x, l)),
                    _ => None,
                })
                .collect();
            let labelled = apply_labels(&mut cells, |x| {
                numeric
                    .iter()
                    .find(|(v, _)| *v == x)
                    .map(|(_, l)| l.to_string())
            });
            if labelled {
                codebook = numeric.iter().map(|(_, l)| l.to_string()).collect();
            }
        }
        out.push(RawColumn {
            name: var,
            cells,
            codebook,
        });
    }
    Ok(out)
}

/// The SPSS file's rows and metadata, refused when it is encrypted, truncated or damaged.
fn open_sav(
    file: &Path,
    name: &str,
) -> Result<(arrow_array::RecordBatch, ambers::SpssMetadata), DataError> {
    let (batch, meta) = ambers::read_sav(file).map_err(|e| {
        let msg = e.to_string();
        if msg.to_lowercase().contains("encrypt") || msg.to_lowercase().contains("password") {
            DataError::file(
                name,
                "the SPSS file is encrypted; save an unencrypted copy in SPSS to open it here",
            )
        } else {
            DataError::file(
                name,
                format!("could not be read as an SPSS file ({msg}); is the file complete?"),
            )
        }
    })?;
    // A damaged file reads "as stored"; a table with rows silently missing would train.
    if let Some(n) = meta
        .number_rows
        .filter(|n| *n >= 0 && *n as usize != batch.num_rows())
    {
        return Err(DataError::file(
            name,
            format!(
                "says it holds {n} rows but only {} could be read: the file is truncated or damaged",
                batch.num_rows()
            ),
        ));
    }
    if !meta.warnings.is_empty() {
        return Err(DataError::file(
            name,
            format!("looks damaged: {}", meta.warnings.join("; ")),
        ));
    }
    Ok((batch, meta))
}

/// An SPSS column's cells: numbers, text, dates and times (as ISO text); `None` for a
/// type there is no reading of.
fn arrow_cells(col: &dyn arrow_array::Array) -> Option<Vec<Cell>> {
    use arrow_array::{
        Array, Date32Array, Float64Array, StringViewArray, TimestampMicrosecondArray,
    };
    let any = col.as_any();
    let cell = |i: usize, value: &dyn Fn(usize) -> Option<Cell>| {
        if col.is_null(i) {
            Cell::Missing
        } else {
            value(i).unwrap_or(Cell::Missing)
        }
    };
    let cells = if let Some(a) = any.downcast_ref::<Float64Array>() {
        (0..a.len())
            .map(|i| cell(i, &|i| Some(Cell::Number(a.value(i)))))
            .collect()
    } else if let Some(a) = any.downcast_ref::<StringViewArray>() {
        (0..a.len())
            .map(|i| cell(i, &|i| Some(Cell::Text(a.value(i).to_string()))))
            .collect()
    } else if let Some(a) = any.downcast_ref::<Date32Array>() {
        let day = |i| {
            a.value_as_date(i)
                .map(|d| Cell::Text(d.format("%Y-%m-%d").to_string()))
        };
        (0..a.len()).map(|i| cell(i, &day)).collect()
    } else if let Some(a) = any.downcast_ref::<TimestampMicrosecondArray>() {
        let time = |i| {
            a.value_as_datetime(i)
                .map(|t| Cell::Text(t.format("%Y-%m-%d %H:%M:%S").to_string()))
        };
        (0..a.len()).map(|i| cell(i, &time)).collect()
    } else {
        return None;
    };
    Some(cells)
}

// ---------------------------------------------------------------------------------------
// Stata

/// The columns of a Stata file.
pub fn read_stata(file: &Path) -> Result<Vec<RawColumn>, DataError> {
    use dta::stata::dta::dta_reader::DtaReader;
    use dta::stata::dta::long_string_table::LongStringTable;
    use dta::stata::dta::value::Value;
    use dta::stata::dta::value_label_table::ValueLabelTable;

    let name = file.display().to_string();
    let bad = |e: dta::stata::dta::dta_error::DtaError| {
        DataError::file(
            &name,
            format!("could not be read as a Stata file ({e}); is the file complete?"),
        )
    };
    let mut chars = DtaReader::new()
        .from_path(file)
        .map_err(bad)?
        .read_header()
        .map_err(bad)?
        .read_schema()
        .map_err(bad)?;
    chars.skip_to_end().map_err(bad)?;
    let mut records = chars.into_record_reader().map_err(bad)?;
    let schema = records.schema().clone();
    let vars = schema.variables();
    let mut columns: Vec<Vec<Cell>> = vec![Vec::new(); vars.len()];
    let mut long_refs = Vec::new();
    while let Some(record) = records.read_record().map_err(bad)? {
        for (j, v) in record.values().iter().enumerate() {
            let cell = match v {
                Value::Byte(x) => x.present().map(|x| x as f64),
                Value::Int(x) => x.present().map(|x| x as f64),
                Value::Long(x) => x.present().map(|x| x as f64),
                // The float's shortest text, so 0.1f32 reads as 0.1 (as its CSV export).
                Value::Float(x) => x.present().and_then(|x| format!("{x}").parse().ok()),
                Value::Double(x) => x.present(),
                Value::String(s) => {
                    columns[j].push(Cell::Text(s.to_string()));
                    continue;
                }
                Value::LongStringRef(r) => {
                    long_refs.push((j, columns[j].len(), r.clone()));
                    columns[j].push(Cell::Missing);
                    continue;
                }
            };
            columns[j].push(cell.map_or(Cell::Missing, Cell::Number));
        }
    }
    let mut strings = records.into_long_string_reader().map_err(bad)?;
    let encoding = strings.encoding();
    if !long_refs.is_empty() {
        let mut table = LongStringTable::for_reading();
        strings.read_remaining_into(&mut table).map_err(bad)?;
        for (j, i, r) in long_refs {
            if let Some(s) = table
                .get(&r)
                .and_then(|s| s.data_str(encoding).map(|t| t.into_owned()))
            {
                columns[j][i] = Cell::Text(s);
            }
        }
    } else {
        strings.skip_to_end().map_err(bad)?;
    }
    let mut labels_reader = strings.into_value_label_reader().map_err(bad)?;
    let mut labels = ValueLabelTable::new();
    labels_reader
        .read_remaining_into(&mut labels)
        .map_err(bad)?;
    Ok(vars
        .iter()
        .zip(columns)
        .map(|(var, cells)| stata_column(var, cells, &labels))
        .collect())
}

/// A Stata variable's cells, its value labels applied (and kept as its codebook) where it
/// has a label set that names its values.
fn stata_column(
    var: &dta::stata::dta::variable::Variable,
    mut cells: Vec<Cell>,
    labels: &dta::stata::dta::value_label_table::ValueLabelTable,
) -> RawColumn {
    let mut codebook = Vec::new();
    if let Some(set) = labels.get(var.value_label_name()) {
        let labelled = apply_labels(&mut cells, |x| {
            (x.fract() == 0.0 && x.abs() < i32::MAX as f64)
                .then(|| set.label_for(x as i32).map(str::to_string))
                .flatten()
        });
        if labelled {
            codebook = set
                .entries()
                .iter()
                .map(|e| e.label().to_string())
                .collect();
        }
    }
    RawColumn {
        name: var.name().to_string(),
        cells,
        codebook,
    }
}
