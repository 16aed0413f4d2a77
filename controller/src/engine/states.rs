//! The states a running deployment's tasks run against. When it ends, every task that succeeded on a
//! node that succeeded has its state recorded (what `old()` and `changed()` compare with next time; the
//! store keeps each blob once, by hash, and a reference per node and task).
//!
//! Resolution hands them over as JSON trees (`NodeState`: the cluster part, shared by every node, and the
//! node's own part). Held for the whole deployment, even as text, they cost every node's record twice
//! (the cluster part lists every node), so they are stored as blobs at the start, a few thousand a
//! transaction, and the deployment keeps only each node's reference to them. A blob is stored once
//! whatever names it (its hash is its key), so storing them again on a resume, or for a deployment that
//! later fails, changes nothing that is read: a blob no row names is never read.

use crate::store::{BlobBody, CompressedJson, StateBlob, StateRow, Store, StoreResult};
use plinth_common::deploy::NodeState;
use plinth_common::json::Json;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// How many blobs one transaction stores at a deployment's start: a node's part each (the cluster part,
/// listing every node, is one of them), so each transaction holds a bounded share of the text.
const BLOBS_PER_WRITE: usize = if cfg!(test) { 2 } else { 4_000 };

/// Every node's reference to its stored state: `{"common":HASH,"node":HASH}`, the text its tasks' rows
/// record.
#[derive(Debug, Default)]
pub(super) struct TaskStates {
    nodes: HashMap<u64, Arc<str>>,
}

impl TaskStates {
    /// Stores the blobs of the states resolution found and keeps each node's reference to them. The
    /// states are taken, and dropped as they are written: the cluster part, shared by every node and
    /// listing every node's record, is the largest blob, and it is stored last, once no tree is held.
    pub(super) fn store(
        states: BTreeMap<u64, NodeState>,
        store: &dyn Store,
    ) -> StoreResult<TaskStates> {
        // Cluster parts by address, while they are held: every one was made before this call, so no
        // address is reused for another while a state still names it.
        let mut shared: HashMap<*const Json, String> = HashMap::new();
        let mut shared_blobs: Vec<StateBlob> = Vec::new();
        let mut pending: Vec<StateBlob> = Vec::with_capacity(BLOBS_PER_WRITE.min(states.len()));
        let mut nodes = HashMap::with_capacity(states.len());
        for (id, state) in states {
            let common = match shared.get(&Arc::as_ptr(&state.common)) {
                Some(hash) => hash.clone(),
                None => {
                    let hash = packed_blob(&state.common, &mut shared_blobs)?;
                    shared.insert(Arc::as_ptr(&state.common), hash.clone());
                    hash
                }
            };
            let own = blob(state.node(), &mut pending);
            drop(state);
            let reference = json!({"common": common, "node": own}).to_string();
            nodes.insert(id, Arc::from(reference));
            if pending.len() >= BLOBS_PER_WRITE {
                store.save_task_states(&pending, &[])?;
                pending.clear();
            }
        }
        if !pending.is_empty() {
            store.save_task_states(&pending, &[])?;
        }
        for blob in shared_blobs {
            store.save_task_states(&[blob], &[])?;
        }
        Ok(TaskStates { nodes })
    }

    /// For every task that succeeded on a node that succeeded, a row naming the state it ran against (a
    /// node's tasks share one reference). A node without a state has none.
    pub(super) fn rows(&self, succeeded_tasks: &[(u64, Arc<str>)]) -> Vec<StateRow> {
        succeeded_tasks
            .iter()
            .filter_map(|(node, task)| {
                let reference = self.nodes.get(node)?;
                Some((*node, task.clone(), reference.clone()))
            })
            .collect()
    }
}

/// Adds a node's own part as a blob (its hash and JSON text) to those to store; returns its hash.
fn blob(value: &Json, pending: &mut Vec<StateBlob>) -> String {
    // Cut to its length where it lies (a text grown by doubling may hold twice its length).
    let text = value.to_string().into_boxed_str();
    let hash = crate::store::text_hash(&text);
    pending.push((hash.clone(), BlobBody::Text(text)));
    hash
}

/// Adds a cluster part as a blob, compressed as it is written (its text is the size of every node's
/// record and facts, and PostgreSQL's client would copy it twice more); returns its hash.
fn packed_blob(value: &Json, pending: &mut Vec<StateBlob>) -> StoreResult<String> {
    let (hash, packed) = CompressedJson::encode_hashed(value)
        .map_err(|e| crate::store::StoreError::Database(format!("a task state: {e}")))?;
    pending.push((hash.clone(), BlobBody::Packed(packed)));
    Ok(hash)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::SqliteStore;

    fn state(common: &Arc<Json>, own: serde_json::Value) -> NodeState {
        NodeState::new(common.clone(), Arc::new(own.into()))
    }

    #[test]
    fn blobs_are_stored_at_the_start_and_rows_name_them_by_the_hash_of_their_tree() {
        let common = Arc::new(Json::from(
            json!({"nodes": [{"id": 1}, {"id": 2}], "load": 0.1 + 0.2}),
        ));
        let states: BTreeMap<u64, NodeState> = [
            (
                1,
                state(&common, json!({"id": 1, "name": "a", "mem": 1.5e300})),
            ),
            (2, state(&common, json!({"id": 2, "name": "b"}))),
        ]
        .into_iter()
        .collect();
        let store = SqliteStore::in_memory().unwrap();
        // Three blobs, two a transaction in tests: the writes cross a boundary.
        let kept = TaskStates::store(states.clone(), &store).unwrap();
        let hash = |j: &Json| crate::store::blob_hash(j);
        let wanted = [
            (hash(&common), (*common).clone()),
            (hash(states[&1].node()), states[&1].node().clone()),
            (hash(states[&2].node()), states[&2].node().clone()),
        ];
        let hashes: Vec<String> = wanted.iter().map(|(h, _)| h.clone()).collect();
        assert_eq!(
            store.state_blobs(&hashes).unwrap(),
            wanted,
            "each blob stored as resolution made it, by the hash of its tree"
        );
        let task = |t: &str| -> Arc<str> { Arc::from(t) };
        let tasks = [
            (1, task("t1")),
            (1, task("t2")),
            (2, task("t1")),
            (3, task("t1")),
        ];
        let rows: Vec<(u64, String, serde_json::Value)> = kept
            .rows(&tasks)
            .iter()
            .map(|(n, t, r)| (*n, t.to_string(), serde_json::from_str(r).unwrap()))
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
        // Stored again (a resume): nothing changes, nothing fails.
        TaskStates::store(states, &store).unwrap();
        assert_eq!(store.state_blobs(&hashes).unwrap(), wanted);
    }
}
