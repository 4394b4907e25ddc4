//! Draws from a released graphical model given some attributes' values: a linked table's
//! children given their parent's columns.
//!
//! Rejection (draw rows until the parent's values come up) fails as soon as a parent has
//! a few columns: most combinations are rare. Instead the evidence goes into the tree:
//! an upward pass sums each subtree's weight of agreeing with the evidence at each value
//! of its separator, and the downward draw weights each node's conditional by its
//! children's sums. The rows are then exact draws from the model's conditional. Each
//! distinct evidence costs one pass over the tree's tables, so rows that share their
//! evidence are drawn together.

use rand::Rng;

use super::factor::{cells, sub_index};
use super::{GraphicalModel, draw_node};

/// Values fixed per attribute (`None`: free); one entry per attribute of the model.
pub type Evidence = Vec<Option<u32>>;

impl GraphicalModel {
    /// For each `(evidence, n)`, `n` rows drawn from the model given the evidence, as
    /// levels column by column (the groups' rows one after another). Evidence the model
    /// gives no mass to is dropped for that group (its rows are drawn unconditionally
    /// and the evidence written over them); the count of such groups is returned.
    pub fn sample_levels_given(
        &self,
        groups: &[(Evidence, usize)],
        rng: &mut impl Rng,
    ) -> Result<(Vec<Vec<u32>>, usize), String> {
        let plan = Plan::of(self)?;
        let sizes = self.header.domain.sizes();
        let total: usize = groups.iter().map(|g| g.1).sum();
        let mut out = vec![Vec::with_capacity(total); sizes.len()];
        let mut impossible = 0;
        for (ev, n) in groups {
            if ev.len() != sizes.len()
                || ev
                    .iter()
                    .zip(&sizes)
                    .any(|(e, s)| e.is_some_and(|v| v as usize >= *s))
            {
                return Err("the evidence does not fit the model's attributes".into());
            }
            let weights = match plan.weights(self, ev) {
                Some(w) => w,
                None => {
                    impossible += 1;
                    plan.weights(self, &vec![None; sizes.len()])
                        .ok_or("the model gives no mass to any row")?
                }
            };
            let rows = plan.draw(&weights, *n, rng);
            for (a, col) in rows.into_iter().enumerate() {
                let col = match ev[a] {
                    Some(v) => vec![v; *n],
                    None => col,
                };
                out[a].extend(col);
            }
        }
        Ok((out, impossible))
    }
}

/// The tree walked root-outwards, with each node's new attributes and separator.
struct Plan {
    sizes: Vec<usize>,
    order: Vec<usize>,
    nodes: Vec<Node>,
}

struct Node {
    clique: Vec<usize>,
    sep: Vec<usize>,
    new: Vec<usize>,
    /// Per clique cell: its separator cell, its new-attribute cell.
    to_sep: Vec<u32>,
    to_new: Vec<u32>,
    /// Per clique cell, each new attribute's level (for the evidence).
    levels: Vec<(usize, Vec<u32>)>,
    /// The children, with each child's separator cell per cell of this clique.
    children: Vec<(usize, Vec<u32>)>,
}

impl Plan {
    fn of(m: &GraphicalModel) -> Result<Self, String> {
        let h = &m.header;
        let sizes = h.domain.sizes();
        let order = m.order();
        let mut drawn = vec![false; sizes.len()];
        let mut nodes: Vec<Option<Node>> = (0..h.cliques.len()).map(|_| None).collect();
        for &c in &order {
            let clique = h.cliques[c].clone();
            let sep: Vec<usize> = clique.iter().copied().filter(|a| drawn[*a]).collect();
            let new: Vec<usize> = clique.iter().copied().filter(|a| !drawn[*a]).collect();
            if let Some(p) = h.parent[c]
                && sep.iter().any(|a| !h.cliques[p].contains(a))
            {
                return Err("the model's tree does not allow draws given evidence".into());
            }
            for a in &new {
                drawn[*a] = true;
            }
            let levels = new
                .iter()
                .map(|a| (*a, sub_index(&sizes, &clique, &[*a])))
                .collect();
            nodes[c] = Some(Node {
                to_sep: sub_index(&sizes, &clique, &sep),
                to_new: sub_index(&sizes, &clique, &new),
                levels,
                clique,
                sep,
                new,
                children: Vec::new(),
            });
        }
        let mut nodes: Vec<Node> = nodes
            .into_iter()
            .map(|n| n.ok_or("a node of the model is not reached from its root"))
            .collect::<Result<_, _>>()?;
        for (c, p) in h.parent.iter().enumerate() {
            if let Some(p) = p {
                let map = sub_index(&sizes, &nodes[*p].clique, &nodes[c].sep);
                nodes[*p].children.push((c, map));
            }
        }
        Ok(Self {
            sizes,
            order,
            nodes,
        })
    }

    /// Each node's weight per clique cell: its conditional given the separator, times the
    /// evidence's indicator and its children's sums. `None` when the evidence has no mass.
    fn weights(&self, m: &GraphicalModel, ev: &[Option<u32>]) -> Option<Vec<Vec<f64>>> {
        let mut w: Vec<Vec<f64>> = vec![Vec::new(); self.nodes.len()];
        let mut up: Vec<Vec<f64>> = vec![Vec::new(); self.nodes.len()];
        for &c in self.order.iter().rev() {
            let node = &self.nodes[c];
            let sc = cells(&self.sizes, &node.sep);
            let mut sep_total = vec![0f64; sc];
            for (p, s) in m.tables[c].iter().zip(&node.to_sep) {
                sep_total[*s as usize] += f64::from(*p);
            }
            let mut wc: Vec<f64> = m.tables[c]
                .iter()
                .zip(&node.to_sep)
                .map(|(p, s)| {
                    let t = sep_total[*s as usize];
                    if t > 0.0 { f64::from(*p) / t } else { 0.0 }
                })
                .collect();
            for (a, lv) in &node.levels {
                if let Some(v) = ev[*a] {
                    for (x, l) in wc.iter_mut().zip(lv) {
                        if *l != v {
                            *x = 0.0;
                        }
                    }
                }
            }
            for (k, map) in &node.children {
                for (x, s) in wc.iter_mut().zip(map) {
                    *x *= up[*k][*s as usize];
                }
            }
            let mut lambda = vec![0f64; sc];
            for (x, s) in wc.iter().zip(&node.to_sep) {
                lambda[*s as usize] += *x;
            }
            up[c] = lambda;
            w[c] = wc;
        }
        let root = *self.order.first()?;
        (up[root].iter().sum::<f64>() > 0.0).then_some(w)
    }

    /// `n` rows drawn top-down by the weights.
    fn draw(&self, w: &[Vec<f64>], n: usize, rng: &mut impl Rng) -> Vec<Vec<u32>> {
        let mut out = vec![vec![0u32; n]; self.sizes.len()];
        for &c in &self.order {
            let node = &self.nodes[c];
            if node.new.is_empty() {
                continue;
            }
            draw_node(
                w[c].iter().copied(),
                (&node.to_sep, &node.to_new),
                (&node.sep, &node.new),
                &self.sizes,
                &mut out,
                rng,
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::pgm::{GraphicalHeader, domain::Domain};
    use rand::SeedableRng;

    /// A chain a – b – c of three binary attributes: b copies a 90 % of the time, c
    /// copies b 80 % of the time.
    fn chain() -> GraphicalModel {
        let domain: Domain = serde_json::from_value(serde_json::json!({
            "attributes": [
                {"name": "a", "size": 2, "coding": {"type": "flag", "at": 0}},
                {"name": "b", "size": 2, "coding": {"type": "flag", "at": 1}},
                {"name": "c", "size": 2, "coding": {"type": "flag", "at": 2}}
            ],
            "width": 3
        }))
        .unwrap();
        // P(a, b): a uniform; P(b, c): b's marginal (0.5), c copies it 80 %.
        let ab = vec![0.45, 0.05, 0.05, 0.45];
        let bc = vec![0.4, 0.1, 0.1, 0.4];
        GraphicalModel {
            header: GraphicalHeader {
                domain,
                cliques: vec![vec![0, 1], vec![1, 2]],
                parent: vec![None, Some(0)],
                measured: vec![],
                one_to_one: vec![],
            },
            tables: vec![ab, bc],
        }
    }

    #[test]
    fn evidence_on_a_leaf_reaches_the_root() {
        // Given c = 1: P(b = 1 | c = 1) = 0.8, P(a = 1 | c = 1) = 0.8·0.9 + 0.2·0.1 = 0.74.
        let m = chain();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let n = 40_000;
        let (rows, impossible) = m
            .sample_levels_given(&[(vec![None, None, Some(1)], n)], &mut rng)
            .unwrap();
        assert_eq!(impossible, 0);
        let share = |a: usize| rows[a].iter().filter(|v| **v == 1).count() as f64 / n as f64;
        assert!((share(1) - 0.8).abs() < 0.01, "{}", share(1));
        assert!((share(0) - 0.74).abs() < 0.01, "{}", share(0));
        assert_eq!(share(2), 1.0);
    }

    #[test]
    fn groups_keep_their_own_evidence_and_impossible_evidence_is_counted() {
        let mut m = chain();
        // b never differs from a: a = 0, b = 1 has no mass.
        m.tables[0] = vec![0.5, 0.0, 0.0, 0.5];
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let groups = vec![
            (vec![Some(0), None, None], 10),
            (vec![Some(0), Some(1), None], 5),
        ];
        let (rows, impossible) = m.sample_levels_given(&groups, &mut rng).unwrap();
        assert_eq!(impossible, 1);
        assert!(rows[1][..10].iter().all(|b| *b == 0));
        assert!(rows[0][10..].iter().all(|a| *a == 0) && rows[1][10..].iter().all(|b| *b == 1));
        assert!(
            m.sample_levels_given(&[(vec![Some(2), None, None], 1)], &mut rng)
                .is_err()
        );
    }
}
