//! Several controllers on one database: heartbeats, the sequencing lease and its fence, cancel
//! requests, and what controllers that do not sequence read to serve polls (see [`crate::ha`]).

use super::access::{args, id, sql_id, Tx};
use super::deployments::{join_row, LISTS};
use crate::store::bodies::Joiner;
use crate::store::{
    claim_outcome, ControllerBeat, ControllerRecord, Fence, LeaseRecord, Published, StoreError,
    StoreResult, SEQUENCER_LEASE,
};
use plinth_common::wire::TaskList;

/// How long a silent controller stays listed.
const FORGET_AFTER_MS: i64 = 3_600_000;

/// Records a controller's heartbeat and forgets controllers silent for an hour.
pub(crate) fn beat(t: &dyn Tx, b: &ControllerBeat) -> StoreResult<()> {
    t.exec(
        "INSERT INTO controllers (id, name, url, started_ms, seen_ms, agents) \
         VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (id) DO UPDATE SET name = $2, url = $3, started_ms = $4, seen_ms = $5, agents = $6",
        args![
            &b.id,
            &b.name,
            &b.url,
            b.started_ms,
            b.now_ms,
            sql_id(b.agents)
        ],
    )?;
    t.exec(
        "DELETE FROM controllers WHERE seen_ms < $1",
        args![b.now_ms - FORGET_AFTER_MS],
    )?;
    Ok(())
}

/// Every controller heard from in the last hour, by id.
pub(crate) fn controllers(t: &dyn Tx) -> StoreResult<Vec<ControllerRecord>> {
    t.rows(
        "SELECT id, name, url, started_ms, seen_ms, agents FROM controllers ORDER BY id",
        args![],
        |r| {
            Ok(ControllerRecord {
                id: r.string(0)?,
                name: r.string(1)?,
                url: r.string(2)?,
                started_ms: r.int(3)?,
                seen_ms: r.int(4)?,
                agents: r.id(5)?,
            })
        },
    )
}

/// The sequencing lease as stored, its rows locked until the transaction ends when `lock`.
pub(crate) fn lease(t: &dyn Tx, lock: bool) -> StoreResult<Option<LeaseRecord>> {
    let lock = if lock { t.dialect().for_update() } else { "" };
    let Some((holder, token)) = t.opt(
        &format!("SELECT holder, token FROM leases WHERE name = $1{lock}"),
        args![SEQUENCER_LEASE],
        |r| Ok((r.string(0)?, r.id(1)?)),
    )?
    else {
        return Ok(None);
    };
    let expires_ms = t
        .opt(
            &format!("SELECT expires_ms FROM lease_expiry WHERE name = $1{lock}"),
            args![SEQUENCER_LEASE],
            |r| r.int(0),
        )?
        .unwrap_or(0);
    Ok(Some(LeaseRecord {
        holder,
        token,
        expires_ms,
    }))
}

/// Claims or renews the lease (see [`crate::store::Store::claim_lease`]).
pub(crate) fn claim(
    t: &dyn Tx,
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
            args![SEQUENCER_LEASE, holder, sql_id(token)],
        )?;
    }
    t.exec(
        "INSERT INTO lease_expiry (name, expires_ms) VALUES ($1, $2) \
         ON CONFLICT (name) DO UPDATE SET expires_ms = $2",
        args![SEQUENCER_LEASE, now_ms + ttl_ms],
    )?;
    Ok(Some(token))
}

/// Gives the lease up at once, if `holder` holds it under `token`.
pub(crate) fn release(t: &dyn Tx, holder: &str, token: u64) -> StoreResult<()> {
    if lease(t, true)?.is_some_and(|l| l.holder == holder && l.token == token) {
        t.exec(
            "UPDATE lease_expiry SET expires_ms = 0 WHERE name = $1",
            args![SEQUENCER_LEASE],
        )?;
    }
    Ok(())
}

/// Refuses the step unless `fence` holds the lease now. The lease row is read so that a claim that
/// would take it over waits for this step's transaction to end (and the step, once committed,
/// happened under the lease).
pub(crate) fn check_fence(t: &dyn Tx, fence: &Fence) -> StoreResult<()> {
    let (holder, token) = t
        .opt(
            &format!(
                "SELECT holder, token FROM leases WHERE name = $1{}",
                t.dialect().for_share()
            ),
            args![SEQUENCER_LEASE],
            |r| Ok((r.string(0)?, r.id(1)?)),
        )?
        .unwrap_or_default();
    if holder != fence.holder || token != fence.token {
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

/// Running deployments someone asked to cancel, with who asked.
pub(crate) fn cancel_requests(t: &dyn Tx) -> StoreResult<Vec<(u64, String)>> {
    t.rows(
        "SELECT id, cancel_by FROM deployments WHERE status = 'running' AND cancel_by IS NOT NULL \
         ORDER BY id",
        args![],
        |r| Ok((r.id(0)?, r.string(1)?)),
    )
}

/// The ids of the running deployments.
pub(crate) fn running_ids(t: &dyn Tx) -> StoreResult<Vec<u64>> {
    t.rows(
        "SELECT id FROM deployments WHERE status = 'running' ORDER BY id",
        args![],
        |r| r.id(0),
    )
}

/// Lists of running deployments published after `revision` (see
/// [`crate::store::Store::lists_after`]).
pub(crate) fn lists_after(
    t: &dyn Tx,
    revision: u64,
    whole: &dyn Fn(u64) -> bool,
) -> StoreResult<Vec<Published>> {
    let mut out = Vec::new();
    let mut wanted: Vec<i64> = Vec::new();
    t.each(
        "SELECT l.node_id, l.revision, l.deployment_id FROM task_lists l \
         JOIN deployments d ON d.id = l.deployment_id \
         WHERE l.revision > $1 AND d.status = 'running' ORDER BY l.revision",
        args![sql_id(revision)],
        &mut |r| {
            let node_id = r.id(0)?;
            let revision = r.int(1)?;
            if whole(node_id) {
                wanted.push(revision);
            }
            out.push(Published::Noted {
                node_id,
                revision: id(revision),
                deployment_id: r.id(2)?,
            });
            Ok(())
        },
    )?;
    if !wanted.is_empty() {
        let mut joiner = Joiner::default();
        let lists = t.rows(
            &format!("{LISTS} WHERE l.revision {}", t.dialect().in_list(1)),
            args![&wanted],
            |r| join_row(&mut joiner, r),
        )?;
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
