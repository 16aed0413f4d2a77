//! Judging agents' results before they are stored: a result is refused, with its reason, when it is too
//! large, comes from a node that is not accepted, or names a task that was never issued to its node;
//! what was refused is recorded on the node and in the events of the deployment it claims.

use super::board::Board;
use crate::clock::now_ms;
use crate::engine::Engine;
use crate::store::{NewRefusal, Store, StoreResult};
use plinth_common::wire::{
    json_len, DeploymentEvent, ResultVerdict, TaskResult, Verdict, MAX_RESULT_BYTES,
};
use serde_json::json;
use std::sync::Arc;

/// Judges a report's results before storing: each refused one gets its verdict now; the indexes of
/// the others are to store. A result is checked against the engine's running deployments, else against
/// the lists issued to the node (on the board, else in the store).
#[allow(clippy::type_complexity)]
pub fn judge(
    store: &dyn Store,
    engine: &Engine,
    board: &Board,
    node_id: u64,
    accepted: bool,
    results: &[TaskResult],
) -> StoreResult<(Vec<Option<ResultVerdict>>, Vec<usize>)> {
    let mut verdicts: Vec<Option<ResultVerdict>> = vec![None; results.len()];
    let mut candidates = Vec::new();
    // A report's results mostly come from one list: each revision is looked up once.
    let mut lists = IssuedLists {
        store,
        board,
        node_id,
        known: Default::default(),
    };
    for (i, r) in results.iter().enumerate() {
        match refusal_reason(engine, &mut lists, node_id, accepted, r)? {
            Some(reason) => verdicts[i] = Some(refused(r, reason)),
            None => candidates.push(i),
        }
    }
    Ok((verdicts, candidates))
}

/// Why a result is refused before storing, if it is: too large, from a node that is not accepted, or for
/// a task that was never issued to this node.
fn refusal_reason(
    engine: &Engine,
    lists: &mut IssuedLists,
    node_id: u64,
    accepted: bool,
    r: &TaskResult,
) -> StoreResult<Option<String>> {
    if !accepted {
        return Ok(Some("this node is not accepted".into()));
    }
    let size = json_len(r);
    if size > MAX_RESULT_BYTES {
        return Ok(Some(format!(
            "the result is {size} bytes, more than the limit of {MAX_RESULT_BYTES}"
        )));
    }
    if engine.owns(node_id, r) {
        return Ok(None);
    }
    let issued = lists.get(r.revision)?.is_some_and(|l| {
        l.deployment_id == r.deployment_id && l.tasks.iter().any(|t| t.id == r.task_id)
    });
    Ok((!issued).then(|| {
        format!(
            "task {} of deployment {} revision {} was not issued to this node",
            r.task_id, r.deployment_id, r.revision
        )
    }))
}

/// The lists a node was issued, by revision, as one report's results are judged: the node's list on
/// the board when it has that revision (a controller that does not sequence the deployment keeps the
/// published lists there too), else the store's record, each revision read once.
struct IssuedLists<'a> {
    store: &'a dyn Store,
    board: &'a Board,
    node_id: u64,
    known: std::collections::HashMap<u64, Option<Arc<plinth_common::wire::TaskList>>>,
}

impl IssuedLists<'_> {
    fn get(&mut self, revision: u64) -> StoreResult<Option<Arc<plinth_common::wire::TaskList>>> {
        if let Some(known) = self.known.get(&revision) {
            return Ok(known.clone());
        }
        let node_id = self.node_id;
        let list = match self
            .board
            .current(node_id)
            .filter(|l| l.revision == revision)
        {
            Some(list) => Some(list),
            None => self.store.issued_list(node_id, revision)?.map(Arc::new),
        };
        self.known.insert(revision, list.clone());
        Ok(list)
    }
}

/// A verdict without a reason.
pub fn verdict(r: &TaskResult, verdict: Verdict) -> ResultVerdict {
    ResultVerdict {
        key: r.key(),
        verdict,
        reason: None,
    }
}

/// A refusal with its reason.
pub fn refused(r: &TaskResult, reason: String) -> ResultVerdict {
    ResultVerdict {
        key: r.key(),
        verdict: Verdict::Refused,
        reason: Some(reason),
    }
}

/// Makes refused results visible: recorded on the node, and in the events of a running deployment they
/// claim. A failure to record is logged; it never changes the verdicts.
pub fn record_refused_results(
    store: &dyn Store,
    engine: &Engine,
    node_id: u64,
    results: &[TaskResult],
    verdicts: &[ResultVerdict],
) {
    let now = now_ms();
    let mut rows = Vec::new();
    for (r, v) in results.iter().zip(verdicts) {
        let Some(reason) = v
            .reason
            .as_deref()
            .filter(|_| v.verdict == Verdict::Refused)
        else {
            continue;
        };
        tracing::warn!(
            node = node_id,
            deployment = r.deployment_id,
            revision = r.revision,
            task = %r.task_id.escape_debug(),
            reason,
            "refused a result"
        );
        rows.push(NewRefusal {
            kind: "result".into(),
            deployment_id: Some(r.deployment_id),
            reason: reason.to_string(),
            detail: json!({"task": r.task_id, "revision": r.revision, "attempt": r.attempt, "status": r.status}),
            at_ms: now,
        });
    }
    if rows.is_empty() {
        return;
    }
    if let Err(e) = store.record_refusals(node_id, &rows) {
        tracing::error!(node = node_id, error = %e, "cannot record refused results");
    }
    note_refusal_events(store, engine, node_id, &rows);
}

/// Adds refusals to the events of the running deployments they concern (the node's name read from
/// `store`).
pub fn note_refusal_events(store: &dyn Store, engine: &Engine, node_id: u64, rows: &[NewRefusal]) {
    let name = store
        .get_node(node_id)
        .map(|n| n.name)
        .unwrap_or_else(|_| format!("node-{node_id}"));
    for row in rows {
        let Some(dep) = row.deployment_id else {
            continue;
        };
        let (node, message, detail) = (name.clone(), row.reason.clone(), row.detail.clone());
        let event = if row.kind == "list" {
            DeploymentEvent::ListRefused {
                node,
                message,
                detail,
            }
        } else {
            DeploymentEvent::ResultRefused {
                node,
                message,
                detail,
            }
        };
        if let Err(e) = engine.note_events(dep, &[event]) {
            tracing::error!(deployment = dep, error = %e, "cannot record a refusal event");
        }
    }
}
