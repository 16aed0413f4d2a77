//! The records the operator API answers with, as the controller stores them: nodes, releases,
//! clusters, plugins. The controller's store keeps these very types; `plinthctl` reads them.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use plinth_common::wire::Admission as NodeAdmission;

/// A node's life-cycle status, as Fuel names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    /// Registered, in no cluster yet or never deployed.
    Discover,
    /// Taking part in a running deployment.
    Deploying,
    /// Writing an operating system image to its disk (a `provision` task runs).
    Provisioning,
    /// Its operating system is installed (see [`NodeModelFields::provisioned`]), its roles not deployed.
    Provisioned,
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
            NodeStatus::Provisioning => "provisioning",
            NodeStatus::Provisioned => "provisioned",
            NodeStatus::Ready => "ready",
            NodeStatus::Error => "error",
        }
    }
}

/// A node as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    /// Why, in one line (`task boom failed in phase deploy`), when its status is `error`: the reason
    /// its deployment's report gives for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_msg: Option<String>,
    /// The deployment that failed it, when its status is `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_deployment_id: Option<u64>,
    /// What the agent last said of its name, tags, labels and rack where that differs from the record
    /// (an accepted node's word is facts, not authority: operators see it apart).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reported: Option<Reported>,
    /// The operating system its last `provision` task installed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioned: Option<ProvisionedImage>,
}

impl NodeModelFields {
    /// Marks the node in error: what failed (`deploy`), why, and in which deployment.
    pub fn set_error(&mut self, kind: &str, why: Option<String>, deployment: u64) {
        self.error_type = Some(kind.to_string());
        self.error_msg = why;
        self.error_deployment_id = Some(deployment);
    }

    /// The node is no longer in error for what failed before.
    pub fn clear_error(&mut self) {
        self.error_type = None;
        self.error_msg = None;
        self.error_deployment_id = None;
    }
}

/// What a `provision` task installed on a node, as the agent reported it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct ProvisionedImage {
    /// The image: the served file's path or the URL.
    pub image: String,
    /// The SHA-256 of the image as downloaded.
    pub sha256: String,
    /// Its format as recognised (`raw`, `qcow2`, with the compression: `qcow2+zstd`).
    pub format: String,
    /// The disk it was written to (`/dev/sda`), with the disk's serial when it has one.
    pub disk: String,
    /// The disk's serial number, when it reports one.
    pub disk_serial: Option<String>,
    /// When the installed system came up, in milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// The deployment that provisioned it.
    pub deployment_id: u64,
}

/// What an agent said of itself at registration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NodeAssignment {
    /// The node.
    pub id: u64,
    /// Roles to deploy on it.
    #[serde(default)]
    pub roles: Vec<String>,
}

/// A release as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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

/// A cluster as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct ClusterData {
    /// Ids of the enabled plugins, in the order they were enabled (their graphs merge in this order).
    pub plugins: Vec<u64>,
    /// Tags defined for this cluster only (`name` → metadata with `has_primary`).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub tags_metadata: serde_json::Map<String, serde_json::Value>,
    /// Roles changed or added for this cluster only (`name` → role metadata).
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub roles_metadata: serde_json::Map<String, serde_json::Value>,
    /// Deployment facts the operator uploaded, by node id (`fuel2 env deployment-facts upload`):
    /// put over what is computed for each node at the next deployment.
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub replaced_deployment_info: serde_json::Map<String, serde_json::Value>,
    /// Provisioning facts the operator uploaded (`fuel2 env provisioning-facts upload`): `engine`,
    /// parameters put over every node's `provision` tasks, and `nodes`, by node id, over one node's.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub replaced_provisioning_info: serde_json::Map<String, serde_json::Value>,
    /// `new` until deployed; `deployment` while a deployment runs; then `operational`,
    /// `partially_deployed` (some groups or nodes failed) or `error` (a critical group failed).
    pub status: ClusterStatus,
}

/// A cluster's life-cycle status, as Fuel names it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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

/// A plugin as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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

/// A node as operators see it (`GET /nodes`, `GET /nodes/{id}`): the record and what the controller
/// knows of it beyond.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeView {
    /// The node as stored (facts left out of lists).
    #[serde(flatten)]
    pub node: NodeRecord,
    /// Heard from within the offline threshold.
    pub online: bool,
    /// The roles deployed successfully (the same as `roles`, under Nailgun's other name).
    pub deployed_roles: Vec<String>,
    /// The tags a deployment would see on it now (its roles' tags, the operator's changes, primaries
    /// elected), apart from `tags`, which its agent reported; outside a cluster, its own tags with the
    /// operator's changes.
    pub effective_tags: Vec<String>,
    /// Its hardware in a few numbers, from its facts (also when the facts themselves are left out).
    pub hardware: Hardware,
    /// Its agent's version and protocol, as it said at its last registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentInfo>,
}

/// What a node's agent said of itself when it last registered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentInfo {
    /// The agent's version.
    pub version: String,
    /// The agent protocol it speaks.
    pub protocol: u32,
}

impl AgentInfo {
    /// Read from a node's stored facts (`agent`, which the controller writes at registration).
    pub fn of(facts: &serde_json::Value) -> Option<AgentInfo> {
        serde_json::from_value(facts.get("agent")?.clone()).ok()
    }
}

/// A node's hardware in a few numbers, for lists.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Hardware {
    /// Processor threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u64>,
    /// Memory, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// Disks.
    pub disks: usize,
    /// All disks together, in bytes.
    pub disk_bytes: u64,
    /// Network interfaces (not virtual ones).
    pub nics: usize,
}

impl Hardware {
    /// The numbers of an agent's facts (`cpu.threads`, `memory.total_bytes`, `disks`, `nics`).
    pub fn of(facts: &serde_json::Value) -> Hardware {
        let disks = facts["disks"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        let nics = facts["nics"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        Hardware {
            cpus: facts["cpu"]["threads"].as_u64(),
            memory_bytes: facts["memory"]["total_bytes"].as_u64(),
            disks: disks.len(),
            disk_bytes: disks
                .iter()
                .filter_map(|d| d["size_bytes"].as_u64())
                .fold(0, u64::saturating_add),
            nics: nics
                .iter()
                .filter(|n| !n["virtual_device"].as_bool().unwrap_or(false))
                .count(),
        }
    }
}

/// A tag as listed (`GET /{releases|clusters}/{id}/tags`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TagView {
    /// Its name.
    pub name: String,
    /// One node of a cluster holding it becomes primary for it.
    pub has_primary: bool,
    /// Who defined it: `{"kind": "release"}`, `{"kind": "plugin", "name": ...}` or `{"kind": "cluster"}`.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub owner: plinth_common::tags::Owner,
    /// Role-owned (or plugin-owned): it cannot be modified or deleted.
    pub read_only: bool,
}

/// A node's tags after a change (`POST|DELETE /nodes/{id}/tags`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeTagsView {
    /// The node.
    pub node_id: u64,
    /// The tags it carries now (roles' tags, plus additions, minus removals).
    pub tags: Vec<String>,
    /// The operator's additions.
    pub tags_added: Vec<String>,
    /// The operator's removals.
    pub tags_removed: Vec<String>,
}

/// A deployment strategy stored for a cluster, in its plain form.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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

/// A strategy checked against the cluster's nodes (`POST .../strategies/validate/` and `GET
/// .../strategies/{name}/check/`): the plain document, each group's criteria, dependencies and nodes,
/// and the same in words.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StrategyCheck {
    /// Always true: an invalid strategy is refused with 422 and the reason.
    pub valid: bool,
    /// The strategy's plain form (`groups`, `phases`, ...).
    pub strategy: serde_json::Value,
    /// Each group's nodes, criteria and dependencies, and a valid order.
    pub check: serde_json::Value,
    /// The check in words, as `plinthctl strategy validate` prints it.
    pub text: String,
    /// Warnings the document loaded with (validation only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
    /// Where each part of the document came from (validation only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<serde_json::Value>,
}

/// A cluster's deployment configuration (Shipyard's `shipyard/DeploymentConfiguration/v1`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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

/// What a graph belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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

/// Something a node sent that was refused, to record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NewRefusal {
    /// `result` (a result the controller refused), `list` (a list the agent refused) or `claim` (an
    /// agent claimed an enrolled server whose node another key holds).
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RefusalRecord {
    /// Sequence number.
    pub seq: u64,
    /// The node.
    pub node_id: u64,
    /// What was refused and why.
    #[serde(flatten)]
    pub refusal: NewRefusal,
}
