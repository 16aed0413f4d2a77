//! The role and tag model's part of the SQLite backend: plugins, cluster data, node model fields,
//! primaries and task states. Called from the `Store` implementation in the parent module, inside its
//! transactions.

use super::{cluster_row, from_json, id, insert_graph, one_node, release_row, sql_id, to_json};
use crate::store::{
    ClusterRecord, GraphBody, GraphOwner, NewPlugin, NodeRecord, PluginRecord, ReleaseRecord,
    StateBlob, StateRow, StoreError, StoreResult,
};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::BTreeMap;

/// Writes a node's roles, pending roles and model fields as `change` leaves them.
pub(super) fn modify_node(
    tx: &Connection,
    node_id: u64,
    change: &mut dyn FnMut(&mut NodeRecord) -> StoreResult<()>,
) -> StoreResult<NodeRecord> {
    let mut node = one_node(tx, node_id)?;
    change(&mut node)?;
    tx.execute(
        "UPDATE nodes SET roles = ?2, pending_roles = ?3, model = ?4 WHERE id = ?1",
        params![
            sql_id(node_id),
            to_json(&node.roles),
            to_json(&node.pending_roles),
            to_json(&node.model)
        ],
    )?;
    one_node(tx, node_id)
}

/// Sets each listed node's `primary_tags`.
pub(super) fn save_primaries(tx: &Connection, primaries: &[(u64, Vec<String>)]) -> StoreResult<()> {
    for (node_id, tags) in primaries {
        modify_node(tx, *node_id, &mut |n| {
            n.model.primary_tags = tags.clone();
            Ok(())
        })?;
    }
    Ok(())
}

/// Replaces a release's data as `change` leaves it.
pub(super) fn update_release_data(
    tx: &Connection,
    release_id: u64,
    change: &mut dyn FnMut(&mut ReleaseRecord) -> StoreResult<()>,
) -> StoreResult<ReleaseRecord> {
    let mut release = release_row(tx, release_id)?;
    change(&mut release)?;
    tx.execute(
        "UPDATE releases SET data = ?2 WHERE id = ?1",
        params![sql_id(release_id), to_json(&release.data)],
    )?;
    release_row(tx, release_id)
}

/// Writes a cluster's data (plugins, user-defined tags) as `change` leaves it.
pub(super) fn modify_cluster(
    tx: &Connection,
    cluster_id: u64,
    change: &mut dyn FnMut(&mut ClusterRecord, &[NodeRecord]) -> StoreResult<()>,
) -> StoreResult<ClusterRecord> {
    let mut cluster = cluster_row(tx, cluster_id)?;
    let nodes = super::query_nodes(tx, "WHERE cluster_id = ?1", &[&sql_id(cluster_id)])?;
    change(&mut cluster, &nodes)?;
    for plugin in &cluster.data.plugins {
        plugin_row(tx, *plugin)?;
    }
    tx.execute(
        "UPDATE clusters SET data = ?2, settings = ?3 WHERE id = ?1",
        params![
            sql_id(cluster_id),
            to_json(&cluster.data),
            to_json(&cluster.settings)
        ],
    )?;
    cluster_row(tx, cluster_id)
}

/// Inserts a plugin and its graphs.
pub(super) fn create_plugin(
    tx: &Connection,
    plugin: &NewPlugin,
    graphs: &BTreeMap<String, GraphBody>,
) -> StoreResult<PluginRecord> {
    tx.execute(
        "INSERT INTO plugins (name, version, data) VALUES (?1, ?2, ?3)",
        params![plugin.name, plugin.version, to_json(&plugin.data)],
    )
    .map_err(|e| match StoreError::from(e) {
        StoreError::Conflict(_) => StoreError::Conflict(format!(
            "plugin {} {} is registered already",
            plugin.name, plugin.version
        )),
        other => other,
    })?;
    let plugin_id = id(tx.last_insert_rowid());
    for (graph_type, graph) in graphs {
        insert_graph(tx, GraphOwner::Plugin(plugin_id), graph_type, graph)?;
    }
    plugin_row(tx, plugin_id)
}

/// Every plugin, by id.
pub(super) fn list_plugins(tx: &Connection) -> StoreResult<Vec<PluginRecord>> {
    let ids: Vec<i64> = tx
        .prepare("SELECT id FROM plugins ORDER BY id")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    ids.into_iter().map(|i| plugin_row(tx, id(i))).collect()
}

/// Removes a plugin no cluster has enabled, with its graphs.
pub(super) fn delete_plugin(tx: &Connection, plugin_id: u64) -> StoreResult<()> {
    let plugin = plugin_row(tx, plugin_id)?;
    let clusters: Vec<(i64, String)> = tx
        .prepare("SELECT id, data FROM clusters ORDER BY id")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    for (cluster_id, data) in clusters {
        let data: crate::store::ClusterData = from_json(&data, "cluster data")?;
        if data.plugins.contains(&plugin_id) {
            return Err(StoreError::Conflict(format!(
                "plugin {} {} is enabled in cluster {cluster_id}; disable it there first",
                plugin.name, plugin.version
            )));
        }
    }
    tx.execute(
        "DELETE FROM graphs WHERE owner_kind = 'plugin' AND owner_id = ?1",
        [sql_id(plugin_id)],
    )?;
    tx.execute("DELETE FROM plugins WHERE id = ?1", [sql_id(plugin_id)])?;
    Ok(())
}

/// One plugin.
pub(super) fn plugin_row(tx: &Connection, plugin_id: u64) -> StoreResult<PluginRecord> {
    let row = tx
        .query_row(
            "SELECT id, name, version, data FROM plugins WHERE id = ?1",
            [sql_id(plugin_id)],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            },
        )
        .optional()?
        .ok_or_else(|| StoreError::NotFound {
            kind: "plugin",
            id: plugin_id.to_string(),
        })?;
    Ok(PluginRecord {
        id: id(row.0),
        name: row.1,
        version: row.2,
        data: from_json(&row.3, "plugin data")?,
    })
}

/// Records task states (one row per node and task, replaced) and the blobs they name.
pub(super) fn save_task_states(
    tx: &Connection,
    blobs: &[StateBlob],
    states: &[StateRow],
) -> StoreResult<()> {
    let mut put = tx.prepare_cached(
        "INSERT INTO state_blobs (hash, body, body_gz) VALUES (?1, ?2, ?3) ON CONFLICT (hash) DO NOTHING",
    )?;
    for (hash, body) in blobs {
        put.execute(params![hash, body.text().unwrap_or(""), body.packed()])?;
    }
    let mut stmt = tx.prepare_cached(
        "INSERT INTO task_states (node_id, task_id, state) VALUES (?1, ?2, ?3) \
         ON CONFLICT (node_id, task_id) DO UPDATE SET state = excluded.state",
    )?;
    for (node_id, task, state) in states {
        stmt.execute(params![sql_id(*node_id), &**task, &**state])?;
    }
    Ok(())
}

/// Stored blobs by hash.
pub(super) fn state_blobs(
    tx: &Connection,
    hashes: &[String],
) -> StoreResult<Vec<(String, plinth_common::json::Json)>> {
    let mut stmt = tx.prepare_cached("SELECT body, body_gz FROM state_blobs WHERE hash = ?1")?;
    let mut out = Vec::new();
    let mut keys = plinth_common::json::Keys::default();
    for hash in hashes {
        let found: Option<(String, Option<Vec<u8>>)> = stmt
            .query_row([hash], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        if let Some((text, packed)) = found {
            out.push((
                hash.clone(),
                crate::store::compressed::stored_tree(packed, &text, "state blob", &mut keys)?,
            ));
        }
    }
    Ok(out)
}

/// The recorded task states of these nodes.
pub(super) fn task_states(
    tx: &Connection,
    node_ids: &[u64],
) -> StoreResult<Vec<(u64, String, serde_json::Value)>> {
    let mut stmt = tx.prepare_cached(
        "SELECT task_id, state FROM task_states WHERE node_id = ?1 ORDER BY task_id",
    )?;
    let mut out = Vec::new();
    for node_id in node_ids {
        let rows: Vec<(String, String)> = stmt
            .query_map([sql_id(*node_id)], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        for (task, state) in rows {
            out.push((*node_id, task, from_json(&state, "task state")?));
        }
    }
    Ok(out)
}
