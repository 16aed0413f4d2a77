//! A cluster's end of life as Nailgun's environments have it: reset (its nodes back to pending, what
//! their tasks last ran against forgotten) and delete (the cluster and everything it owns, its nodes
//! kept, unassigned). Both refused while a deployment of the cluster runs; each in one transaction.

use super::access::{args, sql_id, sql_ids, Tx};
use super::catalog::{cluster_row, set_cluster_status};
use super::nodes::{modify_node, query_nodes};
use crate::store::{StoreError, StoreResult};

fn refuse_running(t: &dyn Tx, cluster_id: u64, what: &str) -> StoreResult<()> {
    let running = t.opt(
        "SELECT id FROM deployments WHERE cluster_id = $1 AND status = 'running'",
        args![sql_id(cluster_id)],
        |r| r.int(0),
    )?;
    match running {
        Some(dep) => Err(StoreError::Conflict(format!(
            "cluster {cluster_id} has a running deployment ({dep}): stop it before the {what}"
        ))),
        None => Ok(()),
    }
}

fn forget_states(t: &dyn Tx, node_ids: &[u64]) -> StoreResult<()> {
    if node_ids.is_empty() {
        return Ok(());
    }
    t.exec(
        &format!(
            "DELETE FROM task_states WHERE node_id {}",
            t.dialect().in_list(1)
        ),
        args![&sql_ids(node_ids)],
    )?;
    Ok(())
}

/// Resets a cluster: every node's roles become pending again (with those already pending), its
/// status `discover`, its error cleared, what its tasks last ran against forgotten (the next
/// deployment runs every task, as on new nodes); the cluster's status `new`. Returns the nodes.
pub(crate) fn reset_cluster(t: &dyn Tx, cluster_id: u64) -> StoreResult<Vec<u64>> {
    cluster_row(t, cluster_id)?;
    refuse_running(t, cluster_id, "reset")?;
    let nodes = query_nodes(t, "WHERE cluster_id = $1", args![sql_id(cluster_id)])?;
    let ids: Vec<u64> = nodes.iter().map(|n| n.id).collect();
    for id in &ids {
        modify_node(t, *id, &mut |node| {
            let mut pending = std::mem::take(&mut node.roles);
            for role in &node.pending_roles {
                if !pending.contains(role) {
                    pending.push(role.clone());
                }
            }
            node.pending_roles = pending;
            node.model.clear_error();
            Ok(())
        })?;
        t.exec(
            "UPDATE nodes SET status = 'discover' WHERE id = $1",
            args![sql_id(*id)],
        )?;
    }
    forget_states(t, &ids)?;
    set_cluster_status(t, cluster_id, "new")?;
    Ok(ids)
}

/// Deletes a cluster and what it owns (its graphs, strategies, deployment configuration, its
/// deployments with their lists, events and results); its nodes stay, unassigned and `discover`,
/// what their tasks last ran against forgotten. Returns the nodes it had.
pub(crate) fn delete_cluster(t: &dyn Tx, cluster_id: u64) -> StoreResult<Vec<u64>> {
    cluster_row(t, cluster_id)?;
    refuse_running(t, cluster_id, "deletion")?;
    let nodes = query_nodes(t, "WHERE cluster_id = $1", args![sql_id(cluster_id)])?;
    let ids: Vec<u64> = nodes.iter().map(|n| n.id).collect();
    t.exec(
        "UPDATE nodes SET cluster_id = NULL, pending_roles = '[]', roles = '[]', \
         status = 'discover', model = '{}' WHERE cluster_id = $1",
        args![sql_id(cluster_id)],
    )?;
    forget_states(t, &ids)?;
    let id = sql_id(cluster_id);
    for sql in [
        "DELETE FROM task_lists WHERE deployment_id IN (SELECT id FROM deployments WHERE cluster_id = $1)",
        "DELETE FROM events WHERE deployment_id IN (SELECT id FROM deployments WHERE cluster_id = $1)",
        "DELETE FROM results WHERE deployment_id IN (SELECT id FROM deployments WHERE cluster_id = $1)",
        "DELETE FROM refusals WHERE deployment_id IN (SELECT id FROM deployments WHERE cluster_id = $1)",
        "DELETE FROM deployments WHERE cluster_id = $1",
        "DELETE FROM strategies WHERE cluster_id = $1",
        "DELETE FROM deployment_configurations WHERE cluster_id = $1",
        "DELETE FROM graphs WHERE owner_kind = 'cluster' AND owner_id = $1",
        "DELETE FROM clusters WHERE id = $1",
    ] {
        t.exec(sql, args![id])?;
    }
    Ok(ids)
}
