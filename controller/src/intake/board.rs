//! The board of published task lists: each node's current list, and a watch that wakes its long poll the
//! moment a newer one is published. Lists here are unsigned: each answer to a poll is signed afresh with the
//! poll's nonce (see [`crate::api::agent`]).
//!
//! A controller that does not sequence learns of every list published anywhere, but serves only the
//! agents connected to it: it puts a list on the board when its node is attached here (a poll held
//! now, or a list of it already here) and otherwise notes only its revision ([`Board::note`]); a poll
//! that finds a noted revision reads that list from the store then. So each controller holds the lists
//! of its own agents, not every node's.

use plinth_common::wire::TaskList;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

struct Slot {
    list: Option<Arc<TaskList>>,
    /// A newer list published for this node and not held here: (revision, deployment).
    noted: Option<(u64, u64)>,
    tx: watch::Sender<u64>,
}

impl Slot {
    /// A poll waits on the node now, or one of its lists is here.
    fn attached(&self) -> bool {
        self.list.is_some() || self.tx.receiver_count() > 0
    }
}

/// What a poll finds on the board.
#[derive(Debug)]
pub enum Found {
    /// A list newer than the poll's revision.
    List(Arc<TaskList>),
    /// A newer list exists at this revision, to be read from the store.
    Noted(u64),
    /// Nothing newer: wait on this.
    Wait(watch::Receiver<u64>),
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
            noted: None,
            tx: watch::channel(0).0,
        });
        f(slot)
    }

    /// Publishes a node's list, waking its poll.
    pub fn publish(&self, list: Arc<TaskList>) {
        self.with_slot(list.node_id, |slot| {
            let rev = list.revision;
            if slot.noted.is_some_and(|(noted, _)| noted <= rev) {
                slot.noted = None;
            }
            slot.list = Some(list);
            slot.tx.send_replace(rev);
        });
    }

    /// Learns of a list published elsewhere: put on the board when its node is attached here (a poll
    /// waits on it now, or one of its lists is here), else only its revision noted. Returns whether
    /// it was put on the board.
    pub fn note(&self, list: TaskList) -> bool {
        self.with_slot(list.node_id, |slot| {
            let rev = list.revision;
            if slot.attached() {
                slot.noted = None;
                slot.list = Some(Arc::new(list));
                slot.tx.send_replace(rev);
                true
            } else {
                slot.noted = Some((rev, list.deployment_id));
                false
            }
        })
    }

    /// Whether the node is attached here: a poll waits on it now, or one of its lists is here.
    pub fn is_attached(&self, node_id: u64) -> bool {
        let slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots.get(&node_id).is_some_and(Slot::attached)
    }

    /// Learns only the revision of a list published elsewhere (its node was not attached here when it
    /// was read): noted, and a poll that began waiting on the node since is woken to read it from the
    /// store.
    pub fn note_revision(&self, node_id: u64, revision: u64, deployment_id: u64) {
        self.with_slot(node_id, |slot| {
            if slot.list.as_ref().is_some_and(|l| l.revision >= revision)
                || slot.noted.is_some_and(|(noted, _)| noted >= revision)
            {
                return;
            }
            slot.noted = Some((revision, deployment_id));
            if slot.tx.receiver_count() > 0 {
                slot.tx.send_replace(revision);
            }
        });
    }

    /// Puts a noted list, read from the store, on the board (unless a newer one is there already).
    pub fn fill(&self, list: Arc<TaskList>) {
        self.with_slot(list.node_id, |slot| {
            if slot
                .list
                .as_ref()
                .is_some_and(|l| l.revision >= list.revision)
            {
                return;
            }
            if slot.noted.is_some_and(|(noted, _)| noted <= list.revision) {
                slot.noted = None;
            }
            slot.list = Some(list);
        });
    }

    /// Forgets a noted revision whose list the store does not have (its deployment's lists are gone).
    pub fn forget_noted(&self, node_id: u64, revision: u64) {
        self.with_slot(node_id, |slot| {
            if slot.noted.is_some_and(|(noted, _)| noted == revision) {
                slot.noted = None;
            }
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
            if slot.noted.is_some_and(|(_, d)| d == deployment_id) {
                slot.noted = None;
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
            if slot.noted.is_some_and(|(_, d)| d == deployment_id) {
                slot.noted = None;
            }
        }
    }

    /// The node's list if its revision is above `after`, the revision of a newer one noted here, or a
    /// receiver to wait on.
    pub fn newer_than(&self, node_id: u64, after: u64) -> Found {
        self.with_slot(node_id, |slot| {
            let held = slot.list.as_ref().map_or(0, |l| l.revision);
            match (&slot.list, slot.noted) {
                (_, Some((noted, _))) if noted > after && noted > held => Found::Noted(noted),
                (Some(l), _) if l.revision > after => Found::List(l.clone()),
                _ => Found::Wait(slot.tx.subscribe()),
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn list(node_id: u64, revision: u64) -> TaskList {
        TaskList {
            format: plinth_common::wire::TASK_LIST_FORMAT,
            node_key: String::new(),
            node_id,
            deployment_id: 7,
            phase: "deploy".into(),
            revision,
            issued_at: 0,
            expires_at: 0,
            nonce: String::new(),
            noop: false,
            cancel: false,
            tasks: vec![].into(),
        }
    }

    #[test]
    fn lists_of_nodes_attached_elsewhere_are_noted_and_read_when_asked() {
        let board = Board::default();
        // Node 1 polls here; node 2 does not.
        let waiting = match board.newer_than(1, 0) {
            Found::Wait(rx) => rx,
            other => panic!("{other:?}"),
        };
        assert!(board.note(list(1, 5)), "a node waiting here gets its list");
        assert!(waiting.has_changed().unwrap(), "and its poll wakes");
        assert!(
            !board.note(list(2, 6)),
            "a node not attached here: noted only"
        );
        assert!(board.current(2).is_none());
        let Found::Noted(6) = board.newer_than(2, 0) else {
            panic!("the noted revision is asked for");
        };
        assert!(
            matches!(board.newer_than(2, 6), Found::Wait(_)),
            "not above what it has"
        );
        // Read from the store, the list goes on the board; the node is attached from then on.
        board.fill(Arc::new(list(2, 6)));
        let Found::List(l) = board.newer_than(2, 0) else {
            panic!("the list is here now");
        };
        assert_eq!(l.revision, 6);
        assert!(board.note(list(2, 8)));
        // An older list read late never replaces a newer one.
        board.fill(Arc::new(list(2, 6)));
        assert_eq!(board.current(2).unwrap().revision, 8);
        // A deployment's end takes noted revisions off too.
        assert!(!board.note(list(3, 9)));
        board.withdraw_deployment(7);
        assert!(matches!(board.newer_than(3, 0), Found::Wait(_)));
        assert!(board.current(2).is_none());
    }

    #[test]
    fn a_revision_noted_alone_wakes_a_poll_that_began_meanwhile_and_never_hides_a_newer_list() {
        let board = Board::default();
        assert!(!board.is_attached(1));
        // Read as a revision only (node 1 was not attached), while a poll began waiting on it.
        let waiting = match board.newer_than(1, 0) {
            Found::Wait(rx) => rx,
            other => panic!("{other:?}"),
        };
        assert!(board.is_attached(1), "a waiting poll attaches its node");
        board.note_revision(1, 5, 7);
        assert!(waiting.has_changed().unwrap(), "the poll wakes");
        assert!(matches!(board.newer_than(1, 0), Found::Noted(5)));
        // An older revision noted late changes nothing.
        board.note_revision(1, 4, 7);
        assert!(matches!(board.newer_than(1, 0), Found::Noted(5)));
        // Nor does one below a list already held.
        board.fill(Arc::new(list(1, 5)));
        board.note_revision(1, 5, 7);
        let Found::List(l) = board.newer_than(1, 0) else {
            panic!("the list held stays what a poll gets");
        };
        assert_eq!(l.revision, 5);
        board.note_revision(1, 9, 7);
        assert!(matches!(board.newer_than(1, 5), Found::Noted(9)));
    }
}
