//! The board of published task lists: each node's current list, and a watch that wakes its long poll the
//! moment a newer one is published. Lists here are unsigned: each answer to a poll is signed afresh with the
//! poll's nonce (see [`crate::api::agent`]).

use plinth_common::wire::TaskList;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

struct Slot {
    list: Option<Arc<TaskList>>,
    tx: watch::Sender<u64>,
}

/// Published lists by node id.
#[derive(Default)]
pub struct Board {
    slots: Mutex<HashMap<u64, Slot>>,
}

impl Board {
    fn with_slot<T>(&self, node_id: u64, f: impl FnOnce(&mut Slot) -> T) -> T {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let slot = slots.entry(node_id).or_insert_with(|| Slot {
            list: None,
            tx: watch::channel(0).0,
        });
        f(slot)
    }

    /// Publishes a node's list, waking its poll.
    pub fn publish(&self, list: Arc<TaskList>) {
        self.with_slot(list.node_id, |slot| {
            let rev = list.revision;
            slot.list = Some(list);
            slot.tx.send_replace(rev);
        });
    }

    /// Withdraws a node's list if it belongs to the given deployment.
    pub fn withdraw(&self, node_id: u64, deployment_id: u64) {
        self.with_slot(node_id, |slot| {
            if slot
                .list
                .as_ref()
                .is_some_and(|l| l.deployment_id == deployment_id)
            {
                slot.list = None;
            }
        });
    }

    /// Withdraws every list of a deployment (it ended).
    pub fn withdraw_deployment(&self, deployment_id: u64) {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        for slot in slots.values_mut() {
            if slot
                .list
                .as_ref()
                .is_some_and(|l| l.deployment_id == deployment_id)
            {
                slot.list = None;
            }
        }
    }

    /// The node's list if its revision is above `after`, else a receiver to wait on.
    pub fn newer_than(
        &self,
        node_id: u64,
        after: u64,
    ) -> Result<Arc<TaskList>, watch::Receiver<u64>> {
        self.with_slot(node_id, |slot| match &slot.list {
            Some(l) if l.revision > after => Ok(l.clone()),
            _ => Err(slot.tx.subscribe()),
        })
    }

    /// A receiver that fires when the node's board changes.
    pub fn watch(&self, node_id: u64) -> watch::Receiver<u64> {
        self.with_slot(node_id, |slot| slot.tx.subscribe())
    }

    /// The node's current list, whatever its revision.
    pub fn current(&self, node_id: u64) -> Option<Arc<TaskList>> {
        self.with_slot(node_id, |slot| slot.list.clone())
    }
}
