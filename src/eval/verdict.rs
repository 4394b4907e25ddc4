//! A plain verdict on a run's synthetic data, computed from its evaluation report: one
//! line a person can act on, and the reasons behind it.
//!
//! Scores that summarise spread (the PCA and whole-data Wasserstein scores) can read well
//! on data that has collapsed onto a few rows, so the verdict looks first for collapse
//! (a column that takes one value in almost every synthetic row where the real data
//! varies) and for classifiers no better than guessing, and only then for closeness.
//! Like every figure of the evaluation it compares with the real rows: a non-private
//! diagnostic for the data's owner.

use serde::Serialize;

use super::report::Report;

/// How usable the synthetic rows are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Grade {
    /// Classifiers trained on it come close to real data and the columns match.
    Useful,
    /// Some structure survives, some does not (the reasons say which).
    Partly,
    /// Collapsed or no better than guessing.
    NotUseful,
}

/// The verdict and its reasons, each a sentence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub grade: Grade,
    pub headline: String,
    pub reasons: Vec<String>,
}

/// A synthetic column whose commonest value fills at least this share of rows has
/// collapsed, when the real column's commonest value fills less than [`REAL_SPREAD`].
pub const COLLAPSED_SHARE: f64 = 0.99;
const REAL_SPREAD: f64 = 0.9;
/// Mean AUROC at or below this is guessing.
const GUESSING_AUROC: f64 = 0.55;

/// How classifiers trained on synthetic rows fare against those trained on real ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prediction {
    Guessing,
    Weaker,
    Close,
}

/// Judges mean accuracy `sa` (synthetic-trained) against `ra` (real-trained) and the
/// commonest class's share `floor`, with mean AUROCs where the label has them.
///
/// Accuracy says little when the real-trained classifiers themselves barely beat the
/// commonest class (an imbalanced label): the lift over guessing is then a ratio of two
/// small differences, and AUROC judges instead.
fn prediction(sa: f64, ra: f64, s_auc: Option<f64>, r_auc: Option<f64>, floor: f64) -> Prediction {
    let clear_margin = ra - floor >= 0.02;
    let lift = if clear_margin {
        (sa - floor) / (ra - floor)
    } else {
        1.0
    };
    let acc_guessing = clear_margin && sa <= floor + 0.005 && lift < 0.1;
    let auroc_guessing = s_auc.is_some_and(|a| a <= GUESSING_AUROC);
    let auroc_informative = s_auc.is_some_and(|a| a > GUESSING_AUROC + 0.05);
    if auroc_guessing || (acc_guessing && !auroc_informative) {
        Prediction::Guessing
    } else if lift >= 0.7 && s_auc.zip(r_auc).is_none_or(|(s, r)| s >= r - 0.05) {
        Prediction::Close
    } else {
        Prediction::Weaker
    }
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn pct(x: f64) -> String {
    format!("{:.1} %", 100.0 * x)
}

/// A rule's condition or consequence whose share moved by more than this between the
/// real and the synthetic rows reshaped the table (a group dropped to keep the rule).
const RESHAPED: f64 = 0.2;

/// The verdict on `r`.
pub fn verdict(r: &Report) -> Verdict {
    verdict_for(r, None)
}

/// [`verdict`] for a run of `method` (its id), so the advice never names the method the
/// run already used.
pub fn verdict_for(r: &Report, method: Option<&str>) -> Verdict {
    let mut f = Findings::default();
    f.collapsed(r);
    f.first_look(r);
    f.columns(r);
    if let Some(t) = &r.tstr {
        f.prediction(t);
    }
    let Findings {
        bad,
        mixed,
        good,
        notes,
    } = f;
    let grade = if !bad.is_empty() {
        Grade::NotUseful
    } else if mixed.is_empty() && !good.is_empty() {
        Grade::Useful
    } else {
        Grade::Partly
    };
    let headline = headline(grade, r, method);
    let mut reasons: Vec<String> = bad
        .into_iter()
        .chain(mixed)
        .chain(good)
        .chain(notes)
        .collect();
    if grade == Grade::NotUseful {
        reasons.push(
            "the PCA and whole-data Wasserstein scores measure overall spread and can read well even on collapsed data: do not rely on them alone"
                .into(),
        );
    }
    Verdict {
        grade,
        headline,
        reasons,
    }
}

/// The verdict's reasons as they are found: what makes the data not useful, what is
/// mixed, what is good.
#[derive(Default)]
struct Findings {
    bad: Vec<String>,
    mixed: Vec<String>,
    good: Vec<String>,
    /// What a score cannot say here (a target the real rows do not predict either): shown,
    /// but no grade rests on it.
    notes: Vec<String>,
}

impl Findings {
    /// Columns whose synthetic values collapsed onto one value the real data does not
    /// favour.
    fn collapsed(&mut self, r: &Report) {
        for h in &r.histograms {
            // A column the model did not synthesize is named once, below, not as collapsed.
            if h.synthetic.len() < 2 || r.not_synthesized.contains(&h.column) {
                continue;
            }
            let top = |v: &[f64]| {
                v.iter()
                    .enumerate()
                    .fold((0, 0.0), |b, (i, x)| if *x > b.1 { (i, *x) } else { b })
            };
            let (i, s) = top(&h.synthetic);
            let (_, real) = top(&h.real);
            if s >= COLLAPSED_SHARE && real < REAL_SPREAD {
                let value = h.bins.get(i).cloned().unwrap_or_default();
                self.bad.push(format!(
                "collapsed: '{}' is {value} in {} of synthetic rows (the real data's commonest value: {})",
                h.column,
                pct(s),
                pct(real)
            ));
            }
        }
    }

    /// The worst thing a person sees first in the rows (a common exact value lost, a rule
    /// broken, too many decimals), which aggregate scores hide.
    fn first_look(&mut self, r: &Report) {
        let Some(l) = r.first_look.as_ref() else {
            return;
        };
        let reshaped = reshaped(&l.rules);
        if !reshaped.is_empty() {
            self.bad.push(format!(
                "a rule reshaped the table: {}. Keeping the rule dropped or moved a group; state the value the rule names as an exact value of its column, or train with AIM or MST, which hold rules as structural zeros",
                reshaped.join("; ")
            ));
        } else if let Some(w) = &l.worst {
            self.mixed.push(format!("at first look, {w}"));
        }
    }

    /// How close the columns are, values the real data cannot have, and columns the model
    /// dropped.
    fn columns(&mut self, r: &Report) {
        let tv: Vec<f64> = r.histograms.iter().map(|h| h.tvd).collect();
        if let Some(tv) = mean(&tv) {
            let line = format!(
                "mean total variation between real and synthetic columns: {tv:.3} (0 = identical, 1 = disjoint)"
            );
            if tv <= 0.05 {
                self.good.push(format!("columns match closely: {line}"));
            } else if tv >= 0.2 {
                self.mixed.push(format!("columns are far off: {line}"));
            } else {
                self.mixed.push(format!("columns roughly match: {line}"));
            }
        }
        // Values the real data cannot have (a bound or level from a private estimate, or a
        // generator's overshoot): named with their share, never folded silently into a bar.
        let n = r.sizes.synthetic.max(1) as f64;
        let outside: Vec<String> = r
            .synthetic_out_of_domain
            .iter()
            .filter(|(_, k)| *k as f64 >= 0.01 * n)
            .map(|(c, k)| format!("{c} ({})", pct(*k as f64 / n)))
            .collect();
        if !outside.is_empty() {
            self.mixed.push(format!(
            "values the real data does not have (outside its range or categories, or blank where it has none): {}",
            outside.join(", ")
        ));
        }
        if !r.not_synthesized.is_empty() {
            self.bad.push(format!(
            "not synthesized: {} of the data's columns are missing from the synthetic rows ({}): the model dropped them. With a private domain estimate that means no value of theirs was frequent enough to pass its threshold: give their categories as public facts, raise the domain share of ε, or use more rows",
            r.not_synthesized.len(),
            r.not_synthesized.join(", ")
        ));
        }
    }

    /// Train on synthetic, test on real, beside real rows and guessing.
    fn prediction(&mut self, t: &super::results::Tstr) {
        let (rows, left_out) = t.working_rows();
        let syn: Vec<(f64, Option<f64>)> = rows
            .iter()
            .filter_map(|row| row.synthetic.as_ref().ok().map(|s| (s.accuracy, s.auroc)))
            .collect();
        let real: Vec<(f64, Option<f64>)> = rows
            .iter()
            .filter_map(|row| row.real.as_ref().ok().map(|s| (s.accuracy, s.auroc)))
            .collect();
        let which = if left_out.is_empty() {
            String::new()
        } else {
            format!(
                " (mean of the {} classifiers that beat guessing on real rows; left out: {})",
                rows.len(),
                left_out.join(", ")
            )
        };
        let acc = |v: &[(f64, Option<f64>)]| mean(&v.iter().map(|x| x.0).collect::<Vec<_>>());
        let auc =
            |v: &[(f64, Option<f64>)]| mean(&v.iter().filter_map(|x| x.1).collect::<Vec<_>>());
        if let (Some(sa), Some(ra)) = (acc(&syn), acc(&real)) {
            let (s_auc, r_auc) = (auc(&syn), auc(&real));
            let floor = t.majority_accuracy;
            if unpredictable(ra, r_auc, floor) {
                self.notes.push(format!(
                    "'{}' is not predictable even from the real rows (classifiers trained on them score {ra:.3} accuracy{} against {floor:.3} for always guessing the commonest class), so the prediction score says nothing about the synthetic rows: pick another target (the Data tab's target, or `evaluate --label`)",
                    t.label,
                    r_auc.map_or(String::new(), |a| format!(" / AUROC {a:.3}")),
                ));
                return;
            }
            let scores = format!(
                "classifiers predicting '{}' trained on it score {:.3} accuracy{} on real test rows; trained on real rows {:.3}{}; always guessing the commonest class {:.3}",
                t.label,
                sa,
                s_auc.map_or(String::new(), |a| format!(" / AUROC {a:.3}")),
                ra,
                r_auc.map_or(String::new(), |a| format!(" / {a:.3}")),
                floor
            ) + &which;
            match prediction(sa, ra, s_auc, r_auc, floor) {
                Prediction::Guessing => self
                    .bad
                    .push(format!("predictions no better than guessing: {scores}")),
                Prediction::Close => self
                    .good
                    .push(format!("close to real data for prediction: {scores}")),
                Prediction::Weaker => self
                    .mixed
                    .push(format!("weaker than real data for prediction: {scores}")),
            }
        }
    }
}

/// Each rule's condition or consequence whose share moved by more than [`RESHAPED`], in
/// words.
fn reshaped(rules: &[super::results::RuleShare]) -> Vec<String> {
    rules
        .iter()
        .flat_map(|rule| {
            [("condition", rule.when), ("consequence", rule.then)]
                .into_iter()
                .filter_map(move |(part, p)| {
                    let (real, syn) = p?;
                    ((real - syn).abs() > RESHAPED).then(|| {
                        format!(
                            "the {part} of '{}' holds in {} of real rows but {} of synthetic rows",
                            rule.rule,
                            pct(real),
                            pct(syn)
                        )
                    })
                })
        })
        .collect()
}

/// Whether real-trained classifiers themselves barely beat guessing: their accuracy is
/// within 0.02 of the commonest class's share and their AUROC (where there is one) at most
/// 0.6.
fn unpredictable(ra: f64, r_auc: Option<f64>, floor: f64) -> bool {
    ra - floor < 0.02 && r_auc.is_none_or(|a| a <= 0.6)
}

/// The verdict's first sentence for `grade`; its advice leaves out the method the run
/// used (`method`, when known).
fn headline(grade: Grade, r: &Report, method: Option<&str>) -> String {
    match grade {
        // Columns dropped by a private domain estimate: ε and the method are not the lever
        // (AIM at ε = 1 on 1,000 rows and 21 estimated columns kept 9 of them).
        Grade::NotUseful if !r.not_synthesized.is_empty() => format!(
            "Not useful as it is: {} of the data's {} columns {} dropped before training (no value of theirs was frequent enough for the private domain estimate). Give their categories and bounds as public facts, raise the domain share of ε, or use more rows.",
            r.not_synthesized.len(),
            r.histograms.len().max(r.not_synthesized.len()),
            if r.not_synthesized.len() == 1 { "was" } else { "were" }
        ),
        Grade::NotUseful if method == Some("aim") => "Not useful as it is: the synthetic rows lost the data's structure. Try a larger ε or more rows, or give the columns' domains and exact values as public facts (a private estimate spends part of ε).".into(),
        Grade::NotUseful if method.is_some() => "Not useful as it is: the synthetic rows lost the data's structure. Try a larger ε or more rows; on a table, try AIM (the recommended method).".into(),
        Grade::NotUseful => "Not useful as it is: the synthetic rows lost the data's structure. Try a larger ε or more rows; on a table, try AIM (the recommended method) if this run used another.".into(),
        Grade::Partly => "Partly useful: some of the data's structure survived; the reasons below say which.".into(),
        Grade::Useful => "Useful: it reproduces the columns and predicts about as well as the real data.".into(),
    }
}

/// Digits judged "not useful" below this share of real test digits labelled right.
const IMAGE_NOISE: f64 = 0.2;
/// Fewer real training digits than this is a sample, not a training set, for DP.
const IMAGE_SAMPLE_ROWS: usize = 10_000;

/// A plain verdict on an image run, from the CNN trained on its digits (ten classes make
/// 10 % the floor of guessing), and whether it is good news. When the digits are noise the
/// advice names the lever that is really at fault, in order: a smoke-test preset (`tiny`
/// trains for seconds), a sample of digits too small for DP, and only then ε.
pub fn image_verdict(r: &super::images::ImageReport, preset: Option<&str>) -> (String, bool) {
    let (syn, real) = (r.synthetic_cnn_accuracy, r.real_cnn_accuracy);
    if syn < IMAGE_NOISE {
        let lever = if preset == Some(crate::util::presets::SMOKE_PRESET) {
            "the `tiny` preset trains for seconds to check that everything runs; for digits pick an image preset (DP-MERF `mnist-local-long`, the recommended one, reaches about 93 % at ε = 1 on all 60,000 digits)".to_string()
        } else if r.real_train_rows < IMAGE_SAMPLE_ROWS {
            format!(
                "it learned from {} digits: with so few, DP noise drowns the signal — train on the full set (60,000 MNIST digits)",
                r.real_train_rows
            )
        } else {
            "a larger ε, or a method and preset made for images (DP-MERF `mnist-local-long`)"
                .to_string()
        };
        (
            format!(
                "Not useful: a classifier trained on these digits labels real ones {:.0} % right, about as well as guessing (10 %). What to change: {lever}.",
                100.0 * syn
            ),
            false,
        )
    } else if syn >= 0.9 * real {
        (
            format!(
                "Useful: a classifier trained on these digits labels real ones {:.0} % right, close to one trained on real digits ({:.0} %).",
                100.0 * syn,
                100.0 * real
            ),
            true,
        )
    } else {
        (
            format!(
                "Partly useful: a classifier trained on these digits labels real ones {:.0} % right, against {:.0} % when trained on real digits.",
                100.0 * syn,
                100.0 * real
            ),
            syn >= 0.5 * real,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_a_rule_dropped_and_a_target_nobody_predicts_are_named() {
        let rule = |when| super::super::results::RuleShare {
            rule: r#"participation = "no" => hours = 0"#.into(),
            real: 0.0,
            synthetic: 0.0,
            when,
            then: None,
        };
        let moved = reshaped(&[rule(Some((0.43, 0.013)))]);
        assert_eq!(moved.len(), 1);
        assert!(
            moved[0].contains("43.0 % of real rows but 1.3 %"),
            "{moved:?}"
        );
        assert!(reshaped(&[rule(Some((0.43, 0.40))), rule(None)]).is_empty());
        // Real-trained classifiers at the floor, ranking at chance: nothing to compare.
        assert!(unpredictable(0.765, Some(0.52), 0.76));
        assert!(
            !unpredictable(0.765, Some(0.9), 0.76),
            "ranks well: imbalanced, not blind"
        );
        assert!(!unpredictable(0.85, Some(0.55), 0.76));
    }

    /// Noise digits from the `tiny` preset blame the preset, from a
    /// small sample blame the sample, and only then ε.
    #[test]
    fn the_image_verdict_names_the_real_lever() {
        let r = |train: usize, syn: f64| crate::eval::images::ImageReport {
            synthetic_rows: 1_000,
            real_train_rows: train,
            real_test_rows: 1_000,
            synthetic_logistic_accuracy: syn,
            synthetic_mlp_accuracy: syn,
            real_logistic_accuracy: 0.9,
            real_mlp_accuracy: 0.95,
            synthetic_cnn_accuracy: syn,
            real_cnn_accuracy: 0.97,
            frechet_distance: 100.0,
        };
        let (v, good) = image_verdict(&r(2_000, 0.11), Some("tiny"));
        assert!(!good && v.contains("`tiny` preset"), "{v}");
        let (v, _) = image_verdict(&r(2_000, 0.11), Some("mnist-conv"));
        assert!(v.contains("2000 digits") && !v.contains("tiny"), "{v}");
        let (v, _) = image_verdict(&r(60_000, 0.11), Some("mnist-conv"));
        assert!(v.contains("larger ε"), "{v}");
        let (v, good) = image_verdict(&r(60_000, 0.9), Some("mnist-conv-wide"));
        assert!(good && v.starts_with("Useful"), "{v}");
    }

    #[test]
    fn prediction_is_judged_by_auroc_when_accuracy_cannot_tell() {
        // Real-trained classifiers barely beat the commonest class (0.771 vs 0.764), the
        // synthetic-trained ones fall just under it, yet rank nearly as well: close.
        assert_eq!(
            prediction(0.758, 0.771, Some(0.811), Some(0.823), 0.764),
            Prediction::Close
        );
        // Ranking no better than chance is guessing, whatever the accuracy.
        assert_eq!(
            prediction(0.80, 0.85, Some(0.52), Some(0.90), 0.76),
            Prediction::Guessing
        );
        // A collapsed generator: accuracy at the floor where real data clearly beats it.
        assert_eq!(
            prediction(0.76, 0.85, None, None, 0.76),
            Prediction::Guessing
        );
        assert_eq!(
            prediction(0.84, 0.85, Some(0.88), Some(0.90), 0.76),
            Prediction::Close
        );
        assert_eq!(
            prediction(0.79, 0.85, Some(0.75), Some(0.90), 0.76),
            Prediction::Weaker
        );
    }
}
