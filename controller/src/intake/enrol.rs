//! Registrations in groups: a fleet that boots at once registers thousands of agents in a minute, and
//! each registration is a durable write. Every `POST /agent/v1/register` that passed its checks goes to
//! one committer (`groups`), which writes the registrations waiting at that moment in one transaction
//! (`Store::register_nodes`): one commit, one fsync, and on PostgreSQL one turn of the registration
//! lock shared by every controller, for many agents. Each agent is answered with its own node, or its
//! own refusal, exactly as when they were written one by one.

use super::groups::{Answer, Groups};
use super::registry::NodeRegistry;
use super::IntakeError;
use crate::store::{NodeAdmission, NodeRecord, NodeRegistration, Store};
use crate::workers::Workers;
use std::sync::Arc;

/// The most registrations written in one transaction.
pub const MAX_GROUP: usize = 256;

/// One agent's registration waiting for the committer.
struct Enrolment {
    record: NodeRegistration,
    admission: NodeAdmission,
    /// A valid enrollment token came with it: a node registered earlier without one is accepted now.
    token_ok: bool,
    answer: Answer<NodeRecord>,
}

/// What registrations are written with: the database, and the node keys each registered node is put in.
struct Parts {
    store: Arc<dyn Store>,
    registry: Arc<NodeRegistry>,
}

/// The registrations committer.
pub struct Enrol {
    groups: Groups<Parts, Enrolment>,
}

impl Enrol {
    /// The committer writing registrations to `store`, as `workers`' jobs, and putting the nodes in
    /// `registry`.
    pub fn new(store: Arc<dyn Store>, registry: Arc<NodeRegistry>, workers: Workers) -> Enrol {
        Enrol {
            groups: Groups::new(
                "registrations",
                MAX_GROUP,
                Parts { store, registry },
                workers,
                commit,
            ),
        }
    }

    /// Registers one node (with the others waiting at that moment); answers its record.
    pub async fn submit(
        &self,
        record: NodeRegistration,
        admission: NodeAdmission,
        token_ok: bool,
    ) -> Result<NodeRecord, IntakeError> {
        self.groups
            .ask(|answer| Enrolment {
                record,
                admission,
                token_ok,
                answer,
            })
            .await
    }
}

fn commit(s: &Parts, group: Vec<Enrolment>) {
    let regs: Vec<(&NodeRegistration, NodeAdmission)> =
        group.iter().map(|e| (&e.record, e.admission)).collect();
    let written = s.store.register_nodes(&regs);
    drop(regs);
    let written = match written {
        Ok(written) => written,
        Err(e) => {
            let e = IntakeError::from(e);
            for item in group {
                let _ = item.answer.send(Err(e.clone()));
            }
            return;
        }
    };
    let mut notices = Vec::new();
    let mut answers = Vec::with_capacity(group.len());
    for (item, node) in group.into_iter().zip(written) {
        let node = node.and_then(|node| {
            // A valid enrollment token admits a node that registered earlier without one.
            if item.token_ok && node.admission != NodeAdmission::Accepted {
                return s.store.set_admission(node.id, NodeAdmission::Accepted);
            }
            Ok(node)
        });
        if let Ok(node) = &node {
            s.registry.upsert(node);
            notices.push(crate::store::Notice::Node { id: node.id });
        }
        answers.push((item.answer, node.map_err(IntakeError::from)));
    }
    // Other controllers learn of the nodes before any is told it is registered (its next request may
    // go to one of them): one round trip for the group.
    s.store.notify_all(&notices);
    for (answer, node) in answers {
        let _ = answer.send(node);
    }
}
