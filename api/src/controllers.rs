//! The controllers serving one database, as `GET /api/v1/cluster-status` answers (and `plinthctl
//! controllers` prints).

use serde::{Deserialize, Serialize};

/// `GET /api/v1/cluster-status`: every controller the database heard from lately, which one sequences
/// deployments, and the controller that answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClusterStatus {
    /// The id of the controller that answered.
    pub answered_by: String,
    /// The database they share: `sqlite` (one controller alone) or `postgresql`.
    pub database: String,
    /// The sequencing lease: the controller running every deployment's sequencing.
    pub lease: Option<LeaseView>,
    /// The controllers, by id.
    pub controllers: Vec<ControllerView>,
}

/// The sequencing lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LeaseView {
    /// The controller holding it (or that held it last, when it expired).
    pub holder: String,
    /// Its fencing token: one more each time the lease changes hands.
    pub token: u64,
    /// When it expires unless renewed (milliseconds since the epoch).
    pub expires_ms: i64,
    /// Whether it is held now (not expired).
    pub held: bool,
}

/// One controller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ControllerView {
    /// Its id (kept in its data directory).
    pub id: String,
    /// Its name (the host name).
    pub name: String,
    /// The URL other controllers reach it at.
    pub url: String,
    /// Whether it beat lately (within a few seconds).
    pub live: bool,
    /// Whether it holds the sequencing lease.
    pub sequencer: bool,
    /// Agents connected to it at its last heartbeat.
    pub agents: u64,
    /// When its process started (milliseconds since the epoch).
    pub started_ms: i64,
    /// Its last heartbeat (milliseconds since the epoch).
    pub seen_ms: i64,
}
