//! Acting on the notices other controllers send through the database (see [`crate::store::Notice`]).
//! Notices that arrive together are handled as one batch, on the blocking pool.

use super::Parts;
use crate::store::{Notice, StoreError};
use std::collections::BTreeSet;
use tokio::sync::mpsc::UnboundedReceiver;

/// Handles notices until the store stops sending them: node keys changed in `parts.registry`,
/// deployments taken on, cancelled and results folded in by `parts.engine` while it sequences, else
/// the board followed.
pub async fn run(parts: Parts, mut notices: UnboundedReceiver<Notice>) {
    while let Some(first) = notices.recv().await {
        let mut batch = vec![first];
        while let Ok(more) = notices.try_recv() {
            batch.push(more);
        }
        let p = parts.clone();
        let _ = tokio::task::spawn_blocking(move || handle(&p, &batch)).await;
    }
}

/// What a batch of notices asks for, each kind once.
#[derive(Default, Debug, PartialEq, Eq)]
struct Asks {
    board: bool,
    deployments: bool,
    commands: bool,
    reconnected: bool,
    nodes: BTreeSet<u64>,
    results: std::collections::BTreeMap<u64, BTreeSet<u64>>,
}

fn asks(batch: &[Notice]) -> Asks {
    let mut a = Asks::default();
    for n in batch {
        match n {
            Notice::Board => a.board = true,
            Notice::Deployments => a.deployments = true,
            Notice::Commands => a.commands = true,
            Notice::Reconnected => a.reconnected = true,
            Notice::Node { id } => {
                a.nodes.insert(*id);
            }
            Notice::Results { deployment, nodes } => {
                a.results
                    .entry(*deployment)
                    .or_default()
                    .extend(nodes.iter().copied());
            }
        }
    }
    a
}

fn handle(s: &Parts, batch: &[Notice]) {
    let a = asks(batch);
    if let Err(e) = act(s, &a) {
        tracing::warn!(error = %e, "cannot act on notices from other controllers; the periodic checks catch up");
    }
}

fn act(s: &Parts, a: &Asks) -> Result<(), StoreError> {
    if a.reconnected {
        s.registry.replace_all(&s.store.list_nodes()?);
    } else {
        for id in &a.nodes {
            match s.store.get_node(*id) {
                Ok(node) => s.registry.upsert(&node),
                Err(StoreError::NotFound { .. }) => s.registry.remove_id(*id),
                Err(e) => return Err(e),
            }
        }
    }
    if s.engine.is_sequencing() {
        if a.deployments || a.reconnected {
            s.engine.resume()?;
        }
        if a.commands || a.reconnected {
            s.engine.cancel_requested()?;
        }
        if a.reconnected {
            s.engine.fold_all_stored()?;
        } else {
            for (deployment, nodes) in &a.results {
                let nodes: Vec<u64> = nodes.iter().copied().collect();
                s.engine.fold_stored(*deployment, &nodes)?;
            }
        }
    } else if a.board || a.reconnected {
        s.membership.follower.sync(s.store.as_ref(), &s.board)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_asks_for_each_thing_once() {
        let a = asks(&[
            Notice::Board,
            Notice::Results {
                deployment: 1,
                nodes: vec![2, 3],
            },
            Notice::Board,
            Notice::Results {
                deployment: 1,
                nodes: vec![2],
            },
            Notice::Node { id: 9 },
        ]);
        assert!(a.board && !a.deployments && !a.reconnected);
        assert_eq!(a.results.len(), 1);
        assert_eq!(a.results[&1].len(), 2);
        assert_eq!(a.nodes.len(), 1);
    }
}
