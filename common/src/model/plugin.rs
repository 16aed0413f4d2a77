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

/// The volumes Fuel's release defines, which a plugin role's `volumes_mapping` may name besides the
/// plugin's own.
pub const CORE_VOLUMES: &[&str] = &[
    "os",
    "image",
    "vm",
    "mysql",
    "logs",
    "mongo",
    "cinder",
    "ceph",
    "cephjournal",
    "horizon",
];

impl Plugin {
    /// What is wrong with the plugin's `volumes` and its roles' `volumes_mapping` (seed 003): each
    /// volume has an `id` and a `type` of `vg` or `partition`; each mapping entry names a volume (the
    /// plugin's, or one of [`CORE_VOLUMES`]) and an `allocate_size` of `min`, `all` or `full-disk`.
    pub fn volume_problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let volumes = match &self.volumes_metadata {
            Value::Null => Vec::new(),
            Value::Object(m) => match m.get("volumes") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(v)) => v.clone(),
                Some(_) => {
                    out.push("volumes: `volumes` is a list".to_string());
                    Vec::new()
                }
            },
            Value::Array(v) => v.clone(),
            _ => {
                out.push("volumes: a mapping with a `volumes` list".to_string());
                Vec::new()
            }
        };
        let mut ids: Vec<String> = Vec::new();
        for (i, v) in volumes.iter().enumerate() {
            let Some(id) = v.get("id").and_then(Value::as_str) else {
                out.push(format!("volumes[{i}]: no `id`"));
                continue;
            };
            match v.get("type").and_then(Value::as_str) {
                Some("vg") | Some("partition") => {}
                other => out.push(format!(
                    "volumes[{i}] ({id}): `type` is vg or partition, not {}",
                    other.map_or("nothing".to_string(), |t| format!("{t:?}"))
                )),
            }
            ids.push(id.to_string());
        }
        for (role, meta) in &self.roles_metadata {
            let Some(mapping) = meta.extra.get("volumes_mapping") else {
                continue;
            };
            let Some(entries) = mapping.as_array() else {
                out.push(format!("role {role:?}: volumes_mapping is a list"));
                continue;
            };
            for (i, e) in entries.iter().enumerate() {
                let id = e.get("id").and_then(Value::as_str);
                match id {
                    Some(id) if ids.iter().any(|v| v == id) || CORE_VOLUMES.contains(&id) => {}
                    Some(id) => out.push(format!(
                        "role {role:?}: volumes_mapping[{i}] names volume {id:?}, which neither the plugin nor the release defines"
                    )),
                    None => out.push(format!("role {role:?}: volumes_mapping[{i}]: no `id`")),
                }
                match e.get("allocate_size").and_then(Value::as_str) {
                    Some("min") | Some("all") | Some("full-disk") => {}
                    other => out.push(format!(
                        "role {role:?}: volumes_mapping[{i}]: allocate_size is min, all or full-disk, not {}",
                        other.map_or("nothing".to_string(), |t| format!("{t:?}"))
                    )),
                }
            }
        }
        out
    }
}
