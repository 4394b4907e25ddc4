//! AIM on wide tables (more than [`EXACT_COLUMNS`] columns): which candidates the model can
//! still take, bounded in time linear in the tree instead of one triangulation each.
//!
//! The exact test (`model_cells` of the cliques plus the candidate) triangulates the whole
//! graph, cubic in the column count, for every candidate every round: about 10 ms at 200
//! columns, times thousands of candidates, each round. A wide table's workload is pairs
//! (its triples would be millions), and for a pair {a, b} not held by one node there is an
//! upper bound read off the current junction tree:
//! - a and b in different parts of the model (the tree path between them crosses an empty
//!   separator): the new edge is a bridge, and the model gains exactly the node {a, b}
//!   (losing {a} or {b} where that was a node of its own);
//! - otherwise add a to every node on the path from a's nearest node to b's (or b to every
//!   node on the path to a's, whichever is smaller): a's nodes stay a connected subtree,
//!   so the result is a junction tree holding {a, b}, and its size bounds the best one.
//!
//! The bound is the size of a real model (a chordal graph holding every measured clique and
//! the pair; tested). A candidate within the round's limit by it is taken; the model AIM
//! then builds (greedy triangulation of all cliques, as on narrow tables) is a heuristic
//! and may come out a little larger or smaller — 124 cells where the bound says 116 on a
//! triangulated 4-cycle — which the next round's test starts from. Which candidates
//! are affordable depends only on the model's cliques (earlier DP outputs) and the public
//! sizes: no privacy cost.

use std::collections::VecDeque;

use super::super::pgm::factor::cells;
use super::super::pgm::junction::JunctionTree;

/// Widest table whose candidates get the exact size test (the size test before wide
/// tables were taken; results on such tables are unchanged).
pub(super) const EXACT_COLUMNS: usize = 100;

/// The current tree, prepared for many pair bounds in one round.
pub(super) struct PairBounds<'a> {
    tree: &'a JunctionTree,
    sizes: &'a [usize],
    /// Each node's neighbours in the tree.
    adj: Vec<Vec<usize>>,
    /// Each attribute's nodes.
    holders: Vec<Vec<usize>>,
    node_cells: Vec<usize>,
    total: usize,
}

impl<'a> PairBounds<'a> {
    pub(super) fn new(tree: &'a JunctionTree, sizes: &'a [usize]) -> Self {
        let m = tree.cliques.len();
        let mut adj = vec![Vec::new(); m];
        for (c, p) in tree.parent.iter().enumerate() {
            if let Some(p) = p {
                adj[c].push(*p);
                adj[*p].push(c);
            }
        }
        let mut holders = vec![Vec::new(); sizes.len()];
        for (i, c) in tree.cliques.iter().enumerate() {
            for &a in c {
                holders[a].push(i);
            }
        }
        let node_cells: Vec<usize> = tree.cliques.iter().map(|c| cells(sizes, c)).collect();
        let total = node_cells.iter().fold(0usize, |s, c| s.saturating_add(*c));
        Self {
            tree,
            sizes,
            adj,
            holders,
            node_cells,
            total,
        }
    }

    /// The model's cells now.
    #[cfg(test)]
    fn total(&self) -> usize {
        self.total
    }

    /// An upper bound on the cells of a model that also holds the pair {a, b} (see the
    /// module's doc); the current size when one node holds both.
    pub(super) fn with_pair(&self, a: usize, b: usize) -> usize {
        if self.holders[a].iter().any(|n| self.holders[b].contains(n)) {
            return self.total;
        }
        let Some(path) = self.path(a, b) else {
            return usize::MAX;
        };
        let bridge = path
            .windows(2)
            .any(|w| self.separator(w[0], w[1]).is_empty());
        if bridge {
            let alone = |x: usize| {
                self.holders[x]
                    .iter()
                    .find(|n| self.tree.cliques[**n].len() == 1)
                    .map_or(0, |n| self.node_cells[*n])
            };
            return self
                .total
                .saturating_add(self.sizes[a].saturating_mul(self.sizes[b]))
                .saturating_sub(alone(a))
                .saturating_sub(alone(b));
        }
        // Grow every node after the first by the carried attribute's size.
        let grow = |carried: usize, nodes: &mut dyn Iterator<Item = &usize>| {
            nodes.fold(0usize, |s, n| {
                s.saturating_add(
                    self.node_cells[*n].saturating_mul(self.sizes[carried].saturating_sub(1)),
                )
            })
        };
        let carry_a = grow(a, &mut path.iter().skip(1));
        let carry_b = grow(b, &mut path.iter().rev().skip(1));
        self.total.saturating_add(carry_a.min(carry_b))
    }

    /// Attributes two neighbouring nodes share.
    fn separator(&self, x: usize, y: usize) -> Vec<usize> {
        let (cx, cy) = (&self.tree.cliques[x], &self.tree.cliques[y]);
        cx.iter()
            .copied()
            .filter(|v| cy.binary_search(v).is_ok())
            .collect()
    }

    /// The shortest tree path from a node holding `a` to a node holding `b`, both ends
    /// included (breadth first from all of a's nodes at once).
    fn path(&self, a: usize, b: usize) -> Option<Vec<usize>> {
        let m = self.tree.cliques.len();
        let mut from = vec![usize::MAX; m];
        let mut queue = VecDeque::new();
        for &n in &self.holders[a] {
            from[n] = n;
            queue.push_back(n);
        }
        while let Some(x) = queue.pop_front() {
            if self.tree.cliques[x].binary_search(&b).is_ok() {
                let mut path = vec![x];
                let mut at = x;
                while from[at] != at {
                    at = from[at];
                    path.push(at);
                }
                path.reverse();
                return Some(path);
            }
            for &y in &self.adj[x] {
                if from[y] == usize::MAX {
                    from[y] = x;
                    queue.push_back(y);
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl PairBounds<'_> {
        /// The nodes of the junction tree [`PairBounds::with_pair`] bounds by: the bridge
        /// node added, or the carried attribute added along the path.
        fn grown(&self, a: usize, b: usize) -> Vec<Vec<usize>> {
            let mut nodes = self.tree.cliques.clone();
            let path = self.path(a, b).unwrap();
            if path
                .windows(2)
                .any(|w| self.separator(w[0], w[1]).is_empty())
            {
                nodes.retain(|c| c != &vec![a] && c != &vec![b]);
                nodes.push(vec![a, b]);
                return nodes;
            }
            let carry = |x: usize, along: &[usize]| {
                let mut n = nodes.clone();
                for i in along {
                    if !n[*i].contains(&x) {
                        n[*i].push(x);
                        n[*i].sort_unstable();
                    }
                }
                n
            };
            let (ga, gb) = (carry(a, &path[1..]), carry(b, &path[..path.len() - 1]));
            let size = |n: &[Vec<usize>]| n.iter().map(|c| cells(self.sizes, c)).sum::<usize>();
            if size(&ga) <= size(&gb) { ga } else { gb }
        }
    }

    /// Whether the graph joining every two attributes of a node is chordal, by maximum
    /// cardinality search: each vertex's earlier neighbours must form a clique.
    fn chordal(n: usize, nodes: &[Vec<usize>]) -> bool {
        let mut adj = vec![vec![false; n]; n];
        for c in nodes {
            for &x in c {
                for &y in c {
                    adj[x][y] |= x != y;
                }
            }
        }
        let mut order = Vec::new();
        let mut weight = vec![0usize; n];
        let mut done = vec![false; n];
        for _ in 0..n {
            let v = (0..n)
                .filter(|v| !done[*v])
                .max_by_key(|v| (weight[*v], n - v))
                .unwrap();
            done[v] = true;
            order.push(v);
            for u in 0..n {
                if adj[v][u] && !done[u] {
                    weight[u] += 1;
                }
            }
        }
        (0..n).all(|i| {
            let earlier: Vec<usize> = order[..i]
                .iter()
                .copied()
                .filter(|u| adj[order[i]][*u])
                .collect();
            earlier
                .iter()
                .all(|x| earlier.iter().all(|y| x == y || adj[*x][*y]))
        })
    }

    /// The bound is the size of a real model: the grown nodes make a chordal graph that
    /// holds every measured clique and the pair, and their cells add up to the bound.
    /// (The greedy triangulation AIM then builds from scratch is a heuristic and may be a
    /// little larger or smaller.) Checked for every pair over chains, stars and a cycle.
    #[test]
    fn the_pair_bound_is_the_size_of_a_model_holding_the_pair() {
        let sizes = [2usize, 3, 4, 5, 2, 3, 6, 2];
        let models: Vec<Vec<Vec<usize>>> = vec![
            (0..8).map(|a| vec![a]).collect(),
            vec![
                vec![0, 1],
                vec![1, 2],
                vec![2, 3],
                vec![4, 5],
                vec![6],
                vec![7],
            ],
            vec![
                vec![0, 1],
                vec![0, 2],
                vec![0, 3],
                vec![0, 4],
                vec![5, 6, 7],
            ],
            vec![
                vec![0, 1],
                vec![1, 2],
                vec![2, 3],
                vec![3, 0],
                vec![4, 5, 6],
                vec![6, 7],
            ],
        ];
        for cliques in models {
            let tree = JunctionTree::build(&sizes, &cliques);
            let b = PairBounds::new(&tree, &sizes);
            assert_eq!(b.total(), tree.cells(&sizes));
            for x in 0..8 {
                for y in x + 1..8 {
                    let bound = b.with_pair(x, y);
                    if tree.node_of(&[x, y]).is_some() {
                        assert_eq!(bound, b.total());
                        continue;
                    }
                    let grown = b.grown(x, y);
                    let size: usize = grown.iter().map(|c| cells(&sizes, c)).sum();
                    assert_eq!(size, bound, "{cliques:?} + {x},{y}");
                    assert!(chordal(8, &grown), "{cliques:?} + {x},{y}: {grown:?}");
                    let held = |c: &[usize]| grown.iter().any(|g| c.iter().all(|v| g.contains(v)));
                    assert!(
                        held(&[x, y]) && cliques.iter().all(|c| held(c)),
                        "{grown:?}"
                    );
                }
            }
        }
    }
}
