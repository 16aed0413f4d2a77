//! The data expressions see during a deployment, in Nailgun's shape.
//!
//! `$common` is the cluster part: `cluster` (id, name, release, status, plugins), `release` (name,
//! version), `settings` (also as `configs`, and each settings section at the top as well, as Nailgun's
//! deployment data has them), and `nodes`, one entry per node of the cluster. `$node` is the
//! node's own entry: `id`, `uid` (the id as text), `name`, `roles` (deployed and pending), `deployed_roles`,
//! `pending_roles`, `tags`, `labels`, `rack`, `status`, `error_type`, `pending_addition`,
//! `pending_deletion`, `facts`. `$` is the two merged, the node's keys winning.

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::model::{Cluster, Node, Release};
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
            "configs": cluster.settings,
            "nodes": entries,
        });
        // Nailgun's deployment data has the cluster's settings sections at the top (`$.storage`,
        // `$.access`, ...): so does `$`, under the keys above.
        if let (Value::Object(top), Value::Object(settings)) = (&mut common, &cluster.settings) {
            for (k, v) in settings {
                top.entry(k.clone()).or_insert_with(|| v.clone());
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

    /// A node's state, or `None` for a node outside the deployment.
    pub fn state(&self, node_id: u64) -> Option<NodeState> {
        self.nodes.get(&node_id).map(|node| NodeState {
            common: self.common.clone(),
            node: node.clone(),
        })
    }
}
