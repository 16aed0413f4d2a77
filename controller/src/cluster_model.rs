//! The stored records of a cluster turned into `plinth_common::model` values and a
//! [`Snapshot`](plinth_common::snapshot::Snapshot), so that the controller resolves, checks and elects
//! with the same functions `plinthctl` runs offline.

use crate::store::{
    ClusterRecord, GraphBody, GraphOwner, NodeRecord, NodeStatus as StoredStatus, PluginRecord,
    ReleaseRecord, Store, StoreError,
};
use plinth_common::json::Json;
use plinth_common::model::{
    Cluster, Graph, Node, NodeStatus, Plugin, Release, Task, DEFAULT_GRAPH_TYPE,
};
use plinth_common::snapshot::{Expressions, Snapshot};
use plinth_common::tags::Catalog;
use serde_json::Value;

/// Why stored records do not make a model (a stored document that no longer parses, a missing record).
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The store failed or a record is missing.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A stored document does not parse as the model expects.
    #[error("{what}: {message}")]
    Invalid {
        /// Which document (release, plugin, graph and task).
        what: String,
        /// What is wrong.
        message: String,
    },
}

/// A cluster as stored beside the [`Snapshot`] resolution reads: the records (for what only they
/// hold: ids, names, admission) and the model values made from them, read in one transaction.
#[derive(Debug, Clone)]
pub struct ClusterModel {
    /// The cluster as stored.
    pub record: ClusterRecord,
    /// The release as stored.
    pub release_record: ReleaseRecord,
    /// The enabled plugins as stored, in enabling order.
    pub plugin_records: Vec<PluginRecord>,
    /// The nodes as stored, by id, without their facts (the snapshot's nodes have them).
    pub node_records: Vec<NodeRecord>,
    /// The release, plugins, cluster, graphs and nodes as the model sees them (no node named, not
    /// forced).
    pub snapshot: Snapshot,
}

impl ClusterModel {
    /// Loads a cluster, its release, enabled plugins and nodes, and the graphs of `graph_types` of all
    /// three classes; with `old_states`, what its nodes' tasks last ran against too. One read
    /// transaction ([`Store::cluster_snapshot`]).
    pub fn read(
        store: &dyn Store,
        cluster_id: u64,
        graph_types: &[&str],
        old_states: bool,
    ) -> Result<ClusterModel, ModelError> {
        let records = store.cluster_snapshot(cluster_id, graph_types, old_states)?;
        let mut release = release_model(&records.release)?;
        let mut plugins = Vec::with_capacity(records.plugins.len());
        for p in &records.plugins {
            plugins.push(plugin_model(p)?);
        }
        let mut cluster = cluster_model(&records.cluster, &release, &plugins)?;
        for g in &records.graphs {
            let what = format!("{} {}", g.owner.kind(), g.owner.id());
            let graph = graph_model(&what, &g.graph_type, &g.body)?;
            let into = match g.owner {
                GraphOwner::Release(_) => &mut release.graphs,
                GraphOwner::Cluster(_) => &mut cluster.graphs,
                GraphOwner::Plugin(id) => match records.plugins.iter().position(|p| p.id == id) {
                    Some(i) => &mut plugins[i].graphs,
                    None => continue,
                },
            };
            into.insert(g.graph_type.clone(), graph);
        }
        // Each node's facts move into its model as the store read them: a compact `Json`, keys shared
        // by the whole cluster (never a `serde_json` tree: at 100,000 real servers those were the
        // start's largest part).
        let node_records = records.nodes;
        let nodes = node_records
            .iter()
            .zip(
                records
                    .node_facts
                    .into_iter()
                    .chain(std::iter::repeat(Json::Null)),
            )
            .map(|(record, facts)| Node {
                facts,
                ..node_fields(record)
            })
            .collect();
        Ok(ClusterModel {
            snapshot: Snapshot {
                cluster_id: records.cluster.id,
                release,
                plugins,
                cluster,
                nodes,
                named: None,
                forced: false,
                old: records.old_states,
            },
            record: records.cluster,
            release_record: records.release,
            plugin_records: records.plugins,
            node_records,
        })
    }

    /// [`ClusterModel::read`] without old states.
    pub fn load(
        store: &dyn Store,
        cluster_id: u64,
        graph_types: &[&str],
    ) -> Result<ClusterModel, ModelError> {
        Self::read(store, cluster_id, graph_types, false)
    }

    /// A YAQL evaluator over this cluster's data, with `old` as the tasks' last states.
    pub fn evaluator(
        &self,
        exprs: &Expressions,
        old: plinth_common::deploy::OldStates,
        forced: bool,
    ) -> plinth_common::deploy::YaqlFields {
        let catalog = self.catalog();
        plinth_common::deploy::YaqlFields::new(
            exprs.engine.clone(),
            exprs.cache.clone(),
            self.snapshot.data(&catalog),
            old,
            forced,
        )
    }

    /// The roles and tags this cluster knows.
    pub fn catalog(&self) -> Catalog {
        self.snapshot.catalog()
    }
}

/// The release of a stored record (graphs not loaded).
pub fn release_model(record: &ReleaseRecord) -> Result<Release, ModelError> {
    let mut value = record.data.clone();
    if let Value::Object(map) = &mut value {
        map.insert("name".into(), Value::String(record.name.clone()));
        map.insert("version".into(), Value::String(record.version.clone()));
        map.remove("graphs");
    }
    serde_json::from_value(value).map_err(|e| ModelError::Invalid {
        what: format!("release {} {}", record.name, record.version),
        message: e.to_string(),
    })
}

/// The attributes a new cluster of `release` starts with, as Nailgun makes them: the release's
/// `attributes_metadata` with its generators run (random bytes from the operating system), `given`
/// settings merged over the editable defaults. `master_ip` is the controller's address as nodes reach it.
pub fn starting_attributes(
    release: &Release,
    given: &Value,
    master_ip: &str,
) -> Result<plinth_common::model::ClusterAttributes, ModelError> {
    let mut random = |buf: &mut [u8]| {
        // The operating system's generator does not fail on Linux once booted; should it, the bytes
        // stay zero and the passwords weak, so say so loudly.
        if let Err(e) = getrandom::fill(buf) {
            tracing::error!(error = %e, "no random bytes for generated cluster attributes");
        }
    };
    let mut site = plinth_common::model::AttributeSite {
        master_ip: master_ip.to_string(),
        dns_upstream: vec![master_ip.to_string()],
        ntp_upstream: vec![master_ip.to_string()],
        cluster_id: None,
        release_version: release.version.clone().unwrap_or_default(),
        random: &mut random,
    };
    plinth_common::model::new_cluster_attributes(&release.attributes_metadata, given, &mut site)
        .map_err(|e| ModelError::Invalid {
            what: format!("release {} attributes_metadata", release.name),
            message: e.to_string(),
        })
}

/// The plugin of a stored record (graphs not loaded).
pub fn plugin_model(record: &PluginRecord) -> Result<Plugin, ModelError> {
    let mut value = record.data.clone();
    if let Value::Object(map) = &mut value {
        map.insert("name".into(), Value::String(record.name.clone()));
        map.insert("version".into(), Value::String(record.version.clone()));
        map.remove("graphs");
    }
    serde_json::from_value(value).map_err(|e| ModelError::Invalid {
        what: format!("plugin {} {}", record.name, record.version),
        message: e.to_string(),
    })
}

/// The roles and tags a cluster knows (from its release, its enabled plugins and itself), read without
/// its nodes: what checking an assignment needs, at any size of cluster.
pub fn catalog_of(store: &dyn Store, cluster_id: u64) -> Result<Catalog, ModelError> {
    let record = store.get_cluster(cluster_id)?;
    let release = release_model(&store.get_release(record.release_id)?)?;
    let mut plugins = Vec::with_capacity(record.data.plugins.len());
    for id in &record.data.plugins {
        plugins.push(plugin_model(&store.get_plugin(*id)?)?);
    }
    let cluster = cluster_model(&record, &release, &plugins)?;
    let plugins: Vec<&Plugin> = plugins.iter().collect();
    Ok(Catalog::new(&release, &plugins, Some(&cluster)))
}

/// The cluster of a stored record (graphs not loaded).
pub fn cluster_model(
    record: &ClusterRecord,
    release: &Release,
    plugins: &[Plugin],
) -> Result<Cluster, ModelError> {
    let tags_metadata = serde_json::from_value(Value::Object(record.data.tags_metadata.clone()))
        .map_err(|e| ModelError::Invalid {
            what: format!("cluster {} tags_metadata", record.name),
            message: e.to_string(),
        })?;
    let roles_metadata = serde_json::from_value(Value::Object(record.data.roles_metadata.clone()))
        .map_err(|e| ModelError::Invalid {
            what: format!("cluster {} roles_metadata", record.name),
            message: e.to_string(),
        })?;
    let mut replaced_deployment_info = std::collections::BTreeMap::new();
    for (uid, facts) in &record.data.replaced_deployment_info {
        let id = uid.parse::<u64>().map_err(|_| ModelError::Invalid {
            what: format!("cluster {} replaced_deployment_info", record.name),
            message: format!("{uid:?} is not a node id"),
        })?;
        replaced_deployment_info.insert(id, facts.clone());
    }
    let replaced_provisioning_info = serde_json::from_value(Value::Object(
        record.data.replaced_provisioning_info.clone(),
    ))
    .map_err(|e| ModelError::Invalid {
        what: format!("cluster {} replaced_provisioning_info", record.name),
        message: e.to_string(),
    })?;
    Ok(Cluster {
        name: record.name.clone(),
        roles_metadata,
        replaced_deployment_info,
        replaced_provisioning_info,
        release: release.name.clone(),
        plugins: plugins.iter().map(|p| p.name.clone()).collect(),
        settings: record.settings.clone(),
        generated: record.generated.clone(),
        tags_metadata,
        status: match record.data.status {
            crate::store::ClusterStatus::New => plinth_common::model::ClusterStatus::New,
            crate::store::ClusterStatus::Deployment => {
                plinth_common::model::ClusterStatus::Deployment
            }
            crate::store::ClusterStatus::Operational => {
                plinth_common::model::ClusterStatus::Operational
            }
            crate::store::ClusterStatus::PartiallyDeployed => {
                plinth_common::model::ClusterStatus::PartiallyDeployed
            }
            crate::store::ClusterStatus::Error => plinth_common::model::ClusterStatus::Error,
        },
        ..Cluster::default()
    })
}

/// A stored node as the model sees it. Tags the agent reported count as the operator's additions.
pub fn node_model(record: &NodeRecord) -> Node {
    Node {
        facts: Json::from(&record.facts),
        ..node_fields(record)
    }
}

/// [`node_model`] without the facts.
fn node_fields(record: &NodeRecord) -> Node {
    let mut tags_added = record.tags.clone();
    for tag in &record.model.tags_added {
        if !tags_added.contains(tag) {
            tags_added.push(tag.clone());
        }
    }
    Node {
        id: record.id,
        name: record.name.clone(),
        roles: record.roles.clone(),
        pending_roles: record.pending_roles.clone(),
        deployed_roles: record.roles.clone(),
        tags_added,
        tags_removed: record.model.tags_removed.clone(),
        primary_tags: record.model.primary_tags.clone(),
        labels: record
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        rack: record.rack.clone(),
        status: match record.status {
            StoredStatus::Discover => NodeStatus::Discover,
            StoredStatus::Deploying => NodeStatus::Deploying,
            StoredStatus::Provisioning => NodeStatus::Provisioning,
            StoredStatus::Provisioned => NodeStatus::Provisioned,
            StoredStatus::Ready => NodeStatus::Ready,
            StoredStatus::Error => NodeStatus::Error,
        },
        error_type: record.model.error_type.clone(),
        pending_addition: record.model.pending_addition,
        pending_deletion: record.model.pending_deletion,
        facts: Json::Null,
    }
}

/// A stored graph as the model sees it; a task that does not parse is named with its position.
pub fn graph_model(owner: &str, graph_type: &str, body: &GraphBody) -> Result<Graph, ModelError> {
    let mut tasks = Vec::with_capacity(body.tasks.len());
    for (index, task) in body.tasks.iter().enumerate() {
        let parsed: Task = serde_json::from_value(task.clone()).map_err(|e| {
            let id = task.get("id").and_then(Value::as_str).unwrap_or("?");
            ModelError::Invalid {
                what: format!("{owner}, graph {graph_type:?}, task {index} ({id})"),
                message: e.to_string(),
            }
        })?;
        tasks.push(parsed);
    }
    Ok(Graph {
        name: body.name.clone(),
        tasks,
        node_filter: body.node_filter.clone(),
        ..Graph::default()
    })
}

/// The graph type used when a request names none.
pub fn graph_type_or_default(graph_type: Option<&str>) -> &str {
    graph_type.unwrap_or(DEFAULT_GRAPH_TYPE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::SqliteStore;
    use crate::store::{NewCluster, NewPlugin, NewRelease};
    use serde_json::json;
    use std::collections::BTreeMap;

    /// The catalog read without the cluster's nodes is the one the whole model gives: the release's
    /// roles and tags, an enabled plugin's, and the cluster's own.
    #[test]
    fn the_catalog_without_nodes_is_the_models() {
        let s = SqliteStore::in_memory().unwrap();
        let release = s
            .create_release(
                &NewRelease {
                    name: "r".into(),
                    version: "1".into(),
                    data: json!({
                        "roles_metadata": {
                            "controller": {"name": "Controller", "tags": ["controller", "rabbitmq"],
                                "restrictions": [{"condition": "settings:a.b.value == true",
                                                  "message": "no"}]},
                            "compute": {"name": "Compute", "conflicts": ["controller"]}
                        },
                        "tags_metadata": {
                            "controller": {"has_primary": true},
                            "rabbitmq": {"has_primary": true}
                        }
                    }),
                },
                &BTreeMap::new(),
            )
            .unwrap();
        let plugin = s
            .create_plugin(
                &NewPlugin {
                    name: "zabbix".into(),
                    version: "1.0".into(),
                    data: json!({"roles_metadata": {"zabbix-server": {"name": "Zabbix"}},
                                 "tags_metadata": {"zabbix-server": {"has_primary": false}}}),
                },
                &BTreeMap::new(),
            )
            .unwrap();
        let cluster = s
            .create_cluster(&NewCluster {
                name: "c".into(),
                release_id: release.id,
                settings: json!({}),
                generated: Value::Null,
            })
            .unwrap();
        s.modify_cluster(cluster.id, &mut |c, _| {
            c.data.plugins.push(plugin.id);
            c.data
                .tags_metadata
                .insert("rack-a".into(), json!({"has_primary": false}));
            Ok(())
        })
        .unwrap();
        let whole = ClusterModel::load(&s, cluster.id, &[]).unwrap().catalog();
        let catalog = catalog_of(&s, cluster.id).unwrap();
        assert_eq!(catalog, whole);
        assert!(catalog.role("zabbix-server").is_some(), "the plugin's role");
        assert!(catalog.role("controller").is_some_and(|r| r
            .meta
            .restrictions
            .iter()
            .any(|x| x.blocks_assignment())));
    }
}
