//! The discrete domain a marginal method works on, built from the public schema alone.
//!
//! Every encoded span becomes one discrete attribute:
//! - a categorical span (its categories, plus the "missing" slot when there is one);
//! - a binary or missing-indicator column (two levels);
//! - a continuous column: one level per whole number when the column is integer and its
//!   public range holds at most `max_bins` of them (education-num 1–16 keeps its 16
//!   values), else `max_bins` equal-width bins over the public bounds.
//!
//! Bins come from the bounds the user gave, never from the rows (no quantiles), so the
//! domain is a public fact and costs nothing. Decoding draws a value uniformly within its
//! bin, so a synthetic column is not a staircase of bin centres.
//!
//! A binned column with point masses (the schema's values many rows hold exactly: 0
//! gains, a top code) takes one more level per point, after its bins: a bin then holds the
//! column's other values, and a point's level decodes to the point exactly. An integer
//! column with one level per whole number already holds its points as levels; its
//! point-mass slots are only kept in step when decoding.

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::data::encode::{Encoding, SpanKind};
use crate::data::schema::Kind;

/// How one attribute maps to the encoded columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Coding {
    /// A one-hot span starting at `start` (level = the hot column).
    OneHot { start: usize },
    /// One 0/1 column (binary values and missing indicators).
    Flag { at: usize },
    /// A [0, 1]-scaled continuous column cut into equal-width bins, then one level per
    /// point mass.
    Bins {
        at: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        points: Option<Points>,
    },
    /// A [0, 1]-scaled integer column with one level per whole number: level k is the
    /// value `first + k` of the public range [lower, upper].
    Integers {
        at: usize,
        first: f64,
        lower: f64,
        upper: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        points: Option<Points>,
    },
}

/// A continuous column's point-mass slots ([`SpanKind::PointMass`]): `scaled.len() + 1`
/// one-hot columns from `start`, one per point (its value scaled into [0, 1]) and the
/// last for "elsewhere".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Points {
    pub start: usize,
    pub scaled: Vec<f64>,
}

impl Points {
    /// The point slot a row sets (`None`: elsewhere).
    fn slot(&self, row: &[f32]) -> Option<usize> {
        let span = &row[self.start..=self.start + self.scaled.len()];
        let mut best = 0;
        for (i, v) in span.iter().enumerate() {
            if *v > span[best] {
                best = i;
            }
        }
        (best < self.scaled.len()).then_some(best)
    }

    /// Sets the slot of point `k` (`None`: elsewhere).
    fn write(&self, k: Option<usize>, row: &mut [f32]) {
        let slot = k.unwrap_or(self.scaled.len()).min(self.scaled.len());
        row[self.start + slot] = 1.0;
    }

    /// The point whose scaled value is `u`, if any.
    fn at(&self, u: f64) -> Option<usize> {
        self.scaled.iter().position(|p| (p - u).abs() < 1e-9)
    }
}

/// One discrete attribute.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attribute {
    /// The schema column's name (with " (missing)" for an indicator).
    pub name: String,
    pub size: usize,
    pub coding: Coding,
}

/// The attributes of a schema's encoding, in span order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Domain {
    pub attributes: Vec<Attribute>,
    /// The encoded width the attributes decode to.
    pub width: usize,
}

/// Levels per attribute are stored as `u32`; more levels than this are refused.
const MAX_LEVELS: usize = 1 << 24;

impl Domain {
    /// The domain of `enc`, continuous columns cut into at most `max_bins` levels.
    pub fn of_encoding(enc: &Encoding, max_bins: usize) -> Result<Self, String> {
        let max_bins = max_bins.max(2);
        let mut attributes = Vec::with_capacity(enc.spans.len());
        for span in &enc.spans {
            let spec = &enc.schema.columns[span.column];
            let (size, coding, name) = match span.kind {
                SpanKind::Categorical => (
                    span.len,
                    Coding::OneHot { start: span.start },
                    spec.name.clone(),
                ),
                SpanKind::Binary => (2, Coding::Flag { at: span.start }, spec.name.clone()),
                SpanKind::MissingIndicator => (
                    2,
                    Coding::Flag { at: span.start },
                    format!("{} (missing)", spec.name),
                ),
                // Folded into the column's own attribute (see the Continuous arm).
                SpanKind::PointMass => continue,
                SpanKind::Continuous => continuous(enc, span, max_bins),
            };
            if size == 0 {
                return Err(format!("column '{name}' has no values to take"));
            }
            if size > MAX_LEVELS {
                return Err(format!(
                    "column '{name}' has {size} levels; marginal methods take at most {MAX_LEVELS}"
                ));
            }
            attributes.push(Attribute { name, size, coding });
        }
        if attributes.is_empty() {
            return Err("the schema encodes no columns".into());
        }
        Ok(Self {
            attributes,
            width: enc.width,
        })
    }

    /// Whether every attribute writes inside rows of `width` (a damaged or edited model
    /// file must not make decoding write out of range).
    pub fn check(&self) -> Result<(), String> {
        for a in &self.attributes {
            let end = match &a.coding {
                Coding::OneHot { start } => start.checked_add(a.size),
                Coding::Flag { at } | Coding::Bins { at, .. } | Coding::Integers { at, .. } => {
                    at.checked_add(1)
                }
            };
            let points_end = match &a.coding {
                Coding::Bins {
                    points: Some(p), ..
                }
                | Coding::Integers {
                    points: Some(p), ..
                } => p.start.checked_add(p.scaled.len() + 1),
                _ => Some(0),
            };
            let bad_range = match &a.coding {
                Coding::Integers {
                    lower,
                    upper,
                    first,
                    ..
                } => {
                    !(lower.is_finite() && upper.is_finite() && first.is_finite() && upper > lower)
                }
                Coding::Flag { .. } => a.size != 2,
                Coding::Bins {
                    points: Some(p), ..
                } => a.size <= p.scaled.len(),
                _ => false,
            };
            let end = end.zip(points_end).map(|(e, p)| e.max(p));
            if a.size == 0 || a.size > MAX_LEVELS || end.is_none_or(|e| e > self.width) || bad_range
            {
                return Err(format!(
                    "attribute '{}' does not fit rows of {} encoded columns",
                    a.name, self.width
                ));
            }
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.attributes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.attributes.is_empty()
    }

    pub fn sizes(&self) -> Vec<usize> {
        self.attributes.iter().map(|a| a.size).collect()
    }

    /// Cells of the marginal over `attrs`.
    pub fn cells(&self, attrs: &[usize]) -> usize {
        attrs
            .iter()
            .map(|a| self.attributes[*a].size)
            .fold(1usize, |p, s| p.saturating_mul(s))
    }

    /// "age × income" for messages and progress.
    pub fn describe(&self, attrs: &[usize]) -> String {
        attrs
            .iter()
            .map(|a| self.attributes[*a].name.as_str())
            .collect::<Vec<_>>()
            .join(" × ")
    }

    /// The level of every attribute of `n` encoded rows (`values`, row-major, the
    /// encoding's width), column by column.
    pub fn discretise(&self, values: &[f32], n: usize) -> Vec<Vec<u32>> {
        let w = self.width;
        self.attributes
            .iter()
            .map(|a| {
                (0..n)
                    .map(|r| {
                        let row = &values[r * w..(r + 1) * w];
                        a.level_of(row) as u32
                    })
                    .collect()
            })
            .collect()
    }

    /// Encoded rows (row-major, concrete one-hot and 0/1 values) for rows of levels given
    /// column by column; continuous values are drawn uniformly within their bin.
    pub fn encode(&self, levels: &[Vec<u32>], rng: &mut impl Rng) -> Vec<f32> {
        let n = levels.first().map_or(0, Vec::len);
        let w = self.width;
        let mut out = vec![0f32; n * w];
        for (a, col) in self.attributes.iter().zip(levels) {
            for (r, level) in col.iter().enumerate() {
                let row = &mut out[r * w..(r + 1) * w];
                a.write(*level as usize, row, rng);
            }
        }
        out
    }
}

/// The attribute of a continuous span: one level per whole number where an integer
/// column's range fits in `max_bins`, else `max_bins` equal-width bins; then one level per
/// point mass of a binned column.
fn continuous(
    enc: &Encoding,
    span: &crate::data::encode::Span,
    max_bins: usize,
) -> (usize, Coding, String) {
    let spec = &enc.schema.columns[span.column];
    let (lower, upper) = spec.bounds().unwrap_or((0.0, 1.0));
    let points = enc
        .spans
        .iter()
        .find(|s| s.column == span.column && s.kind == SpanKind::PointMass)
        .map(|s| Points {
            start: s.start,
            scaled: spec
                .point_masses
                .iter()
                .map(|p| f64::from(((p - lower) / (upper - lower)) as f32))
                .collect(),
        });
    let first = lower.ceil();
    let whole = (upper.floor() - first + 1.0).max(0.0);
    if spec.kind == Kind::Continuous
        && spec.integer
        && whole >= 1.0
        && whole <= max_bins as f64
        && upper > lower
    {
        (
            whole as usize,
            Coding::Integers {
                at: span.start,
                first,
                lower,
                upper,
                points,
            },
            spec.name.clone(),
        )
    } else {
        let size = max_bins + points.as_ref().map_or(0, |p| p.scaled.len());
        (
            size,
            Coding::Bins {
                at: span.start,
                points,
            },
            spec.name.clone(),
        )
    }
}

impl Attribute {
    fn level_of(&self, row: &[f32]) -> usize {
        let last = self.size - 1;
        match &self.coding {
            Coding::OneHot { start } => {
                let start = *start;
                let span = &row[start..start + self.size];
                let mut best = 0;
                for (i, v) in span.iter().enumerate() {
                    if *v > span[best] {
                        best = i;
                    }
                }
                best
            }
            Coding::Flag { at } => usize::from(row[*at] >= 0.5),
            Coding::Bins { at, points } => {
                let bins = self.bins();
                if let Some(k) = points.as_ref().and_then(|p| p.slot(row)) {
                    return bins + k;
                }
                let u = f64::from(row[*at]).clamp(0.0, 1.0);
                ((u * bins as f64).floor() as usize).min(bins - 1)
            }
            Coding::Integers {
                at,
                first,
                lower,
                upper,
                ..
            } => {
                let x = lower + f64::from(row[*at]).clamp(0.0, 1.0) * (upper - lower);
                ((x.round() - first).max(0.0) as usize).min(last)
            }
        }
    }

    /// The equal-width bins of a binned attribute (its levels less its points).
    fn bins(&self) -> usize {
        match &self.coding {
            Coding::Bins {
                points: Some(p), ..
            } => (self.size - p.scaled.len()).max(1),
            _ => self.size,
        }
    }

    fn write(&self, level: usize, row: &mut [f32], rng: &mut impl Rng) {
        let level = level.min(self.size - 1);
        match &self.coding {
            Coding::OneHot { start } => row[start + level] = 1.0,
            Coding::Flag { at } => row[*at] = level as f32,
            Coding::Bins { at, points } => {
                let bins = self.bins();
                if let Some(p) = points {
                    let k = level.checked_sub(bins);
                    p.write(k, row);
                    if let Some(k) = k {
                        row[*at] = p.scaled[k] as f32;
                        return;
                    }
                }
                let u = (level as f64 + rng.random::<f64>()) / bins as f64;
                row[*at] = u.clamp(0.0, 1.0) as f32;
            }
            Coding::Integers {
                at,
                first,
                lower,
                upper,
                points,
            } => {
                let x = first + level as f64;
                let u = ((x - lower) / (upper - lower)).clamp(0.0, 1.0);
                row[*at] = u as f32;
                if let Some(p) = points {
                    p.write(p.at(f64::from(u as f32)), row);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::schema::Schema;
    use rand::SeedableRng;

    fn schema() -> Schema {
        serde_json::from_str(
            r#"{"columns":[
            {"name":"age","kind":"continuous","integer":true,"domain":{"bounds":{"lower":17,"upper":30}}},
            {"name":"pay","kind":"continuous","domain":{"bounds":{"lower":0,"upper":100}},"missing":true},
            {"name":"job","kind":"categorical","domain":{"categories":["a","b","c"]}},
            {"name":"sex","kind":"binary","domain":{"categories":["F","M"]}}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn levels_come_from_the_schema_and_round_trip() {
        let enc = Encoding::new(&schema()).unwrap();
        let d = Domain::of_encoding(&enc, 8).unwrap();
        // age: 14 whole numbers > 8 bins → bins; pay: 8 bins + indicator; job 3; sex 2.
        assert_eq!(d.sizes(), vec![8, 8, 2, 3, 2]);
        let d = Domain::of_encoding(&enc, 32).unwrap();
        assert_eq!(d.sizes(), vec![14, 32, 2, 3, 2]);
        let levels = vec![
            vec![0, 13, 5],
            vec![0, 31, 16],
            vec![0, 1, 0],
            vec![2, 0, 1],
            vec![1, 0, 1],
        ];
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let rows = d.encode(&levels, &mut rng);
        assert_eq!(d.discretise(&rows, 3), levels);
        // Integer levels decode to exactly their value: 17 + 13 = 30 is the top.
        assert_eq!(rows[enc.width], 1.0);
    }

    /// A binned column's point masses are levels after its bins, and decode exactly; an
    /// integer column keeps one level per whole number and sets the point slots in step.
    #[test]
    fn point_masses_are_levels_of_their_own() {
        let schema: Schema = serde_json::from_str(
            r#"{"columns":[
            {"name":"gain","kind":"continuous","integer":true,"point_masses":[0,99999],"domain":{"bounds":{"lower":0,"upper":99999}}},
            {"name":"hours","kind":"continuous","integer":true,"point_masses":[40],"domain":{"bounds":{"lower":1,"upper":99}}}]}"#,
        )
        .unwrap();
        let enc = Encoding::new(&schema).unwrap();
        assert_eq!(enc.width, 1 + 3 + 1 + 2);
        let d = Domain::of_encoding(&enc, 100).unwrap();
        d.check().unwrap();
        // gain: 100 bins + 2 points; hours: 99 whole numbers.
        assert_eq!(d.sizes(), vec![102, 99]);
        let t = crate::data::Table {
            columns: vec![
                crate::data::Column {
                    name: "gain".into(),
                    values: crate::data::Values::Number(vec![
                        Some(0.0),
                        Some(99999.0),
                        Some(2174.0),
                    ]),
                },
                crate::data::Column {
                    name: "hours".into(),
                    values: crate::data::Values::Number(vec![Some(40.0), Some(41.0), Some(1.0)]),
                },
            ],
            n_rows: 3,
        };
        let e = enc.encode(&t).unwrap();
        let levels = d.discretise(&e.values, 3);
        assert_eq!(levels, vec![vec![100, 101, 2], vec![39, 40, 0]]);
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let rows = d.encode(&levels, &mut rng);
        assert_eq!(d.discretise(&rows, 3), levels);
        let back = enc
            .decode(&rows, crate::data::encode::DecodeMode::Sample, &mut rng)
            .unwrap();
        let gain = back.column("gain").unwrap();
        let hours = back.column("hours").unwrap();
        assert_eq!(gain.text(0).as_deref(), Some("0"));
        assert_eq!(gain.text(1).as_deref(), Some("99999"));
        // Bin 2 holds [2000, 3000): never a point.
        let g2: f64 = gain.text(2).unwrap().parse().unwrap();
        assert!((1999.0..3000.0).contains(&g2), "{g2}");
        assert_eq!(hours.text(0).as_deref(), Some("40"));
        assert_eq!(hours.text(1).as_deref(), Some("41"));
        // The point slot of hours is set only where the level is 40.
        let w = enc.width;
        assert_eq!(&rows[5..7], &[1.0, 0.0]);
        assert_eq!(&rows[w + 5..w + 7], &[0.0, 1.0]);
    }
}
