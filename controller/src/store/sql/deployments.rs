//! Deployments: their records, the lists they publish (each with a revision from one counter), the
//! events they append, their steps and their end.

use super::access::{args, sql_id, to_json, Arg, Row, Rows, Tx};
use super::catalog::{cluster_row, set_cluster_status};
use super::controllers::check_fence;
use super::nodes::{nodes_by_id, save_primaries, set_deploying, NODES_PER_STATEMENT};
use crate::clock::now_ms;
use crate::store::bodies::{self, Joiner};
use crate::store::compressed::{columns, stored_json};
use crate::store::{
    CompressedJson, DeploymentRecord, DeploymentStatus, Ending, Fence, NewDeployment, NodesEnded,
    Progress, StoreError, StoreResult,
};
use plinth_api::records::NodeStatus;
use plinth_common::wire::{DeploymentEvent, TaskList};
use std::collections::HashMap;

/// A deployment's columns as [`deployment_from_row`] reads them: its orchestration state is `state_gz`
/// (compressed) where it was written so, else the text in `state`.
const DEPLOYMENT_COLUMNS: &str =
    "id, cluster_id, graph_type, status, node_ids, options, state, created_at, finished_at, state_gz";

/// [`DEPLOYMENT_COLUMNS`] with the orchestration state left out (read as JSON `null`), for lists:
/// the state places every node in the strategy, megabytes for a large fleet.
fn list_columns(t: &dyn Tx) -> String {
    format!(
        "id, cluster_id, graph_type, status, node_ids, options, 'null', created_at, finished_at, {}",
        t.dialect().null_bytes()
    )
}

/// Which columns of a deployment are read.
#[derive(Clone, Copy)]
pub(crate) enum Columns {
    /// All, with its orchestration state.
    Whole,
    /// All but its orchestration state.
    WithoutState,
}

fn deployment_from_row(r: &dyn Row) -> StoreResult<DeploymentRecord> {
    let status = r.text(3)?;
    Ok(DeploymentRecord {
        id: r.id(0)?,
        cluster_id: r.id(1)?,
        graph_type: r.string(2)?,
        status: DeploymentStatus::parse(status)
            .ok_or_else(|| StoreError::Corrupt(format!("deployment status {status:?}")))?,
        node_ids: r.json(4, "deployment node_ids")?,
        options: r.json(5, "deployment options")?,
        state: stored_json(r.opt_bytes(9)?, r.text(6)?, "deployment state")?,
        created_at_ms: r.int(7)?,
        finished_at_ms: r.opt_int(8)?,
    })
}

/// The deployments `where_clause` selects, newest first.
pub(crate) fn query_deployments(
    t: &dyn Tx,
    columns: Columns,
    where_clause: &str,
    args: &[Arg<'_>],
) -> StoreResult<Vec<DeploymentRecord>> {
    let columns = match columns {
        Columns::Whole => DEPLOYMENT_COLUMNS.to_string(),
        Columns::WithoutState => list_columns(t),
    };
    t.rows(
        &format!("SELECT {columns} FROM deployments {where_clause} ORDER BY id DESC"),
        args,
        deployment_from_row,
    )
}

/// One deployment; `NotFound` when there is none.
pub(crate) fn deployment_by_id(
    t: &dyn Tx,
    columns: Columns,
    dep_id: u64,
) -> StoreResult<DeploymentRecord> {
    query_deployments(t, columns, "WHERE id = $1", args![sql_id(dep_id)])?
        .pop()
        .ok_or_else(|| StoreError::NotFound {
            kind: "deployment",
            id: dep_id.to_string(),
        })
}

/// What a deployment was resolved from.
pub(crate) fn deployment_inputs(t: &dyn Tx, dep_id: u64) -> StoreResult<serde_json::Value> {
    t.opt(
        "SELECT inputs, inputs_gz FROM deployments WHERE id = $1",
        args![sql_id(dep_id)],
        |r| stored_json(r.opt_bytes(1)?, r.text(0)?, "deployment inputs"),
    )?
    .ok_or_else(|| StoreError::NotFound {
        kind: "deployment",
        id: dep_id.to_string(),
    })
}

/// Starts a deployment, refused while its cluster has a running one.
pub(crate) fn create_deployment(t: &dyn Tx, new: &NewDeployment) -> StoreResult<DeploymentRecord> {
    cluster_row(t, new.cluster_id)?;
    let running = t.opt(
        "SELECT id FROM deployments WHERE cluster_id = $1 AND status = 'running'",
        args![sql_id(new.cluster_id)],
        |r| r.int(0),
    )?;
    if let Some(running) = running {
        return Err(StoreError::Conflict(format!(
            "cluster {} has a running deployment ({running})",
            new.cluster_id
        )));
    }
    save_primaries(t, &new.primaries)?;
    t.carrying(new.inputs.as_bytes().len() + new.state.as_bytes().len() + 8 * new.node_ids.len());
    let dep_id = t.int(
        "INSERT INTO deployments (cluster_id, graph_type, status, node_ids, options, state, created_at, \
         inputs_gz, state_gz) VALUES ($1, $2, 'running', $3, $4, '', $5, $6, $7) RETURNING id",
        args![
            sql_id(new.cluster_id),
            &new.graph_type,
            &to_json(&new.node_ids),
            &to_json(&new.options),
            new.now_ms,
            new.inputs.as_bytes(),
            new.state.as_bytes()
        ],
    )?;
    if new.deploys {
        set_cluster_status(t, new.cluster_id, "deployment")?;
        set_deploying(t, &new.node_ids)?;
    }
    // Its state is the one just written: not read back.
    deployment_by_id(t, Columns::WithoutState, super::access::id(dep_id))
}

/// Inserts lists, each with the next revision of the controller-wide counter.
pub(crate) fn insert_lists(
    t: &dyn Tx,
    deployment_id: u64,
    lists: &mut [TaskList],
) -> StoreResult<()> {
    if lists.is_empty() {
        return Ok(());
    }
    let d = t.dialect();
    // The lists' revisions in one step of the counter: the next `n`, in the lists' order.
    let n = i64::try_from(lists.len()).unwrap_or(i64::MAX);
    let last = t.int(
        "UPDATE counters SET value = value + $1 WHERE name = 'revision' RETURNING value",
        args![n],
    )?;
    let mut nodes: Vec<i64> = Vec::with_capacity(lists.len());
    for (i, list) in lists.iter_mut().enumerate() {
        let revision = last - n + 1 + i64::try_from(i).unwrap_or(0);
        list.revision = super::access::id(revision);
        nodes.push(sql_id(list.node_id));
    }
    nodes.sort_unstable();
    nodes.dedup();
    // Every node must exist; its revision is its latest list's, so nothing of its row is written.
    let known = t.int(
        &format!("SELECT count(*) FROM nodes WHERE id {}", d.in_list(1)),
        args![&nodes],
    )?;
    if known != i64::try_from(nodes.len()).unwrap_or(i64::MAX) {
        let known: std::collections::HashSet<i64> = t
            .rows(
                &format!("SELECT id FROM nodes WHERE id {}", d.in_list(1)),
                args![&nodes],
                |r| r.int(0),
            )?
            .into_iter()
            .collect();
        let missing = nodes
            .iter()
            .find(|n| !known.contains(n))
            .copied()
            .unwrap_or(0);
        return Err(StoreError::NotFound {
            kind: "node",
            id: missing.to_string(),
        });
    }
    let split = bodies::split(lists);
    t.carrying(
        split
            .bodies
            .iter()
            .map(|(h, b)| h.len() + b.len())
            .sum::<usize>()
            + split
                .headers
                .iter()
                .zip(&split.hashes)
                .map(|(h, x)| h.len() + x.len() + 16)
                .sum::<usize>(),
    );
    let (hashes, texts): (Vec<&str>, Vec<&str>) = split
        .bodies
        .iter()
        .map(|(h, b)| (h.as_str(), b.as_str()))
        .unzip();
    d.insert_rows(
        t,
        &Rows {
            table: "task_bodies",
            columns: &[("hash", Arg::Texts(&hashes)), ("tasks", Arg::Texts(&texts))],
            filter: "",
            tail: "ON CONFLICT (hash) DO NOTHING",
            set: "",
        },
    )?;
    let (list_nodes, list_revisions): (Vec<i64>, Vec<i64>) = lists
        .iter()
        .map(|l| (sql_id(l.node_id), sql_id(l.revision)))
        .unzip();
    let deployments = vec![sql_id(deployment_id); lists.len()];
    d.insert_rows(
        t,
        &Rows {
            table: "task_lists",
            columns: &[
                ("deployment_id", Arg::Ints(&deployments)),
                ("node_id", Arg::Ints(&list_nodes)),
                ("revision", Arg::Ints(&list_revisions)),
                ("list", Arg::Strings(&split.headers)),
                ("tasks_hash", Arg::Strings(&split.hashes)),
            ],
            filter: "",
            tail: "",
            set: "",
        },
    )
}

/// Writes a deployment's orchestration state (compressed; `None` writes `null`) and status.
pub(crate) fn set_state(
    t: &dyn Tx,
    dep_id: u64,
    state: Option<&CompressedJson>,
    status: DeploymentStatus,
) -> StoreResult<()> {
    let finished = (status != DeploymentStatus::Running).then(now_ms);
    let (text, packed) = columns(state);
    t.carrying(packed.map_or(0, <[u8]>::len));
    let changed = t.exec(
        "UPDATE deployments SET state = $2, state_gz = $3, status = $4, \
         finished_at = COALESCE(finished_at, $5) WHERE id = $1",
        args![sql_id(dep_id), text, packed, status.as_str(), finished],
    )?;
    if changed == 0 {
        return Err(StoreError::NotFound {
            kind: "deployment",
            id: dep_id.to_string(),
        });
    }
    Ok(())
}

/// Appends events to a deployment's stream, in the order given.
pub(crate) fn append_events(
    t: &dyn Tx,
    dep_id: u64,
    events: &[DeploymentEvent],
) -> StoreResult<()> {
    if events.is_empty() {
        return Ok(());
    }
    let texts: Vec<String> = events.iter().map(to_json).collect();
    t.carrying(texts.iter().map(String::len).sum());
    let deployments = vec![sql_id(dep_id); texts.len()];
    t.dialect().insert_rows(
        t,
        &Rows {
            table: "events",
            columns: &[
                ("deployment_id", Arg::Ints(&deployments)),
                ("event", Arg::Strings(&texts)),
            ],
            filter: "",
            tail: "",
            set: "",
        },
    )
}

/// Ends a deployment (see [`crate::store::Store::finish_deployment`]).
pub(crate) fn finish(
    t: &dyn Tx,
    dep_id: u64,
    state: Option<&CompressedJson>,
    events: &[DeploymentEvent],
    end: &Ending<'_>,
) -> StoreResult<()> {
    set_state(t, dep_id, state, end.status)?;
    // A cancelled deployment, and a custom graph (seed 002), leave the cluster's status as it was.
    let cluster_status = match end.status {
        DeploymentStatus::Success => Some("operational"),
        DeploymentStatus::SuccessWithFailures => Some("partially_deployed"),
        DeploymentStatus::Failed | DeploymentStatus::Running => Some("error"),
        DeploymentStatus::Cancelled => None,
    };
    if let Some(cluster_status) = cluster_status.filter(|_| end.deploys) {
        let cluster = t.int(
            "SELECT cluster_id FROM deployments WHERE id = $1",
            args![sql_id(dep_id)],
        )?;
        set_cluster_status(t, super::access::id(cluster), cluster_status)?;
    }
    append_events(t, dep_id, events)?;
    // Only a deployment that deploys moves pending roles and marks nodes ready.
    let untouched: Vec<u64> = if end.deploys {
        end.untouched.to_vec()
    } else {
        [end.succeeded, end.untouched].concat()
    };
    end_nodes(
        t,
        dep_id,
        &NodesEnded {
            succeeded: end.succeeded,
            failed: end.failed,
            deploys: end.deploys,
        },
    )?;
    restore_untouched(t, &untouched)
}

/// Ends nodes whose outcome in deployment `dep_id` is final: those that succeeded (in a deployment that
/// deploys) become ready with their pending roles deployed, those that failed are in error with why.
/// Run as each node's outcome becomes final and again at the deployment's end (the same outcome, the
/// same record).
pub(crate) fn end_nodes(t: &dyn Tx, dep_id: u64, ended: &NodesEnded<'_>) -> StoreResult<()> {
    let succeeded: &[u64] = if ended.deploys { ended.succeeded } else { &[] };
    let d = t.dialect();
    // A statement per chunk of nodes: a deployment ends for thousands of nodes at once, and each
    // node's whole record is read to change it, so a chunk bounds what is held at once.
    for chunk in succeeded.chunks(NODES_PER_STATEMENT) {
        let (mut ids, mut roles, mut models) = (Vec::new(), Vec::new(), Vec::new());
        for node in nodes_by_id(t, chunk)? {
            // A node the deployment provisioned has its system, not yet its roles: it stays
            // `provisioned` with its roles pending, for the deployment that deploys them.
            if node.status == NodeStatus::Provisioned {
                continue;
            }
            let mut all = node.roles.clone();
            for role in &node.pending_roles {
                if !all.contains(role) {
                    all.push(role.clone());
                }
            }
            let mut fields = node.model;
            fields.pending_addition = false;
            fields.clear_error();
            ids.push(sql_id(node.id));
            roles.push(to_json(&all));
            models.push(to_json(&fields));
        }
        d.update_rows(
            t,
            &Rows {
                table: "nodes",
                columns: &[
                    ("id", Arg::Ints(&ids)),
                    ("roles", Arg::Strings(&roles)),
                    ("model", Arg::Strings(&models)),
                ],
                filter: "",
                tail: "",
                set: "status = 'ready', pending_roles = '[]'",
            },
        )?;
    }
    for chunk in ended.failed.chunks(NODES_PER_STATEMENT) {
        let reasons: HashMap<u64, &str> = chunk.iter().map(|(n, r)| (*n, r.as_str())).collect();
        let ids: Vec<u64> = chunk.iter().map(|(n, _)| *n).collect();
        let (ids, models): (Vec<i64>, Vec<String>) = nodes_by_id(t, &ids)?
            .into_iter()
            .map(|node| {
                let mut fields = node.model;
                fields.set_error(
                    "deploy",
                    reasons
                        .get(&node.id)
                        .filter(|r| !r.is_empty())
                        .map(|r| r.to_string()),
                    dep_id,
                );
                (sql_id(node.id), to_json(&fields))
            })
            .unzip();
        d.update_rows(
            t,
            &Rows {
                table: "nodes",
                columns: &[("id", Arg::Ints(&ids)), ("model", Arg::Strings(&models))],
                filter: "",
                tail: "",
                set: "status = 'error'",
            },
        )?;
    }
    Ok(())
}

/// Nodes a deployment left untouched (not started, cut short, or selected by no group) go back to
/// the status they had before it: in error for an earlier failure, provisioned, ready once deployed,
/// else discovered.
fn restore_untouched(t: &dyn Tx, untouched: &[u64]) -> StoreResult<()> {
    for chunk in untouched.chunks(NODES_PER_STATEMENT) {
        let (ids, statuses): (Vec<i64>, Vec<String>) = nodes_by_id(t, chunk)?
            .into_iter()
            .filter(|node| node.status == NodeStatus::Deploying)
            .map(|node| {
                let before = if node.model.error_type.is_some() {
                    "error"
                } else if !node.model.pending_addition {
                    "ready"
                } else if node.model.provisioned.is_some() {
                    "provisioned"
                } else {
                    "discover"
                };
                (sql_id(node.id), before.to_string())
            })
            .unzip();
        t.dialect().update_rows(
            t,
            &Rows {
                table: "nodes",
                columns: &[("id", Arg::Ints(&ids)), ("status", Arg::Strings(&statuses))],
                filter: "",
                tail: "",
                set: "",
            },
        )?;
    }
    Ok(())
}

/// Records one step of a running deployment (see [`crate::store::Store::record_progress`]); with a
/// `fence`, refused unless it still holds the sequencing lease.
pub(crate) fn record_progress(
    t: &dyn Tx,
    dep_id: u64,
    p: &mut Progress<'_>,
    fence: Option<&Fence>,
) -> StoreResult<()> {
    let status = t
        .opt(
            &format!(
                "SELECT status FROM deployments WHERE id = $1{}",
                t.dialect().for_update()
            ),
            args![sql_id(dep_id)],
            |r| r.string(0),
        )?
        .ok_or_else(|| StoreError::NotFound {
            kind: "deployment",
            id: dep_id.to_string(),
        })?;
    if status != DeploymentStatus::Running.as_str() {
        return Err(StoreError::Conflict(format!(
            "deployment {dep_id} is not running (it is {status})"
        )));
    }
    insert_lists(t, dep_id, p.lists)?;
    if !p.task_rows.is_empty() {
        super::states::save_task_states(t, &[], p.task_rows)?;
    }
    if !p.nodes_ended.succeeded.is_empty() || !p.nodes_ended.failed.is_empty() {
        end_nodes(t, dep_id, &p.nodes_ended)?;
    }
    match p.end {
        Some(end) => finish(t, dep_id, p.state, p.events, &end)?,
        None => {
            if p.state.is_some() {
                set_state(t, dep_id, p.state, DeploymentStatus::Running)?;
            }
            append_events(t, dep_id, p.events)?;
        }
    }
    // Checked last, so the lease row is locked only while this step commits (a claim to take the
    // lease waits for that, never for the whole step).
    if let Some(fence) = fence {
        check_fence(t, fence)?;
    }
    Ok(())
}

/// A deployment's events after sequence number `after`, oldest first.
pub(crate) fn events(
    t: &dyn Tx,
    deployment_id: u64,
    after: u64,
) -> StoreResult<Vec<(u64, DeploymentEvent)>> {
    t.rows(
        "SELECT seq, event FROM events WHERE deployment_id = $1 AND seq > $2 ORDER BY seq",
        args![sql_id(deployment_id), sql_id(after)],
        |r| Ok((r.id(0)?, r.json(1, "event")?)),
    )
}

/// Task lists' rows with their tasks (`l` the list, `b` its tasks' body; see `store::bodies`).
pub(crate) const LISTS: &str = "SELECT l.list, l.tasks_hash, b.tasks FROM task_lists l \
     LEFT JOIN task_bodies b ON b.hash = l.tasks_hash";

/// A list from a row of [`LISTS`].
pub(crate) fn join_row(joiner: &mut Joiner, r: &dyn Row) -> StoreResult<TaskList> {
    joiner.join(r.text(0)?, r.opt_text(1)?, r.opt_text(2)?)
}

/// The list issued to a node with a revision, if any.
pub(crate) fn issued_list(
    t: &dyn Tx,
    node_id: u64,
    revision: u64,
) -> StoreResult<Option<TaskList>> {
    let mut joiner = Joiner::default();
    t.opt(
        &format!("{LISTS} WHERE l.node_id = $1 AND l.revision = $2"),
        args![sql_id(node_id), sql_id(revision)],
        |r| join_row(&mut joiner, r),
    )
}

/// Every list published for a deployment, by node and then revision.
pub(crate) fn published_lists(t: &dyn Tx, deployment_id: u64) -> StoreResult<Vec<TaskList>> {
    let mut joiner = Joiner::default();
    t.rows(
        &format!("{LISTS} WHERE l.deployment_id = $1 ORDER BY l.node_id, l.revision"),
        args![sql_id(deployment_id)],
        |r| join_row(&mut joiner, r),
    )
}

/// Asks for a running deployment to be cancelled by `by`.
pub(crate) fn request_cancel(t: &dyn Tx, dep_id: u64, by: &str) -> StoreResult<DeploymentRecord> {
    let changed = t.exec(
        "UPDATE deployments SET cancel_by = $2 WHERE id = $1 AND status = 'running'",
        args![sql_id(dep_id), by],
    )?;
    let dep = deployment_by_id(t, Columns::Whole, dep_id)?;
    if changed == 0 {
        return Err(StoreError::Conflict(format!(
            "deployment {dep_id} is not running (it is {})",
            dep.status.as_str()
        )));
    }
    Ok(dep)
}
