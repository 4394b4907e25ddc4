//! Train on synthetic, test on real: the classifier zoo on the label column.

use std::time::Instant;

use super::dimwise::class_scores;
use super::frame::Frame;
use super::models::{Classifier, Xy};
use super::results::*;
use super::stats;

pub(crate) fn tstr(
    f: &Frame,
    label: &str,
    seed: u64,
    progress: &mut dyn FnMut(&str),
) -> Result<Tstr, String> {
    let ci = f
        .schema
        .columns
        .iter()
        .position(|c| c.name == label)
        .ok_or_else(|| format!("--label {label}: no such column"))?;
    let (train, k) = f.classes_xy(ci, &f.train).ok_or("label is continuous")?;
    let (syn, _) = f
        .classes_xy(ci, &f.synthetic)
        .ok_or("label is continuous")?;
    let (test, _) = f.classes_xy(ci, &f.test).ok_or("label is continuous")?;
    let mut classes: Vec<String> = f.schema.columns[ci].categories().unwrap_or(&[]).to_vec();
    if classes.len() < k {
        classes.push("missing / other".into());
    }
    let majority = {
        let mut counts = vec![0usize; k];
        test.y.iter().for_each(|&c| counts[c as usize] += 1);
        counts.iter().copied().max().unwrap_or(0) as f64 / test.n.max(1) as f64
    };
    // Models run one after another; each uses every core inside.
    let rows: Vec<TstrRow> = Classifier::ALL
        .iter()
        .map(|&model| {
            let t = Instant::now();
            let fit = |d: &Xy| {
                model
                    .fit_proba(d, &test.x, k, seed)
                    .map(|p| class_scores(&test.y, &p, k))
            };
            // The two fits are independent: on two cores the single-threaded smartcore
            // models finish in half the time.
            let (real, synthetic) = rayon::join(|| fit(&train), || fit(&syn));
            progress(&format!("  {}: {:.1} s", model.label(), secs(t)));
            TstrRow {
                model,
                label: model.label().into(),
                train_rows: model.max_train_rows().min(syn.n),
                seconds: secs(t),
                real,
                synthetic,
            }
        })
        .collect();
    let pairs = |get: fn(&Scores) -> Option<f64>| -> Option<f64> {
        let (mut a, mut c) = (vec![], vec![]);
        for r in &rows {
            if let (Ok(x), Ok(y)) = (&r.real, &r.synthetic) {
                if let (Some(x), Some(y)) = (get(x), get(y)) {
                    a.push(x);
                    c.push(y);
                }
            }
        }
        stats::agreed_ranking(&a, &c)
    };
    Ok(Tstr {
        label: label.into(),
        classes,
        test_rows: test.n,
        agreed_ranking_auroc: pairs(|s| s.auroc),
        agreed_ranking_accuracy: pairs(|s| Some(s.accuracy)),
        majority_accuracy: majority,
        rows,
    })
}
