//! A plugin: roles, volumes and graphs added to a release.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::graph::Graph;
use super::release::{RoleMeta, TagMeta};

/// A plugin as installed: its metadata, the node roles it declares, its volumes and its typed graphs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Plugin {
    /// The plugin's name.
    pub name: String,
    /// Its version.
    #[serde(default)]
    pub version: String,
    /// Its `metadata.yaml`, kept as written.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub metadata: Value,
    /// The node roles it declares (its `node_roles.yaml`), by role name.
    #[serde(default, alias = "node_roles")]
    pub roles_metadata: IndexMap<String, RoleMeta>,
    /// The tags it declares.
    #[serde(default)]
    pub tags_metadata: IndexMap<String, TagMeta>,
    /// Its `volumes.yaml`, kept as written.
    #[serde(default, alias = "volumes", skip_serializing_if = "Value::is_null")]
    pub volumes_metadata: Value,
    /// Its graphs by type.
    #[serde(default)]
    pub graphs: IndexMap<String, Graph>,
}
