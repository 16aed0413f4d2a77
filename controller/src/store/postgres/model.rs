//! The role and tag model's part of the PostgreSQL backend: plugins, cluster data, node model fields,
//! primaries and task states, as the SQLite backend's `model` module does them. Called from the
//! `Store` implementation in the parent module, inside its transactions.

use super::bridge::Tx;
use super::{
    cluster_row, col, from_json, id, insert_graph, one_node, release_row, sql_id, sql_ids, to_json,
};
use crate::store::{
    ClusterRecord, GraphBody, GraphOwner, NewPlugin, NodeRecord, PluginRecord, ReleaseRecord,
    StateBlob, StateRow, StoreError, StoreResult,
};
use std::collections::{BTreeMap, HashMap};

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
/// Of rows that may name a (node, task) more than once, the last of each, in the order given.
fn last_of_each(states: &[StateRow]) -> Vec<&StateRow> {
    let mut last: HashMap<(u64, &str), usize> = HashMap::with_capacity(states.len());
    for (i, (node_id, task, _)) in states.iter().enumerate() {
        last.insert((*node_id, &**task), i);
    }
    states
        .iter()
        .enumerate()
        .filter(|(i, (node_id, task, _))| last.get(&(*node_id, &**task)) == Some(i))
        .map(|(_, row)| row)
        .collect()
}

/// The most task state rows one statement writes (two in the unit tests, so the store suite's few rows
/// take several statements).
const STATE_ROWS_PER_STATEMENT: usize = if cfg!(test) { 2 } else { 16_000 };
/// The most state blobs one statement writes (far larger than a row: a node's part, or the cluster part).
const BLOBS_PER_STATEMENT: usize = if cfg!(test) { 1 } else { 2_000 };

pub(super) fn save_task_states(
    t: &Tx,
    blobs: &[StateBlob],
    states: &[StateRow],
) -> StoreResult<()> {
    // A few large statements: a deployment's last step records a state for every node and task
    // (hundreds of thousands of rows), and a statement holds its parameters encoded, so each takes a
    // bounded share.
    for chunk in blobs.chunks(BLOBS_PER_STATEMENT) {
        let hashes: Vec<&str> = chunk.iter().map(|(h, _)| h.as_str()).collect();
        let texts: Vec<&str> = chunk.iter().map(|(_, b)| b.text().unwrap_or("")).collect();
        let packed: Vec<Option<&[u8]>> = chunk.iter().map(|(_, b)| b.packed()).collect();
        t.carrying(
            texts.iter().map(|b| b.len() + 64).sum::<usize>()
                + packed.iter().flatten().map(|b| b.len()).sum::<usize>(),
        );
        t.exec(
            "INSERT INTO state_blobs (hash, body, body_gz) \
             SELECT * FROM UNNEST($1::TEXT[], $2::TEXT[], $3::BYTEA[]) \
             ON CONFLICT (hash) DO NOTHING",
            &[&hashes, &texts, &packed],
        )?;
    }
    // One statement cannot update a row twice: the last state given for a (node, task) wins, as it
    // would one statement at a time. Rows sorted by (node, task) without repeats, as a deployment's
    // end gives them, go as they are; others are first cut to the last of each (node, task), after
    // which the chunks may go in any order. (The search for repeats is a map of every row: at
    // 100,000 nodes and 20 tasks, two million entries.)
    let sorted = states
        .windows(2)
        .all(|w| (w[0].0, &*w[0].1) < (w[1].0, &*w[1].1));
    let kept: Vec<&StateRow> = if sorted {
        states.iter().collect()
    } else {
        last_of_each(states)
    };
    for chunk in kept.chunks(STATE_ROWS_PER_STATEMENT) {
        let mut nodes = Vec::with_capacity(chunk.len());
        let mut tasks = Vec::with_capacity(chunk.len());
        let mut texts = Vec::with_capacity(chunk.len());
        t.carrying(
            chunk
                .iter()
                .map(|(_, task, state)| 8 + task.len() + state.len())
                .sum(),
        );
        for (node_id, task, state) in chunk {
            nodes.push(sql_id(*node_id));
            tasks.push(&**task);
            texts.push(&**state);
        }
        t.exec(
            "INSERT INTO task_states (node_id, task_id, state) \
             SELECT * FROM UNNEST($1::BIGINT[], $2::TEXT[], $3::TEXT[]) \
             ON CONFLICT (node_id, task_id) DO UPDATE SET state = excluded.state",
            &[&nodes, &tasks, &texts],
        )?;
    }
    Ok(())
}

/// Stored blobs by hash, in the order asked (missing ones left out).
pub(super) fn state_blobs(
    t: &Tx,
    hashes: &[String],
) -> StoreResult<Vec<(String, plinth_common::json::Json)>> {
    let rows = t.query(
        "SELECT hash, body, body_gz FROM state_blobs WHERE hash = ANY($1)",
        &[&hashes],
    )?;
    let mut found: HashMap<String, (String, Option<Vec<u8>>)> = HashMap::with_capacity(rows.len());
    for row in rows {
        found.insert(
            col(&row, 0, "state blob")?,
            (col(&row, 1, "state blob")?, col(&row, 2, "state blob")?),
        );
    }
    let mut out = Vec::with_capacity(found.len());
    let mut keys = plinth_common::json::Keys::default();
    for hash in hashes {
        if let Some((text, packed)) = found.remove(hash) {
            out.push((
                hash.clone(),
                crate::store::compressed::stored_tree(packed, &text, "state blob", &mut keys)?,
            ));
        }
    }
    Ok(out)
}

/// The recorded task states of these nodes: node by node as asked, each node's by task id.
pub(super) fn task_states(
    t: &Tx,
    node_ids: &[u64],
) -> StoreResult<Vec<(u64, String, serde_json::Value)>> {
    let ids = sql_ids(node_ids);
    let rows = t.query(
        "SELECT node_id, task_id, state FROM task_states WHERE node_id = ANY($1) \
         ORDER BY node_id, task_id COLLATE \"C\"",
        &[&ids],
    )?;
    let mut by_node: HashMap<u64, Vec<(String, String)>> = HashMap::new();
    for row in &rows {
        by_node
            .entry(id(col(row, 0, "task state")?))
            .or_default()
            .push((col(row, 1, "task state")?, col(row, 2, "task state")?));
    }
    let mut out = Vec::with_capacity(rows.len());
    for node_id in node_ids {
        for (task, state) in by_node.get(node_id).into_iter().flatten() {
            out.push((*node_id, task.clone(), from_json(state, "task state")?));
        }
    }
    Ok(out)
}
