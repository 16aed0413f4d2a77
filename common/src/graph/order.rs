//! Ordering tasks with petgraph: a topological order that keeps the graph's own order wherever the
//! dependencies allow, and the tasks of a cycle when there is none.

use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::Direction;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Kahn's algorithm taking the ready vertex with the lowest `key` first. `Err` holds one cycle (its
/// first vertex repeated at the end).
pub(crate) fn stable_order_by<N, E, K: Ord>(
    g: &DiGraph<N, E>,
    key: impl Fn(usize) -> K,
) -> Result<Vec<usize>, Vec<usize>> {
    let n = g.node_count();
    let mut indegree: Vec<usize> = (0..n)
        .map(|i| {
            g.neighbors_directed(NodeIndex::new(i), Direction::Incoming)
                .count()
        })
        .collect();
    let mut ready: BinaryHeap<Reverse<(K, usize)>> = (0..n)
        .filter(|&i| indegree[i] == 0)
        .map(|i| Reverse((key(i), i)))
        .collect();
    let mut out = Vec::with_capacity(n);
    while let Some(Reverse((_, next))) = ready.pop() {
        out.push(next);
        for s in g.neighbors_directed(NodeIndex::new(next), Direction::Outgoing) {
            let s = s.index();
            indegree[s] -= 1;
            if indegree[s] == 0 {
                ready.push(Reverse((key(s), s)));
            }
        }
    }
    if out.len() == n {
        Ok(out)
    } else {
        Err(find_cycle(g).unwrap_or_default())
    }
}

/// The shortest cycle through the lowest-numbered task of the first strongly connected component with a
/// cycle, in dependency order, its first task repeated at the end.
pub(crate) fn find_cycle<N, E>(g: &DiGraph<N, E>) -> Option<Vec<usize>> {
    let mut components = tarjan_scc(g);
    components.iter_mut().for_each(|c| c.sort_unstable());
    components.sort_unstable_by_key(|c| c[0]);
    let component = components
        .into_iter()
        .find(|c| c.len() > 1 || g.contains_edge(c[0], c[0]))?;
    let start = component[0];
    if component.len() == 1 {
        return Some(vec![start.index(), start.index()]);
    }
    let inside = |v: NodeIndex| component.binary_search(&v).is_ok();
    // Breadth-first from `start` back to `start`, inside the component.
    let mut parent: std::collections::HashMap<NodeIndex, NodeIndex> = Default::default();
    let mut queue = VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        let mut next: Vec<NodeIndex> = g
            .neighbors_directed(v, Direction::Outgoing)
            .filter(|w| inside(*w))
            .collect();
        next.sort_unstable();
        for w in next {
            if w == start {
                let mut back = Vec::new();
                let mut cur = v;
                while cur != start {
                    back.push(cur.index());
                    cur = *parent.get(&cur)?;
                }
                back.reverse();
                let mut path = vec![start.index()];
                path.extend(back);
                path.push(start.index());
                return Some(path);
            }
            if let std::collections::hash_map::Entry::Vacant(e) = parent.entry(w) {
                e.insert(v);
                queue.push_back(w);
            }
        }
    }
    None
}
