//! Properties of merging graphs by task id.

use plinth_common::graph::{merge, GraphSource, MergedGraph, Origin};
use plinth_common::model::{Graph, Task, TaskType};
use proptest::prelude::*;
use serde_json::json;

/// A graph of tasks with ids from a small alphabet (unique within the graph), each marked with `mark`.
fn graph(mark: usize) -> impl Strategy<Value = Graph> {
    proptest::collection::btree_set(0u8..12, 0..8)
        .prop_flat_map(|ids| {
            let ids: Vec<u8> = ids.into_iter().collect();
            let n = ids.len();
            (
                Just(ids),
                Just(()).prop_perturb(move |_, mut rng| {
                    // A shuffled order of the ids.
                    let mut order: Vec<usize> = (0..n).collect();
                    for i in (1..n).rev() {
                        let j = (rng.next_u32() as usize) % (i + 1);
                        order.swap(i, j);
                    }
                    order
                }),
            )
        })
        .prop_map(move |(ids, order)| {
            Graph::with_tasks(
                order
                    .into_iter()
                    .map(|i| {
                        let mut t = Task::new(format!("t{}", ids[i]), TaskType::Shell);
                        t.parameters.insert("from".into(), json!(mark));
                        t
                    })
                    .collect(),
            )
        })
}

fn origins(n: usize) -> Vec<Origin> {
    (0..n).map(|i| Origin::Plugin(format!("p{i}"))).collect()
}

fn merged(graphs: &[&Graph]) -> MergedGraph {
    let origins = origins(graphs.len());
    let sources: Vec<GraphSource<'_>> = graphs
        .iter()
        .zip(&origins)
        .map(|(graph, origin)| GraphSource { origin, graph })
        .collect();
    merge(&sources).expect("ids are unique within each graph")
}

fn ids(m: &MergedGraph) -> Vec<String> {
    m.tasks.iter().map(|t| t.task.id.clone()).collect()
}

proptest! {
    #[test]
    fn one_source_is_itself(g in graph(0)) {
        let m = merged(&[&g]);
        prop_assert_eq!(m.task_list(), g.tasks.clone());
    }

    #[test]
    fn identical_sources_are_idempotent(g in graph(0)) {
        let once = merged(&[&g]);
        let twice = merged(&[&g, &g]);
        prop_assert_eq!(once.task_list(), twice.task_list());
    }

    #[test]
    fn later_wins_and_first_appearance_order_is_kept(a in graph(0), b in graph(1), c in graph(2)) {
        let m = merged(&[&a, &b, &c]);
        // Order: ids as they first appear across the sources.
        let mut expected: Vec<String> = Vec::new();
        for t in a.tasks.iter().chain(&b.tasks).chain(&c.tasks) {
            if !expected.contains(&t.id) {
                expected.push(t.id.clone());
            }
        }
        prop_assert_eq!(ids(&m), expected);
        // Content: from the last source that defines the id.
        for t in &m.tasks {
            let last = [&a, &b, &c]
                .iter()
                .rev()
                .find_map(|g| g.tasks.iter().find(|x| x.id == t.task.id))
                .cloned();
            prop_assert_eq!(Some(t.task.clone()), last);
        }
    }

    #[test]
    fn merging_is_associative(a in graph(0), b in graph(1), c in graph(2)) {
        let ab = Graph::with_tasks(merged(&[&a, &b]).task_list());
        let left = merged(&[&ab, &c]).task_list();
        let bc = Graph::with_tasks(merged(&[&b, &c]).task_list());
        let right = merged(&[&a, &bc]).task_list();
        prop_assert_eq!(left.clone(), merged(&[&a, &b, &c]).task_list());
        // Right-grouping keeps the same winners; only the order of first appearance may differ.
        let mut l = left; l.sort_by(|x, y| x.id.cmp(&y.id));
        let mut r = right; r.sort_by(|x, y| x.id.cmp(&y.id));
        prop_assert_eq!(l, r);
    }

    #[test]
    fn plugin_overlaps_name_each_pair_once(a in graph(0), b in graph(1)) {
        let m = merged(&[&a, &b]);
        let shared = a.tasks.iter().filter(|t| b.tasks.iter().any(|u| u.id == t.id)).count();
        prop_assert_eq!(m.plugin_overlaps.len(), shared);
    }
}
