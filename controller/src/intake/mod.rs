//! What agents send, from the connection to the store: the agent side of the controller, apart from
//! the HTTP handlers in [`crate::api::agent`] that call it.
//!
//! | module | owns |
//! |---|---|
//! | [`connections`] | the TLS accept loop's per-connection service: peer keys, connection tickets, bounds |
//! | [`registry`] | the in-memory index of node keys, so that a poll finds its node without the database |
//! | [`enrol`] | registrations written in one transaction per group |
//! | [`board`] | published task lists and long-poll wake-ups |
//! | [`judge`] | results refused before storing, and refusals recorded |
//! | [`results`] | results judged, stored in one transaction per group of reports, folded in |
//! | [`groups`] | group commit: one committer per kind of write many agents send at once |
//!
//! Nothing here knows HTTP: failures are [`IntakeError`]s, which the API turns into answers.

pub mod board;
pub mod connections;
pub mod enrol;
pub mod groups;
pub mod judge;
pub mod registry;
pub mod results;

use crate::engine::Engine;
use crate::store::{Store, StoreError};
use crate::workers::Workers;
use std::sync::Arc;

/// The agent side of the controller: node keys, connections, registrations, the board and the
/// committers of what agents send.
pub struct AgentSide {
    /// Known node keys.
    pub registry: Arc<registry::NodeRegistry>,
    /// Connection accounting (untrusted pool, per-key bounds).
    pub connections: Arc<crate::limits::ConnectionGate>,
    /// New registrations per source address.
    pub registrations: crate::limits::RegistrationRate,
    /// Published lists.
    pub board: Arc<board::Board>,
    /// Agents' results, judged, stored and folded in by groups.
    pub results: results::Intake,
    /// Agents' registrations, written by groups.
    pub enrol: enrol::Enrol,
}

impl AgentSide {
    /// The agent side of a controller with these node keys and this board, writing to `store` as
    /// `workers`' jobs and folding results into `engine`.
    pub fn new(
        store: Arc<dyn Store>,
        engine: Arc<Engine>,
        registry: Arc<registry::NodeRegistry>,
        board: Arc<board::Board>,
        workers: Workers,
    ) -> AgentSide {
        AgentSide {
            connections: Default::default(),
            registrations: Default::default(),
            results: results::Intake::new(store.clone(), engine, board.clone(), workers.clone()),
            enrol: enrol::Enrol::new(store, registry.clone(), workers),
            registry,
            board,
        }
    }
}

/// Why an agent's registration or report was not written.
#[derive(Debug, Clone, thiserror::Error)]
pub enum IntakeError {
    /// The store refused or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The committer of this kind of write ("results", "registrations") has stopped.
    #[error("the {0} committer stopped")]
    Stopped(&'static str),
    /// The committer took the write but gave no answer.
    #[error("the {0} committer gave no answer")]
    NoAnswer(&'static str),
}
