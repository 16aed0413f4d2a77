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
    by_key: RwLock<HashMap<String, Arc<NodeEntry>>>,
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
        let mut map = self.by_key.write().unwrap_or_else(|p| p.into_inner());
        let accepted = node.admission == NodeAdmission::Accepted;
        match map.get(&node.node_key) {
            Some(e) if e.id == node.id => {
                e.accepted.store(accepted, Ordering::Release);
                e.seen(node.last_seen_ms);
            }
            _ => {
                map.insert(
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
        self.by_key
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(node_key);
    }

    /// Forgets a node by id (it was deleted at another controller).
    pub fn remove_id(&self, id: u64) {
        self.by_key
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|_, e| e.id != id);
    }

    /// Makes the index what `nodes` say (after notices from other controllers may have been missed):
    /// nodes not among them are forgotten, the others added or refreshed.
    pub fn replace_all(&self, nodes: &[NodeRecord]) {
        let keep: std::collections::HashSet<&str> =
            nodes.iter().map(|n| n.node_key.as_str()).collect();
        self.by_key
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|k, _| keep.contains(k.as_str()));
        for n in nodes {
            self.upsert(n);
        }
    }

    /// Looks a key up.
    pub fn get(&self, node_key: &str) -> Option<Arc<NodeEntry>> {
        self.by_key
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(node_key)
            .cloned()
    }

    /// Last-seen times to write to the database: each node's whose time moved at least `step_ms` past
    /// the one written last (any move when `step_ms` is 0, as at shutdown). A node polling every few
    /// seconds is so written once a step, not once a poll: the stored time serves other controllers'
    /// views of the node, which allow for the step (see `api::nodes`).
    pub fn take_unflushed(&self, step_ms: i64) -> Vec<(u64, i64)> {
        let map = self.by_key.read().unwrap_or_else(|p| p.into_inner());
        map.values()
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
        reg.by_key.write().unwrap().insert(
            "k".into(),
            Arc::new(NodeEntry {
                id: 7,
                accepted: AtomicBool::new(true),
                last_seen_ms: AtomicI64::new(1_000),
                flushed_ms: AtomicI64::new(1_000),
            }),
        );
        reg
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
