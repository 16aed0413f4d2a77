//! The bodies and queries operators send.

use crate::records::NodeAssignment;
use serde::{Deserialize, Serialize};

/// `POST /api/v1/clusters` body.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateCluster {
    /// The cluster's name (unique).
    pub name: String,
    /// Its release.
    pub release_id: u64,
    /// Settings merged over the release's editable defaults.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub settings: serde_json::Map<String, serde_json::Value>,
}

/// `PUT /api/v1/clusters/{id}/nodes` body.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AssignNodes {
    /// The nodes, each with the roles to deploy on it.
    pub nodes: Vec<NodeAssignment>,
}

/// `DELETE /api/v1/clusters/{id}/nodes` body.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct UnassignNodes {
    /// The nodes to take out of the cluster.
    pub node_ids: Vec<u64>,
}

/// `PUT /api/v1/clusters/{id}/deploy/` query.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct DeployQuery {
    /// The graph type, when no strategy is named (`default` when neither is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_type: Option<String>,
    /// Comma-separated node ids; all the cluster's nodes when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<String>,
    /// A strategy stored for the cluster; its phases choose the graph types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// Shipyard's action: `deploy_site`, `update_site`, or `redeploy_server` with `node`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The node `redeploy_server` redeploys (its name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Run puppet in no-op mode.
    #[serde(default)]
    pub noop: bool,
    /// Treat the last deployed state as empty.
    #[serde(default)]
    pub force: bool,
    /// Resolve and report only: nothing is stored or run.
    #[serde(default)]
    pub dry_run: bool,
}

/// `POST /{releases|clusters}/{id}/tags` body.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewTag {
    /// The tag's name.
    pub name: String,
    /// One node of a cluster holding it becomes primary for it.
    #[serde(default)]
    pub has_primary: bool,
}

/// `PUT /{releases|clusters}/{id}/tags/{name}` body.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TagChange {
    /// One node of a cluster holding it becomes primary for it.
    pub has_primary: bool,
}

/// `POST|DELETE /nodes/{id}/tags` body.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NodeTagsBody {
    /// The tags to assign or unassign.
    pub tags: Vec<String>,
}

/// `PUT|PATCH /clusters/{id}/attributes/` body: Nailgun's
/// `{editable: {section: {attribute: {value: ...}}}}` (`PATCH` merges it, `PUT` replaces).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AttributesBody {
    /// The settings by section and attribute.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub editable: serde_json::Map<String, serde_json::Value>,
}
