//! A node: its roles, the operator's tag changes, labels, placement, status and facts.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// A node of a cluster.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// Its numeric id (never 0, which names the controller's own host).
    pub id: u64,
    /// Its name (`node-1`).
    #[serde(default)]
    pub name: String,
    /// Its roles.
    #[serde(default)]
    pub roles: Vec<String>,
    /// Roles assigned but not yet deployed.
    #[serde(default)]
    pub pending_roles: Vec<String>,
    /// Roles deployed successfully.
    #[serde(default)]
    pub deployed_roles: Vec<String>,
    /// Tags the operator added (beyond those of its roles); `tags` as seed 000's nodes write it.
    #[serde(default, alias = "tags")]
    pub tags_added: Vec<String>,
    /// Tags the operator removed (from those of its roles).
    #[serde(default)]
    pub tags_removed: Vec<String>,
    /// The tags this node is currently the primary for (kept across elections while it keeps the tag).
    #[serde(default)]
    pub primary_tags: Vec<String>,
    /// Free-form labels.
    #[serde(default)]
    pub labels: IndexMap<String, String>,
    /// Its rack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack: Option<String>,
    /// Its status.
    #[serde(default)]
    pub status: NodeStatus,
    /// Why it is in error (`deploy`, `provision`, ...), when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// Added to the cluster, not deployed yet.
    #[serde(default)]
    pub pending_addition: bool,
    /// To be removed from the cluster.
    #[serde(default)]
    pub pending_deletion: bool,
    /// The facts its agent reported, kept as a compact JSON tree (as the deployment data holds them).
    #[serde(default, skip_serializing_if = "crate::json::Json::is_null")]
    pub facts: crate::json::Json,
}

impl Node {
    /// A node with an id, a name and roles; everything else default.
    pub fn new(id: u64, name: impl Into<String>, roles: &[&str]) -> Node {
        Node {
            id,
            name: name.into(),
            roles: roles.iter().map(|r| r.to_string()).collect(),
            ..Node::default()
        }
    }

    /// Its name, or `node-<id>` when it has none.
    pub fn display_name(&self) -> String {
        if self.name.is_empty() {
            format!("node-{}", self.id)
        } else {
            self.name.clone()
        }
    }
}

/// A node's status, as Nailgun names them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    /// Reported, not provisioned.
    #[default]
    Discover,
    /// Being provisioned.
    Provisioning,
    /// Provisioned, not deployed.
    Provisioned,
    /// Being deployed.
    Deploying,
    /// Deployed.
    Ready,
    /// Its last operation failed (see `error_type`).
    Error,
    /// Being removed.
    Removing,
    /// Stopped.
    Stopped,
}
