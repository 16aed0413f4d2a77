//! What deployments are made of: releases, clusters, plugins, their graphs, and clusters'
//! strategies and deployment configurations.

use super::access::{args, sql_id, to_json, Row, Tx};
use super::nodes::query_nodes;
use crate::store::{
    ClusterData, ClusterRecord, ConfigurationRecord, GraphBody, GraphOwner, GraphRecord,
    NewCluster, NewPlugin, NewRelease, NodeRecord, PluginRecord, ReleaseRecord, StoreError,
    StoreResult, StrategyRecord,
};
use std::collections::BTreeMap;

// --- Releases ---------------------------------------------------------------------------------

/// One release; `NotFound` when there is none.
pub(crate) fn release_row(t: &dyn Tx, release_id: u64) -> StoreResult<ReleaseRecord> {
    t.opt(
        "SELECT id, name, version, data FROM releases WHERE id = $1",
        args![sql_id(release_id)],
        |r| {
            Ok(ReleaseRecord {
                id: r.id(0)?,
                name: r.string(1)?,
                version: r.string(2)?,
                data: r.json(3, "release data")?,
            })
        },
    )?
    .ok_or_else(|| StoreError::NotFound {
        kind: "release",
        id: release_id.to_string(),
    })
}

/// A conflict on insert said as `message`; other errors as they are.
fn conflict_as(e: StoreError, message: impl FnOnce() -> String) -> StoreError {
    match e {
        StoreError::Conflict(_) => StoreError::Conflict(message()),
        other => other,
    }
}

/// Creates a release with its graphs by type.
pub(crate) fn create_release(
    t: &dyn Tx,
    release: &NewRelease,
    graphs: &BTreeMap<String, GraphBody>,
) -> StoreResult<ReleaseRecord> {
    let release_id = t
        .int(
            "INSERT INTO releases (name, version, data) VALUES ($1, $2, $3) RETURNING id",
            args![&release.name, &release.version, &to_json(&release.data)],
        )
        .map_err(|e| {
            conflict_as(e, || {
                format!(
                    "release {} {} exists already",
                    release.name, release.version
                )
            })
        })?;
    let release_id = super::access::id(release_id);
    for (graph_type, graph) in graphs {
        insert_graph(t, GraphOwner::Release(release_id), graph_type, graph)?;
    }
    release_row(t, release_id)
}

/// The ids in the first column of every row a query returns.
fn ids(t: &dyn Tx, sql: &str) -> StoreResult<Vec<u64>> {
    t.rows(sql, args![], |r| r.id(0))
}

/// All releases, by id.
pub(crate) fn list_releases(t: &dyn Tx) -> StoreResult<Vec<ReleaseRecord>> {
    ids(t, "SELECT id FROM releases ORDER BY id")?
        .into_iter()
        .map(|i| release_row(t, i))
        .collect()
}

/// Replaces a release's data as `change` leaves it.
pub(crate) fn update_release_data(
    t: &dyn Tx,
    release_id: u64,
    change: &mut dyn FnMut(&mut ReleaseRecord) -> StoreResult<()>,
) -> StoreResult<ReleaseRecord> {
    let mut release = release_row(t, release_id)?;
    change(&mut release)?;
    t.exec(
        "UPDATE releases SET data = $2 WHERE id = $1",
        args![sql_id(release_id), &to_json(&release.data)],
    )?;
    release_row(t, release_id)
}

// --- Clusters ---------------------------------------------------------------------------------

/// One cluster; `NotFound` when there is none.
pub(crate) fn cluster_row(t: &dyn Tx, cluster_id: u64) -> StoreResult<ClusterRecord> {
    t.opt(
        "SELECT id, name, release_id, settings, data, generated FROM clusters WHERE id = $1",
        args![sql_id(cluster_id)],
        |r| {
            Ok(ClusterRecord {
                id: r.id(0)?,
                name: r.string(1)?,
                release_id: r.id(2)?,
                settings: r.json(3, "cluster settings")?,
                generated: r.json(5, "cluster generated attributes")?,
                data: r.json(4, "cluster data")?,
            })
        },
    )?
    .ok_or_else(|| StoreError::NotFound {
        kind: "cluster",
        id: cluster_id.to_string(),
    })
}

/// Creates a cluster of an existing release.
pub(crate) fn create_cluster(t: &dyn Tx, cluster: &NewCluster) -> StoreResult<ClusterRecord> {
    release_row(t, cluster.release_id)?;
    let cluster_id = t
        .int(
            "INSERT INTO clusters (name, release_id, settings, generated) VALUES ($1, $2, $3, $4) \
             RETURNING id",
            args![
                &cluster.name,
                sql_id(cluster.release_id),
                &to_json(&cluster.settings),
                &to_json(&cluster.generated)
            ],
        )
        .map_err(|e| conflict_as(e, || format!("cluster {:?} exists already", cluster.name)))?;
    let cluster_id = super::access::id(cluster_id);
    // Attributes made before the cluster had its id name it now (Nailgun's `{cluster.id}`).
    let mut settings = cluster.settings.clone();
    let mut generated = cluster.generated.clone();
    plinth_common::model::format_cluster_id(&mut settings, cluster_id);
    plinth_common::model::format_cluster_id(&mut generated, cluster_id);
    if settings != cluster.settings || generated != cluster.generated {
        t.exec(
            "UPDATE clusters SET settings = $2, generated = $3 WHERE id = $1",
            args![
                sql_id(cluster_id),
                &to_json(&settings),
                &to_json(&generated)
            ],
        )?;
    }
    cluster_row(t, cluster_id)
}

/// All clusters, by id.
pub(crate) fn list_clusters(t: &dyn Tx) -> StoreResult<Vec<ClusterRecord>> {
    ids(t, "SELECT id FROM clusters ORDER BY id")?
        .into_iter()
        .map(|i| cluster_row(t, i))
        .collect()
}

/// Writes a cluster's name, data (plugins, user-defined tags) and settings as `change` leaves them
/// (another cluster's name is a conflict).
pub(crate) fn modify_cluster(
    t: &dyn Tx,
    cluster_id: u64,
    change: &mut dyn FnMut(&mut ClusterRecord, &[NodeRecord]) -> StoreResult<()>,
) -> StoreResult<ClusterRecord> {
    let mut cluster = cluster_row(t, cluster_id)?;
    let nodes = query_nodes(t, "WHERE cluster_id = $1", args![sql_id(cluster_id)])?;
    change(&mut cluster, &nodes)?;
    for plugin in &cluster.data.plugins {
        plugin_row(t, *plugin)?;
    }
    t.exec(
        "UPDATE clusters SET data = $2, settings = $3, name = $4 WHERE id = $1",
        args![
            sql_id(cluster_id),
            &to_json(&cluster.data),
            &to_json(&cluster.settings),
            &cluster.name
        ],
    )
    .map_err(|e| conflict_as(e, || format!("cluster {:?} exists already", cluster.name)))?;
    cluster_row(t, cluster_id)
}

/// Sets `status` in a cluster's data.
pub(crate) fn set_cluster_status(t: &dyn Tx, cluster_id: u64, status: &str) -> StoreResult<()> {
    t.exec(
        t.dialect().set_cluster_status(),
        args![sql_id(cluster_id), status],
    )?;
    Ok(())
}

// --- Plugins ----------------------------------------------------------------------------------

/// One plugin; `NotFound` when there is none.
pub(crate) fn plugin_row(t: &dyn Tx, plugin_id: u64) -> StoreResult<PluginRecord> {
    t.opt(
        "SELECT id, name, version, data FROM plugins WHERE id = $1",
        args![sql_id(plugin_id)],
        |r| {
            Ok(PluginRecord {
                id: r.id(0)?,
                name: r.string(1)?,
                version: r.string(2)?,
                data: r.json(3, "plugin data")?,
            })
        },
    )?
    .ok_or_else(|| StoreError::NotFound {
        kind: "plugin",
        id: plugin_id.to_string(),
    })
}

/// Inserts a plugin and its graphs.
pub(crate) fn create_plugin(
    t: &dyn Tx,
    plugin: &NewPlugin,
    graphs: &BTreeMap<String, GraphBody>,
) -> StoreResult<PluginRecord> {
    let plugin_id = t
        .int(
            "INSERT INTO plugins (name, version, data) VALUES ($1, $2, $3) RETURNING id",
            args![&plugin.name, &plugin.version, &to_json(&plugin.data)],
        )
        .map_err(|e| {
            conflict_as(e, || {
                format!(
                    "plugin {} {} is registered already",
                    plugin.name, plugin.version
                )
            })
        })?;
    let plugin_id = super::access::id(plugin_id);
    for (graph_type, graph) in graphs {
        insert_graph(t, GraphOwner::Plugin(plugin_id), graph_type, graph)?;
    }
    plugin_row(t, plugin_id)
}

/// Every plugin, by id.
pub(crate) fn list_plugins(t: &dyn Tx) -> StoreResult<Vec<PluginRecord>> {
    ids(t, "SELECT id FROM plugins ORDER BY id")?
        .into_iter()
        .map(|i| plugin_row(t, i))
        .collect()
}

/// Removes a plugin no cluster has enabled, with its graphs.
pub(crate) fn delete_plugin(t: &dyn Tx, plugin_id: u64) -> StoreResult<()> {
    let plugin = plugin_row(t, plugin_id)?;
    let clusters = t.rows("SELECT id, data FROM clusters ORDER BY id", args![], |r| {
        Ok((r.id(0)?, r.json::<ClusterData>(1, "cluster data")?))
    })?;
    for (cluster_id, data) in clusters {
        if data.plugins.contains(&plugin_id) {
            return Err(StoreError::Conflict(format!(
                "plugin {} {} is enabled in cluster {cluster_id}; disable it there first",
                plugin.name, plugin.version
            )));
        }
    }
    t.exec(
        "DELETE FROM graphs WHERE owner_kind = 'plugin' AND owner_id = $1",
        args![sql_id(plugin_id)],
    )?;
    t.exec(
        "DELETE FROM plugins WHERE id = $1",
        args![sql_id(plugin_id)],
    )?;
    Ok(())
}

/// Replaces registered plugins' data and graphs with what their files say now (each `(id, plugin,
/// graphs)` keeps its id, name and version), all or none. A role the plugin no longer defines that a
/// node of a cluster with the plugin enabled holds (assigned or deployed) refuses the whole change.
pub(crate) fn replace_plugins(
    t: &dyn Tx,
    plugins: &[(u64, NewPlugin, BTreeMap<String, GraphBody>)],
) -> StoreResult<Vec<PluginRecord>> {
    let clusters = t.rows("SELECT id, data FROM clusters ORDER BY id", args![], |r| {
        Ok((r.id(0)?, r.json::<ClusterData>(1, "cluster data")?))
    })?;
    let mut out = Vec::new();
    for (plugin_id, plugin, graphs) in plugins {
        let old = plugin_row(t, *plugin_id)?;
        if old.name != plugin.name || old.version != plugin.version {
            return Err(StoreError::Conflict(format!(
                "plugin {plugin_id} is {} {}, not {} {}",
                old.name, old.version, plugin.name, plugin.version
            )));
        }
        let roles = |data: &serde_json::Value| -> Vec<String> {
            data.get("roles_metadata")
                .and_then(serde_json::Value::as_object)
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default()
        };
        let kept = roles(&plugin.data);
        let dropped: Vec<String> = roles(&old.data)
            .into_iter()
            .filter(|r| !kept.contains(r))
            .collect();
        for (cluster_id, data) in &clusters {
            if dropped.is_empty() || !data.plugins.contains(plugin_id) {
                continue;
            }
            let nodes = query_nodes(t, "WHERE cluster_id = $1", args![sql_id(*cluster_id)])?;
            for node in &nodes {
                if let Some(role) = dropped
                    .iter()
                    .find(|r| node.roles.contains(r) || node.pending_roles.contains(r))
                {
                    return Err(StoreError::Conflict(format!(
                        "plugin {} {} no longer defines role {role:?}, which node {} ({}) of cluster \
                         {cluster_id} holds",
                        plugin.name, plugin.version, node.id, node.name
                    )));
                }
            }
        }
        t.exec(
            "UPDATE plugins SET data = $2 WHERE id = $1",
            args![sql_id(*plugin_id), &to_json(&plugin.data)],
        )?;
        t.exec(
            "DELETE FROM graphs WHERE owner_kind = 'plugin' AND owner_id = $1",
            args![sql_id(*plugin_id)],
        )?;
        for (graph_type, graph) in graphs {
            insert_graph(t, GraphOwner::Plugin(*plugin_id), graph_type, graph)?;
        }
        out.push(plugin_row(t, *plugin_id)?);
    }
    Ok(out)
}

// --- Graphs -----------------------------------------------------------------------------------

/// A graph's columns as [`graph_from_row`] reads them.
const GRAPH_COLUMNS: &str = "id, owner_kind, owner_id, graph_type, name, tasks, node_filter";

fn graph_from_row(r: &dyn Row) -> StoreResult<GraphRecord> {
    let owner_id = r.id(2)?;
    let owner = match r.text(1)? {
        "release" => GraphOwner::Release(owner_id),
        "plugin" => GraphOwner::Plugin(owner_id),
        "cluster" => GraphOwner::Cluster(owner_id),
        other => return Err(StoreError::Corrupt(format!("graph owner kind {other:?}"))),
    };
    Ok(GraphRecord {
        id: r.id(0)?,
        owner,
        graph_type: r.string(3)?,
        body: GraphBody {
            name: r.opt_string(4)?,
            tasks: r.json(5, "graph tasks")?,
            node_filter: r.opt_string(6)?,
        },
    })
}

/// Fails with `NotFound` unless a graph's owner exists.
pub(crate) fn owner_exists(t: &dyn Tx, owner: GraphOwner) -> StoreResult<()> {
    match owner {
        GraphOwner::Release(r) => release_row(t, r).map(|_| ()),
        GraphOwner::Cluster(c) => cluster_row(t, c).map(|_| ()),
        GraphOwner::Plugin(p) => plugin_row(t, p).map(|_| ()),
    }
}

/// One graph of an owner.
pub(crate) fn graph_row(
    t: &dyn Tx,
    owner: GraphOwner,
    graph_type: &str,
) -> StoreResult<GraphRecord> {
    owner_exists(t, owner)?;
    t.opt(
        &format!(
            "SELECT {GRAPH_COLUMNS} FROM graphs WHERE owner_kind = $1 AND owner_id = $2 AND graph_type = $3"
        ),
        args![owner.kind(), sql_id(owner.id()), graph_type],
        graph_from_row,
    )?
    .ok_or_else(|| StoreError::NotFound {
        kind: "graph",
        id: format!("{graph_type:?} of {} {}", owner.kind(), owner.id()),
    })
}

/// Writes a graph of an owner (replacing one of the same type).
pub(crate) fn insert_graph(
    t: &dyn Tx,
    owner: GraphOwner,
    graph_type: &str,
    graph: &GraphBody,
) -> StoreResult<()> {
    t.exec(
        "INSERT INTO graphs (owner_kind, owner_id, graph_type, name, tasks, node_filter) \
         VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (owner_kind, owner_id, graph_type) DO UPDATE SET \
         name = excluded.name, tasks = excluded.tasks, node_filter = excluded.node_filter",
        args![
            owner.kind(),
            sql_id(owner.id()),
            graph_type,
            &graph.name,
            &to_json(&graph.tasks),
            &graph.node_filter
        ],
    )?;
    Ok(())
}

/// The graphs an owner has, by type.
pub(crate) fn list_graphs(t: &dyn Tx, owner: GraphOwner) -> StoreResult<Vec<GraphRecord>> {
    owner_exists(t, owner)?;
    t.rows(
        &format!(
            "SELECT {GRAPH_COLUMNS} FROM graphs WHERE owner_kind = $1 AND owner_id = $2 \
             ORDER BY graph_type {}",
            t.dialect().binary_order()
        ),
        args![owner.kind(), sql_id(owner.id())],
        graph_from_row,
    )
}

/// Creates (`replace` false: conflict if it exists) or replaces a graph.
pub(crate) fn put_graph(
    t: &dyn Tx,
    owner: GraphOwner,
    graph_type: &str,
    graph: &GraphBody,
    replace: bool,
) -> StoreResult<GraphRecord> {
    owner_exists(t, owner)?;
    let exists = graph_row(t, owner, graph_type).is_ok();
    if exists && !replace {
        return Err(StoreError::Conflict(format!(
            "{} {} has a graph of type {graph_type:?} already",
            owner.kind(),
            owner.id()
        )));
    }
    insert_graph(t, owner, graph_type, graph)?;
    graph_row(t, owner, graph_type)
}

/// Every graph of every owner, by id.
pub(crate) fn list_all_graphs(t: &dyn Tx) -> StoreResult<Vec<GraphRecord>> {
    t.rows(
        &format!("SELECT {GRAPH_COLUMNS} FROM graphs ORDER BY id"),
        args![],
        graph_from_row,
    )
}

/// One graph by its id.
pub(crate) fn graph_by_id(t: &dyn Tx, graph_id: u64) -> StoreResult<GraphRecord> {
    t.opt(
        &format!("SELECT {GRAPH_COLUMNS} FROM graphs WHERE id = $1"),
        args![sql_id(graph_id)],
        graph_from_row,
    )?
    .ok_or_else(|| StoreError::NotFound {
        kind: "graph",
        id: graph_id.to_string(),
    })
}

/// Deletes a graph.
pub(crate) fn delete_graph(t: &dyn Tx, owner: GraphOwner, graph_type: &str) -> StoreResult<()> {
    graph_row(t, owner, graph_type)?;
    t.exec(
        "DELETE FROM graphs WHERE owner_kind = $1 AND owner_id = $2 AND graph_type = $3",
        args![owner.kind(), sql_id(owner.id()), graph_type],
    )?;
    Ok(())
}

// --- Strategies and deployment configurations -------------------------------------------------

/// One strategy of a cluster.
pub(crate) fn strategy_row(t: &dyn Tx, cluster_id: u64, name: &str) -> StoreResult<StrategyRecord> {
    t.opt(
        "SELECT document, source FROM strategies WHERE cluster_id = $1 AND name = $2",
        args![sql_id(cluster_id), name],
        |r| {
            Ok(StrategyRecord {
                cluster_id,
                name: name.to_string(),
                document: r.json(0, "strategy")?,
                source: r.json(1, "strategy source")?,
            })
        },
    )?
    .ok_or_else(|| StoreError::NotFound {
        kind: "strategy",
        id: format!("{name:?} of cluster {cluster_id}"),
    })
}

/// Creates (`replace` false: conflict if it exists) or replaces a cluster's strategy.
pub(crate) fn put_strategy(
    t: &dyn Tx,
    cluster_id: u64,
    name: &str,
    document: &serde_json::Value,
    source: &serde_json::Value,
    replace: bool,
) -> StoreResult<StrategyRecord> {
    cluster_row(t, cluster_id)?;
    let exists = strategy_row(t, cluster_id, name).is_ok();
    if exists && !replace {
        return Err(StoreError::Conflict(format!(
            "cluster {cluster_id} has a strategy named {name:?} already"
        )));
    }
    t.exec(
        "INSERT INTO strategies (cluster_id, name, document, source) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (cluster_id, name) DO UPDATE SET document = excluded.document, \
         source = excluded.source",
        args![
            sql_id(cluster_id),
            name,
            &to_json(document),
            &to_json(source)
        ],
    )?;
    strategy_row(t, cluster_id, name)
}

/// A cluster's strategies, by name.
pub(crate) fn list_strategies(t: &dyn Tx, cluster_id: u64) -> StoreResult<Vec<StrategyRecord>> {
    cluster_row(t, cluster_id)?;
    let names = t.rows(
        &format!(
            "SELECT name FROM strategies WHERE cluster_id = $1 ORDER BY name {}",
            t.dialect().binary_order()
        ),
        args![sql_id(cluster_id)],
        |r| r.string(0),
    )?;
    names
        .iter()
        .map(|n| strategy_row(t, cluster_id, n))
        .collect()
}

/// Deletes a strategy.
pub(crate) fn delete_strategy(t: &dyn Tx, cluster_id: u64, name: &str) -> StoreResult<()> {
    strategy_row(t, cluster_id, name)?;
    t.exec(
        "DELETE FROM strategies WHERE cluster_id = $1 AND name = $2",
        args![sql_id(cluster_id), name],
    )?;
    Ok(())
}

/// A cluster's deployment configuration; `NotFound` when it has none.
pub(crate) fn configuration_row(t: &dyn Tx, cluster_id: u64) -> StoreResult<ConfigurationRecord> {
    t.opt(
        "SELECT name, configuration, source FROM deployment_configurations WHERE cluster_id = $1",
        args![sql_id(cluster_id)],
        |r| {
            Ok(ConfigurationRecord {
                cluster_id,
                name: r.string(0)?,
                configuration: r.json(1, "deployment configuration")?,
                source: r.json(2, "deployment configuration source")?,
            })
        },
    )?
    .ok_or_else(|| StoreError::NotFound {
        kind: "deployment configuration",
        id: format!("of cluster {cluster_id}"),
    })
}

/// Creates or replaces a cluster's deployment configuration.
pub(crate) fn put_configuration(
    t: &dyn Tx,
    record: &ConfigurationRecord,
) -> StoreResult<ConfigurationRecord> {
    cluster_row(t, record.cluster_id)?;
    t.exec(
        "INSERT INTO deployment_configurations (cluster_id, name, configuration, source) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (cluster_id) DO UPDATE SET name = excluded.name, \
         configuration = excluded.configuration, source = excluded.source",
        args![
            sql_id(record.cluster_id),
            &record.name,
            &to_json(&record.configuration),
            &to_json(&record.source)
        ],
    )?;
    configuration_row(t, record.cluster_id)
}

/// Deletes a cluster's deployment configuration.
pub(crate) fn delete_configuration(t: &dyn Tx, cluster_id: u64) -> StoreResult<()> {
    configuration_row(t, cluster_id)?;
    t.exec(
        "DELETE FROM deployment_configurations WHERE cluster_id = $1",
        args![sql_id(cluster_id)],
    )?;
    Ok(())
}
