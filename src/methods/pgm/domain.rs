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
    /// A [0, 1]-scaled continuous column cut into equal-width bins.
    Bins { at: usize },
    /// A [0, 1]-scaled integer column with one level per whole number: level k is the
    /// value `first + k` of the public range [lower, upper].
    Integers {
        at: usize,
        first: f64,
        lower: f64,
        upper: f64,
    },
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
                SpanKind::Continuous => {
                    let (lower, upper) = spec.bounds().unwrap_or((0.0, 1.0));
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
                            },
                            spec.name.clone(),
                        )
                    } else {
                        (max_bins, Coding::Bins { at: span.start }, spec.name.clone())
                    }
                }
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
            let end = match a.coding {
                Coding::OneHot { start } => start.checked_add(a.size),
                Coding::Flag { at } | Coding::Bins { at } | Coding::Integers { at, .. } => {
                    at.checked_add(1)
                }
            };
            let bad_range = match a.coding {
                Coding::Integers {
                    lower,
                    upper,
                    first,
                    ..
                } => {
                    !(lower.is_finite() && upper.is_finite() && first.is_finite() && upper > lower)
                }
                Coding::Flag { .. } => a.size != 2,
                _ => false,
            };
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

impl Attribute {
    fn level_of(&self, row: &[f32]) -> usize {
        let last = self.size - 1;
        match self.coding {
            Coding::OneHot { start } => {
                let span = &row[start..start + self.size];
                let mut best = 0;
                for (i, v) in span.iter().enumerate() {
                    if *v > span[best] {
                        best = i;
                    }
                }
                best
            }
            Coding::Flag { at } => usize::from(row[at] >= 0.5),
            Coding::Bins { at } => {
                let u = f64::from(row[at]).clamp(0.0, 1.0);
                ((u * self.size as f64).floor() as usize).min(last)
            }
            Coding::Integers {
                at,
                first,
                lower,
                upper,
            } => {
                let x = lower + f64::from(row[at]).clamp(0.0, 1.0) * (upper - lower);
                ((x.round() - first).max(0.0) as usize).min(last)
            }
        }
    }

    fn write(&self, level: usize, row: &mut [f32], rng: &mut impl Rng) {
        let level = level.min(self.size - 1);
        match self.coding {
            Coding::OneHot { start } => row[start + level] = 1.0,
            Coding::Flag { at } => row[at] = level as f32,
            Coding::Bins { at } => {
                let u = (level as f64 + rng.random::<f64>()) / self.size as f64;
                row[at] = u.clamp(0.0, 1.0) as f32;
            }
            Coding::Integers {
                at,
                first,
                lower,
                upper,
            } => {
                let x = first + level as f64;
                row[at] = ((x - lower) / (upper - lower)).clamp(0.0, 1.0) as f32;
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
}
