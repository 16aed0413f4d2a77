//! A controller that does not sequence keeps its board (the lists its held polls wait on) in step with
//! the database: the lists published since its last look go on it (or only their revisions, for nodes
//! not attached here: see [`crate::intake::board`]), and the lists of deployments that ended come off. Revisions come from one counter and lists are published one transaction at a time
//! in revision order, so "above the last revision seen" misses none.

use crate::intake::board::Board;
use crate::store::{Published, Store, StoreResult};
use std::collections::BTreeSet;
use std::sync::Mutex;

/// What the follower has seen.
#[derive(Default)]
pub struct Follower {
    seen: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    /// The highest revision put on the board.
    revision: u64,
    /// The deployments with lists on the board.
    deployments: BTreeSet<u64>,
}

impl Follower {
    /// Puts the lists published since the last look on the board (or notes their revisions) and takes
    /// those of ended deployments off. Returns how many lists it learnt of. Blocking.
    pub fn sync(&self, store: &dyn Store, board: &Board) -> StoreResult<usize> {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        // Held here only for agents attached here, so only theirs are read whole; the others' are
        // read when they poll here.
        let published = store.lists_after(seen.revision, &|node| board.is_attached(node))?;
        let count = published.len();
        for p in published {
            seen.revision = seen.revision.max(p.revision());
            seen.deployments.insert(p.deployment_id());
            match p {
                Published::List(list) => {
                    board.note(list);
                }
                Published::Noted {
                    node_id,
                    revision,
                    deployment_id,
                } => board.note_revision(node_id, revision, deployment_id),
            }
        }
        if !seen.deployments.is_empty() {
            let running: BTreeSet<u64> = store.running_ids()?.into_iter().collect();
            let ended: Vec<u64> = seen.deployments.difference(&running).copied().collect();
            for id in ended {
                board.withdraw_deployment(id);
                seen.deployments.remove(&id);
            }
        }
        Ok(count)
    }
}
