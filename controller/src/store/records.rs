//! The records the store keeps, as the rest of the controller sees them.

use plinth_common::wire::DeploymentEvent;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use plinth_api::records::{
    ClusterData, ClusterRecord, ClusterStatus, NodeAdmission, NodeAssignment, NodeModelFields,
    NodeRecord, NodeStatus, PluginRecord, ReleaseRecord, Reported,
};
pub use plinth_api::records::{
    ConfigurationRecord, GraphBody, GraphOwner, GraphRecord, NewRefusal, RefusalRecord,
    StrategyRecord,
};

/// What a registration writes.
#[derive(Debug, Clone)]
pub struct NodeRegistration {
    /// The node key fingerprint (the node's identity).
    pub node_key: String,
    /// The node's public key, base64.
    pub public_key: String,
    /// The hostname, used as the node's name.
    pub name: String,
    /// Facts as reported.
    pub facts: serde_json::Value,
    /// Tags the agent reported (configuration and kernel command line).
    pub tags: Vec<String>,
    /// Labels the agent reported.
    pub labels: BTreeMap<String, String>,
    /// The rack, when reported.
    pub rack: Option<String>,
    /// Now, in milliseconds since the epoch.
    pub now_ms: i64,
    /// The most discovered nodes: a new node beyond it is refused ([`super::StoreError::Full`]).
    pub max_discovered: u64,
    /// What the server says it is, to find its enrollment by.
    pub identity: NodeIdentity,
}

/// What an agent says of the server it runs on that an enrollment can name: its MACs (physical
/// interfaces, lowercase with colons), its DMI serial and its DMI UUID (lowercase).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeIdentity {
    /// MAC addresses.
    pub macs: Vec<String>,
    /// DMI product serial.
    pub serial: Option<String>,
    /// DMI product UUID.
    pub uuid: Option<String>,
    /// The address of its BMC, read in band by the agent.
    pub bmc_address: Option<String>,
}

/// A server to enroll, as the store writes it.
#[derive(Debug, Clone)]
pub struct NewEnrollment {
    /// Its name (unique among enrollments and nodes).
    pub name: String,
    /// MAC addresses, normalised (lowercase, colons).
    pub macs: Vec<String>,
    /// DMI serial.
    pub serial: Option<String>,
    /// DMI UUID, lowercase.
    pub uuid: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Rack.
    pub rack: Option<String>,
    /// Expected hardware.
    pub profile: plinth_api::enrollment::HardwareProfile,
    /// Its BMC without the password.
    pub bmc: Option<plinth_api::enrollment::BmcView>,
    /// The BMC's password, sealed (see `crate::enrollment::secrets`).
    pub bmc_secret: Option<String>,
    /// Now (ms).
    pub now_ms: i64,
}

/// A power state read (or failed) by the power loop or an operator's action.
#[derive(Debug, Clone)]
pub struct PowerReading {
    /// The enrollment.
    pub enrollment_id: u64,
    /// What was read.
    pub power: plinth_api::enrollment::PowerView,
}

/// A release to create.
#[derive(Debug, Clone)]
pub struct NewRelease {
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
    /// Everything else (roles_metadata, tags_metadata, volumes_metadata, ...), as given.
    pub data: serde_json::Value,
}

/// A cluster to create.
#[derive(Debug, Clone)]
pub struct NewCluster {
    /// Name (unique).
    pub name: String,
    /// Its release.
    pub release_id: u64,
    /// Settings (Nailgun's editable attributes).
    pub settings: serde_json::Value,
    /// Attributes made once at creation (Nailgun's generated attributes).
    pub generated: serde_json::Value,
}

/// A plugin to register.
#[derive(Debug, Clone)]
pub struct NewPlugin {
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
    /// metadata, roles_metadata, tags_metadata, volumes_metadata, as given.
    pub data: serde_json::Value,
}

pub use plinth_common::wire::DeploymentStatus;

/// A deployment to start.
#[derive(Debug, Clone)]
pub struct NewDeployment {
    /// The cluster.
    pub cluster_id: u64,
    /// The graph type it runs.
    pub graph_type: String,
    /// The nodes taking part.
    pub node_ids: Vec<u64>,
    /// Options as requested (noop, force, ...).
    pub options: serde_json::Value,
    /// The orchestration state to start from, compressed as it was written (at 100,000 nodes a tree of
    /// it would be tens of megabytes at the start's peak, its text 7 MB).
    pub state: super::CompressedJson,
    /// What the deployment was resolved from, so that a restart resolves it the same way: the snapshot
    /// as compressed JSON (stored as it is).
    pub inputs: super::CompressedJson,
    /// Now (ms).
    pub now_ms: i64,
    /// Whether it runs a graph type that deploys (`default`): only then are the cluster's status and
    /// its nodes' statuses changed while it runs (a custom graph leaves them, seed 002).
    pub deploys: bool,
    /// The primaries elected for it: each listed node's `primary_tags`, written only if the deployment
    /// is accepted (in its transaction).
    pub primaries: Vec<(u64, Vec<String>)>,
}

pub use plinth_api::deployments::DeploymentRecord;

/// What an operator token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenRole {
    /// Everything.
    Admin,
    /// Only reads.
    ReadOnly,
}

/// An operator token as stored (its hash only).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenRecord {
    /// Id.
    pub id: u64,
    /// A name for people.
    pub name: String,
    /// SHA-256 of the token, hex.
    #[serde(skip_serializing)]
    pub hash: String,
    /// What it may do.
    pub role: TokenRole,
    /// When it was revoked (ms); a revoked token authenticates nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_at_ms: Option<i64>,
}

/// The end of a deployment, as [`super::Store::finish_deployment`] records it.
#[derive(Debug)]
pub struct DeploymentEnd<'a> {
    /// Final orchestration state.
    pub state: &'a serde_json::Value,
    /// Final status.
    pub status: DeploymentStatus,
    /// Events not yet stored.
    pub events: &'a [DeploymentEvent],
    /// Nodes that finished every phase: pending roles become roles; status ready.
    pub succeeded: &'a [u64],
    /// Nodes that failed, each with why ([`plinth_common::strategy::NodeReport::failure_reason`]):
    /// status error, and the reason on the node's record.
    pub failed: &'a [(u64, String)],
    /// Nodes never attempted or left half-way: back to their status before the deployment.
    pub untouched: &'a [u64],
    /// Whether the deployment ran a graph type that deploys (`default`): only then do succeeded nodes
    /// become ready with their pending roles deployed, and the cluster's status change. A custom graph
    /// (seed 002) leaves both as they were.
    pub deploys: bool,
}

/// A task state blob to record: its content hash ([`super::blob_hash`], of its JSON text) and its body.
/// Not a tree: a deployment's start records one per node, and trees cost several times their text.
pub type StateBlob = (String, BlobBody);

/// A state blob's JSON, as text or compressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobBody {
    /// The text, held at its length: a node's own part (a kilobyte or a few; compressing each of
    /// 100,000 took longer than storing them).
    Text(Box<str>),
    /// Compressed: the cluster part, which lists every node's record and facts.
    Packed(super::CompressedJson),
}

impl BlobBody {
    /// The text, when it is kept as text.
    pub fn text(&self) -> Option<&str> {
        match self {
            BlobBody::Text(t) => Some(t),
            BlobBody::Packed(_) => None,
        }
    }

    /// The compressed bytes, when it is kept compressed.
    pub fn packed(&self) -> Option<&[u8]> {
        match self {
            BlobBody::Text(_) => None,
            BlobBody::Packed(p) => Some(p.as_bytes()),
        }
    }
}

/// A task's recorded state: node, task, and the reference naming its blobs, as JSON text
/// (`{"common":HASH,"node":HASH}`, one text shared by a node's tasks). Shared texts: a deployment's end
/// records a row per node and task, millions at 100,000 nodes.
pub type StateRow = (u64, std::sync::Arc<str>, std::sync::Arc<str>);

/// One step of a running deployment, written in one transaction by
/// [`super::Store::record_progress`].
#[derive(Debug)]
pub struct Progress<'a> {
    /// Lists to publish (orders to stop included); each gets its revision here.
    pub lists: &'a mut [plinth_common::wire::TaskList],
    /// The orchestration state, when it changed (always given with an end), compressed: the engine
    /// writes it straight from its run (at 100,000 nodes a tree of it would be tens of megabytes a
    /// step, its text 7 to 10 MB).
    pub state: Option<&'a super::CompressedJson>,
    /// Events to append.
    pub events: &'a [DeploymentEvent],
    /// Task states to record: (node, task, reference) rows naming blobs stored before (see
    /// [`super::Store::save_task_states`]).
    pub task_rows: &'a [StateRow],
    /// The end, when the deployment ended.
    pub end: Option<Ending<'a>>,
    /// Nodes whose outcome became final in this step (before the deployment's end), whose records
    /// change now: so `nodes list` says a node failed as soon as the report does.
    pub nodes_ended: NodesEnded<'a>,
}

/// How many records of each kind there are ([`super::Store::counts`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Nodes by (status, admission), as stored (`ready`, `accepted`).
    pub nodes: Vec<(String, String, u64)>,
    /// Deployments by status, as stored (`running`).
    pub deployments: Vec<(String, u64)>,
}

/// Nodes whose outcome in a running deployment became final in one step.
#[derive(Debug, Clone, Copy, Default)]
pub struct NodesEnded<'a> {
    /// Nodes that finished every phase.
    pub succeeded: &'a [u64],
    /// Nodes that failed a phase, each with why.
    pub failed: &'a [(u64, String)],
    /// Whether the deployment deploys (see [`Ending::deploys`]).
    pub deploys: bool,
}

impl<'a> Progress<'a> {
    /// A step that only publishes lists (a later slice of a large phase's lists).
    pub fn lists_only(lists: &'a mut [plinth_common::wire::TaskList]) -> Progress<'a> {
        Progress {
            lists,
            state: None,
            events: &[],
            task_rows: &[],
            end: None,
            nodes_ended: NodesEnded::default(),
        }
    }
}

/// How a deployment ended, as [`Progress`] records it (see [`DeploymentEnd`] for what each field does).
#[derive(Debug, Clone, Copy)]
pub struct Ending<'a> {
    /// Final status.
    pub status: DeploymentStatus,
    /// Nodes that finished every phase.
    pub succeeded: &'a [u64],
    /// Nodes that failed, each with why.
    pub failed: &'a [(u64, String)],
    /// Nodes never attempted or left half-way.
    pub untouched: &'a [u64],
    /// Whether the deployment deploys.
    pub deploys: bool,
}

impl<'a> Ending<'a> {
    /// The end of a [`DeploymentEnd`], without its state and events.
    pub fn of(end: &DeploymentEnd<'a>) -> Ending<'a> {
        Ending {
            status: end.status,
            succeeded: end.succeeded,
            failed: end.failed,
            untouched: end.untouched,
            deploys: end.deploys,
        }
    }
}

/// Which nodes a page of `GET /nodes` holds.
#[derive(Debug, Clone, Default)]
pub struct NodeFilter {
    /// Only nodes with a larger id (the previous page's last id).
    pub after_id: u64,
    /// At most this many.
    pub limit: usize,
    /// Only nodes with this status.
    pub status: Option<NodeStatus>,
    /// Only nodes with this admission.
    pub admission: Option<NodeAdmission>,
    /// Only nodes of this cluster.
    pub cluster_id: Option<u64>,
    /// Only nodes holding this tag: reported, added by an operator, or a role (assigned or deployed).
    pub tag: Option<String>,
    /// Only nodes whose name contains this text (ignoring ASCII case).
    pub name: Option<String>,
}

/// A list published, as [`super::Store::lists_after`] gives it.
#[derive(Debug, Clone, PartialEq)]
pub enum Published {
    /// The list, whole.
    List(plinth_common::wire::TaskList),
    /// Only where it is: read it with [`super::Store::issued_list`] when it is needed.
    Noted {
        /// Its node.
        node_id: u64,
        /// Its revision.
        revision: u64,
        /// Its deployment.
        deployment_id: u64,
    },
}

impl Published {
    /// Its revision.
    pub fn revision(&self) -> u64 {
        match self {
            Published::List(l) => l.revision,
            Published::Noted { revision, .. } => *revision,
        }
    }

    /// Its deployment.
    pub fn deployment_id(&self) -> u64 {
        match self {
            Published::List(l) => l.deployment_id,
            Published::Noted { deployment_id, .. } => *deployment_id,
        }
    }
}

/// The database's schema version against this controller's ([`super::Store::schema_versions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaVersions {
    /// How many migrations the database has applied.
    pub database: usize,
    /// How many this controller knows.
    pub controller: usize,
}
