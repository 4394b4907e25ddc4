//! Private-PGM's estimation (McKenna, Sheldon & Miklau 2019): the graphical model whose
//! marginals best explain the noisy measurements.
//!
//! The model is p(x) ∝ exp(Σ_C θ_C(x_C)) over the junction tree's nodes. Its marginals μ
//! (in counts: N·p) come from belief propagation, exact on a junction tree. The fit
//! minimises L(μ) = Σ_m ½‖μ_{C_m} − y_m‖² / σ_m² — the Gaussian log-likelihood of the
//! measurements, each measurement's cells weighted by its noise — by mirror descent on
//! the log-potentials: θ ← θ − α ∇_μ L, with a backtracking line search (sufficient
//! decrease) and a step that grows again after each accepted one. Everything here reads
//! only noisy measurements: it is post-processing.
//!
//! When the noise is zero and the measurements are consistent marginals of one table, the
//! minimum is L = 0 at the maximum-entropy model with those marginals, which the tests
//! check.

use super::factor::{
    Projection, add_expanded, cells, mul_expanded, project_lse, project_sum, sub_index,
};
use super::junction::JunctionTree;

/// Cells no row may take (a rule's structural zeros): over `attrs` (sorted), the cells
/// whose flag is set. A public fact, like the domain: the model puts no mass there.
#[derive(Debug, Clone, PartialEq)]
pub struct Zeros {
    pub attrs: Vec<usize>,
    pub forbidden: Vec<bool>,
}

/// One noisy marginal: counts over `attrs` (sorted) plus Gaussian noise of std `sigma`.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    pub attrs: Vec<usize>,
    pub noisy: Vec<f64>,
    pub sigma: f64,
}

/// A graphical model being fitted: potentials on a junction tree and their marginals.
#[derive(Debug, Clone)]
pub struct Estimate {
    sizes: Vec<usize>,
    pub tree: JunctionTree,
    total: f64,
    theta: Vec<Vec<f64>>,
    /// Per node: each of its cells' index in its separator with the parent.
    up_map: Vec<Projection>,
    /// Per node: each of its parent's cells' index in that separator.
    down_map: Vec<Projection>,
    sep_cells: Vec<usize>,
    children: Vec<Vec<usize>>,
    /// Per measurement fitted so far: the node that holds it and the map into it.
    placed: Vec<(usize, Projection)>,
    /// N·p on each node, for the current potentials.
    pub marginals: Vec<Vec<f64>>,
    step: f64,
    /// Steps accepted since a line search last shrank the step (`None`: none has yet).
    since_shrink: Option<usize>,
    /// The structural zeros the model keeps, and per node the cells they forbid there.
    zeros: Vec<Zeros>,
    masks: Vec<Vec<usize>>,
}

/// Accepted steps in a row before a fit tries a doubled step again.
const GROW_AFTER: usize = 8;

impl Estimate {
    /// The uniform model on `tree` with `total` rows.
    pub fn new(sizes: &[usize], tree: JunctionTree, total: f64) -> Self {
        let m = tree.cliques.len();
        let none = Projection::new(sizes, &[], &[]);
        let mut up_map = vec![none.clone(); m];
        let mut down_map = vec![none; m];
        let mut sep_cells = vec![1; m];
        for c in 0..m {
            if let Some(p) = tree.parent[c] {
                let sep = &tree.separator[c];
                up_map[c] = Projection::new(sizes, &tree.cliques[c], sep);
                down_map[c] = Projection::new(sizes, &tree.cliques[p], sep);
                sep_cells[c] = cells(sizes, sep);
            }
        }
        let theta: Vec<Vec<f64>> = tree
            .cliques
            .iter()
            .map(|c| vec![0.0; cells(sizes, c)])
            .collect();
        let children = tree.children();
        let mut e = Self {
            sizes: sizes.to_vec(),
            tree,
            total: total.max(1.0),
            theta,
            up_map,
            down_map,
            sep_cells,
            children,
            placed: Vec::new(),
            marginals: Vec::new(),
            step: 0.0,
            since_shrink: None,
            zeros: Vec::new(),
            masks: vec![Vec::new(); m],
        };
        e.marginals = e.propagate(&e.theta);
        e
    }

    /// Keeps `zeros` from now on: the potentials are −∞ on every forbidden cell, so
    /// propagation, the fit and sampling never put mass there. A set of cells that no
    /// node holds is left out (the caller puts its attributes in the tree); returns how
    /// many were kept.
    pub fn set_zeros(&mut self, zeros: Vec<Zeros>) -> usize {
        self.masks = vec![Vec::new(); self.tree.cliques.len()];
        self.zeros.clear();
        for z in zeros {
            let Some(k) = self.tree.node_of(&z.attrs) else {
                continue;
            };
            if z.forbidden.len() != cells(&self.sizes, &z.attrs) {
                continue;
            }
            let map = sub_index(&self.sizes, &self.tree.cliques[k], &z.attrs);
            let mask = &mut self.masks[k];
            mask.extend(
                map.iter()
                    .enumerate()
                    .filter(|(_, j)| z.forbidden[**j as usize])
                    .map(|(i, _)| i),
            );
            mask.sort_unstable();
            mask.dedup();
            self.zeros.push(z);
        }
        self.marginals = self.propagate(&self.theta);
        self.zeros.len()
    }

    /// The structural zeros kept.
    pub fn zeros(&self) -> &[Zeros] {
        &self.zeros
    }

    /// A model on a new `tree` that starts from `prev`'s potentials: each of `prev`'s
    /// node potentials is added into a new node that holds its attributes (a warm start;
    /// one that fits nowhere is left out and relearned).
    pub fn warm_from(prev: &Estimate, tree: JunctionTree) -> Self {
        let mut e = Self::new(&prev.sizes, tree, prev.total);
        for (c, th) in prev.tree.cliques.iter().zip(&prev.theta) {
            if let Some(k) = e.tree.node_of(c) {
                let map = Projection::new(&e.sizes, &e.tree.cliques[k], c);
                add_expanded(&mut e.theta[k], th, &map, 1.0);
            }
        }
        // The step is not carried over: the new measurements set a new scale, and a
        // converged fit ends with a step shrunk by line searches at its optimum (one
        // such step left MST's tree unfitted).
        e.set_zeros(prev.zeros.clone());
        e
    }

    /// Runs `iters` mirror-descent steps on `measurements` (each must lie in a node);
    /// returns the final loss.
    pub fn fit(&mut self, measurements: &[Measurement], iters: usize) -> f64 {
        for m in &measurements[self.placed.len().min(measurements.len())..] {
            let k = self
                .tree
                .node_of(&m.attrs)
                .expect("every measured clique is in the junction tree");
            let map = Projection::new(&self.sizes, &self.tree.cliques[k], &m.attrs);
            self.placed.push((k, map));
        }
        let s2 = measurements
            .iter()
            .map(|m| m.sigma * m.sigma)
            .fold(f64::INFINITY, f64::min);
        let base = if s2.is_finite() && s2 > 0.0 {
            s2 / self.total
        } else {
            1.0 / self.total
        };
        // The step halves in every line search and doubles after every accepted one until
        // a search first has to shrink it; from then on it tries doubling only after
        // `GROW_AFTER` accepted steps in a row. (Private-PGM doubles before every step, and
        // at the edge of stability, where a fit spends most of its steps, the doubled step
        // is nearly always refused: two propagations per step, 1.98 measured on Adult.)
        // Over many calls the step could drift anywhere (near the optimum, rounding
        // decides the line search): kept inside [base·1e-9, base·1e9], each search ends in
        // bounded time and the next fit can recover.
        let (floor, ceiling) = (base * 1e-9, base * 1e9);
        if self.step.is_nan() || self.step <= 0.0 {
            self.step = base;
        }
        let mut mu = self.propagate(&self.theta);
        let (mut loss, mut grad) = self.loss(&mu, measurements);
        for _ in 0..iters {
            let grow = self.since_shrink.is_none_or(|n| n >= GROW_AFTER);
            let tried = (if grow { self.step * 2.0 } else { self.step }).min(ceiling);
            let mut alpha = tried;
            let mut accepted = false;
            while alpha >= floor {
                let theta: Vec<Vec<f64>> = self
                    .theta
                    .iter()
                    .zip(&grad)
                    .map(|(t, g)| t.iter().zip(g).map(|(t, g)| t - alpha * g).collect())
                    .collect();
                let next = self.propagate(&theta);
                let (l, g) = self.loss(&next, measurements);
                let predicted: f64 = grad
                    .iter()
                    .zip(mu.iter().zip(&next))
                    .map(|(g, (a, b))| {
                        g.iter()
                            .zip(a.iter().zip(b))
                            .map(|(g, (a, b))| g * (a - b))
                            .sum::<f64>()
                    })
                    .sum();
                if l.is_finite() && loss - l >= 0.5 * predicted {
                    self.theta = theta;
                    mu = next;
                    loss = l;
                    grad = g;
                    accepted = true;
                    break;
                }
                alpha *= 0.5;
            }
            if !accepted {
                break;
            }
            self.since_shrink = match self.since_shrink {
                _ if alpha < tried => Some(0),
                Some(_) if grow => Some(0),
                Some(n) => Some(n + 1),
                None => None,
            };
            self.step = alpha;
        }
        self.marginals = mu;
        loss
    }

    /// The model's marginal over `attrs` (in counts) when one node holds them all.
    pub fn project(&self, attrs: &[usize]) -> Option<Vec<f64>> {
        let k = self.tree.node_of(attrs)?;
        let map = Projection::new(&self.sizes, &self.tree.cliques[k], attrs);
        Some(project_sum(
            &self.marginals[k],
            &map,
            cells(&self.sizes, attrs),
        ))
    }

    pub fn total(&self) -> f64 {
        self.total
    }

    /// Exact marginals (N·p per node) of the potentials `theta` by two passes of
    /// sum-product belief propagation, each node's belief held as a table `q` and a shift
    /// `s` (belief = s + ln q, max q = 1 when fresh) so each cell is exponentiated once.
    ///
    /// Upward, a node's partial belief (its potential and its children's messages) is
    /// exponentiated, and its message is s + ln Σ q over each separator cell. Downward,
    /// the message to child k is the parent's lse over k's separator minus k's own upward
    /// message (up_k is constant on a separator cell, so nothing is divided out of a
    /// table), and k's table is multiplied by exp(message − its max): an `exp` per
    /// separator cell, not per cell. A sum that underflows, or a product that drifts below
    /// 1e-20, is recomputed from the log-space belief (`project_lse`, or a fresh `exp`), so
    /// a cell is dropped only where it is below e^-699 of another cell of its node —
    /// beneath the precision of any sum that holds both. (A downward sum that underflows
    /// drops the child's cells on that separator cell: the child's marginal there must
    /// equal the parent's, which is below e^-745 of the parent's largest cell.)
    fn propagate(&self, theta: &[Vec<f64>]) -> Vec<Vec<f64>> {
        let m = theta.len();
        let mut belief: Vec<Vec<f64>> = theta.to_vec();
        for (b, mask) in belief.iter_mut().zip(&self.masks) {
            for i in mask {
                b[*i] = f64::NEG_INFINITY;
            }
        }
        let mut up: Vec<Vec<f64>> = vec![Vec::new(); m];
        let mut q: Vec<Vec<f64>> = vec![Vec::new(); m];
        let mut shift = vec![0.0; m];
        for &c in self.tree.order.iter().rev() {
            for &k in &self.children[c] {
                add_expanded(&mut belief[c], &up[k], &self.down_map[k], 1.0);
            }
            (q[c], shift[c]) = exp_shifted(&belief[c]);
            if self.tree.parent[c].is_some() {
                up[c] = log_sums(
                    &q[c],
                    shift[c],
                    &belief[c],
                    &self.up_map[c],
                    self.sep_cells[c],
                );
            }
        }
        for &c in &self.tree.order {
            for &k in &self.children[c] {
                let sums = project_sum(&q[c], &self.down_map[k], self.sep_cells[k]);
                let down: Vec<f64> = sums
                    .iter()
                    .zip(&up[k])
                    .map(|(s, u)| {
                        if *s > 0.0 && u.is_finite() {
                            shift[c] + s.ln() - u
                        } else {
                            f64::NEG_INFINITY
                        }
                    })
                    .collect();
                let top = down.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                if !top.is_finite() {
                    q[k].fill(0.0);
                    continue;
                }
                let scale: Vec<f64> = down.iter().map(|d| (d - top).exp()).collect();
                mul_expanded(&mut q[k], &scale, &self.up_map[k]);
                shift[k] += top;
                if !(q[k].iter().copied().fold(0.0, f64::max) >= 1e-20) {
                    add_expanded(&mut belief[k], &down, &self.up_map[k], 1.0);
                    (q[k], shift[k]) = exp_shifted(&belief[k]);
                }
            }
        }
        q.into_iter()
            .map(|q| {
                let z: f64 = q.iter().sum();
                let scale = if z > 0.0 { self.total / z } else { 0.0 };
                q.into_iter().map(|v| v * scale).collect()
            })
            .collect()
    }

    /// L(μ) and its gradient with respect to each node's marginal.
    fn loss(&self, mu: &[Vec<f64>], measurements: &[Measurement]) -> (f64, Vec<Vec<f64>>) {
        let mut grad: Vec<Vec<f64>> = mu.iter().map(|v| vec![0.0; v.len()]).collect();
        let mut loss = 0.0;
        for (m, (k, map)) in measurements.iter().zip(&self.placed) {
            let x = project_sum(&mu[*k], map, m.noisy.len());
            let w = 1.0 / (m.sigma * m.sigma).max(1e-12);
            let diff: Vec<f64> = x.iter().zip(&m.noisy).map(|(a, b)| a - b).collect();
            loss += 0.5 * w * diff.iter().map(|d| d * d).sum::<f64>();
            add_expanded(&mut grad[*k], &diff, map, w);
        }
        (loss, grad)
    }
}

/// exp(b − max b) of a log-space table, and its max (all zeros, shift −∞, when every
/// cell is −∞).
fn exp_shifted(b: &[f64]) -> (Vec<f64>, f64) {
    let max = b.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if max.is_finite() {
        (b.iter().map(|v| (v - max).exp()).collect(), max)
    } else {
        (vec![0.0; b.len()], max)
    }
}

/// ln Σ exp(belief) over each cell of the subset `p` projects onto, from the node's
/// exponentiated table `q` = exp(belief − shift); a sum too small to trust (its cells
/// all far below the node's max) is recomputed in log space.
fn log_sums(q: &[f64], shift: f64, belief: &[f64], p: &Projection, n: usize) -> Vec<f64> {
    const TRUSTED: f64 = 1e-280;
    let sums = project_sum(q, p, n);
    if sums.iter().all(|s| *s >= TRUSTED) {
        return sums.into_iter().map(|s| shift + s.ln()).collect();
    }
    let exact = project_lse(belief, p, n);
    sums.iter()
        .zip(exact)
        .map(|(s, e)| if *s >= TRUSTED { shift + s.ln() } else { e })
        .collect()
}

/// Every clique of `cliques` measured exactly (σ 1) on `data`: the noiseless fixture the
/// fitting tests start from.
#[cfg(test)]
pub(crate) fn exact_measurements(
    data: &[Vec<u32>],
    sizes: &[usize],
    cliques: &[Vec<usize>],
) -> Vec<Measurement> {
    cliques
        .iter()
        .map(|c| Measurement {
            attrs: c.clone(),
            noisy: super::factor::count(data, sizes, c),
            sigma: 1.0,
        })
        .collect()
}

#[cfg(test)]
mod tests;
