//! Real-train, real-test and synthetic tables put on one encoded scale, and the
//! per-column targets and feature sets the metrics need.

use crate::data::encode::{EncodedData, Encoding, SpanKind};
use crate::data::schema::{Domain, Kind, Schema};
use crate::data::table::{Table, Values};

use super::xy::Xy;

/// The three tables encoded with one schema.
pub struct Frame {
    pub schema: Schema,
    pub encoding: Encoding,
    pub train: EncodedData,
    pub test: EncodedData,
    pub synthetic: EncodedData,
    /// Values outside the real categories or bounds found in the synthetic table, and blanks
    /// in columns the real rows never leave blank, per column.
    pub synthetic_out_of_domain: Vec<(String, usize)>,
    /// Columns of the real data that the synthetic table does not have (a model that
    /// dropped them, e.g. a private domain estimate in which no value was frequent enough
    /// to pass). They are scored as all missing: the synthetic data says nothing of them.
    pub not_synthesized: Vec<String>,
}

/// What one column is predicted as.
pub enum Target {
    /// Class indices in `0..k`.
    Classes { y: Vec<u32>, k: usize },
    /// The scaled value in [0, 1].
    Value(Vec<f64>),
}

impl Frame {
    /// Encodes the tables. With no schema, one is inferred from the real rows; either way
    /// the schema is widened for evaluation: every kept column may be missing (a synthetic
    /// value outside the real categories then encodes as missing instead of failing), and
    /// continuous bounds cover both real tables.
    pub fn new(
        schema: Option<Schema>,
        train: &Table,
        test: &Table,
        synthetic: &Table,
    ) -> Result<Frame, String> {
        let real =
            Table::concat(&[train, test]).map_err(|e| format!("real-train and real-test: {e}"))?;
        let mut schema = match schema {
            Some(s) => s,
            None => {
                crate::data::infer::infer_schema(&real)
                    .map_err(|e| format!("inferring a schema from the real tables: {e}"))?
                    .schema
            }
        };
        for spec in &mut schema.columns {
            widen_for_evaluation(spec, &real);
        }
        // An ignored column is not synthesized: a model's samples do not have it, and
        // there is nothing to compare.
        schema.columns.retain(|c| c.kind != Kind::Ignored);
        let encoding = Encoding::new(&schema).map_err(|e| format!("schema: {e}"))?;
        // Columns the schema does not know (e.g. extra synthetic columns) are dropped.
        let keep = |t: &Table| -> Table { t.keep_columns(|n| schema.column(n).is_some()) };
        let enc = |t: &Table, what: &str| {
            encoding
                .encode(&keep(t))
                .map_err(|e| format!("{what}: {e}"))
        };
        let train_e = enc(train, "real-train")?;
        let test_e = enc(test, "real-test")?;
        let not_synthesized: Vec<String> = schema
            .columns
            .iter()
            .filter(|c| synthetic.column(&c.name).is_none())
            .map(|c| c.name.clone())
            .collect();
        if not_synthesized.len() == schema.columns.len() {
            return Err(format!(
                "synthetic: none of the real data's columns ({}) is in it; is it the synthetic file of this data?",
                not_synthesized.join(", ")
            ));
        }
        let syn_e = if not_synthesized.is_empty() {
            enc(synthetic, "synthetic")?
        } else {
            let mut filled = synthetic.clone();
            for name in &not_synthesized {
                filled.columns.push(crate::data::table::Column {
                    name: name.clone(),
                    values: Values::Text(crate::data::table::TextColumn::from_cells(
                        std::iter::repeat_n(None, synthetic.n_rows),
                    )),
                });
            }
            enc(&filled, "synthetic")?
        };
        let synthetic_out_of_domain = out_of_domain(&schema, &real, synthetic, &syn_e);
        Ok(Frame {
            schema,
            encoding,
            train: train_e,
            test: test_e,
            synthetic: syn_e,
            synthetic_out_of_domain,
            not_synthesized,
        })
    }

    /// Schema indices of the kept columns.
    pub fn columns(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.encoding.spans.iter().map(|s| s.column).collect();
        v.dedup();
        v
    }

    /// Encoded column indices of every column except `ci`.
    pub fn features_without(&self, ci: usize) -> Vec<usize> {
        self.encoding
            .spans
            .iter()
            .filter(|s| s.column != ci)
            .flat_map(|s| s.start..s.start + s.len)
            .collect()
    }

    /// The target of column `ci` in `data`.
    pub fn target(&self, ci: usize, data: &EncodedData) -> Target {
        let span = self
            .encoding
            .spans
            .iter()
            .find(|s| s.column == ci && s.kind != SpanKind::MissingIndicator);
        let Some(span) = span else {
            return Target::Value(vec![0.0; data.n_rows]);
        };
        match span.kind {
            SpanKind::Binary => Target::Classes {
                y: (0..data.n_rows)
                    .map(|r| u32::from(data.row(r)[span.start] > 0.5))
                    .collect(),
                k: 2,
            },
            SpanKind::Categorical => Target::Classes {
                y: (0..data.n_rows)
                    .map(|r| {
                        let s = &data.row(r)[span.start..span.start + span.len];
                        argmax(s) as u32
                    })
                    .collect(),
                k: span.len,
            },
            _ => Target::Value(
                (0..data.n_rows)
                    .map(|r| f64::from(data.row(r)[span.start]))
                    .collect(),
            ),
        }
    }

    /// The rows of `data` restricted to encoded columns `cols`, as f64.
    pub fn select(data: &EncodedData, cols: &[usize]) -> Vec<f64> {
        let mut out = Vec::with_capacity(data.n_rows * cols.len());
        for r in 0..data.n_rows {
            let row = data.row(r);
            out.extend(cols.iter().map(|&c| f64::from(row[c])));
        }
        out
    }

    /// Whole encoded rows as f64 vectors.
    pub fn rows(data: &EncodedData) -> Vec<Vec<f64>> {
        (0..data.n_rows)
            .map(|r| data.row(r).iter().map(|&v| f64::from(v)).collect())
            .collect()
    }

    /// Features without `ci` and `ci`'s target, for model training.
    pub fn xy(&self, ci: usize, data: &EncodedData) -> (Vec<f64>, usize, Target) {
        let cols = self.features_without(ci);
        (Self::select(data, &cols), cols.len(), self.target(ci, data))
    }

    /// Features and class labels for predicting column `ci`; `None` if `ci` is continuous.
    pub fn classes_xy(&self, ci: usize, data: &EncodedData) -> Option<(Xy, usize)> {
        let (x, p, t) = self.xy(ci, data);
        match t {
            Target::Classes { y, k } => Some((
                Xy {
                    x,
                    n: data.n_rows,
                    p,
                    y,
                },
                k,
            )),
            Target::Value(_) => None,
        }
    }
}

pub fn argmax(s: &[f32]) -> usize {
    s.iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map_or(0, |(i, _)| i)
}

/// A column's schema widened for evaluation: it may be missing, and its bounds or
/// categories cover every real row (the metrics compare tables; they release nothing).
fn widen_for_evaluation(spec: &mut crate::data::schema::ColumnSpec, real: &Table) {
    if spec.kind == Kind::Ignored {
        return;
    }
    spec.missing = true;
    if spec.kind == Kind::Continuous {
        if let Some(Values::Number(v)) = real.column(&spec.name).map(|c| &c.values) {
            let (lo, hi) = crate::data::infer::value_range(v);
            let (slo, shi) = spec.bounds().unwrap_or((lo, hi));
            let (lo, hi) = (lo.min(slo), hi.max(shi));
            if lo.is_finite() && hi.is_finite() {
                let hi = if hi > lo { hi } else { lo + 1.0 };
                spec.domain = Some(Domain::Bounds {
                    lower: lo,
                    upper: hi,
                });
            }
        }
    } else if let Some(col) = real.column(&spec.name) {
        let mut cats: Vec<String> = spec
            .categories()
            .map(<[String]>::to_vec)
            .unwrap_or_default();
        for l in col.levels() {
            if !cats.contains(&l) {
                cats.push(l);
            }
        }
        if spec.kind == Kind::Binary && cats.len() != 2 {
            spec.kind = Kind::Categorical;
        }
        spec.domain = Some(Domain::Categories(cats));
    }
}

/// Per column, the synthetic values the real data cannot have: unknown categories,
/// clamped numbers, and blanks in a column the real rows never leave blank (a dropped
/// rare level decoded as missing). A column the model did not synthesize is named apart.
fn out_of_domain(
    schema: &Schema,
    real: &Table,
    synthetic: &Table,
    syn_e: &EncodedData,
) -> Vec<(String, usize)> {
    schema
        .columns
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let blanks = match (real.column(&c.name), synthetic.column(&c.name)) {
                (Some(r), Some(s)) if r.missing_count() == 0 => s.missing_count(),
                _ => 0,
            };
            let n = syn_e.unknown[i] + syn_e.clamped[i] + blanks;
            (n > 0).then(|| (c.name.clone(), n))
        })
        .collect()
}
