//! The data expressions see during a deployment, in Nailgun's shape.
//!
//! `$common` is the cluster part: `cluster` (id, name, release, status, plugins), `release` (name,
//! version), `settings` (as written), `configs` (their values, generated ones included), each section at
//! the top as well, as Nailgun's deployment data has them, and `nodes`, one record per node and role.
//! `$node` is the node's own record: `id`, `uid` (the id as text), `name`, `fqdn`, `user_node_name`,
//! `role` (its first role), `roles` (deployed and pending), `deployed_roles`, `pending_roles`, `tags`,
//! `labels`, `rack`, `status`, `error_type`, `pending_addition`, `pending_deletion`, `facts`. `$` is the
//! two merged, the node's keys winning.
//!
//! A node's `facts` are what its agent reported, less [`NOT_FACTS`]: what the agent measured of its
//! own collecting, which differs at every start. Every node's record is in the cluster part, so a
//! value that changes whenever any agent restarts would make `changed($)` true on every node.

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::json::{Json, Key, Keys};

use crate::model::{merged_values, Cluster, Node, Release};
use crate::tags::ClusterTags;

/// One node's view of a deployment: the shared cluster part and its own part.
///
/// A node's own part is also its record in the cluster part's `nodes` list, so a state built from a
/// deployment's data points there instead of holding a second copy; a state read back from the store
/// holds its own.
#[derive(Debug, Clone)]
pub struct NodeState {
    /// The cluster part, shared by every node of the deployment.
    pub common: Arc<Json>,
    node: Part,
}

/// Where a [`NodeState`]'s own part is.
#[derive(Debug, Clone)]
enum Part {
    /// Held apart from the cluster part.
    Own(Arc<Json>),
    /// The record at this index of the cluster part's `nodes` list.
    Listed(usize),
}

/// What a part that is not there reads as (never the case for a state [`DeployData`] built).
static NO_PART: Json = Json::Null;

impl NodeState {
    /// A state whose own part is held apart from the cluster part.
    pub fn new(common: Arc<Json>, node: Arc<Json>) -> NodeState {
        NodeState {
            common,
            node: Part::Own(node),
        }
    }

    /// The node's own part (`$node`).
    pub fn node(&self) -> &Json {
        match &self.node {
            Part::Own(node) => node,
            Part::Listed(at) => self
                .common
                .get("nodes")
                .and_then(|nodes| nodes.get(*at))
                .unwrap_or(&NO_PART),
        }
    }

    /// `$`: the cluster part with the node's keys on top.
    pub fn merged(&self) -> Value {
        let mut out = match self.common.to_value() {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        if let Some(own) = self.node().as_object() {
            for (k, v) in own {
                out.insert(k.to_string(), v.to_value());
            }
        }
        Value::Object(out)
    }
}

impl PartialEq for NodeState {
    fn eq(&self, other: &NodeState) -> bool {
        self.common == other.common && self.node() == other.node()
    }
}

/// The data of one deployment: the cluster part and every node's part.
#[derive(Debug, Clone, Default)]
pub struct DeployData {
    common: Arc<Json>,
    /// Each node's part: the index of its record in the cluster part's `nodes` list.
    nodes: BTreeMap<u64, usize>,
    /// Nodes whose part the operator replaced (Nailgun's uploaded deployment facts): their listed
    /// record with the uploaded keys on top. The cluster part's `nodes` list keeps what was computed.
    overrides: BTreeMap<u64, Arc<Json>>,
}

/// Keys of a node's reported facts that are not facts of the node: how long its agent took to collect
/// them. Left out of the deployment data (they stay on the node's record for operators).
pub const NOT_FACTS: &[&str] = &["collected_in_us"];

fn node_entry(
    node: &Node,
    facts: Json,
    tags: Option<&crate::tags::NodeTags>,
    keys: &mut Keys,
) -> Json {
    let facts = match facts {
        Json::Object(reported) if NOT_FACTS.iter().any(|k| reported.contains_key(k)) => {
            Json::object_with(
                reported
                    .to_entries()
                    .into_iter()
                    .filter(|(k, _)| !NOT_FACTS.contains(&&**k)),
                keys,
            )
        }
        facts => facts,
    };
    let mut roles = node.roles.clone();
    for r in &node.pending_roles {
        if !roles.contains(r) {
            roles.push(r.clone());
        }
    }
    let tags: Vec<&String> = tags.map(|t| t.tags.iter().collect()).unwrap_or_default();
    let fields = [
        ("id", json!(node.id)),
        ("uid", json!(node.id.to_string())),
        ("name", json!(node.name)),
        ("fqdn", json!(node.name)),
        ("user_node_name", json!(node.name)),
        ("role", json!(roles.first())),
        ("roles", json!(roles)),
        ("deployed_roles", json!(node.deployed_roles)),
        ("pending_roles", json!(node.pending_roles)),
        ("tags", json!(tags)),
        ("labels", json!(node.labels)),
        ("rack", json!(node.rack)),
        ("status", json!(node.status)),
        ("error_type", json!(node.error_type)),
        ("pending_addition", json!(node.pending_addition)),
        ("pending_deletion", json!(node.pending_deletion)),
    ];
    let mut entries: Vec<(Key, Json)> = fields
        .into_iter()
        .map(|(key, value)| (keys.key(key), Json::from_value_with(value, keys)))
        .collect();
    entries.push((keys.key("facts"), facts));
    Json::object_with(entries, keys)
}

/// An object of these fields (each converted as it is moved in, so a node's `serde_json` tree never
/// exists whole beside its compact one).
fn object<const N: usize>(fields: [(&str, Value); N], keys: &mut Keys) -> Json {
    let entries: Vec<(Key, Json)> = fields
        .into_iter()
        .map(|(key, value)| (keys.key(key), Json::from_value_with(value, keys)))
        .collect();
    Json::object_with(entries, keys)
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
/// appears once, with `role: null`), so `$.nodes.where($.role = 'compute')` reads as in Fuel. Also
/// where each node's first record is: that record is the node's own part (its `role` is the first).
fn legacy_nodes(entries: Vec<Json>) -> (Vec<Json>, Vec<usize>) {
    let mut out = Vec::with_capacity(entries.len());
    let mut first = Vec::with_capacity(entries.len());
    for entry in entries {
        let roles: Vec<Json> = entry
            .get("roles")
            .and_then(Json::as_array)
            .map(|roles| roles.iter().skip(1).cloned().collect())
            .unwrap_or_default();
        first.push(out.len());
        let others: Vec<Json> = roles
            .into_iter()
            .map(|role| with_role(&entry, role))
            .collect();
        out.push(entry);
        out.extend(others);
    }
    (out, first)
}

/// A copy of a node's record with another `role`, in its place (its keys and every other value
/// shared with the record).
fn with_role(entry: &Json, role: Json) -> Json {
    match entry.as_object().and_then(|m| m.with("role", role)) {
        Some(copy) => Json::Object(copy),
        None => entry.clone(),
    }
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
        // A `Json` is sized to its items: a copy holds no more than the original.
        let facts = nodes.iter().map(|n| n.facts.clone()).collect();
        DeployData::build_with_facts(cluster_id, cluster, release, nodes, facts, tags)
    }

    /// As [`DeployData::build`], with each node's facts given, in the order of `nodes`, and moved in:
    /// each node's facts are then held once (see [`crate::snapshot::Snapshot::take_data`]).
    pub fn build_with_facts(
        cluster_id: u64,
        cluster: &Cluster,
        release: &Release,
        nodes: &[Node],
        facts: Vec<Json>,
        tags: &ClusterTags,
    ) -> DeployData {
        // Every key is held once for the whole cluster (`Keys`), and each node's record is made
        // compact as soon as it is written.
        let mut keys = Keys::default();
        let entries: Vec<Json> = nodes
            .iter()
            .zip(
                facts
                    .into_iter()
                    .chain(std::iter::repeat_with(|| Json::Null)),
            )
            .map(|(n, facts)| node_entry(n, facts, tags.nodes.get(&n.id), &mut keys))
            .collect();
        let (listed, first) = legacy_nodes(entries);
        let mut top = json!({
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
        });
        // The two parts with an entry per node are made compact on their own and put in these
        // places (`null` until then), so the cluster's keys keep the order they always had.
        let Value::Object(top) = &mut top else {
            unreachable!("json! of an object literal is an object")
        };
        top.insert("nodes".to_string(), Value::Null);
        // Nailgun's deployment data has the cluster's attributes at the top (`$.storage`, `$.access`,
        // `$.mysql.root_password`, ...), as `merged_attrs_values` gives them: generated and editable
        // merged, each `{value: x}` read as `x`, `common` lifted, `additional_components` as
        // `{<component>: {enabled}}`; so does `$`, under the keys above. `$.settings` keeps the
        // settings as written (role restrictions read `settings:a.b.value`).
        for (k, v) in merged_values(&cluster.settings, &cluster.generated) {
            top.entry(k).or_insert(v);
        }
        // Fuel's tasks read the nodes through `network_metadata` (Nailgun's network serializer): keyed
        // by name, with `uid`, `name`, `fqdn`, `node_roles`; networks and VIPs are whatever the settings
        // give (Plinth manages no networks), empty otherwise.
        let metadata = (!top.contains_key("network_metadata")).then(|| {
            let by_name: Vec<(Key, Json)> = nodes
                .iter()
                .map(|n| {
                    let mut roles = n.roles.clone();
                    roles.extend(
                        n.pending_roles
                            .iter()
                            .filter(|r| !n.roles.contains(r))
                            .cloned(),
                    );
                    let record = object(
                        [
                            ("uid", json!(n.id.to_string())),
                            ("name", json!(n.name)),
                            ("fqdn", json!(n.name)),
                            ("node_roles", json!(roles)),
                            ("network_roles", json!({})),
                        ],
                        &mut keys,
                    );
                    (Key::from(n.name.as_str()), record)
                })
                .collect();
            Json::object([
                (keys.key("nodes"), Json::object(by_name)),
                (keys.key("vips"), Json::object([])),
            ])
        });
        if metadata.is_some() {
            top.insert("network_metadata".to_string(), Value::Null);
        }
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
        let (mut listed, mut metadata) = (Some(listed), metadata);
        let common: Vec<(Key, Json)> = std::mem::take(top)
            .into_iter()
            .map(|(k, v)| {
                let v = match k.as_str() {
                    "nodes" => listed.take().map(|l| Json::Array(l.into())),
                    "network_metadata" => metadata.take(),
                    _ => None,
                }
                .unwrap_or_else(|| Json::from_value_with(v, &mut keys));
                (keys.key(&k), v)
            })
            .collect();
        let listed_at: BTreeMap<u64, usize> = nodes.iter().map(|n| n.id).zip(first).collect();
        let common = Arc::new(Json::object(common));
        let overrides = cluster
            .replaced_deployment_info
            .iter()
            .filter_map(|(id, given)| {
                let at = *listed_at.get(id)?;
                let mut part = common
                    .get("nodes")
                    .and_then(|n| n.get(at))
                    .map(Json::to_value)
                    .and_then(|v| match v {
                        Value::Object(m) => Some(m),
                        _ => None,
                    })
                    .unwrap_or_default();
                if let Value::Object(given) = given {
                    for (k, v) in given {
                        part.insert(k.clone(), v.clone());
                    }
                }
                Some((
                    *id,
                    Arc::new(Json::from_value_with(Value::Object(part), &mut keys)),
                ))
            })
            .collect();
        DeployData {
            common,
            nodes: listed_at,
            overrides,
        }
    }

    /// The cluster part (`$common`).
    pub fn common(&self) -> &Arc<Json> {
        &self.common
    }

    /// A node's own part (with the facts uploaded for it on top), or `None` for a node outside the
    /// deployment.
    pub fn node_part(&self, node_id: u64) -> Option<&Json> {
        if let Some(replaced) = self.overrides.get(&node_id) {
            return Some(replaced);
        }
        let at = *self.nodes.get(&node_id)?;
        self.common.get("nodes")?.get(at)
    }

    /// Every node's own part.
    pub fn node_parts(&self) -> impl Iterator<Item = &Json> {
        self.nodes.keys().filter_map(|id| self.node_part(*id))
    }

    /// A node's state (sharing the cluster part, its own part read from there), or `None` for a node
    /// outside the deployment.
    pub fn state(&self, node_id: u64) -> Option<NodeState> {
        let at = self.nodes.get(&node_id)?;
        Some(NodeState {
            common: self.common.clone(),
            node: match self.overrides.get(&node_id) {
                Some(replaced) => Part::Own(replaced.clone()),
                None => Part::Listed(*at),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tags::{cluster_tags, Catalog};

    fn data(nodes: &[Node]) -> DeployData {
        let release = Release {
            name: "r".into(),
            ..Release::default()
        };
        let cluster = Cluster {
            name: "c".into(),
            release: "r".into(),
            ..Cluster::default()
        };
        let catalog = Catalog::new(&release, &[], Some(&cluster));
        DeployData::build(1, &cluster, &release, nodes, &cluster_tags(nodes, &catalog))
    }

    #[test]
    fn a_nodes_part_is_its_first_record_in_the_nodes_list_held_once() {
        let nodes = vec![
            Node::new(1, "both-1", &["controller", "compute"]),
            Node::new(2, "bare-2", &[]),
            Node::new(3, "cmp-3", &["compute"]),
        ];
        let data = data(&nodes);
        let listed = data.common()["nodes"].as_array().expect("a list");
        let roles: Vec<(Value, Value)> = listed
            .iter()
            .map(|e| (e["id"].to_value(), e["role"].to_value()))
            .collect();
        assert_eq!(
            roles,
            [
                (json!(1), json!("controller")),
                (json!(1), json!("compute")),
                (json!(2), Value::Null),
                (json!(3), json!("compute")),
            ]
        );
        for (id, at) in [(1, 0), (2, 2), (3, 3)] {
            let part = data.node_part(id).expect("a node of the deployment");
            // The same record, not an equal copy.
            assert!(std::ptr::eq(part, &listed[at]), "node {id}");
            let state = data.state(id).expect("a state");
            assert!(std::ptr::eq(state.node(), part));
            assert_eq!(state.merged()["name"], part["name"]);
        }
        assert_eq!(data.node_part(1).expect("node 1")["role"], "controller");
        assert!(data.node_part(4).is_none() && data.state(4).is_none());
        assert_eq!(data.node_parts().count(), 3);
    }

    #[test]
    fn a_state_read_back_holds_its_own_part_and_compares_by_value() {
        let nodes = vec![Node::new(1, "n-1", &["compute"])];
        let data = data(&nodes);
        let built = data.state(1).expect("a state");
        let read_back = NodeState::new(
            Arc::new(data.common().as_ref().clone()),
            Arc::new(built.node().clone()),
        );
        assert_eq!(built, read_back);
        assert_eq!(read_back.node()["uid"], "1");
    }
}
