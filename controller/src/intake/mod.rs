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

use crate::store::StoreError;

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
