//! Marginal-based synthesis's shared machinery (Private-PGM, McKenna et al.): a public
//! discrete [`domain`], dense tables ([`factor`]), the [`junction`] tree, the fit of a
//! graphical model to noisy marginals ([`estimate`]), and the released form of that
//! model ([`GraphicalModel`]), which samples rows by ancestral sampling.
//!
//! Sampling draws each row from the fitted distribution: the root node's attributes from
//! its marginal, then each node's new attributes from their conditional given the
//! separator already drawn. The Python package's default instead rounds expected counts
//! ("round" sampling), which keeps only the attribute pairs the tree walks through and
//! loses about 2 points of downstream accuracy on Adult (the measurement); it is
//! not offered.
//!
//! Layering: numbers only; `mst` and `aim` charge the accountant, this module never reads
//! a private row except through the counts they hand it.

pub mod conditional;
pub mod domain;
pub mod estimate;
pub mod factor;
pub mod junction;

use rand::Rng;
use serde::{Deserialize, Serialize};

use domain::Domain;
use factor::{cells, strides, sub_index};

/// One measurement of a released model, as its header records it (the clique chosen and
/// its noise: DP outputs or settings).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    pub attributes: Vec<String>,
    pub sigma: f64,
}

/// The structure of a released graphical model (its header part; the tables travel as
/// tensors `pgm.0`, `pgm.1`, … in node order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphicalHeader {
    pub domain: Domain,
    /// Each node's attribute indices, sorted.
    pub cliques: Vec<Vec<usize>>,
    pub parent: Vec<Option<usize>>,
    /// The marginals measured, in order.
    pub measured: Vec<Measured>,
    /// Column pairs the noisy counts showed to be one fact written twice, which the model
    /// keeps one-to-one (post-processing; `one_to_one.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub one_to_one: Vec<[String; 2]>,
}

/// Draws every row's values of a node's `new` attributes given its `sep` attributes
/// (already drawn into `out`), from the node's weights per clique cell: a conditional table
/// left unnormalised per separator cell. A separator value with no weight draws any value
/// of the rest. Ancestral sampling and draws given evidence share it.
pub(crate) fn draw_node(
    weights: impl Iterator<Item = f64>,
    (to_sep, to_new): (&[u32], &[u32]),
    (sep, new): (&[usize], &[usize]),
    sizes: &[usize],
    out: &mut [Vec<u32>],
    rng: &mut impl Rng,
) {
    let (sc, nc) = (cells(sizes, sep), cells(sizes, new));
    // Conditional table [separator cell][new cell], cumulated per row.
    let mut cdf = vec![0f64; sc * nc];
    for ((x, s), r) in weights.zip(to_sep).zip(to_new) {
        cdf[*s as usize * nc + *r as usize] += x;
    }
    for row in cdf.chunks_mut(nc) {
        let mut t = 0.0;
        for v in row.iter_mut() {
            t += *v;
            *v = t;
        }
    }
    let sep_strides = strides(sizes, sep);
    let new_strides = strides(sizes, new);
    let n = out.first().map_or(0, Vec::len);
    for r in 0..n {
        let s: usize = sep
            .iter()
            .zip(&sep_strides)
            .map(|(a, st)| out[*a][r] as usize * st)
            .sum();
        let row = &cdf[s * nc..(s + 1) * nc];
        let total = row[nc - 1];
        let k = if total > 0.0 {
            let u = rng.random::<f64>() * total;
            row.partition_point(|c| *c <= u).min(nc - 1)
        } else {
            rng.random_range(0..nc)
        };
        for (a, st) in new.iter().zip(&new_strides) {
            out[*a][r] = ((k / st) % sizes[*a]) as u32;
        }
    }
}

/// A fitted graphical model as released: node marginals as probabilities.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphicalModel {
    pub header: GraphicalHeader,
    pub tables: Vec<Vec<f32>>,
}

impl GraphicalModel {
    /// Whether the parts agree (a damaged or edited file must not make sampling index out
    /// of range): the tree is a tree, every table has its clique's cells and is a
    /// distribution.
    pub fn check(&self) -> Result<(), String> {
        let h = &self.header;
        h.domain.check()?;
        let n = h.domain.len();
        let sizes = h.domain.sizes();
        let m = h.cliques.len();
        if m == 0 || h.parent.len() != m || self.tables.len() != m {
            return Err("the graphical model's parts do not agree in number".into());
        }
        let mut covered = vec![false; n];
        for (i, c) in h.cliques.iter().enumerate() {
            if c.is_empty() || c.iter().any(|a| *a >= n) || c.windows(2).any(|w| w[0] >= w[1]) {
                return Err(format!("node {i} names attributes that do not exist"));
            }
            for a in c {
                covered[*a] = true;
            }
            let want = c
                .iter()
                .map(|a| sizes[*a])
                .try_fold(1usize, |p, s| p.checked_mul(s))
                .filter(|v| *v <= 1 << 28)
                .ok_or_else(|| format!("node {i} is too large"))?;
            let t = &self.tables[i];
            if t.len() != want {
                return Err(format!(
                    "node {i}'s table has {} cells, not {want}",
                    t.len()
                ));
            }
            if t.iter().any(|x| !x.is_finite() || *x < 0.0) || t.iter().sum::<f32>() <= 0.0 {
                return Err(format!("node {i}'s table is not a distribution"));
            }
        }
        if covered.iter().any(|c| !c) {
            return Err("an attribute is in no node of the graphical model".into());
        }
        // Parents come first along some order from one root: walk up from every node.
        let roots = h.parent.iter().filter(|p| p.is_none()).count();
        if roots != 1 {
            return Err(format!("the tree has {roots} roots"));
        }
        for start in 0..m {
            let (mut at, mut steps) = (start, 0);
            while let Some(p) = h.parent[at] {
                if p >= m || steps > m {
                    return Err("the tree's parent links are broken".into());
                }
                at = p;
                steps += 1;
            }
        }
        Ok(())
    }

    /// Node order from the root outwards.
    pub(crate) fn order(&self) -> Vec<usize> {
        let m = self.header.cliques.len();
        let mut kids = vec![Vec::new(); m];
        let mut order = Vec::with_capacity(m);
        for (c, p) in self.header.parent.iter().enumerate() {
            match p {
                Some(p) => kids[*p].push(c),
                None => order.push(c),
            }
        }
        let mut at = 0;
        while at < order.len() {
            let c = order[at];
            at += 1;
            order.extend(kids[c].iter().copied());
        }
        order
    }

    /// `n` rows of levels (column by column) drawn from the model.
    pub fn sample_levels(&self, n: usize, rng: &mut impl Rng) -> Vec<Vec<u32>> {
        let h = &self.header;
        let sizes = h.domain.sizes();
        let mut out = vec![vec![0u32; n]; sizes.len()];
        let mut drawn = vec![false; sizes.len()];
        for c in self.order() {
            let clique = &h.cliques[c];
            let sep: Vec<usize> = clique.iter().copied().filter(|a| drawn[*a]).collect();
            let new: Vec<usize> = clique.iter().copied().filter(|a| !drawn[*a]).collect();
            if new.is_empty() {
                continue;
            }
            let to_sep = sub_index(&sizes, clique, &sep);
            let to_new = sub_index(&sizes, clique, &new);
            let weights = self.tables[c].iter().map(|p| f64::from(*p));
            draw_node(
                weights,
                (&to_sep, &to_new),
                (&sep, &new),
                &sizes,
                &mut out,
                rng,
            );
            for a in new {
                drawn[a] = true;
            }
        }
        out
    }

    /// `n` encoded rows (concrete one-hot and 0/1 values), ready for decoding.
    pub fn generate(&self, n: usize, rng: &mut impl Rng) -> Vec<f32> {
        let levels = self.sample_levels(n, rng);
        self.header.domain.encode(&levels, rng)
    }

    /// The released form of a fitted estimate.
    pub fn of_estimate(
        domain: Domain,
        e: &estimate::Estimate,
        measured: &[estimate::Measurement],
        sigma_names: impl Fn(&[usize]) -> Vec<String>,
    ) -> Self {
        let tables = e
            .marginals
            .iter()
            .map(|m| {
                let t: f64 = m.iter().sum::<f64>().max(f64::MIN_POSITIVE);
                m.iter().map(|x| (x / t) as f32).collect()
            })
            .collect();
        Self {
            header: GraphicalHeader {
                domain,
                cliques: e.tree.cliques.clone(),
                parent: e.tree.parent.clone(),
                measured: measured
                    .iter()
                    .map(|m| Measured {
                        attributes: sigma_names(&m.attrs),
                        sigma: m.sigma,
                    })
                    .collect(),
                one_to_one: Vec::new(),
            },
            tables,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::estimate::Estimate;
    use super::factor::count;
    use super::junction::JunctionTree;
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn ancestral_samples_follow_the_fitted_marginals() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let sizes = vec![3usize, 4, 2];
        let n = 3_000;
        let mut data = vec![Vec::new(); 3];
        for _ in 0..n {
            let a = rng.random_range(0..3u32);
            let b = (a + rng.random_range(0..2u32)) % 4;
            let c = u32::from(b >= 2);
            for (col, v) in data.iter_mut().zip([a, b, c]) {
                col.push(v);
            }
        }
        let cliques = vec![vec![0, 1], vec![1, 2]];
        let ms = super::estimate::exact_measurements(&data, &sizes, &cliques);
        let mut e = Estimate::new(&sizes, JunctionTree::build(&sizes, &cliques), n as f64);
        e.fit(&ms, 1_000);
        let domain = Domain {
            attributes: sizes
                .iter()
                .enumerate()
                .map(|(i, s)| domain::Attribute {
                    name: format!("a{i}"),
                    size: *s,
                    coding: domain::Coding::Bins {
                        at: i,
                        points: None,
                    },
                })
                .collect(),
            width: 3,
        };
        let g = GraphicalModel::of_estimate(domain, &e, &ms, |a| {
            a.iter().map(|i| format!("a{i}")).collect()
        });
        g.check().unwrap();
        let s = g.sample_levels(60_000, &mut rng);
        for c in &cliques {
            let want = count(&data, &sizes, c);
            let got = count(&s, &sizes, c);
            for (w, x) in want.iter().zip(&got) {
                let (p, q) = (w / n as f64, x / 60_000.0);
                assert!((p - q).abs() < 0.01, "{c:?}: {want:?} vs {got:?}");
            }
        }
        // The structural zero (c = 1 exactly when b ≥ 2) survives sampling, up to the
        // sliver of mass mirror descent leaves on zero cells.
        let broken = (0..60_000)
            .filter(|r| s[2][*r] != u32::from(s[1][*r] >= 2))
            .count();
        assert!(broken < 120, "{broken} rows break it");
    }
}
