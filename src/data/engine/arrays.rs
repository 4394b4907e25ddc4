//! Reading values out of the engine's Arrow results, whatever type it chose for them.

use datafusion::arrow::array::{Array, ArrayRef, Float64Array, Int64Array, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;

use crate::data::cells::Cell;

pub(super) fn first_row(batches: &[RecordBatch]) -> Result<Vec<ArrayRef>, String> {
    let b = batches
        .iter()
        .find(|b| b.num_rows() > 0)
        .ok_or("the survey returned no row")?;
    Ok(b.columns().iter().map(|a| a.slice(0, 1)).collect())
}

pub(super) fn as_i64(a: &ArrayRef) -> Option<i64> {
    let a = cast(a, &DataType::Int64).ok()?;
    let a = a.as_any().downcast_ref::<Int64Array>()?;
    (!a.is_null(0)).then(|| a.value(0))
}

pub(super) fn as_f64(a: &ArrayRef) -> Option<f64> {
    let a = floats(a).ok()?;
    (!a.is_null(0)).then(|| a.value(0))
}

/// `a` cast to `to` as the array type `T` holding it.
fn cast_to<T: Array + Clone + 'static>(a: &ArrayRef, to: DataType) -> Result<T, String> {
    let c = cast(a, &to).map_err(|e| e.to_string())?;
    c.as_any()
        .downcast_ref::<T>()
        .cloned()
        .ok_or_else(|| format!("a value that is not {to}"))
}

pub(super) fn floats(a: &ArrayRef) -> Result<Float64Array, String> {
    cast_to(a, DataType::Float64)
}

pub(super) fn ints(a: &ArrayRef) -> Result<Int64Array, String> {
    cast_to(a, DataType::Int64)
}

pub(super) fn text(a: &ArrayRef) -> Result<StringArray, String> {
    cast_to(a, DataType::Utf8)
}

pub(super) fn text_cell(a: &StringArray, r: usize) -> Cell {
    if a.is_null(r) {
        Cell::Missing
    } else {
        Cell::Text(a.value(r).to_string())
    }
}

/// A column's cells as the text dpsynth's own Parquet reader gives them (polars' text),
/// so the same records key alike however they are read: a time without a zone with its
/// unit's fraction digits (`2024-03-01 10:37:00.250000`, where the engine's cast writes
/// ISO with a `T`), every other type as the engine casts it to text.
pub(super) fn text_cells(a: &ArrayRef) -> Result<Vec<Cell>, String> {
    use datafusion::arrow::datatypes::TimeUnit;
    let DataType::Timestamp(unit, None) = a.data_type() else {
        let t = text(a)?;
        return Ok((0..t.len()).map(|r| text_cell(&t, r)).collect());
    };
    let (digits, per_second) = match unit {
        TimeUnit::Second => (0, 1i64),
        TimeUnit::Millisecond => (3, 1_000),
        TimeUnit::Microsecond => (6, 1_000_000),
        TimeUnit::Nanosecond => (9, 1_000_000_000),
    };
    let v = ints(a)?;
    (0..v.len())
        .map(|r| {
            if v.is_null(r) {
                return Ok(Cell::Missing);
            }
            let (seconds, part) = (
                v.value(r).div_euclid(per_second),
                v.value(r).rem_euclid(per_second),
            );
            let at = chrono::DateTime::from_timestamp(seconds, 0)
                .ok_or_else(|| format!("a time out of range ({})", v.value(r)))?
                .format("%Y-%m-%d %H:%M:%S");
            Ok(Cell::Text(match digits {
                0 => at.to_string(),
                d => format!("{at}.{part:0d$}"),
            }))
        })
        .collect()
}

pub(super) fn number_cell(a: &Float64Array, r: usize) -> Cell {
    if a.is_null(r) {
        Cell::Missing
    } else {
        Cell::Number(a.value(r))
    }
}
