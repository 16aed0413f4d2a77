//! The states a running deployment's tasks run against, kept until it ends: when it does, every task
//! that succeeded on a node that succeeded has its state recorded (what `old()` and `changed()` compare
//! with next time; the store keeps each blob once, by hash, and a reference per node and task).
//!
//! Resolution hands them over as JSON trees (`NodeState`: the cluster part, shared by every node, and the
//! node's own part). Held as trees for the whole deployment they cost about ten times their text, and the
//! cluster part lists every node, so here each blob is kept once, as its hash and its JSON text, which
//! is what the store records: no blob is made a tree again, nor read back.

use crate::store::{StateBlob, StateRow};
use plinth_common::deploy::NodeState;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

/// One state blob: its hash and its JSON text (what the store records; the tree is not kept).
#[derive(Debug)]
struct Blob {
    hash: String,
    text: Arc<str>,
}

impl Blob {
    fn new(value: &Value) -> Blob {
        let text = value.to_string();
        Blob {
            hash: crate::store::text_hash(&text),
            text: text.into(),
        }
    }
}

/// Every node's state, each distinct blob once.
#[derive(Debug, Default)]
pub(super) struct TaskStates {
    /// Each node's (cluster part, own part).
    nodes: HashMap<u64, (Arc<Blob>, Arc<Blob>)>,
}

impl TaskStates {
    /// The states resolution found (a blob shared between nodes, the cluster part, is kept once).
    pub(super) fn new(states: &BTreeMap<u64, NodeState>) -> TaskStates {
        let mut seen: HashMap<usize, Arc<Blob>> = HashMap::new();
        let mut blob = |v: &Value| {
            seen.entry(v as *const Value as usize)
                .or_insert_with(|| Arc::new(Blob::new(v)))
                .clone()
        };
        TaskStates {
            nodes: states
                .iter()
                .map(|(id, s)| (*id, (blob(&s.common), blob(s.node()))))
                .collect(),
        }
    }

    /// For every task that succeeded on a node that succeeded, the state it ran against: the blobs by
    /// hash (each once, in the order first named), then a row per (node, task) naming them. All as
    /// JSON text: a node's tasks share one reference, and no blob is made a tree again.
    pub(super) fn rows(
        &self,
        succeeded_tasks: &[(u64, String)],
    ) -> (Vec<StateBlob>, Vec<StateRow>) {
        let mut blobs: Vec<StateBlob> = Vec::new();
        let mut named: HashSet<usize> = HashSet::new();
        let mut name = |b: &Arc<Blob>, blobs: &mut Vec<StateBlob>| {
            if named.insert(Arc::as_ptr(b) as usize) {
                blobs.push((b.hash.clone(), b.text.clone()));
            }
            b.hash.clone()
        };
        let mut references: HashMap<u64, Arc<str>> = HashMap::new();
        // Sized once: a row per task, and there can be hundreds of thousands.
        let mut rows = Vec::with_capacity(succeeded_tasks.len());
        for (node, task) in succeeded_tasks {
            let Some((common, own)) = self.nodes.get(node) else {
                continue;
            };
            let reference = references
                .entry(*node)
                .or_insert_with(|| {
                    json!({
                        "common": name(common, &mut blobs),
                        "node": name(own, &mut blobs),
                    })
                    .to_string()
                    .into()
                })
                .clone();
            rows.push((*node, task.clone(), reference));
        }
        (blobs, rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(common: &Arc<Value>, own: Value) -> NodeState {
        NodeState::new(common.clone(), Arc::new(own))
    }

    #[test]
    fn rows_name_each_blob_once_by_the_hash_of_its_tree() {
        let common = Arc::new(json!({"nodes": [{"id": 1}, {"id": 2}], "load": 0.1 + 0.2}));
        let states: BTreeMap<u64, NodeState> = [
            (
                1,
                state(&common, json!({"id": 1, "name": "a", "mem": 1.5e300})),
            ),
            (2, state(&common, json!({"id": 2, "name": "b"}))),
        ]
        .into_iter()
        .collect();
        let kept = TaskStates::new(&states);
        let tasks = [
            (1, "t1".to_string()),
            (1, "t2".to_string()),
            (2, "t1".to_string()),
            (3, "t1".to_string()),
        ];
        let (blobs, rows) = kept.rows(&tasks);
        let hash = crate::store::blob_hash;
        let tree = |text: &str| serde_json::from_str::<Value>(text).unwrap();
        for (hash, text) in &blobs {
            assert_eq!(
                **hash,
                crate::store::text_hash(text),
                "a blob's hash is its text's"
            );
        }
        let blobs: Vec<(String, Value)> = blobs.iter().map(|(h, t)| (h.clone(), tree(t))).collect();
        assert_eq!(
            blobs,
            vec![
                (hash(&common), (*common).clone()),
                (hash(states[&1].node()), states[&1].node().clone()),
                (hash(states[&2].node()), states[&2].node().clone()),
            ],
            "each blob once, as resolution made it"
        );
        let rows: Vec<(u64, String, Value)> = rows
            .iter()
            .map(|(n, t, r)| (*n, t.clone(), tree(r)))
            .collect();
        let reference = |n: u64| json!({"common": hash(&common), "node": hash(states[&n].node())});
        assert_eq!(
            rows,
            vec![
                (1, "t1".to_string(), reference(1)),
                (1, "t2".to_string(), reference(1)),
                (2, "t1".to_string(), reference(2)),
            ],
            "a row per task of a node with a state; none for a node without"
        );
    }
}
