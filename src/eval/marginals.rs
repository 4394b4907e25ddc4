//! 1-way histograms, dimension-wise probability and NIST-style 3-way marginals: how
//! well the synthetic table keeps each column and small groups of columns.

use rand::SeedableRng;
use rand::seq::index::sample;
use rayon::prelude::*;

use crate::data::encode::SpanKind;
use crate::data::schema::Kind;
use crate::data::table::Table;

use super::frame::Frame;
use super::results::*;
use super::stats;

pub(crate) fn probability(f: &Frame) -> Vec<ColumnProbability> {
    f.encoding
        .spans
        .iter()
        .filter(|s| s.kind == SpanKind::Binary)
        .map(|s| {
            let share = |d: &crate::data::encode::EncodedData| {
                (0..d.n_rows).filter(|&r| d.row(r)[s.start] > 0.5).count() as f64 / d.n_rows as f64
            };
            let spec = &f.schema.columns[s.column];
            ColumnProbability {
                column: spec.name.clone(),
                value: spec
                    .categories()
                    .and_then(|c| c.get(1))
                    .cloned()
                    .unwrap_or_default(),
                real: share(&f.test),
                synthetic: share(&f.synthetic),
            }
        })
        .collect()
}

/// Bin index of each row for column `ci`: categories (missing last) or 20 equal-width
/// bins over the real range (missing last) for continuous columns; with the bin labels.
pub(crate) fn bins_of(f: &Frame, ci: usize, t: &Table, edges: usize) -> (Vec<usize>, Vec<String>) {
    let spec = &f.schema.columns[ci];
    let col = t.column(&spec.name);
    let n = t.n_rows;
    match spec.kind {
        Kind::Continuous => {
            let (lo, hi) = spec.bounds().unwrap_or((0.0, 1.0));
            let w = (hi - lo) / edges as f64;
            let mut labels: Vec<String> = (0..edges)
                .map(|b| crate::util::fmt::number(lo + w * b as f64))
                .collect();
            labels.push("missing".into());
            let idx = (0..n)
                .map(|r| {
                    match col
                        .and_then(|c| c.text(r))
                        .and_then(|s| crate::util::fmt::parse_number(&s))
                    {
                        Some(x) => (((x - lo) / w).floor().max(0.0) as usize).min(edges - 1),
                        None => edges,
                    }
                })
                .collect();
            (idx, labels)
        }
        _ => {
            let cats = spec.categories().unwrap_or(&[]).to_vec();
            let mut labels = cats.clone();
            labels.push("missing / other".into());
            let idx = (0..n)
                .map(|r| {
                    col.and_then(|c| c.text(r))
                        .and_then(|s| cats.iter().position(|c| *c == s))
                        .unwrap_or(cats.len())
                })
                .collect();
            (idx, labels)
        }
    }
}

pub(crate) fn histograms(f: &Frame, train: &Table, syn: &Table) -> Vec<Histogram> {
    f.columns()
        .into_iter()
        .map(|ci| {
            let (ri, labels) = bins_of(f, ci, train, 20);
            let (si, _) = bins_of(f, ci, syn, 20);
            let share = |idx: &[usize]| {
                let mut h = vec![0.0; labels.len()];
                idx.iter().for_each(|&b| h[b] += 1.0 / idx.len() as f64);
                h
            };
            let (mut real, mut synthetic, mut bins) = (share(&ri), share(&si), labels.clone());
            // Drop the trailing missing bin when neither side has any.
            if real.last() == Some(&0.0) && synthetic.last() == Some(&0.0) {
                real.pop();
                synthetic.pop();
                bins.pop();
            }
            let tvd = 0.5
                * real
                    .iter()
                    .zip(&synthetic)
                    .map(|(a, b)| (a - b).abs())
                    .sum::<f64>();
            Histogram {
                column: f.schema.columns[ci].name.clone(),
                kind: f.schema.columns[ci].kind,
                bins,
                real,
                synthetic,
                tvd,
            }
        })
        .collect()
}

/// NIST 3-way marginals over up to 200 random triples of columns (all triples when fewer).
pub(crate) fn three_way(f: &Frame, seed: u64) -> ThreeWay {
    let cols = f.columns();
    let mut rb = Vec::new();
    let mut sb = Vec::new();
    for &ci in &cols {
        // Kept columns come from the spans, so the else branch only keeps indices aligned.
        let Some(span) = f.encoding.spans.iter().find(|s| s.column == ci) else {
            rb.push(vec![0; f.train.n_rows]);
            sb.push(vec![0; f.synthetic.n_rows]);
            continue;
        };
        let (lo, hi) = if span.kind == SpanKind::Continuous {
            let v: Vec<f64> = (0..f.train.n_rows)
                .map(|r| f64::from(f.train.row(r)[span.start]))
                .collect();
            (
                v.iter().copied().fold(f64::INFINITY, f64::min),
                v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            )
        } else {
            (0.0, 1.0)
        };
        rb.push(bins(&f.train, span, lo, hi));
        sb.push(bins(&f.synthetic, span, lo, hi));
    }
    let triples = sampled_triples(cols.len(), seed);
    let tvs: Vec<f64> = triples
        .par_iter()
        .map(|t| {
            0.5 * stats::three_way_l1(
                [&rb[t[0]], &rb[t[1]], &rb[t[2]]],
                [&sb[t[0]], &sb[t[1]], &sb[t[2]]],
            )
        })
        .collect();
    let (mut worst, mut max_tv) = (vec![], 0.0);
    for (t, &tv) in triples.iter().zip(&tvs) {
        if tv >= max_tv {
            max_tv = tv;
            worst = t
                .iter()
                .map(|&i| f.schema.columns[cols[i]].name.clone())
                .collect();
        }
    }
    ThreeWay {
        triples: tvs.len(),
        mean_tv: if tvs.is_empty() {
            f64::NAN
        } else {
            tvs.iter().sum::<f64>() / tvs.len() as f64
        },
        max_tv,
        worst_triple: worst,
    }
}

/// A NIST bin per row of one column: continuous by value over [lo, hi] (the real-train
/// range), categorical by category index.
fn bins(
    d: &crate::data::encode::EncodedData,
    span: &crate::data::encode::Span,
    lo: f64,
    hi: f64,
) -> Vec<u8> {
    (0..d.n_rows)
        .map(|r| {
            let row = d.row(r);
            match span.kind {
                SpanKind::Continuous => stats::nist_bin(f64::from(row[span.start]), lo, hi),
                SpanKind::Binary => u8::from(row[span.start] > 0.5),
                _ => super::frame::argmax(&row[span.start..span.start + span.len]).min(255) as u8,
            }
        })
        .collect()
}

/// Every triple of `m` columns, or 200 of them drawn with `seed` where there are more.
fn sampled_triples(m: usize, seed: u64) -> Vec<[usize; 3]> {
    let mut triples = Vec::new();
    for a in 0..m {
        for b in a + 1..m {
            for c in b + 1..m {
                triples.push([a, b, c]);
            }
        }
    }
    if triples.len() > 200 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let keep = sample(&mut rng, triples.len(), 200).into_vec();
        triples = keep.into_iter().map(|i| triples[i]).collect();
    }
    triples
}
