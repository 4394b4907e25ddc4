//! pMSE, MMD and the privacy-risk figures (distance to closest record, membership).

use rand::SeedableRng;
use rand::seq::index::sample;

use crate::data::encode::SpanKind;

use super::frame::Frame;
use super::results::*;
use super::{scores, stats};

pub(crate) fn subsample_rows(rows: &[Vec<f64>], m: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    sample(&mut rng, rows.len(), m.min(rows.len()))
        .iter()
        .map(|i| rows[i].clone())
        .collect()
}

pub(crate) fn pmse_mmd(f: &Frame, seed: u64) -> (PmseReport, MmdReport) {
    // Continuous columns and one-hot blocks minus one slot each (the intercept is the
    // dropped slot), so the unpenalised fit is identifiable.
    let mut cols = Vec::new();
    for s in &f.encoding.spans {
        let n = if matches!(s.kind, SpanKind::Categorical | SpanKind::PointMass) {
            s.len.saturating_sub(1)
        } else {
            s.len
        };
        cols.extend(s.start..s.start + n);
    }
    let sel = |d: &crate::data::encode::EncodedData| -> Vec<Vec<f64>> {
        (0..d.n_rows)
            .map(|r| cols.iter().map(|&c| f64::from(d.row(r)[c])).collect())
            .collect()
    };
    let m = 3000.min(f.train.n_rows).min(f.synthetic.n_rows);
    let (real, syn) = (
        subsample_rows(&sel(&f.train), m, seed),
        subsample_rows(&sel(&f.synthetic), m, seed + 1),
    );
    let fit = stats::pmse(&real, &syn);
    let pm = PmseReport {
        rows_per_side: m,
        model: "logistic regression, unpenalised, main effects (Newton)".into(),
        fit,
    };
    let mm = 1000.min(f.train.n_rows).min(f.synthetic.n_rows);
    let (real, syn) = (
        subsample_rows(&Frame::rows(&f.train), mm, seed + 2),
        subsample_rows(&Frame::rows(&f.synthetic), mm, seed + 3),
    );
    let s = stats::median_heuristic(&real, &syn);
    let m2 = stats::mmd2(&real, &syn, s);
    (
        pm,
        MmdReport {
            rows_per_side: mm,
            bandwidth: s,
            mmd2_biased: m2.biased,
            mmd2_unbiased: m2.unbiased,
        },
    )
}

pub(crate) fn percentile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

pub(crate) fn privacy_risk(f: &Frame, seed: u64) -> PrivacyRisk {
    let m = 1000
        .min(f.synthetic.n_rows)
        .min(f.test.n_rows)
        .min(f.train.n_rows);
    let train = Frame::rows(&f.train);
    let syn = subsample_rows(&Frame::rows(&f.synthetic), m, seed + 4);
    let test = subsample_rows(&Frame::rows(&f.test), m, seed + 5);
    let mut ds: Vec<f64> = stats::closest(&syn, &train)
        .into_iter()
        .map(|d| d.0)
        .collect();
    let mut dt: Vec<f64> = stats::closest(&test, &train)
        .into_iter()
        .map(|d| d.0)
        .collect();
    let exact = ds.iter().filter(|&&d| d == 0.0).count();
    // Membership inference: members (train) vs non-members (test), score = −distance to
    // the closest synthetic row.
    let members = subsample_rows(&train, m / 2, seed + 6);
    let test = &test[..m / 2];
    let all_syn = Frame::rows(&f.synthetic);
    let dm = stats::closest(&members, &all_syn);
    let dn = stats::closest(test, &all_syn);
    let labels: Vec<bool> = dm
        .iter()
        .map(|_| true)
        .chain(dn.iter().map(|_| false))
        .collect();
    let score: Vec<f64> = dm.iter().chain(&dn).map(|d| -d.0).collect();
    PrivacyRisk {
        rows: m,
        dcr_synthetic_median: stats::median(&mut ds.clone()),
        dcr_test_median: stats::median(&mut dt.clone()),
        dcr_synthetic_p5: percentile(&mut ds, 0.05),
        dcr_test_p5: percentile(&mut dt, 0.05),
        exact_copies: exact,
        membership_auc: scores::roc_auc(&labels, &score),
    }
}
