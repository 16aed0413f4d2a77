//! The records the store keeps, as the rest of the controller sees them.

use plinth_common::wire::DeploymentEvent;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use plinth_common::wire::Admission as NodeAdmission;

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
}

/// A node's life-cycle status, as Fuel names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    /// Registered, in no cluster yet or never deployed.
    Discover,
    /// Taking part in a running deployment.
    Deploying,
    /// Its last deployment succeeded.
    Ready,
    /// Its last deployment failed.
    Error,
}

impl NodeStatus {
    /// The stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeStatus::Discover => "discover",
            NodeStatus::Deploying => "deploying",
            NodeStatus::Ready => "ready",
            NodeStatus::Error => "error",
        }
    }
}

/// A node as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeRecord {
    /// Numeric id.
    pub id: u64,
    /// Key fingerprint.
    pub node_key: String,
    /// Public key, base64.
    pub public_key: String,
    /// Name (hostname at registration).
    pub name: String,
    /// Whether it may get work.
    pub admission: NodeAdmission,
    /// Life-cycle status.
    pub status: NodeStatus,
    /// The cluster it belongs to.
    pub cluster_id: Option<u64>,
    /// Roles waiting to be deployed.
    pub pending_roles: Vec<String>,
    /// Roles deployed successfully.
    pub roles: Vec<String>,
    /// Tags (from the agent and operators).
    pub tags: Vec<String>,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Rack.
    pub rack: Option<String>,
    /// Facts as last reported.
    pub facts: serde_json::Value,
    /// When it registered first (ms).
    pub registered_at_ms: i64,
    /// When it was last heard from (ms).
    pub last_seen_ms: i64,
    /// The highest task list revision issued to it.
    pub revision: u64,
    /// Its place in the role and tag model.
    #[serde(flatten)]
    pub model: NodeModelFields,
}

/// The parts of a node the role and tag model owns (seed 000), kept together.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NodeModelFields {
    /// Tags the operator added (beyond its roles' tags).
    pub tags_added: Vec<String>,
    /// Tags the operator removed (from its roles' tags).
    pub tags_removed: Vec<String>,
    /// The `has_primary` tags this node is primary for (it carries `primary-<tag>`).
    pub primary_tags: Vec<String>,
    /// Added to its cluster and not yet deployed successfully.
    pub pending_addition: bool,
    /// Marked for removal from its cluster.
    pub pending_deletion: bool,
    /// What failed last (`deploy`), when its status is `error`.
    pub error_type: Option<String>,
    /// What the agent last said of its name, tags, labels and rack where that differs from the record
    /// (an accepted node's word is facts, not authority: operators see it apart).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reported: Option<Reported>,
}

/// What an agent said of itself at registration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Reported {
    /// The name it asked for.
    pub name: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Its rack.
    pub rack: Option<String>,
}

/// A node's assignment to a cluster.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeAssignment {
    /// The node.
    pub id: u64,
    /// Roles to deploy on it.
    #[serde(default)]
    pub roles: Vec<String>,
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

/// A release as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReleaseRecord {
    /// Id.
    pub id: u64,
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
    /// roles_metadata, tags_metadata, volumes_metadata, ...
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

/// A cluster as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClusterRecord {
    /// Id.
    pub id: u64,
    /// Name.
    pub name: String,
    /// Release.
    pub release_id: u64,
    /// Settings (Nailgun's editable attributes).
    pub settings: serde_json::Value,
    /// Attributes made once at creation (passwords, keys, paths: Nailgun's `generated`). Operators read
    /// them at `GET /clusters/{id}/generated`; the cluster's own record leaves them out.
    #[serde(skip)]
    pub generated: serde_json::Value,
    /// Enabled plugins and user-defined tags.
    #[serde(flatten)]
    pub data: ClusterData,
}

/// A cluster's enabled plugins and its user-defined tags.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClusterData {
    /// Ids of the enabled plugins, in the order they were enabled (their graphs merge in this order).
    pub plugins: Vec<u64>,
    /// Tags defined for this cluster only (`name` → metadata with `has_primary`).
    pub tags_metadata: serde_json::Map<String, serde_json::Value>,
    /// Roles changed or added for this cluster only (`name` → role metadata).
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub roles_metadata: serde_json::Map<String, serde_json::Value>,
    /// `new` until deployed; `deployment` while a deployment runs; then `operational`,
    /// `partially_deployed` (some groups or nodes failed) or `error` (a critical group failed).
    pub status: ClusterStatus,
}

/// A cluster's life-cycle status, as Fuel names it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClusterStatus {
    /// Never deployed.
    #[default]
    New,
    /// A deployment runs.
    Deployment,
    /// The last deployment succeeded.
    Operational,
    /// The last deployment ended with failed groups or nodes.
    PartiallyDeployed,
    /// A critical group of the last deployment failed.
    Error,
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

/// A plugin as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PluginRecord {
    /// Id.
    pub id: u64,
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
    /// metadata, roles_metadata, tags_metadata, volumes_metadata.
    pub data: serde_json::Value,
}

/// What a graph belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "model", content = "model_id", rename_all = "snake_case")]
pub enum GraphOwner {
    /// A release's graph.
    Release(u64),
    /// A plugin's graph.
    Plugin(u64),
    /// A cluster's graph.
    Cluster(u64),
}

impl GraphOwner {
    /// The stored kind text.
    pub fn kind(self) -> &'static str {
        match self {
            GraphOwner::Release(_) => "release",
            GraphOwner::Plugin(_) => "plugin",
            GraphOwner::Cluster(_) => "cluster",
        }
    }
    /// The owner's id.
    pub fn id(self) -> u64 {
        match self {
            GraphOwner::Release(id) | GraphOwner::Plugin(id) | GraphOwner::Cluster(id) => id,
        }
    }
}

/// A graph's content as uploaded.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphBody {
    /// A verbose name.
    #[serde(default)]
    pub name: Option<String>,
    /// The tasks, as given (unknown task fields are kept).
    #[serde(default)]
    pub tasks: Vec<serde_json::Value>,
    /// Which nodes the graph runs on, as an expression; absent means the default filter.
    #[serde(default)]
    pub node_filter: Option<String>,
}

/// A graph as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GraphRecord {
    /// Id.
    pub id: u64,
    /// Owner.
    pub owner: GraphOwner,
    /// Type (`default` or any custom type).
    pub graph_type: String,
    /// Content.
    #[serde(flatten)]
    pub body: GraphBody,
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
    /// The orchestration state to start from.
    pub state: serde_json::Value,
    /// What the deployment was resolved from, so that a restart resolves it the same way.
    pub inputs: serde_json::Value,
    /// Now (ms).
    pub now_ms: i64,
    /// Whether it runs a graph type that deploys (`default`): only then are the cluster's status and
    /// its nodes' statuses changed while it runs (a custom graph leaves them, seed 002).
    pub deploys: bool,
    /// The primaries elected for it: each listed node's `primary_tags`, written only if the deployment
    /// is accepted (in its transaction).
    pub primaries: Vec<(u64, Vec<String>)>,
}

/// A deployment as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeploymentRecord {
    /// Id.
    pub id: u64,
    /// Cluster.
    pub cluster_id: u64,
    /// Graph type.
    pub graph_type: String,
    /// Status.
    pub status: DeploymentStatus,
    /// Nodes taking part.
    pub node_ids: Vec<u64>,
    /// Options.
    pub options: serde_json::Value,
    /// Orchestration state.
    pub state: serde_json::Value,
    /// Started (ms).
    pub created_at_ms: i64,
    /// Finished (ms).
    pub finished_at_ms: Option<i64>,
}

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
    /// Nodes that failed: status error.
    pub failed: &'a [u64],
    /// Nodes never attempted or left half-way: back to their status before the deployment.
    pub untouched: &'a [u64],
    /// Whether the deployment ran a graph type that deploys (`default`): only then do succeeded nodes
    /// become ready with their pending roles deployed, and the cluster's status change. A custom graph
    /// (seed 002) leaves both as they were.
    pub deploys: bool,
}

/// One step of a running deployment, written in one transaction by
/// [`super::Store::record_progress`].
#[derive(Debug)]
pub struct Progress<'a> {
    /// Lists to publish (orders to stop included); each gets its revision here.
    pub lists: &'a mut [plinth_common::wire::TaskList],
    /// The orchestration state, when it changed (always given with an end).
    pub state: Option<&'a serde_json::Value>,
    /// Events to append.
    pub events: &'a [DeploymentEvent],
    /// Task states to record: blobs by hash, then (node, task, reference) rows.
    pub task_blobs: &'a [(String, serde_json::Value)],
    /// See `task_blobs`.
    pub task_rows: &'a [(u64, String, serde_json::Value)],
    /// The end, when the deployment ended.
    pub end: Option<Ending<'a>>,
}

/// How a deployment ended, as [`Progress`] records it (see [`DeploymentEnd`] for what each field does).
#[derive(Debug, Clone, Copy)]
pub struct Ending<'a> {
    /// Final status.
    pub status: DeploymentStatus,
    /// Nodes that finished every phase.
    pub succeeded: &'a [u64],
    /// Nodes that failed.
    pub failed: &'a [u64],
    /// Nodes never attempted or left half-way.
    pub untouched: &'a [u64],
    /// Whether the deployment deploys.
    pub deploys: bool,
}

/// A deployment strategy stored for a cluster, in its plain form.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StrategyRecord {
    /// The cluster.
    pub cluster_id: u64,
    /// The strategy's name.
    pub name: String,
    /// The document (plain form: `groups`, `phases`, ...).
    pub document: serde_json::Value,
    /// The document as uploaded (`uploaded`: Shipyard's envelope and metadata, unknown fields kept), where it
    /// came from (`provenance`) and the warnings it loaded with (`warnings`); `null` for strategies stored
    /// before these were kept.
    #[serde(default)]
    pub source: serde_json::Value,
}

/// A cluster's deployment configuration (Shipyard's `shipyard/DeploymentConfiguration/v1`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConfigurationRecord {
    /// The cluster.
    pub cluster_id: u64,
    /// The document's `metadata.name`.
    pub name: String,
    /// What Plinth uses: the strategy's name and the phase timeouts.
    pub configuration: serde_json::Value,
    /// The document as uploaded (`uploaded`) and its warnings (`warnings`).
    pub source: serde_json::Value,
}

/// Something a node sent that was refused, to record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewRefusal {
    /// `result` (a result the controller refused) or `list` (a list the agent refused).
    pub kind: String,
    /// The deployment it concerned, when known.
    pub deployment_id: Option<u64>,
    /// Why, in words.
    pub reason: String,
    /// What it was about (task, revision, attempt), as data.
    pub detail: serde_json::Value,
    /// When (ms).
    pub at_ms: i64,
}

/// A recorded refusal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefusalRecord {
    /// Sequence number.
    pub seq: u64,
    /// The node.
    pub node_id: u64,
    /// What was refused and why.
    #[serde(flatten)]
    pub refusal: NewRefusal,
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
