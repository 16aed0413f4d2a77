//! The in-memory index of known node keys, so that authenticating a poll never touches the database.
//! The database stays the source of truth: the index is loaded from it at start and updated after every
//! write that changes a node's key, id or admission. Last-seen times live here and are flushed in batches.

use crate::store::{NodeAdmission, NodeRecord};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, RwLock};

/// One known node.
#[derive(Debug)]
pub struct NodeEntry {
    /// Numeric id.
    pub id: u64,
    accepted: AtomicBool,
    last_seen_ms: AtomicI64,
    flushed_ms: AtomicI64,
}

impl NodeEntry {
    /// Whether the node may get work.
    pub fn accepted(&self) -> bool {
        self.accepted.load(Ordering::Acquire)
    }
    /// Records that the node was heard from.
    pub fn seen(&self, now_ms: i64) {
        self.last_seen_ms.fetch_max(now_ms, Ordering::Relaxed);
    }
    /// When the node was last heard from (ms).
    pub fn last_seen_ms(&self) -> i64 {
        self.last_seen_ms.load(Ordering::Relaxed)
    }
}

/// Node key fingerprint → node.
#[derive(Debug, Default)]
pub struct NodeRegistry {
    index: RwLock<Index>,
}

/// The keys and, for each node id, its one current key: an enrolled node that takes a new agent's key
/// loses its old one here at once.
#[derive(Debug, Default)]
struct Index {
    by_key: HashMap<String, Arc<NodeEntry>>,
    key_of: HashMap<u64, String>,
}

impl Index {
    fn remove_id(&mut self, id: u64) {
        if let Some(key) = self.key_of.remove(&id) {
            self.by_key.remove(&key);
        }
    }
}

impl NodeRegistry {
    /// Builds the index from stored nodes.
    pub fn load(nodes: &[NodeRecord]) -> Self {
        let reg = NodeRegistry::default();
        for n in nodes {
            reg.upsert(n);
        }
        reg
    }

    /// Adds or refreshes a node after a write.
    pub fn upsert(&self, node: &NodeRecord) {
        let mut index = self.index.write().unwrap_or_else(|p| p.into_inner());
        let accepted = node.admission == NodeAdmission::Accepted;
        match index.by_key.get(&node.node_key) {
            Some(e) if e.id == node.id => {
                e.accepted.store(accepted, Ordering::Release);
                e.seen(node.last_seen_ms);
            }
            _ => {
                // The node's old key, when it had another, no longer opens it.
                index.remove_id(node.id);
                if let Some(other) = index.by_key.get(&node.node_key).map(|e| e.id) {
                    index.key_of.remove(&other);
                }
                index.key_of.insert(node.id, node.node_key.clone());
                index.by_key.insert(
                    node.node_key.clone(),
                    Arc::new(NodeEntry {
                        id: node.id,
                        accepted: AtomicBool::new(accepted),
                        last_seen_ms: AtomicI64::new(node.last_seen_ms),
                        flushed_ms: AtomicI64::new(node.last_seen_ms),
                    }),
                );
            }
        }
    }

    /// Forgets a node.
    pub fn remove(&self, node_key: &str) {
        let mut index = self.index.write().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = index.by_key.remove(node_key) {
            index.key_of.remove(&entry.id);
        }
    }

    /// Forgets a node by id (it was deleted at another controller).
    pub fn remove_id(&self, id: u64) {
        self.index
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove_id(id);
    }

    /// Makes the index what `nodes` say (after notices from other controllers may have been missed):
    /// nodes not among them are forgotten, the others added or refreshed.
    pub fn replace_all(&self, nodes: &[NodeRecord]) {
        let keep: std::collections::HashSet<&str> =
            nodes.iter().map(|n| n.node_key.as_str()).collect();
        let mut index = self.index.write().unwrap_or_else(|p| p.into_inner());
        index.by_key.retain(|k, _| keep.contains(k.as_str()));
        let Index { by_key, key_of } = &mut *index;
        key_of.retain(|_, k| by_key.contains_key(k));
        drop(index);
        for n in nodes {
            self.upsert(n);
        }
    }

    /// Looks a key up.
    pub fn get(&self, node_key: &str) -> Option<Arc<NodeEntry>> {
        self.index
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .by_key
            .get(node_key)
            .cloned()
    }

    /// Last-seen times to write to the database: each node's whose time moved at least `step_ms` past
    /// the one written last (any move when `step_ms` is 0, as at shutdown). A node polling every few
    /// seconds is so written once a step, not once a poll: the stored time serves other controllers'
    /// views of the node, which allow for the step (see `api::nodes`).
    pub fn take_unflushed(&self, step_ms: i64) -> Vec<(u64, i64)> {
        let index = self.index.read().unwrap_or_else(|p| p.into_inner());
        index
            .by_key
            .values()
            .filter_map(|e| {
                let seen = e.last_seen_ms();
                let before = e.flushed_ms.load(Ordering::Relaxed);
                let due = seen > before && seen.saturating_sub(before) >= step_ms;
                // Two flushes at once (the periodic one and the one at shutdown) write a time once.
                (due && e
                    .flushed_ms
                    .compare_exchange(before, seen, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok())
                .then_some((e.id, seen))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry() -> NodeRegistry {
        let reg = NodeRegistry::default();
        reg.upsert(&node(7, "k", 1_000));
        reg
    }

    fn node(id: u64, key: &str, seen_ms: i64) -> NodeRecord {
        NodeRecord {
            id,
            node_key: key.into(),
            public_key: String::new(),
            name: format!("n{id}"),
            admission: NodeAdmission::Accepted,
            status: crate::store::NodeStatus::Discover,
            cluster_id: None,
            pending_roles: Vec::new(),
            roles: Vec::new(),
            tags: Vec::new(),
            labels: Default::default(),
            rack: None,
            facts: serde_json::Value::Null,
            registered_at_ms: seen_ms,
            last_seen_ms: seen_ms,
            revision: 0,
            model: Default::default(),
        }
    }

    #[test]
    fn a_node_that_takes_a_new_key_is_no_longer_opened_by_its_old_one() {
        let reg = registry();
        reg.upsert(&node(8, "other", 1_000));
        reg.upsert(&node(7, "new", 2_000));
        assert!(reg.get("k").is_none(), "the old key is forgotten");
        assert_eq!(reg.get("new").map(|e| e.id), Some(7));
        reg.remove_id(7);
        assert!(reg.get("new").is_none());
        assert_eq!(reg.get("other").map(|e| e.id), Some(8));
    }

    #[test]
    fn a_node_heard_often_is_written_once_a_step() {
        let reg = registry();
        let node = reg.get("k").unwrap();
        node.seen(5_000);
        assert!(
            reg.take_unflushed(10_000).is_empty(),
            "4 s is less than the 10 s step"
        );
        node.seen(11_000);
        assert_eq!(reg.take_unflushed(10_000), vec![(7, 11_000)]);
        assert!(reg.take_unflushed(10_000).is_empty(), "written already");
        node.seen(12_000);
        assert!(reg.take_unflushed(10_000).is_empty());
        assert_eq!(
            reg.take_unflushed(0),
            vec![(7, 12_000)],
            "at shutdown every move is written"
        );
        assert!(reg.take_unflushed(0).is_empty());
    }
}
