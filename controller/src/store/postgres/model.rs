//! The role and tag model's part of the PostgreSQL backend: plugins, cluster data, node model fields,
//! primaries and task states, as the SQLite backend's `model` module does them. Called from the
//! `Store` implementation in the parent module, inside its transactions.

use super::bridge::Tx;
use super::{
    cluster_row, col, from_json, id, insert_graph, one_node, release_row, sql_id, to_json,
};
use crate::store::{
    ClusterRecord, GraphBody, GraphOwner, NewPlugin, NodeRecord, PluginRecord, ReleaseRecord,
    StoreError, StoreResult,
};
use std::collections::BTreeMap;

/// Writes a node's roles, pending roles and model fields as `change` leaves them.
pub(super) fn modify_node(
    t: &Tx,
    node_id: u64,
    change: &mut dyn FnMut(&mut NodeRecord) -> StoreResult<()>,
) -> StoreResult<NodeRecord> {
    let mut node = one_node(t, node_id)?;
    change(&mut node)?;
    t.exec(
        "UPDATE nodes SET roles = $2, pending_roles = $3, model = $4 WHERE id = $1",
        &[
            &sql_id(node_id),
            &to_json(&node.roles),
            &to_json(&node.pending_roles),
            &to_json(&node.model),
        ],
    )?;
    one_node(t, node_id)
}

/// Sets each listed node's `primary_tags`.
pub(super) fn save_primaries(t: &Tx, primaries: &[(u64, Vec<String>)]) -> StoreResult<()> {
    for (node_id, tags) in primaries {
        modify_node(t, *node_id, &mut |n| {
            n.model.primary_tags = tags.clone();
            Ok(())
        })?;
    }
    Ok(())
}

/// Replaces a release's data as `change` leaves it.
pub(super) fn update_release_data(
    t: &Tx,
    release_id: u64,
    change: &mut dyn FnMut(&mut ReleaseRecord) -> StoreResult<()>,
) -> StoreResult<ReleaseRecord> {
    let mut release = release_row(t, release_id)?;
    change(&mut release)?;
    t.exec(
        "UPDATE releases SET data = $2 WHERE id = $1",
        &[&sql_id(release_id), &to_json(&release.data)],
    )?;
    release_row(t, release_id)
}

/// Writes a cluster's data (plugins, user-defined tags) as `change` leaves it.
pub(super) fn modify_cluster(
    t: &Tx,
    cluster_id: u64,
    change: &mut dyn FnMut(&mut ClusterRecord, &[NodeRecord]) -> StoreResult<()>,
) -> StoreResult<ClusterRecord> {
    let mut cluster = cluster_row(t, cluster_id)?;
    let nodes = super::query_nodes(t, "WHERE cluster_id = $1", &[&sql_id(cluster_id)])?;
    change(&mut cluster, &nodes)?;
    for plugin in &cluster.data.plugins {
        plugin_row(t, *plugin)?;
    }
    t.exec(
        "UPDATE clusters SET data = $2, settings = $3 WHERE id = $1",
        &[
            &sql_id(cluster_id),
            &to_json(&cluster.data),
            &to_json(&cluster.settings),
        ],
    )?;
    cluster_row(t, cluster_id)
}

/// Inserts a plugin and its graphs.
pub(super) fn create_plugin(
    t: &Tx,
    plugin: &NewPlugin,
    graphs: &BTreeMap<String, GraphBody>,
) -> StoreResult<PluginRecord> {
    let row = t
        .one(
            "INSERT INTO plugins (name, version, data) VALUES ($1, $2, $3) RETURNING id",
            &[&plugin.name, &plugin.version, &to_json(&plugin.data)],
        )
        .map_err(|e| match e {
            StoreError::Conflict(_) => StoreError::Conflict(format!(
                "plugin {} {} is registered already",
                plugin.name, plugin.version
            )),
            other => other,
        })?;
    let plugin_id = id(col(&row, 0, "plugin id")?);
    for (graph_type, graph) in graphs {
        insert_graph(t, GraphOwner::Plugin(plugin_id), graph_type, graph)?;
    }
    plugin_row(t, plugin_id)
}

/// Every plugin, by id.
pub(super) fn list_plugins(t: &Tx) -> StoreResult<Vec<PluginRecord>> {
    t.query("SELECT id FROM plugins ORDER BY id", &[])?
        .iter()
        .map(|r| plugin_row(t, id(col(r, 0, "plugin id")?)))
        .collect()
}

/// Removes a plugin no cluster has enabled, with its graphs.
pub(super) fn delete_plugin(t: &Tx, plugin_id: u64) -> StoreResult<()> {
    let plugin = plugin_row(t, plugin_id)?;
    for row in t.query("SELECT id, data FROM clusters ORDER BY id", &[])? {
        let cluster_id: i64 = col(&row, 0, "cluster id")?;
        let data: crate::store::ClusterData =
            from_json(col(&row, 1, "cluster data")?, "cluster data")?;
        if data.plugins.contains(&plugin_id) {
            return Err(StoreError::Conflict(format!(
                "plugin {} {} is enabled in cluster {cluster_id}; disable it there first",
                plugin.name, plugin.version
            )));
        }
    }
    t.exec(
        "DELETE FROM graphs WHERE owner_kind = 'plugin' AND owner_id = $1",
        &[&sql_id(plugin_id)],
    )?;
    t.exec("DELETE FROM plugins WHERE id = $1", &[&sql_id(plugin_id)])?;
    Ok(())
}

/// One plugin.
pub(super) fn plugin_row(t: &Tx, plugin_id: u64) -> StoreResult<PluginRecord> {
    let row = t
        .opt(
            "SELECT id, name, version, data FROM plugins WHERE id = $1",
            &[&sql_id(plugin_id)],
        )?
        .ok_or_else(|| StoreError::NotFound {
            kind: "plugin",
            id: plugin_id.to_string(),
        })?;
    let w = "plugin";
    Ok(PluginRecord {
        id: id(col(&row, 0, w)?),
        name: col(&row, 1, w)?,
        version: col(&row, 2, w)?,
        data: from_json(col(&row, 3, w)?, "plugin data")?,
    })
}

/// Records task states (one row per node and task, replaced) and the blobs they name.
pub(super) fn save_task_states(
    t: &Tx,
    blobs: &[(String, serde_json::Value)],
    states: &[(u64, String, serde_json::Value)],
) -> StoreResult<()> {
    for (hash, body) in blobs {
        t.exec(
            "INSERT INTO state_blobs (hash, body) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING",
            &[hash, &to_json(body)],
        )?;
    }
    for (node_id, task, state) in states {
        t.exec(
            "INSERT INTO task_states (node_id, task_id, state) VALUES ($1, $2, $3) \
             ON CONFLICT (node_id, task_id) DO UPDATE SET state = excluded.state",
            &[&sql_id(*node_id), task, &to_json(state)],
        )?;
    }
    Ok(())
}

/// Stored blobs by hash.
pub(super) fn state_blobs(
    t: &Tx,
    hashes: &[String],
) -> StoreResult<Vec<(String, serde_json::Value)>> {
    let mut out = Vec::new();
    for hash in hashes {
        if let Some(row) = t.opt("SELECT body FROM state_blobs WHERE hash = $1", &[hash])? {
            out.push((
                hash.clone(),
                from_json(col(&row, 0, "state blob")?, "state blob")?,
            ));
        }
    }
    Ok(out)
}

/// The recorded task states of these nodes.
pub(super) fn task_states(
    t: &Tx,
    node_ids: &[u64],
) -> StoreResult<Vec<(u64, String, serde_json::Value)>> {
    let mut out = Vec::new();
    for node_id in node_ids {
        for row in t.query(
            "SELECT task_id, state FROM task_states WHERE node_id = $1 ORDER BY task_id COLLATE \"C\"",
            &[&sql_id(*node_id)],
        )? {
            let task: String = col(&row, 0, "task state")?;
            out.push((*node_id, task, from_json(col(&row, 1, "task state")?, "task state")?));
        }
    }
    Ok(out)
}
