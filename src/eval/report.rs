//! The full evaluation: every metric of DESIGN.md §4 in one serde report, each with the
//! sizes of its inputs and the model used.

use std::time::Instant;

use crate::data::schema::{Kind, Schema};
use crate::data::table::Table;

use super::dimwise::dimwise;
use super::frame::Frame;
use super::marginals::{histograms, probability, three_way};
use super::risk::{pmse_mmd, privacy_risk};
use super::tstr::tstr;
use super::wasserstein::pca_and_wasserstein;

pub use super::results::*;

/// Refuses a table with fewer than two rows: no metric means anything on it.
fn check_sizes(real_train: &Table, real_test: &Table, synthetic: &Table) -> Result<(), EvalError> {
    for (t, what) in [
        (real_train, "real-train"),
        (real_test, "real-test"),
        (synthetic, "synthetic"),
    ] {
        if t.n_rows < 2 {
            return Err(EvalError::TooFewRows {
                table: what,
                rows: t.n_rows,
            });
        }
    }
    Ok(())
}

/// Refuses a label that is not a binary or categorical column of the schema.
fn check_label(schema: &Schema, l: &str) -> Result<(), EvalError> {
    let ok = schema
        .column(l)
        .is_some_and(|c| matches!(c.kind, Kind::Binary | Kind::Categorical));
    if !ok {
        return Err(EvalError::BadLabel {
            label: l.to_string(),
            columns: schema
                .columns
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    Ok(())
}

/// Loads nothing: takes decoded tables and returns the report. `progress` receives a line
/// per section.
pub fn evaluate(
    schema: Option<Schema>,
    real_train: &Table,
    real_test: &Table,
    synthetic: &Table,
    opts: &Options,
    progress: &mut dyn FnMut(&str),
) -> Result<Report, EvalError> {
    check_sizes(real_train, real_test, synthetic)?;
    let mut timings = Vec::new();
    let t0 = Instant::now();
    progress("encoding the three tables");
    let f = Frame::new(schema, real_train, real_test, synthetic).map_err(EvalError::Tables)?;
    if let Some(l) = &opts.label {
        check_label(&f.schema, l)?;
    }
    timings.push(("encode".into(), secs(t0)));

    let t = Instant::now();
    progress("dimension-wise probability and 1-way histograms");
    let probability = probability(&f);
    let histograms = histograms(&f, real_train, synthetic);
    let three_way = three_way(&f, opts.seed);
    timings.push(("marginals".into(), secs(t)));

    let t = Instant::now();
    progress("dimension-wise prediction (2 models per column, trained twice)");
    let prediction = dimwise(&f, opts).map_err(EvalError::metric("dimension-wise prediction"))?;
    timings.push(("dimension-wise prediction".into(), secs(t)));

    let t = Instant::now();
    progress("PCA and Wasserstein scores");
    let (pca, whole) =
        pca_and_wasserstein(&f, opts).map_err(EvalError::metric("PCA and Wasserstein"))?;
    timings.push(("pca and wasserstein".into(), secs(t)));

    let t = Instant::now();
    let tstr = match &opts.label {
        Some(l) => {
            progress(&format!(
                "train on synthetic, test on real: 8 classifiers predicting {l}"
            ));
            Some(
                tstr(&f, l, opts.seed, progress)
                    .map_err(EvalError::metric("train on synthetic, test on real"))?,
            )
        }
        None => None,
    };
    timings.push(("tstr".into(), secs(t)));

    let t = Instant::now();
    progress("pMSE, MMD, privacy risk and the first look (exact values, rules, rows)");
    let (pmse, mmd) = pmse_mmd(&f, opts.seed);
    let privacy_risk = privacy_risk(&f, opts.seed);
    let first_look = super::first_look::first_look(&f.schema, real_train, synthetic, opts.seed);
    timings.push(("pmse, mmd, privacy, first look".into(), secs(t)));
    timings.push(("total".into(), secs(t0)));

    Ok(Report {
        dpsynth_version: env!("CARGO_PKG_VERSION").into(),
        sizes: sizes_of(&f),
        schema: f.schema.clone(),
        synthetic_out_of_domain: f.synthetic_out_of_domain.clone(),
        not_synthesized: f.not_synthesized.clone(),
        probability,
        prediction,
        histograms,
        three_way,
        pca,
        whole_data_wasserstein: whole,
        tstr,
        pmse,
        mmd,
        privacy_risk,
        first_look: Some(first_look),
        timings,
    })
}

/// The three tables' row counts and the encoded width.
fn sizes_of(f: &Frame) -> Sizes {
    Sizes {
        real_train: f.train.n_rows,
        real_test: f.test.n_rows,
        synthetic: f.synthetic.n_rows,
        encoded_width: f.encoding.width,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::table::Values;
    use crate::eval::models::Classifier;

    fn row(model: Classifier, real: f64) -> TstrRow {
        let s = |a| Scores {
            accuracy: a,
            auroc: None,
            auprc: None,
        };
        TstrRow {
            model,
            label: "y".into(),
            train_rows: 100,
            seconds: 0.0,
            real: Ok(s(real)),
            synthetic: Ok(s(0.8)),
        }
    }

    /// A classifier that scores below always guessing on real rows
    /// (Gaussian naive Bayes, 0.312 against 0.764) is left out of the real-data ceiling.
    #[test]
    fn the_ceiling_leaves_out_classifiers_that_lose_to_guessing_on_real_rows() {
        let t = Tstr {
            label: "y".into(),
            classes: vec!["a".into(), "b".into()],
            test_rows: 100,
            rows: vec![
                row(Classifier::LogisticRegression, 0.85),
                row(Classifier::GaussianNaiveBayes, 0.312),
                row(Classifier::RandomForest, 0.86),
            ],
            agreed_ranking_auroc: None,
            agreed_ranking_accuracy: None,
            majority_accuracy: 0.764,
        };
        let (kept, left) = t.working_rows();
        assert_eq!(kept.len(), 2);
        assert_eq!(left, vec![Classifier::GaussianNaiveBayes.label()]);
        let mean: f64 = kept
            .iter()
            .map(|r| r.real.as_ref().unwrap().accuracy)
            .sum::<f64>()
            / 2.0;
        assert!(
            mean > t.majority_accuracy,
            "the ceiling beats guessing: {mean}"
        );
    }

    /// A synthetic table without some of the real columns (a model that dropped them) is
    /// scored, the missing columns as all missing, and named.
    #[test]
    fn columns_the_synthetic_rows_lack_are_scored_as_missing_and_named() {
        use crate::data::table::{Column, TextColumn};
        let text =
            |cells: Vec<&str>| Values::Text(TextColumn::from_cells(cells.into_iter().map(Some)));
        let real = Table {
            columns: vec![
                Column {
                    name: "colour".into(),
                    values: text(
                        (0..60)
                            .map(|i| if i % 3 == 0 { "red" } else { "blue" })
                            .collect(),
                    ),
                },
                Column {
                    name: "size".into(),
                    values: Values::Number((0..60).map(|i| Some(f64::from(i % 7))).collect()),
                },
            ],
            n_rows: 60,
        };
        let synthetic = Table {
            columns: vec![Column {
                name: "colour".into(),
                values: text(
                    (0..60)
                        .map(|i| if i % 2 == 0 { "red" } else { "blue" })
                        .collect(),
                ),
            }],
            n_rows: 60,
        };
        let r = evaluate(
            None,
            &real,
            &real,
            &synthetic,
            &Options::default(),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(r.not_synthesized, vec!["size".to_string()]);
        let v = crate::eval::verdict::verdict(&r);
        assert!(
            v.reasons.iter().any(|x| x.contains("not synthesized")),
            "{v:?}"
        );
    }
}
