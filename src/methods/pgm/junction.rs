//! The junction tree of a set of measured cliques: the structure exact inference and
//! sampling run on.
//!
//! The graph joins every two attributes measured together. It is triangulated by greedy
//! elimination — each step eliminates the attribute whose clique (it and its neighbours)
//! has the fewest cells — and the elimination cliques that are not inside another are the
//! tree's nodes. A maximum spanning tree over them, weighted by how many attributes two
//! cliques share, has the running-intersection property (every attribute's cliques form a
//! connected subtree), which is what makes belief propagation exact. Cliques with nothing
//! in common are joined by empty separators, so there is always one tree.
//!
//! Every measured clique lies inside some node (it is a clique of the triangulated graph).

use super::factor::cells;

/// A junction tree over attributes with the given sizes.
#[derive(Debug, Clone, PartialEq)]
pub struct JunctionTree {
    /// Each node's attributes, sorted.
    pub cliques: Vec<Vec<usize>>,
    /// Each node's parent (`None` for the root).
    pub parent: Vec<Option<usize>>,
    /// Nodes from the root outwards: a parent always comes before its children.
    pub order: Vec<usize>,
    /// Each node's separator with its parent (empty for the root), sorted.
    pub separator: Vec<Vec<usize>>,
}

impl JunctionTree {
    /// The tree of `required` cliques over attributes `0..sizes.len()` (every attribute
    /// appears in the tree, measured or not).
    pub fn build(sizes: &[usize], required: &[Vec<usize>]) -> Self {
        let cliques = maximal_cliques(sizes, required);
        let m = cliques.len();
        // Kruskal over all pairs, heaviest shared attribute count first.
        let mut edges: Vec<(usize, usize, usize)> = Vec::new();
        for i in 0..m {
            for j in i + 1..m {
                edges.push((shared(&cliques[i], &cliques[j]), i, j));
            }
        }
        edges.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let mut comp: Vec<usize> = (0..m).collect();
        fn find(c: &mut [usize], x: usize) -> usize {
            let mut r = x;
            while c[r] != r {
                r = c[r];
            }
            let mut y = x;
            while c[y] != r {
                let next = c[y];
                c[y] = r;
                y = next;
            }
            r
        }
        let mut adj = vec![Vec::new(); m];
        for (_, i, j) in edges {
            let (a, b) = (find(&mut comp, i), find(&mut comp, j));
            if a != b {
                comp[a] = b;
                adj[i].push(j);
                adj[j].push(i);
            }
        }
        // Root: the largest node, so the biggest table is sampled without conditioning.
        let root = (0..m)
            .max_by_key(|i| (cells(sizes, &cliques[*i]), usize::MAX - i))
            .unwrap_or(0);
        let mut parent = vec![None; m];
        let mut seen = vec![false; m];
        let mut order = Vec::with_capacity(m);
        if m > 0 {
            seen[root] = true;
            order.push(root);
        }
        let mut at = 0;
        while at < order.len() {
            let c = order[at];
            at += 1;
            for &k in &adj[c] {
                if !seen[k] {
                    seen[k] = true;
                    parent[k] = Some(c);
                    order.push(k);
                }
            }
        }
        let separator = (0..m)
            .map(|i| match parent[i] {
                Some(p) => intersect(&cliques[i], &cliques[p]),
                None => Vec::new(),
            })
            .collect();
        Self {
            cliques,
            parent,
            order,
            separator,
        }
    }

    /// Total cells of the nodes' tables (what inference holds and works through).
    pub fn cells(&self, sizes: &[usize]) -> usize {
        self.cliques
            .iter()
            .map(|c| cells(sizes, c))
            .fold(0usize, usize::saturating_add)
    }

    /// The first node holding every attribute of `attrs`.
    pub fn node_of(&self, attrs: &[usize]) -> Option<usize> {
        self.cliques
            .iter()
            .position(|c| attrs.iter().all(|a| c.binary_search(a).is_ok()))
    }

    /// The nodes' children, per node.
    pub fn children(&self) -> Vec<Vec<usize>> {
        let mut ch = vec![Vec::new(); self.cliques.len()];
        for &c in &self.order {
            if let Some(p) = self.parent[c] {
                ch[p].push(c);
            }
        }
        ch
    }
}

/// Cells of the junction tree `required` would need (AIM's model-size test), without
/// building the tree: the maximal cliques are what it holds.
pub fn model_cells(sizes: &[usize], required: &[Vec<usize>]) -> usize {
    maximal_cliques(sizes, required)
        .iter()
        .map(|c| cells(sizes, c))
        .fold(0usize, usize::saturating_add)
}

fn shared(a: &[usize], b: &[usize]) -> usize {
    a.iter().filter(|x| b.binary_search(x).is_ok()).count()
}

fn intersect(a: &[usize], b: &[usize]) -> Vec<usize> {
    a.iter()
        .copied()
        .filter(|x| b.binary_search(x).is_ok())
        .collect()
}

/// The maximal cliques of the greedy triangulation of the graph `required` defines.
fn maximal_cliques(sizes: &[usize], required: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = sizes.len();
    let mut adj = vec![vec![false; n]; n];
    for c in required {
        for &a in c {
            for &b in c {
                if a != b {
                    adj[a][b] = true;
                }
            }
        }
    }
    let mut alive = vec![true; n];
    let mut found: Vec<Vec<usize>> = Vec::new();
    for _ in 0..n {
        // The attribute whose elimination clique is smallest (ties: fewest fill edges,
        // then the lowest index, so the tree is deterministic).
        let mut best: Option<(f64, usize, usize)> = None;
        for v in (0..n).filter(|v| alive[*v]) {
            let nb: Vec<usize> = (0..n).filter(|u| alive[*u] && adj[v][*u]).collect();
            let size: f64 =
                nb.iter().map(|u| (sizes[*u] as f64).ln()).sum::<f64>() + (sizes[v] as f64).ln();
            let mut fill = 0;
            for (i, a) in nb.iter().enumerate() {
                for b in &nb[i + 1..] {
                    if !adj[*a][*b] {
                        fill += 1;
                    }
                }
            }
            let better = best.is_none_or(|(bs, bf, _)| {
                size < bs - 1e-12 || ((size - bs).abs() <= 1e-12 && fill < bf)
            });
            if better {
                best = Some((size, fill, v));
            }
        }
        let Some((_, _, v)) = best else { break };
        let mut clique: Vec<usize> = (0..n).filter(|u| alive[*u] && adj[v][*u]).collect();
        for (i, &a) in clique.iter().enumerate() {
            for &b in &clique[i + 1..] {
                adj[a][b] = true;
                adj[b][a] = true;
            }
        }
        clique.push(v);
        clique.sort_unstable();
        alive[v] = false;
        found.push(clique);
    }
    // Keep the cliques no other contains (the first of equal ones).
    let mut keep: Vec<Vec<usize>> = Vec::new();
    for (i, c) in found.iter().enumerate() {
        let inside = found.iter().enumerate().any(|(j, d)| {
            j != i && d.len() >= c.len() && c.iter().all(|x| d.binary_search(x).is_ok()) && {
                d.len() > c.len() || j < i
            }
        });
        if !inside {
            keep.push(c.clone());
        }
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running_intersection(t: &JunctionTree, n: usize) -> bool {
        // For every attribute, the nodes holding it are connected in the tree.
        (0..n).all(|a| {
            let holds: Vec<usize> = (0..t.cliques.len())
                .filter(|i| t.cliques[*i].contains(&a))
                .collect();
            let tops = holds
                .iter()
                .filter(|i| t.parent[**i].is_none_or(|p| !t.cliques[p].contains(&a)))
                .count();
            holds.is_empty() || tops == 1
        })
    }

    #[test]
    fn a_chain_is_its_edges_and_a_cycle_is_triangulated() {
        let sizes = [2, 3, 4, 5, 2];
        let chain: Vec<Vec<usize>> = vec![vec![0, 1], vec![1, 2], vec![2, 3], vec![3, 4]];
        let t = JunctionTree::build(&sizes, &chain);
        let mut c = t.cliques.clone();
        c.sort();
        assert_eq!(c, chain);
        assert!(running_intersection(&t, 5));
        let cycle = vec![vec![0, 1], vec![1, 2], vec![2, 3], vec![3, 0], vec![4]];
        let t = JunctionTree::build(&sizes, &cycle);
        assert!(running_intersection(&t, 5));
        for c in &cycle {
            assert!(t.node_of(c).is_some(), "{c:?} in {:?}", t.cliques);
        }
        // Triangulating a 4-cycle gives two triangles; the lone attribute is its own node.
        assert_eq!(t.cliques.len(), 3, "{:?}", t.cliques);
        assert_eq!(model_cells(&sizes, &cycle), t.cells(&sizes));
    }

    #[test]
    fn overlapping_triples_keep_running_intersection() {
        let sizes = [3; 8];
        let req = vec![
            vec![0, 1, 2],
            vec![2, 3, 4],
            vec![4, 5, 6],
            vec![1, 5, 7],
            vec![0, 6],
        ];
        let t = JunctionTree::build(&sizes, &req);
        assert!(running_intersection(&t, 8));
        for c in &req {
            assert!(t.node_of(c).is_some());
        }
        assert_eq!(t.order.len(), t.cliques.len());
    }
}
