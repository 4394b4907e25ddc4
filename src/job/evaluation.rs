//! One evaluation pipeline for `dpsynth evaluate` and the window: the same function picks
//! the rows, samples the model, runs every metric and names its inputs, so the two front
//! ends can never report different figures for the same files.

use std::path::{Path, PathBuf};

use super::JobError;
use crate::data::schema::{Kind, Schema};
use crate::data::{self, Dataset, Table};
use crate::eval::html::Inputs;
use crate::eval::report::{self, Options, Report};

/// How much to evaluate.
#[derive(Debug, Clone)]
pub struct EvalSpec {
    /// Rows per side (seeded subsamples); `None` evaluates every row.
    pub rows: Option<usize>,
    /// The column train-on-synthetic/test-on-real predicts (`None`: no such table; the
    /// window's evaluation of a run falls back to [`default_label`]).
    pub label: Option<String>,
    pub options: Options,
    /// What to draw from a boosted model (`None`: its default; see [`super::Draw`]).
    pub draw: Option<super::Draw>,
}

impl EvalSpec {
    /// The window's: 5,000 rows a side and 10 Wasserstein repeats, so a report takes
    /// seconds; `dpsynth evaluate` gives the full-size report of the same figures.
    pub fn quick() -> Self {
        Self {
            rows: Some(5_000),
            label: None,
            options: Options {
                dimwise_rows: 2_000,
                wasserstein_repeats: 10,
                ..Options::default()
            },
            draw: None,
        }
    }
}

/// A table and the words that name it in the report.
pub struct Named<'a> {
    pub table: &'a Table,
    pub name: String,
}

/// A finished evaluation and what it was computed on.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Evaluated {
    pub report: Report,
    pub inputs: Inputs,
    /// One sentence: which rows were scored, for the window to show beside the scores.
    pub rows_note: String,
}

fn subsample(t: &Table, rows: Option<usize>, seed: u64) -> Table {
    match rows {
        Some(r) if r < t.n_rows => t.sample_rows(r, seed),
        _ => t.clone(),
    }
}

fn described(name: &str, t: &Table, rows: Option<usize>) -> String {
    match rows {
        Some(r) if r < t.n_rows => format!("{name} ({r} of {} rows, seeded sample)", t.n_rows),
        _ => format!("{name} ({} rows)", t.n_rows),
    }
}

/// Scores `synthetic` against `real_train` and `real_test` (every metric of DESIGN.md §4).
pub fn evaluate_tables(
    schema: Option<Schema>,
    real_train: Named<'_>,
    real_test: Named<'_>,
    synthetic: Named<'_>,
    spec: &EvalSpec,
    progress: &mut dyn FnMut(&str),
) -> Result<Evaluated, JobError> {
    let seed = spec.options.seed;
    let train = subsample(real_train.table, spec.rows, seed.wrapping_add(1));
    // Without a held-out file the caller passes the training table as real-test: score on
    // the very rows the real-data models trained on, as the window always has.
    let test = if std::ptr::eq(real_test.table, real_train.table) {
        train.clone()
    } else {
        subsample(real_test.table, spec.rows, seed.wrapping_add(3))
    };
    let syn = subsample(synthetic.table, spec.rows, seed.wrapping_add(2));
    let opts = Options {
        label: spec.label.clone(),
        ..spec.options.clone()
    };
    let inputs = Inputs {
        real_train: described(&real_train.name, real_train.table, spec.rows),
        real_test: described(&real_test.name, real_test.table, spec.rows),
        synthetic: described(&synthetic.name, synthetic.table, spec.rows),
    };
    let rows_note = format!(
        "scored on {} rows of real-train, {} of real-test and {} synthetic{}",
        train.n_rows,
        test.n_rows,
        syn.n_rows,
        opts.label
            .as_ref()
            .map_or(String::new(), |l| format!("; classifiers predict '{l}'"))
    );
    let report = report::evaluate(schema, &train, &test, &syn, &opts, progress)?;
    Ok(Evaluated {
        report,
        inputs,
        rows_note,
    })
}

/// The first look alone ([`crate::eval::first_look`]), ahead of the full report: the same
/// seeded synthetic rows and real sample as [`evaluate_model`] uses, in well under a second,
/// so the window shows what a person sees first while the classifiers train. A local
/// diagnostic like the report: it reads the real rows.
pub fn first_look_of(
    model: &Path,
    real: &Table,
    schema: &Schema,
    spec: &EvalSpec,
) -> Result<crate::eval::results::FirstLook, JobError> {
    let rows = spec.rows.unwrap_or(real.n_rows).max(1);
    let seed = spec.options.seed;
    let syn = super::services::sample_with(model, rows, Some(seed.wrapping_add(2)), spec.draw)?;
    let train = subsample(real, spec.rows, seed.wrapping_add(1));
    Ok(crate::eval::first_look::first_look(
        schema, &train, &syn, seed,
    ))
}

/// Share of the rows held out for scoring when no held-out file exists.
pub const HELD_OUT_SHARE: f64 = 0.2;

/// The window's evaluation of a finished run: samples the model, scores it against the
/// table it trained on and the held-out file beside it when there is one.
pub fn evaluate_model(
    model: &Path,
    data_path: &Path,
    real: &Table,
    schema: &Schema,
    spec: &EvalSpec,
    progress: &mut dyn FnMut(&str),
) -> Result<Evaluated, JobError> {
    let rows = spec.rows.unwrap_or(real.n_rows).max(1);
    progress(&format!("sampling {rows} synthetic rows"));
    let syn = super::services::sample_with(
        model,
        rows,
        Some(spec.options.seed.wrapping_add(2)),
        spec.draw,
    )?;
    let held_out =
        sibling_test(data_path).and_then(|p| match data::open(&p, &Default::default()) {
            Ok(Dataset::Table(t)) => Some((t, p)),
            _ => None,
        });
    // Without a held-out file, a fifth of the rows is held out: every classifier is
    // scored on rows it did not train on, so the real-row ceiling is not an in-sample
    // score. (The synthesizer saw every row; its rows carry the guarantee.)
    let split = held_out
        .is_none()
        .then(|| real.split_off(HELD_OUT_SHARE, spec.options.seed.wrapping_add(3)));
    let (train, test, test_name) = match (&held_out, &split) {
        (Some((t, p)), _) => (real, t, format!("held-out file {}", p.display())),
        (None, Some((rest, out))) => (
            rest,
            out,
            format!(
                "{} rows held out of the data (a fifth, chosen at random; no held-out file was found beside it)",
                out.n_rows
            ),
        ),
        (None, None) => (real, real, "rows of the training data".to_string()),
    };
    let spec = &EvalSpec {
        label: spec.label.clone().or_else(|| default_label(schema)),
        ..spec.clone()
    };
    let mut ev = evaluate_tables(
        Some(schema.clone()),
        Named {
            table: train,
            name: data_path.display().to_string(),
        },
        Named {
            table: test,
            name: test_name,
        },
        Named {
            table: &syn,
            name: format!("sampled from {}", model.display()),
        },
        spec,
        progress,
    )?;
    if held_out.is_none() {
        ev.rows_note.push_str(
            "; no held-out file was found, so a fifth of the rows was held out for scoring (a local evaluation, never released)",
        );
    }
    Ok(ev)
}

/// Opens a table and its schema (the file given, else one inferred from the rows) for a
/// service that works on tables only; `images` says what to do with an image set instead.
pub fn open_table(
    path: &Path,
    schema: Option<&Path>,
    images: &str,
) -> Result<(Table, Schema), JobError> {
    let table = match data::open(path, &Default::default()).map_err(|e| JobError::file(path, e))? {
        Dataset::Table(t) => t,
        Dataset::Images(_) => return Err(JobError::Usage(images.into())),
    };
    let schema = match schema {
        Some(p) => Schema::load(p).map_err(|e| JobError::file(p, e))?,
        None => {
            data::infer::infer_schema(&table)
                .map_err(|e| JobError::file(path, e))?
                .schema
        }
    };
    Ok((table, schema))
}

/// The column the TSTR table predicts: the schema's target when the user picked one; else
/// a binary or categorical column named like a label; else the table's last column when it
/// is one (files usually end with the outcome); else the last binary column; else the
/// categorical column with the fewest levels (many levels make a poor task to score).
pub fn default_label(schema: &Schema) -> Option<String> {
    let is_discrete = |k: Kind| matches!(k, Kind::Binary | Kind::Categorical);
    if let Some(t) = schema
        .target
        .as_ref()
        .filter(|t| schema.column(t).is_some_and(|c| is_discrete(c.kind)))
    {
        return Some(t.clone());
    }
    let discrete: Vec<&crate::data::schema::ColumnSpec> = schema
        .columns
        .iter()
        .filter(|c| is_discrete(c.kind))
        .collect();
    for want in ["income", "label", "class", "target", "y", "outcome"] {
        if let Some(c) = discrete.iter().find(|c| c.name.eq_ignore_ascii_case(want)) {
            return Some(c.name.clone());
        }
    }
    let last = schema
        .columns
        .iter()
        .rev()
        .find(|c| c.kind != Kind::Ignored);
    if let Some(c) = last.filter(|c| is_discrete(c.kind)) {
        return Some(c.name.clone());
    }
    if let Some(c) = discrete.iter().rev().find(|c| c.kind == Kind::Binary) {
        return Some(c.name.clone());
    }
    discrete
        .iter()
        .min_by_key(|c| c.categories().map_or(usize::MAX, |l| l.len()))
        .map(|c| c.name.clone())
}

/// A held-out file beside the data (`…train…` → `…test…`), if there is one.
pub fn sibling_test(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    if !name.contains("train") {
        return None;
    }
    let p = path.with_file_name(name.replacen("train", "test", 1));
    p.exists().then_some(p)
}

/// An MNIST IDX training file and its real test set (the `t10k-` file beside it), the
/// papers' protocol for scoring generated digits.
pub fn open_image_splits(
    data: &Path,
) -> Result<(data::image::ImageSet, data::image::ImageSet), JobError> {
    let train = data::image::load_idx_dataset(data).map_err(|e| JobError::file(data, e))?;
    let name = data
        .file_name()
        .map(|n| n.to_string_lossy().replacen("train-", "t10k-", 1))
        .unwrap_or_default();
    let test_path = data.with_file_name(&name);
    if name.is_empty() || test_path == data || !test_path.exists() {
        return Err(JobError::Usage(format!(
            "scoring generated digits needs the real test set, expected at {} (the t10k- file beside the train- file)",
            test_path.display()
        )));
    }
    let test =
        data::image::load_idx_dataset(&test_path).map_err(|e| JobError::file(&test_path, e))?;
    Ok((train, test))
}

/// Generated digits scored per image run: as many as the real training images, at most this.
pub const IMAGE_SAMPLES: usize = 10_000;

/// Scores an image model the papers' way: classifiers trained on its digits (as many as
/// the real training set has, at most [`IMAGE_SAMPLES`]) and tested on the real test set,
/// beside the same classifiers trained on the real digits, and the Fréchet distance.
pub fn score_images(
    model: &Path,
    train: &data::image::ImageSet,
    test: &data::image::ImageSet,
    seed: Option<u64>,
) -> Result<crate::eval::images::ImageReport, JobError> {
    let n = train.len().min(IMAGE_SAMPLES);
    let t = super::services::sample(model, n, seed)?;
    let syn = data::image::from_pixel_table(&t, "generated")
        .map_err(|e| JobError::Training(e.to_string()))?;
    crate::eval::images::evaluate(train, test, &syn, seed.unwrap_or(0)).map_err(JobError::Training)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::schema::{ColumnSpec, Domain, Provenance};

    fn column(name: &str, kind: Kind, levels: &[&str]) -> ColumnSpec {
        ColumnSpec {
            name: name.into(),
            kind,
            integer: false,
            missing: false,
            time_format: None,
            domain: Some(if levels.is_empty() {
                Domain::Bounds {
                    lower: 0.0,
                    upper: 1.0,
                }
            } else {
                Domain::Categories(levels.iter().map(|l| l.to_string()).collect())
            }),
            point_masses: Vec::new(),
            point_masses_estimated: false,
            no_point_masses: false,
            decimals: None,
            kind_from_data: false,
            blank_share: None,
            codebook: false,
            provenance: Provenance::UserProvided,
        }
    }

    /// The classifiers predict the user's pick; else the last column when it is discrete;
    /// else a binary column; else the categorical column with the fewest levels.
    #[test]
    fn the_target_is_the_users_pick_else_a_sensible_column() {
        let mut s = Schema::new(vec![
            column("occupation", Kind::Categorical, &["a", "b", "c", "d"]),
            column("region", Kind::Categorical, &["n", "s"]),
            column("hours", Kind::Continuous, &[]),
        ]);
        assert_eq!(default_label(&s).as_deref(), Some("region"));
        s.columns
            .push(column("smoker", Kind::Binary, &["no", "yes"]));
        assert_eq!(default_label(&s).as_deref(), Some("smoker"));
        s.columns.push(column("age", Kind::Continuous, &[]));
        assert_eq!(default_label(&s).as_deref(), Some("smoker"));
        s.target = Some("occupation".into());
        assert!(s.validate().is_ok());
        assert_eq!(default_label(&s).as_deref(), Some("occupation"));
        s.target = Some("hours".into());
        assert!(
            s.validate().is_err(),
            "a number column is no classification target"
        );
    }

    /// Without a held-out file, a fifth of the rows is held out and the note says so:
    /// the real-row ceiling is never an in-sample score.
    #[test]
    fn split_off_holds_out_a_fifth_disjoint_from_the_rest() {
        let t = Table {
            columns: vec![crate::data::table::Column {
                name: "x".into(),
                values: crate::data::table::Values::Number(
                    (0..1_000).map(|i| Some(i as f64)).collect(),
                ),
            }],
            n_rows: 1_000,
        };
        let (rest, out) = t.split_off(HELD_OUT_SHARE, 9);
        assert_eq!((rest.n_rows, out.n_rows), (800, 200));
        let values = |t: &Table| match &t.columns[0].values {
            crate::data::table::Values::Number(v) => {
                v.iter().map(|x| x.unwrap() as i64).collect::<Vec<_>>()
            }
            _ => unreachable!(),
        };
        let (a, b) = (values(&rest), values(&out));
        assert!(a.iter().all(|x| !b.contains(x)));
        assert_eq!(t.split_off(HELD_OUT_SHARE, 9).1.n_rows, 200);
        assert_eq!(values(&t.split_off(HELD_OUT_SHARE, 9).1), b, "seeded");
    }
}
