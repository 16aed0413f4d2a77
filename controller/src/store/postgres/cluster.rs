//! Several controllers on one PostgreSQL database: heartbeats, the sequencing lease and its fence,
//! cancel requests, and what followers read to serve polls (see [`crate::cluster`]).

use super::bridge::Tx;
use super::{col, from_json, id, sql_id, sql_ids};
use crate::store::bodies::Joiner;
use crate::store::{
    claim_outcome, ControllerBeat, ControllerRecord, Fence, LeaseRecord, Published, StoreError,
    StoreResult, SEQUENCER_LEASE,
};
use plinth_common::wire::{TaskList, TaskResult};
use tokio_postgres::Row;

/// How long a silent controller stays listed.
const FORGET_AFTER_MS: i64 = 3_600_000;

pub(super) fn beat(t: &Tx, b: &ControllerBeat) -> StoreResult<()> {
    t.exec(
        "INSERT INTO controllers (id, name, url, started_ms, seen_ms, agents) \
         VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (id) DO UPDATE SET name = $2, url = $3, started_ms = $4, seen_ms = $5, agents = $6",
        &[
            &b.id,
            &b.name,
            &b.url,
            &b.started_ms,
            &b.now_ms,
            &sql_id(b.agents),
        ],
    )?;
    t.exec(
        "DELETE FROM controllers WHERE seen_ms < $1",
        &[&(b.now_ms - FORGET_AFTER_MS)],
    )?;
    Ok(())
}

pub(super) fn controllers(t: &Tx) -> StoreResult<Vec<ControllerRecord>> {
    let w = "controller";
    t.query(
        "SELECT id, name, url, started_ms, seen_ms, agents FROM controllers ORDER BY id",
        &[],
    )?
    .iter()
    .map(|r| {
        Ok(ControllerRecord {
            id: col(r, 0, w)?,
            name: col(r, 1, w)?,
            url: col(r, 2, w)?,
            started_ms: col(r, 3, w)?,
            seen_ms: col(r, 4, w)?,
            agents: id(col(r, 5, w)?),
        })
    })
    .collect()
}

pub(super) fn lease(t: &Tx, lock: bool) -> StoreResult<Option<LeaseRecord>> {
    let w = "lease";
    let lock = if lock { " FOR UPDATE" } else { "" };
    let Some(held) = t.opt(
        &format!("SELECT holder, token FROM leases WHERE name = $1{lock}"),
        &[&SEQUENCER_LEASE],
    )?
    else {
        return Ok(None);
    };
    let expires_ms: i64 = match t.opt(
        &format!("SELECT expires_ms FROM lease_expiry WHERE name = $1{lock}"),
        &[&SEQUENCER_LEASE],
    )? {
        Some(r) => col(&r, 0, w)?,
        None => 0,
    };
    Ok(Some(LeaseRecord {
        holder: col(&held, 0, w)?,
        token: id(col(&held, 1, w)?),
        expires_ms,
    }))
}

pub(super) fn claim(
    t: &Tx,
    holder: &str,
    held: Option<u64>,
    now_ms: i64,
    ttl_ms: i64,
) -> StoreResult<Option<u64>> {
    let current = lease(t, true)?;
    let Some(token) = claim_outcome(current.as_ref(), holder, held, now_ms) else {
        return Ok(None);
    };
    // Who holds it is written only when that changes: steps checking it conflict with a takeover,
    // never with a renewal.
    if current.as_ref().map(|l| (l.holder.as_str(), l.token)) != Some((holder, token)) {
        t.exec(
            "INSERT INTO leases (name, holder, token) VALUES ($1, $2, $3) \
             ON CONFLICT (name) DO UPDATE SET holder = $2, token = $3",
            &[&SEQUENCER_LEASE, &holder, &sql_id(token)],
        )?;
    }
    t.exec(
        "INSERT INTO lease_expiry (name, expires_ms) VALUES ($1, $2) \
         ON CONFLICT (name) DO UPDATE SET expires_ms = $2",
        &[&SEQUENCER_LEASE, &(now_ms + ttl_ms)],
    )?;
    Ok(Some(token))
}

pub(super) fn release(t: &Tx, holder: &str, token: u64) -> StoreResult<()> {
    if lease(t, true)?.is_some_and(|l| l.holder == holder && l.token == token) {
        t.exec(
            "UPDATE lease_expiry SET expires_ms = 0 WHERE name = $1",
            &[&SEQUENCER_LEASE],
        )?;
    }
    Ok(())
}

/// Refuses the step unless `fence` holds the lease now. The lease row is read with `FOR SHARE`, so a
/// claim that would take it over waits for this step's transaction to end (and the step, once
/// committed, happened under the lease).
pub(super) fn check_fence(t: &Tx, fence: &Fence) -> StoreResult<()> {
    let row = t.opt(
        "SELECT holder, token FROM leases WHERE name = $1 FOR SHARE",
        &[&SEQUENCER_LEASE],
    )?;
    let (holder, token): (String, i64) = match &row {
        Some(r) => (col(r, 0, "lease")?, col(r, 1, "lease")?),
        None => (String::new(), 0),
    };
    if holder != fence.holder || id(token) != fence.token {
        return Err(StoreError::Fenced(format!(
            "the sequencing lease passed from controller {} (token {}) to {} (token {token}): \
             this controller no longer sequences deployments",
            fence.holder,
            fence.token,
            if holder.is_empty() { "nobody" } else { &holder }
        )));
    }
    Ok(())
}

pub(super) fn cancel_requests(t: &Tx) -> StoreResult<Vec<(u64, String)>> {
    t.query(
        "SELECT id, cancel_by FROM deployments WHERE status = 'running' AND cancel_by IS NOT NULL \
         ORDER BY id",
        &[],
    )?
    .iter()
    .map(|r| Ok((id(col(r, 0, "deployment")?), col(r, 1, "deployment")?)))
    .collect()
}

pub(super) fn running_ids(t: &Tx) -> StoreResult<Vec<u64>> {
    t.query(
        "SELECT id FROM deployments WHERE status = 'running' ORDER BY id",
        &[],
    )?
    .iter()
    .map(|r| Ok(id(col(r, 0, "deployment")?)))
    .collect()
}

/// Task lists' rows with their tasks (`l` the list, `b` its tasks' body; see `store::bodies`).
pub(super) const LISTS: &str = "SELECT l.list, l.tasks_hash, b.tasks FROM task_lists l \
     LEFT JOIN task_bodies b ON b.hash = l.tasks_hash";

/// A list from a row of [`LISTS`].
pub(super) fn join_row(joiner: &mut Joiner, r: &Row) -> StoreResult<TaskList> {
    let header: &str = col(r, 0, "task list")?;
    let hash: Option<&str> = col(r, 1, "task list")?;
    let body: Option<&str> = col(r, 2, "task list")?;
    joiner.join(header, hash, body)
}

pub(super) fn lists_after(
    t: &Tx,
    revision: u64,
    whole: &dyn Fn(u64) -> bool,
) -> StoreResult<Vec<Published>> {
    let rows = t.query(
        "SELECT l.node_id, l.revision, l.deployment_id FROM task_lists l \
         JOIN deployments d ON d.id = l.deployment_id \
         WHERE l.revision > $1 AND d.status = 'running' ORDER BY l.revision",
        &[&sql_id(revision)],
    )?;
    let mut out = Vec::with_capacity(rows.len());
    let mut wanted: Vec<i64> = Vec::new();
    for r in &rows {
        let node_id = id(col(r, 0, "task list")?);
        let revision: i64 = col(r, 1, "task list")?;
        if whole(node_id) {
            wanted.push(revision);
        }
        out.push(Published::Noted {
            node_id,
            revision: id(revision),
            deployment_id: id(col(r, 2, "task list")?),
        });
    }
    if !wanted.is_empty() {
        let mut joiner = Joiner::default();
        let lists = t
            .query(&format!("{LISTS} WHERE l.revision = ANY($1)"), &[&wanted])?
            .iter()
            .map(|r| join_row(&mut joiner, r))
            .collect::<StoreResult<Vec<_>>>()?;
        fill(&mut out, lists);
    }
    Ok(out)
}

/// Puts the lists read whole in the places their revisions are noted at (revisions are unique: they
/// come from one counter).
fn fill(published: &mut [Published], lists: Vec<TaskList>) {
    let mut by_revision: std::collections::HashMap<u64, TaskList> =
        lists.into_iter().map(|l| (l.revision, l)).collect();
    for p in published.iter_mut() {
        if let Some(list) = by_revision.remove(&p.revision()) {
            *p = Published::List(list);
        }
    }
}

pub(super) fn results_of_nodes(
    t: &Tx,
    deployment: u64,
    nodes: &[u64],
) -> StoreResult<Vec<(u64, Vec<TaskResult>)>> {
    let ids = sql_ids(nodes);
    let rows = t.query(
        "SELECT node_id, result FROM results WHERE deployment_id = $1 AND node_id = ANY($2) \
         ORDER BY node_id, seq",
        &[&sql_id(deployment), &ids],
    )?;
    let mut out: Vec<(u64, Vec<TaskResult>)> = Vec::new();
    for r in &rows {
        let node = id(col(r, 0, "task result")?);
        let result: TaskResult = from_json(col(r, 1, "task result")?, "task result")?;
        match out.last_mut() {
            Some((n, rs)) if *n == node => rs.push(result),
            _ => out.push((node, vec![result])),
        }
    }
    Ok(out)
}
