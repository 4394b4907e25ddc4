//! The matrix every method trains on, and the way back to a table.
//!
//! Layout per column, in schema order (ignored columns take no space):
//! - binary → one column: 0 for the first value, 1 for the second;
//! - categorical → a one-hot span over the categories, plus one "missing" slot when the
//!   column may be missing;
//! - continuous → one column min-max scaled into [0, 1] with the domain's bounds; values
//!   outside the bounds are clamped (and counted, so the user can widen the bounds);
//! - a continuous column with point masses (values many rows hold exactly: 0 gains, a top
//!   code) also gets a one-hot span right after its scaled column: one slot per point
//!   mass, then one for "elsewhere". A row at a point mass sets that slot (its scaled
//!   column holds the point's value); decoding a point's slot gives the point exactly;
//! - binary or continuous columns that may be missing get one extra indicator column.
//!
//! Only the schema (public) shapes the layout; the data only fills it.

use rand::Rng;

use super::error::DataError;
use super::schema::{ColumnSpec, Kind, Schema};
use super::table::{Column, Table, Values};

/// What one span of encoded columns holds.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanKind {
    /// One 0/1 column.
    Binary,
    /// A one-hot block of `len` columns (the last is "missing" when the column may be).
    Categorical,
    /// One scaled column in [0, 1].
    Continuous,
    /// 1 when the column's value is missing.
    MissingIndicator,
    /// A continuous column's point masses: a one-hot block of `len` columns, one per point
    /// mass of the schema in order, the last for "not at a point mass" (and for blanks).
    PointMass,
}

/// A block of encoded columns that belongs to one table column.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Span {
    /// Index into the schema's columns.
    pub column: usize,
    pub start: usize,
    pub len: usize,
    pub kind: SpanKind,
}

/// The encoding a schema defines: spans and how to map values.
#[derive(Debug, Clone, PartialEq)]
pub struct Encoding {
    pub schema: Schema,
    pub spans: Vec<Span>,
    pub width: usize,
}

/// An encoded table: `n_rows × width` values in [0, 1], row-major.
#[derive(Debug, Clone)]
pub struct EncodedData {
    pub n_rows: usize,
    pub width: usize,
    pub values: Vec<f32>,
    /// Per schema column: how many values were clamped into the bounds.
    pub clamped: Vec<usize>,
    /// Per schema column: how many values were outside the category list (encoded missing).
    pub unknown: Vec<usize>,
}

impl EncodedData {
    pub fn row(&self, i: usize) -> &[f32] {
        &self.values[i * self.width..(i + 1) * self.width]
    }
}

/// How to turn scores back into discrete values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeMode {
    /// Largest score wins; binary values threshold at 0.5. Deterministic.
    Argmax,
    /// Categories drawn in proportion to their scores; binaries drawn with p = value.
    Sample,
}

impl Encoding {
    /// Builds the layout; the schema must be valid.
    pub fn new(schema: &Schema) -> Result<Self, DataError> {
        schema.validate()?;
        let mut spans = Vec::new();
        let mut at = 0;
        for (ci, c) in schema.columns.iter().enumerate() {
            let mut push = |kind: SpanKind, len: usize| {
                spans.push(Span {
                    column: ci,
                    start: at,
                    len,
                    kind,
                });
                at += len;
            };
            match c.kind {
                Kind::Ignored => {}
                Kind::Binary => {
                    push(SpanKind::Binary, 1);
                    if c.missing {
                        push(SpanKind::MissingIndicator, 1);
                    }
                }
                Kind::Categorical => {
                    let n = c.categories().map_or(0, <[String]>::len) + usize::from(c.missing);
                    push(SpanKind::Categorical, n);
                }
                Kind::Continuous => {
                    push(SpanKind::Continuous, 1);
                    if !c.point_masses.is_empty() {
                        push(SpanKind::PointMass, c.point_masses.len() + 1);
                    }
                    if c.missing {
                        push(SpanKind::MissingIndicator, 1);
                    }
                }
            }
        }
        Ok(Self {
            schema: schema.clone(),
            spans,
            width: at,
        })
    }

    /// Encodes `t`, which must fit the schema.
    pub fn encode(&self, t: &Table) -> Result<EncodedData, DataError> {
        self.schema.check_table(t)?;
        let n = t.n_rows;
        let w = self.width;
        let mut values = vec![0f32; n * w];
        let ncol = self.schema.columns.len();
        let mut clamped = vec![0usize; ncol];
        let mut unknown = vec![0usize; ncol];
        for span in &self.spans {
            let spec = &self.schema.columns[span.column];
            let Some(col) = t.column(&spec.name) else {
                return Err(DataError::column(
                    &spec.name,
                    "is in the schema but not in the data",
                ));
            };
            match span.kind {
                SpanKind::Binary | SpanKind::Categorical => {
                    unknown[span.column] += encode_categories(spec, span, col, w, &mut values)?;
                }
                SpanKind::Continuous => {
                    clamped[span.column] += encode_numbers(spec, span, col, w, &mut values)?;
                }
                SpanKind::MissingIndicator => {
                    for r in 0..n {
                        if is_missing(col, r) {
                            values[r * w + span.start] = 1.0;
                        }
                    }
                }
                SpanKind::PointMass => encode_point_masses(spec, span, col, w, &mut values)?,
            }
        }
        Ok(EncodedData {
            n_rows: n,
            width: w,
            values,
            clamped,
            unknown,
        })
    }

    /// Decodes an `n × width` matrix (generator output, not necessarily one-hot) to a
    /// table with the schema's non-ignored columns, in schema order.
    pub fn decode<R: Rng + ?Sized>(
        &self,
        values: &[f32],
        mode: DecodeMode,
        rng: &mut R,
    ) -> Result<Table, DataError> {
        if self.width == 0 || values.len() % self.width != 0 {
            return Err(DataError::Schema(format!(
                "cannot decode {} values into rows of width {}",
                values.len(),
                self.width
            )));
        }
        let n = values.len() / self.width;
        let mut columns = Vec::new();
        for (ci, spec) in self.schema.columns.iter().enumerate() {
            if spec.kind == Kind::Ignored {
                continue;
            }
            let spans: Vec<&Span> = self.spans.iter().filter(|s| s.column == ci).collect();
            let main = spans[0];
            let indicator = spans.iter().find(|s| s.kind == SpanKind::MissingIndicator);
            let missing_at = |r: usize, rng: &mut R| -> bool {
                indicator.is_some_and(|s| bernoulli(values[r * self.width + s.start], mode, rng))
            };
            let col = match spec.kind {
                Kind::Binary | Kind::Categorical => {
                    let cats = spec.categories().unwrap_or(&[]);
                    let mut cells: Vec<Option<&str>> = Vec::with_capacity(n);
                    for r in 0..n {
                        let row = &values
                            [r * self.width + main.start..r * self.width + main.start + main.len];
                        let k = if spec.kind == Kind::Binary {
                            usize::from(bernoulli(row[0], mode, rng))
                        } else {
                            pick(row, mode, rng)
                        };
                        let missing = missing_at(r, rng) || k >= cats.len();
                        cells.push(if missing {
                            None
                        } else {
                            Some(cats[k].as_str())
                        });
                    }
                    fill_blanks(&mut cells, spec.blank_share, rng);
                    categorical_values(spec, cells)
                }
                Kind::Continuous => {
                    let points = spans.iter().find(|s| s.kind == SpanKind::PointMass);
                    let mut cells = Vec::with_capacity(n);
                    for r in 0..n {
                        let x = self.number_at(spec, (values, r), (main, points), mode, rng);
                        cells.push(if missing_at(r, rng) { None } else { Some(x) });
                    }
                    fill_blanks(&mut cells, spec.blank_share, rng);
                    match &spec.time_format {
                        // Dates go back out in the file's own format.
                        Some(f) => Values::Text(
                            cells
                                .iter()
                                .map(|c| c.map(|x| super::times::format(x, f)))
                                .collect(),
                        ),
                        None => Values::Number(cells),
                    }
                }
                Kind::Ignored => continue,
            };
            columns.push(Column {
                name: spec.name.clone(),
                values: col,
            });
        }
        Ok(Table { columns, n_rows: n })
    }
}

impl Encoding {
    /// Row `r`'s value of a continuous column: the scaled value mapped back into the
    /// bounds (whole for an integer column), or the point mass its slot picks.
    fn number_at<R: Rng + ?Sized>(
        &self,
        spec: &ColumnSpec,
        (values, r): (&[f32], usize),
        (main, points): (&Span, Option<&&Span>),
        mode: DecodeMode,
        rng: &mut R,
    ) -> f64 {
        let (lo, hi) = spec.bounds().unwrap_or((0.0, 1.0));
        if let Some(p) = points {
            let at = r * self.width + p.start;
            let k = pick(&values[at..at + p.len], mode, rng);
            if let Some(v) = spec.point_masses.get(k) {
                return *v;
            }
        }
        let u = f64::from(values[r * self.width + main.start]).clamp(0.0, 1.0);
        let x = lo + u * (hi - lo);
        if spec.integer {
            x.round().clamp(lo.ceil(), hi.floor())
        } else if let Some(d) = spec.decimals {
            let scale = 10f64.powi(d as i32);
            // A bound already on the grid stays itself (9.71 · 100 is 971.0000000000001).
            let (a, b) = (
                (lo * scale - 1e-7).ceil() / scale,
                (hi * scale + 1e-7).floor() / scale,
            );
            let r = (x * scale).round() / scale;
            if a <= b { r.clamp(a, b) } else { r }
        } else {
            carried_digits(x, hi - lo)
        }
    }
}

/// A value of a column written with "any decimals": the rows carry the column as a 32-bit
/// share of its public range, so digits past about one millionth of that range are noise
/// of the number format (0.8670045137405396 where the range 0–1 carries 0.867005); they are cut
/// at seven significant digits of the range, a rule of the public bounds alone.
fn carried_digits(x: f64, range: f64) -> f64 {
    if !(range.is_finite() && range > 0.0 && x.is_finite()) {
        return x;
    }
    let d = (6 - range.log10().floor() as i32).clamp(0, 12);
    let scale = 10f64.powi(d);
    (x * scale).round() / scale
}

/// Writes a binary or categorical column's one-hot slots into `values` (rows of width
/// `w`); a value outside the categories is missing where the column may be, an error
/// otherwise. The number of such unknown values.
fn encode_categories(
    spec: &ColumnSpec,
    span: &Span,
    col: &Column,
    w: usize,
    values: &mut [f32],
) -> Result<usize, DataError> {
    let cats = spec.categories().unwrap_or(&[]);
    let index = category_index(cats);
    let mut unknown = 0;
    for r in 0..col.values.len() {
        let slot = match col.text(r) {
            None => None,
            Some(v) => match index.get(v.as_str()) {
                Some(&k) => Some(k),
                None if spec.missing => {
                    unknown += 1;
                    None
                }
                None => {
                    return Err(DataError::column(
                        &spec.name,
                        format!(
                            "row {} holds '{v}', which is not in the column's categories; add it to the domain or set \"missing\": true to encode unknown values as missing",
                            r + 1
                        ),
                    ));
                }
            },
        };
        let base = r * w + span.start;
        if span.kind == SpanKind::Binary {
            values[base] = if slot == Some(1) { 1.0 } else { 0.0 };
        } else {
            values[base + slot.unwrap_or(cats.len())] = 1.0;
        }
    }
    Ok(unknown)
}

/// A continuous column's cells as numbers: as they are, or date/time text read as days
/// (check_table vouched for it).
fn numbers_of<'a>(
    spec: &ColumnSpec,
    col: &'a Column,
) -> Result<std::borrow::Cow<'a, [Option<f64>]>, DataError> {
    Ok(match &col.values {
        Values::Number(v) => std::borrow::Cow::Borrowed(v.as_slice()),
        Values::Text(_) => std::borrow::Cow::Owned(spec.numbers(col)?),
    })
}

/// Writes a continuous column's values, scaled to [0, 1] over its bounds, into `values`;
/// numbers outside the bounds are clamped. The number clamped.
fn encode_numbers(
    spec: &ColumnSpec,
    span: &Span,
    col: &Column,
    w: usize,
    values: &mut [f32],
) -> Result<usize, DataError> {
    let (lo, hi) = spec.bounds().unwrap_or((0.0, 1.0));
    let v = numbers_of(spec, col)?;
    let mut clamped = 0;
    for (r, x) in v.iter().enumerate() {
        if let Some(x) = x {
            if *x < lo || *x > hi {
                clamped += 1;
            }
            values[r * w + span.start] = ((x.clamp(lo, hi) - lo) / (hi - lo)) as f32;
        }
    }
    Ok(clamped)
}

/// Sets each row's point-mass slot: the slot of the point its value is, else the last
/// ("elsewhere", which blanks take too).
fn encode_point_masses(
    spec: &ColumnSpec,
    span: &Span,
    col: &Column,
    w: usize,
    values: &mut [f32],
) -> Result<(), DataError> {
    let v = numbers_of(spec, col)?;
    let elsewhere = span.len - 1;
    for (r, x) in v.iter().enumerate() {
        let slot = x.and_then(|x| spec.point_mass_of(x)).unwrap_or(elsewhere);
        values[r * w + span.start + slot] = 1.0;
    }
    Ok(())
}

/// Category values that all read as numbers come back as a numeric column, so a decoded
/// `label` column prints `7`, not `"7"`.
fn categorical_values(spec: &ColumnSpec, cells: Vec<Option<&str>>) -> Values {
    let numeric = spec.categories().is_some_and(|c| {
        c.iter()
            .all(|s| crate::util::fmt::parse_number(s).is_some())
    });
    if numeric {
        Values::Number(
            cells
                .iter()
                .map(|c| c.and_then(crate::util::fmt::parse_number))
                .collect(),
        )
    } else {
        Values::Text(super::table::TextColumn::from_cells(cells))
    }
}

fn category_index(cats: &[String]) -> std::collections::HashMap<&str, usize> {
    cats.iter()
        .enumerate()
        .map(|(i, c)| (c.as_str(), i))
        .collect()
}

fn is_missing(col: &Column, r: usize) -> bool {
    match &col.values {
        Values::Number(v) => v[r].is_none(),
        Values::Text(v) => v.get(r).is_none(),
    }
}

/// Keeps about `share` of the rows blank and fills the generated blanks beyond that with
/// values drawn from the column's own non-blank synthetic cells (`share`: the column's
/// DP estimate of its blanks, [`ColumnSpec::blank_share`]). A private domain estimate
/// encodes rows holding a value too rare to release as blank, so a model learns blanks a
/// complete column never has; this puts them back among the released values. It reads
/// only synthetic rows and a DP output: post-processing, no privacy cost.
fn fill_blanks<T: Clone, R: Rng + ?Sized>(
    cells: &mut [Option<T>],
    share: Option<f64>,
    rng: &mut R,
) {
    let Some(share) = share else {
        return;
    };
    let blanks = cells.iter().filter(|c| c.is_none()).count();
    let present: Vec<T> = cells.iter().flatten().cloned().collect();
    if blanks == 0 || present.is_empty() {
        return;
    }
    let keep = (share.clamp(0.0, 1.0) * cells.len() as f64 / blanks as f64).min(1.0);
    for c in cells.iter_mut().filter(|c| c.is_none()) {
        if rng.random::<f64>() >= keep {
            *c = Some(present[rng.random_range(0..present.len())].clone());
        }
    }
}

fn bernoulli<R: Rng + ?Sized>(p: f32, mode: DecodeMode, rng: &mut R) -> bool {
    match mode {
        DecodeMode::Argmax => p > 0.5,
        DecodeMode::Sample => rng.random::<f32>() < p.clamp(0.0, 1.0),
    }
}

fn pick<R: Rng + ?Sized>(scores: &[f32], mode: DecodeMode, rng: &mut R) -> usize {
    match mode {
        DecodeMode::Argmax => {
            let mut best = 0;
            for (i, s) in scores.iter().enumerate() {
                if *s > scores[best] {
                    best = i;
                }
            }
            best
        }
        DecodeMode::Sample => {
            let total: f32 = scores.iter().map(|s| s.max(0.0)).sum();
            if total <= 0.0 || !total.is_finite() {
                return rng.random_range(0..scores.len().max(1));
            }
            let mut u = rng.random::<f32>() * total;
            for (i, s) in scores.iter().enumerate() {
                u -= s.max(0.0);
                if u <= 0.0 {
                    return i;
                }
            }
            scores.len() - 1
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn any_decimals_keep_the_digits_the_rows_carry() {
        let x = f64::from(0.867_004_5_f32);
        assert_eq!(super::carried_digits(x, 1.0), 0.867005);
        assert_eq!(super::carried_digits(0.123_456_7, 1.0), 0.123457);
        assert_eq!(super::carried_digits(1234.567_89, 5000.0), 1234.568);
        assert_eq!(super::carried_digits(0.5, 0.0), 0.5);
    }

    use super::*;
    use crate::data::csv::{LoadOptions, parse_csv_bytes};
    use crate::data::infer::infer_schema;

    #[test]
    fn spans_follow_the_schema() {
        let s = "a,b,c\n1,x,0.5\n2,y,\n3,,1.5\n1,z,2\n";
        let t = parse_csv_bytes(s.as_bytes().to_vec(), "t", &LoadOptions::default()).unwrap();
        let schema = infer_schema(&t).unwrap().schema;
        let enc = Encoding::new(&schema).unwrap();
        // a: 3 integer levels -> categorical(3); b: 3 cats + missing; c: continuous + indicator
        let kinds: Vec<(SpanKind, usize)> =
            enc.spans.iter().map(|s| (s.kind.clone(), s.len)).collect();
        assert_eq!(
            kinds,
            vec![
                (SpanKind::Categorical, 3),
                (SpanKind::Categorical, 4),
                (SpanKind::Continuous, 1),
                (SpanKind::MissingIndicator, 1)
            ]
        );
        let e = enc.encode(&t).unwrap();
        assert_eq!(e.width, 9);
        assert_eq!(e.row(2)[..7], [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
        assert!((e.row(2)[7] - 2.0 / 3.0).abs() < 1e-6);
        assert_eq!(e.row(1)[7..], [0.0, 1.0]);
    }

    /// Generated blanks beyond the column's estimated share are filled with its other
    /// synthetic values; without a share they are kept as drawn.
    #[test]
    fn blanks_beyond_the_estimated_share_are_filled() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let cells = |i: usize| if i % 2 == 0 { None } else { Some(i % 3) };
        let mut none: Vec<Option<usize>> = (0..10_000).map(cells).collect();
        fill_blanks(&mut none, Some(0.0), &mut rng);
        assert!(none.iter().all(Option::is_some));
        assert!(none.iter().flatten().all(|v| *v < 3));
        let mut some: Vec<Option<usize>> = (0..10_000).map(cells).collect();
        fill_blanks(&mut some, Some(0.2), &mut rng);
        let share = some.iter().filter(|c| c.is_none()).count() as f64 / 10_000.0;
        assert!((0.18..0.22).contains(&share), "{share}");
        let mut kept: Vec<Option<usize>> = (0..10_000).map(cells).collect();
        fill_blanks(&mut kept, None, &mut rng);
        assert_eq!(kept.iter().filter(|c| c.is_none()).count(), 5_000);
    }
}
