//! The several-controller records in the embedded database. One controller uses an SQLite file, so
//! these keep its heartbeat and answer `cluster-status` the same way PostgreSQL does; the lease is
//! there for the suite that holds both backends to one behaviour.

use super::{from_json, id, sql_id};
use crate::store::bodies::Joiner;
use crate::store::{
    claim_outcome, ControllerBeat, ControllerRecord, LeaseRecord, Published, StoreResult,
    SEQUENCER_LEASE,
};
use plinth_common::wire::{TaskList, TaskResult};
use rusqlite::{params, Connection, OptionalExtension};

/// How long a silent controller stays listed.
const FORGET_AFTER_MS: i64 = 3_600_000;

pub(super) fn beat(tx: &Connection, b: &ControllerBeat) -> StoreResult<()> {
    tx.execute(
        "INSERT INTO controllers (id, name, url, started_ms, seen_ms, agents) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
         ON CONFLICT (id) DO UPDATE SET name = ?2, url = ?3, started_ms = ?4, seen_ms = ?5, agents = ?6",
        params![b.id, b.name, b.url, b.started_ms, b.now_ms, sql_id(b.agents)],
    )?;
    tx.execute(
        "DELETE FROM controllers WHERE seen_ms < ?1",
        [b.now_ms - FORGET_AFTER_MS],
    )?;
    Ok(())
}

pub(super) fn controllers(tx: &Connection) -> StoreResult<Vec<ControllerRecord>> {
    let mut stmt = tx.prepare_cached(
        "SELECT id, name, url, started_ms, seen_ms, agents FROM controllers ORDER BY id",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(ControllerRecord {
            id: r.get(0)?,
            name: r.get(1)?,
            url: r.get(2)?,
            started_ms: r.get(3)?,
            seen_ms: r.get(4)?,
            agents: id(r.get(5)?),
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub(super) fn lease(tx: &Connection) -> StoreResult<Option<LeaseRecord>> {
    Ok(tx
        .query_row(
            "SELECT l.holder, l.token, COALESCE(e.expires_ms, 0) FROM leases l \
             LEFT JOIN lease_expiry e ON e.name = l.name WHERE l.name = ?1",
            [SEQUENCER_LEASE],
            |r| {
                Ok(LeaseRecord {
                    holder: r.get(0)?,
                    token: id(r.get(1)?),
                    expires_ms: r.get(2)?,
                })
            },
        )
        .optional()?)
}

pub(super) fn claim(
    tx: &Connection,
    holder: &str,
    held: Option<u64>,
    now_ms: i64,
    ttl_ms: i64,
) -> StoreResult<Option<u64>> {
    let current = lease(tx)?;
    let Some(token) = claim_outcome(current.as_ref(), holder, held, now_ms) else {
        return Ok(None);
    };
    tx.execute(
        "INSERT INTO leases (name, holder, token) VALUES (?1, ?2, ?3) \
         ON CONFLICT (name) DO UPDATE SET holder = ?2, token = ?3",
        params![SEQUENCER_LEASE, holder, sql_id(token)],
    )?;
    tx.execute(
        "INSERT INTO lease_expiry (name, expires_ms) VALUES (?1, ?2) \
         ON CONFLICT (name) DO UPDATE SET expires_ms = ?2",
        params![SEQUENCER_LEASE, now_ms + ttl_ms],
    )?;
    Ok(Some(token))
}

pub(super) fn release(tx: &Connection, holder: &str, token: u64) -> StoreResult<()> {
    if lease(tx)?.is_some_and(|l| l.holder == holder && l.token == token) {
        tx.execute(
            "UPDATE lease_expiry SET expires_ms = 0 WHERE name = ?1",
            [SEQUENCER_LEASE],
        )?;
    }
    Ok(())
}

pub(super) fn cancel_requests(tx: &Connection) -> StoreResult<Vec<(u64, String)>> {
    let mut stmt = tx.prepare_cached(
        "SELECT id, cancel_by FROM deployments WHERE status = 'running' AND cancel_by IS NOT NULL \
         ORDER BY id",
    )?;
    let rows = stmt.query_map([], |r| Ok((id(r.get(0)?), r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub(super) fn running_ids(tx: &Connection) -> StoreResult<Vec<u64>> {
    let mut stmt =
        tx.prepare_cached("SELECT id FROM deployments WHERE status = 'running' ORDER BY id")?;
    let rows = stmt.query_map([], |r| Ok(id(r.get(0)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Task lists' rows with their tasks (`l` the list, `b` its tasks' body; see `store::bodies`).
pub(super) const LISTS: &str = "SELECT l.list, l.tasks_hash, b.tasks FROM task_lists l \
     LEFT JOIN task_bodies b ON b.hash = l.tasks_hash";

/// A row of [`LISTS`]: header, tasks hash, tasks text.
pub(super) type ListRow = (String, Option<String>, Option<String>);

pub(super) fn list_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ListRow> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
}

pub(super) fn join_row(
    joiner: &mut Joiner,
    (header, hash, body): ListRow,
) -> StoreResult<TaskList> {
    joiner.join(&header, hash.as_deref(), body.as_deref())
}

pub(super) fn lists_after(
    tx: &Connection,
    revision: u64,
    whole: &dyn Fn(u64) -> bool,
) -> StoreResult<Vec<Published>> {
    let mut stmt = tx.prepare_cached(
        "SELECT l.node_id, l.revision, l.deployment_id FROM task_lists l \
         JOIN deployments d ON d.id = l.deployment_id \
         WHERE l.revision > ?1 AND d.status = 'running' ORDER BY l.revision",
    )?;
    let mut out = stmt
        .query_map([sql_id(revision)], |r| {
            Ok(Published::Noted {
                node_id: id(r.get(0)?),
                revision: id(r.get(1)?),
                deployment_id: id(r.get(2)?),
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let mut one = tx.prepare_cached(&format!("{LISTS} WHERE l.revision = ?1"))?;
    let mut joiner = Joiner::default();
    for p in out.iter_mut() {
        if let Published::Noted {
            node_id, revision, ..
        } = *p
        {
            if whole(node_id) {
                if let Some(row) = one.query_row([sql_id(revision)], list_row).optional()? {
                    *p = Published::List(join_row(&mut joiner, row)?);
                }
            }
        }
    }
    Ok(out)
}

pub(super) fn node_results(
    tx: &Connection,
    deployment: u64,
    node: u64,
) -> StoreResult<Vec<TaskResult>> {
    let mut stmt = tx.prepare_cached(
        "SELECT result FROM results WHERE deployment_id = ?1 AND node_id = ?2 ORDER BY seq",
    )?;
    let texts = stmt
        .query_map(params![sql_id(deployment), sql_id(node)], |r| {
            r.get::<_, String>(0)
        })?
        .collect::<Result<Vec<_>, _>>()?;
    texts.iter().map(|t| from_json(t, "task result")).collect()
}
