//! Ordering every class's tasks at once.
//!
//! An agent runs its list strictly in order and a task with cross-node waits blocks until they are done,
//! so each node's order must be consistent with the other nodes' orders: the lists are cut from one
//! topological order of the whole plan. Its vertices are (class, task) for every task of the graph (tasks
//! a class does not run pass dependencies through); its edges are the graph's `requires` /
//! `required_for`, the cross dependencies that fall on the same node, and every cross-node wait. Ties go
//! to the task earlier in the merged graph, so lists keep the graph's order where dependencies allow.
//! A cycle here is a dependency cycle within a node or a deadlock across nodes.

use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::HashMap;

use super::classes::{Class, Graphs};
use super::compile::{Compiled, CompiledDep, Selector};
use super::error::ResolveError;
use super::order::{find_cycle, stable_order_by};
use super::waits::Waits;

/// The dependency edges that stay on one node of `class`: `(before, after)`.
fn local_edges(compiled: &Compiled<'_>, class: &Class<'_>) -> Vec<(usize, usize)> {
    let mut extra = Vec::new();
    for t in (0..compiled.tasks.len()).filter(|&t| class.scheduled[t]) {
        let (forward, backward) = class.deps(compiled, t);
        let local = |d: &CompiledDep| {
            matches!(d.selector, Selector::SelfNode)
                || d.selector.matches(&class.tags, class.is_master)
        };
        for d in forward.iter().filter(|d| local(d)) {
            for &u in d.targets.iter().filter(|&&u| u != t && class.scheduled[u]) {
                extra.push((u, t));
            }
        }
        for d in backward.iter().filter(|d| local(d)) {
            for &u in d.targets.iter().filter(|&&u| u != t && class.scheduled[u]) {
                extra.push((t, u));
            }
        }
    }
    extra
}

/// Fills every class's `order`, or fails with the tasks and nodes of a cycle. Each class is ordered by
/// its own variant's edges (computed `requires` / `required_for` differ between nodes).
pub(crate) fn schedule(
    graphs: &Graphs<'_>,
    classes: &mut [Class<'_>],
    waits: &Waits,
) -> Result<(), ResolveError> {
    let compiled = &graphs.base;
    let n = compiled.tasks.len();
    let total = classes.len() * n;
    let mut g = DiGraph::<(), ()>::with_capacity(total, total * 3);
    for _ in 0..total {
        g.add_node(());
    }
    let v = |c: usize, t: usize| NodeIndex::new(c * n + t);
    for (c, class) in classes.iter().enumerate() {
        let own = graphs.of(class);
        for (a, succ) in own.successors.iter().enumerate() {
            for &b in succ {
                g.add_edge(v(c, a), v(c, b), ());
            }
        }
        for (a, b) in local_edges(own, class) {
            g.add_edge(v(c, a), v(c, b), ());
        }
    }
    let mut class_of: HashMap<u64, usize> = HashMap::new();
    for (i, c) in classes.iter().enumerate() {
        for m in &c.members {
            class_of.insert(m.id, i);
        }
    }
    let mut set_entries: Vec<Option<Vec<(usize, usize)>>> = vec![None; waits.sets.len()];
    for (x, class) in classes.iter().enumerate() {
        for (&t, list) in &waits.by_class[x] {
            for &s in list {
                let set = &waits.sets[s as usize];
                let entries = set_entries[s as usize].get_or_insert_with(|| {
                    let mut e: Vec<(usize, usize)> = Vec::new();
                    for target in &set.targets {
                        let Some(&u) = compiled.index.get(target.task.as_str()) else {
                            continue;
                        };
                        for node in &target.nodes {
                            if let Some(&y) = class_of.get(node) {
                                e.push((y, u));
                            }
                        }
                    }
                    e.sort_unstable();
                    e.dedup();
                    e
                });
                for &(y, u) in entries.iter() {
                    // Within a class of one node the entry is the node itself: ordered locally.
                    if y == x && class.members.len() < 2 {
                        continue;
                    }
                    g.add_edge(v(y, u), v(x, t), ());
                }
            }
        }
    }
    let order = match stable_order_by(&g, |i| (i % n, i / n)) {
        Ok(order) => order,
        Err(_) => return Err(cycle_error(compiled, classes, &g, n)),
    };
    for c in classes.iter_mut() {
        c.order.clear();
    }
    for i in order {
        let (c, t) = (i / n, i % n);
        if classes[c].scheduled[t] {
            classes[c].order.push(t);
        }
    }
    Ok(())
}

fn cycle_error(
    compiled: &Compiled<'_>,
    classes: &[Class<'_>],
    g: &DiGraph<(), ()>,
    n: usize,
) -> ResolveError {
    let cycle = find_cycle(g).unwrap_or_default();
    let one_class = cycle.windows(2).all(|w| w[0] / n == w[1] / n);
    let tasks: Vec<String> = cycle
        .iter()
        .map(|&i| {
            let (c, t) = (i / n, i % n);
            let id = &compiled.task(t).id;
            if one_class {
                id.clone()
            } else {
                let first = classes[c]
                    .members
                    .first()
                    .map(|m| m.name.as_str())
                    .unwrap_or("?");
                format!("{id}@{first}")
            }
        })
        .collect();
    // The nodes concerned: those whose own edges close the cycle and that run a task of it (for a
    // cycle across nodes, the nodes of its classes). A cycle of computed `requires` exists only on the
    // nodes that computed them.
    let closes = |c: usize| {
        cycle.windows(2).all(|w| {
            g.contains_edge(
                NodeIndex::new(c * n + w[0] % n),
                NodeIndex::new(c * n + w[1] % n),
            )
        })
    };
    let concerned = |runs: bool| {
        let mut members: Vec<(u64, &str)> = Vec::new();
        for (c, class) in classes.iter().enumerate() {
            let yes = if one_class {
                closes(c) && (!runs || cycle.iter().any(|&i| class.scheduled[i % n]))
            } else {
                cycle.iter().any(|&i| i / n == c)
            };
            if yes {
                members.extend(class.members.iter().map(|m| (m.id, m.name.as_str())));
            }
        }
        members
    };
    let mut members = concerned(true);
    if members.is_empty() {
        members = concerned(false);
    }
    members.sort_unstable();
    let mut nodes: Vec<String> = members
        .iter()
        .take(10)
        .map(|(_, n)| n.to_string())
        .collect();
    if members.len() > 10 {
        nodes.push(format!("and {} more", members.len() - 10));
    }
    ResolveError::Cycle { tasks, nodes }
}
