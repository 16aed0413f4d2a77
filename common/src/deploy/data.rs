//! The data expressions see during a deployment, in Nailgun's shape.
//!
//! `$common` is the cluster part: `cluster` (id, name, release, status, plugins), `release` (name,
//! version), `settings` (as written), `configs` (their values, generated ones included), each section at
//! the top as well, as Nailgun's deployment data has them, and `nodes`, one record per node and role.
//! `$node` is the node's own record: `id`, `uid` (the id as text), `name`, `fqdn`, `user_node_name`,
//! `role` (its first role), `roles` (deployed and pending), `deployed_roles`, `pending_roles`, `tags`,
//! `labels`, `rack`, `status`, `error_type`, `pending_addition`, `pending_deletion`, `facts`. `$` is the
//! two merged, the node's keys winning.

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::model::{merged_values, Cluster, Node, Release};
use crate::tags::ClusterTags;

/// One node's view of a deployment: the shared cluster part and its own part.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeState {
    /// The cluster part, shared by every node of the deployment.
    pub common: Arc<Value>,
    /// The node's own part.
    pub node: Arc<Value>,
}

impl NodeState {
    /// `$`: the cluster part with the node's keys on top.
    pub fn merged(&self) -> Value {
        let mut out = match self.common.as_ref() {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        if let Value::Object(own) = self.node.as_ref() {
            for (k, v) in own {
                out.insert(k.clone(), v.clone());
            }
        }
        Value::Object(out)
    }
}

/// The data of one deployment: the cluster part and every node's part.
#[derive(Debug, Clone, Default)]
pub struct DeployData {
    common: Arc<Value>,
    nodes: BTreeMap<u64, Arc<Value>>,
}

fn node_entry(node: &Node, tags: Option<&crate::tags::NodeTags>) -> Value {
    let mut roles = node.roles.clone();
    for r in &node.pending_roles {
        if !roles.contains(r) {
            roles.push(r.clone());
        }
    }
    let tags: Vec<&String> = tags.map(|t| t.tags.iter().collect()).unwrap_or_default();
    json!({
        "id": node.id,
        "uid": node.id.to_string(),
        "name": node.name,
        "fqdn": node.name,
        "user_node_name": node.name,
        "role": roles.first(),
        "roles": roles,
        "deployed_roles": node.deployed_roles,
        "pending_roles": node.pending_roles,
        "tags": tags,
        "labels": node.labels,
        "rack": node.rack,
        "status": node.status,
        "error_type": node.error_type,
        "pending_addition": node.pending_addition,
        "pending_deletion": node.pending_deletion,
        "facts": node.facts,
    })
}

/// Sections of Nailgun's deployment data its serializers compute (networks, service endpoints), in
/// their empty form.
fn serializer_defaults() -> Vec<(String, Value)> {
    let mut out = vec![(
        "network_scheme".to_string(),
        json!({"transformations": [], "roles": {}, "endpoints": {}, "interfaces": {}}),
    )];
    for section in [
        "base_syslog",
        "cinder",
        "repo_setup",
        "quantum",
        "horizon",
        "keystone",
        "glance",
        "mysql",
        "configuration",
        "rabbit",
        "swift",
        "test_vm_image",
        "nova",
    ] {
        out.push((section.to_string(), json!({})));
    }
    out
}

/// Nailgun's `nodes` list: one record per node and role, each with its `role` (a node with no role
/// appears once, with `role: null`), so `$.nodes.where($.role = 'compute')` reads as in Fuel.
fn legacy_nodes(entries: &[Value]) -> Vec<Value> {
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        let roles: Vec<Value> = entry
            .get("roles")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if roles.len() <= 1 {
            out.push(entry.clone());
            continue;
        }
        for role in roles {
            let mut e = entry.clone();
            e["role"] = role;
            out.push(e);
        }
    }
    out
}

impl DeployData {
    /// Builds the data for a cluster's nodes (`tags` from [`crate::tags::cluster_tags`], with primaries).
    pub fn build(
        cluster_id: u64,
        cluster: &Cluster,
        release: &Release,
        nodes: &[Node],
        tags: &ClusterTags,
    ) -> DeployData {
        let entries: Vec<Value> = nodes
            .iter()
            .map(|n| node_entry(n, tags.nodes.get(&n.id)))
            .collect();
        let mut common = json!({
            "cluster": {
                "id": cluster_id,
                "name": cluster.name,
                "release": cluster.release,
                "status": cluster.status,
                "plugins": cluster.plugins,
            },
            "release": {"name": release.name, "version": release.version},
            "settings": cluster.settings,
            "configs": Value::Object(merged_values(&cluster.settings, &cluster.generated)),
            "nodes": legacy_nodes(&entries),
        });
        // Nailgun's deployment data has the cluster's attributes at the top (`$.storage`, `$.access`,
        // `$.mysql.root_password`, ...), as `merged_attrs_values` gives them: generated and editable
        // merged, each `{value: x}` read as `x`, `common` lifted, `additional_components` as
        // `{<component>: {enabled}}`; so does `$`, under the keys above. `$.settings` keeps the
        // settings as written (role restrictions read `settings:a.b.value`).
        if let Value::Object(top) = &mut common {
            for (k, v) in merged_values(&cluster.settings, &cluster.generated) {
                top.entry(k).or_insert(v);
            }
        }
        // Fuel's tasks read the nodes through `network_metadata` (Nailgun's network serializer): keyed
        // by name, with `uid`, `name`, `fqdn`, `node_roles`; networks and VIPs are whatever the settings
        // give (Plinth manages no networks), empty otherwise.
        if let Value::Object(top) = &mut common {
            let by_name: Map<String, Value> = nodes
                .iter()
                .map(|n| {
                    let mut roles = n.roles.clone();
                    roles.extend(
                        n.pending_roles
                            .iter()
                            .filter(|r| !n.roles.contains(r))
                            .cloned(),
                    );
                    (
                        n.name.clone(),
                        json!({"uid": n.id.to_string(), "name": n.name, "fqdn": n.name,
                               "node_roles": roles, "network_roles": {}}),
                    )
                })
                .collect();
            top.entry("network_metadata")
                .or_insert_with(|| json!({"nodes": by_name, "vips": {}}));
            // Also Nailgun's: the enabled plugins, and whether the cluster was deployed before.
            let plugins: Vec<Value> = cluster.plugins.iter().map(|p| json!({"name": p})).collect();
            top.entry("plugins")
                .or_insert_with(|| Value::Array(plugins));
            let before = cluster.status != crate::model::ClusterStatus::New;
            top.entry("deployed_before")
                .or_insert_with(|| json!({"value": before}));
            // What Nailgun's network and service serializers compute and Plinth, managing no
            // networks or services, does not: present (so Fuel's expressions read them) and empty
            // unless the settings give them.
            for (key, empty) in serializer_defaults() {
                top.entry(key).or_insert(empty);
            }
        }
        let nodes = nodes
            .iter()
            .zip(entries)
            .map(|(n, e)| (n.id, Arc::new(e)))
            .collect();
        DeployData {
            common: Arc::new(common),
            nodes,
        }
    }

    /// The cluster part (`$common`).
    pub fn common(&self) -> &Arc<Value> {
        &self.common
    }

    /// A node's own part, or `None` for a node outside the deployment.
    pub fn node_part(&self, node_id: u64) -> Option<&Arc<Value>> {
        self.nodes.get(&node_id)
    }

    /// Every node's own part.
    pub fn node_parts(&self) -> impl Iterator<Item = &Arc<Value>> {
        self.nodes.values()
    }

    /// A node's state, or `None` for a node outside the deployment.
    pub fn state(&self, node_id: u64) -> Option<NodeState> {
        self.nodes.get(&node_id).map(|node| NodeState {
            common: self.common.clone(),
            node: node.clone(),
        })
    }
}
