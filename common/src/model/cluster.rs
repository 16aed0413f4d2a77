//! A cluster: a release, enabled plugins, settings, its own tags and graphs.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::graph::Graph;
use super::release::TagMeta;

/// A cluster (Fuel's environment).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// The name of its release.
    pub release: String,
    /// The names of its enabled plugins, in the order their graphs merge.
    #[serde(default)]
    pub plugins: Vec<String>,
    /// Its settings (Nailgun's editable attributes), kept as JSON.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub settings: Value,
    /// Attributes made once when the cluster was created (Nailgun's `generated`: passwords, keys,
    /// paths), kept as JSON.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub generated: Value,
    /// Roles changed or added for this cluster only (Nailgun's cluster `roles_metadata`): a role named
    /// here replaces the release's or a plugin's role of that name in this cluster.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub roles_metadata: IndexMap<String, super::release::RoleMeta>,
    /// Tags the operator defined for this cluster only.
    #[serde(default)]
    pub tags_metadata: IndexMap<String, TagMeta>,
    /// Its own graphs by type (they win over the release's and the plugins').
    #[serde(default)]
    pub graphs: IndexMap<String, Graph>,
    /// Where it is in its life.
    #[serde(default)]
    pub status: ClusterStatus,
    /// Deployment facts the operator uploaded for some nodes (Nailgun's replaced deployment info,
    /// `fuel2 env deployment-facts upload`): each node's keys here are put over what is computed
    /// for it.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub replaced_deployment_info: std::collections::BTreeMap<u64, Value>,
    /// Provisioning facts the operator uploaded (Nailgun's replaced provisioning info, `fuel2 env
    /// provisioning-facts upload`): parameters put over the `provision` tasks' own.
    #[serde(default, skip_serializing_if = "ProvisionOverrides::is_empty")]
    pub replaced_provisioning_info: ProvisionOverrides,
}

/// Parameters put over what the graph gives a `provision` task: `engine`'s over every node's, then a
/// node's own over its tasks'. A key given replaces the graph's value of that key whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProvisionOverrides {
    /// Over every node's `provision` tasks.
    #[serde(default)]
    pub engine: serde_json::Map<String, Value>,
    /// Over one node's, by node id (these win over `engine`'s).
    #[serde(default)]
    pub nodes: std::collections::BTreeMap<u64, serde_json::Map<String, Value>>,
}

impl ProvisionOverrides {
    /// Nothing is put over the graph's parameters.
    pub fn is_empty(&self) -> bool {
        self.engine.is_empty() && self.nodes.values().all(serde_json::Map::is_empty)
    }

    /// The parameters of a `provision` task of node `node_id` whose graph gives `given`.
    pub fn apply(
        &self,
        node_id: u64,
        given: &serde_json::Map<String, Value>,
    ) -> serde_json::Map<String, Value> {
        let mut out = given.clone();
        let own = self.nodes.get(&node_id).into_iter().flatten();
        for (key, value) in self.engine.iter().chain(own) {
            out.insert(key.clone(), value.clone());
        }
        out
    }
}

/// A cluster's status, as Nailgun names them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClusterStatus {
    /// Never deployed.
    #[default]
    New,
    /// A deployment is running.
    Deployment,
    /// Some nodes are deployed.
    PartiallyDeployed,
    /// Deployed.
    Operational,
    /// The last deployment failed.
    Error,
    /// Being removed.
    Remove,
    /// Stopped.
    Stopped,
    /// Being updated.
    Update,
}
