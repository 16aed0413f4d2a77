//! Task results (stored once each, while their deployment runs; after a cancel, still the last word of
//! each attempt the cancel ended) and what nodes sent that was refused.

use super::access::{args, id, sql_id, sql_ids, to_json, Arg, Rows, Tx};
use crate::store::{NewRefusal, RefusalRecord, StoreResult, Stored, MAX_REFUSALS_PER_NODE};
use plinth_common::wire::TaskResult;

mod lifecycle;

/// Stores every batch's results in the caller's transaction (see
/// [`crate::store::Store::store_results`]), in one bulk write: thousands of agents' reports arrive
/// together. Each result is `New` when it went in now, else `Duplicate` when the same result is
/// stored, else `Final` (its deployment ended other than by a cancel, or the task's outcome was
/// recorded differently).
pub(crate) fn store_batches(
    t: &dyn Tx,
    batches: &[(u64, &[TaskResult])],
) -> StoreResult<Vec<Vec<Stored>>> {
    let count: usize = batches.iter().map(|(_, rs)| rs.len()).sum();
    let mut rows = ResultRows::with_capacity(count);
    for (node_id, results) in batches {
        for r in *results {
            rows.push(*node_id, r);
        }
    }
    t.carrying(
        rows.text.iter().map(String::len).sum::<usize>()
            + rows.task.iter().map(|x| x.len() + 48).sum::<usize>(),
    );
    let inserted = t.dialect().insert_rows_reporting(
        t,
        &Rows {
            table: "results",
            columns: &[
                ("node_id", Arg::Ints(&rows.node)),
                ("deployment_id", Arg::Ints(&rows.deployment)),
                ("revision", Arg::Ints(&rows.revision)),
                ("task_id", Arg::Strings(&rows.task)),
                ("attempt", Arg::Ints(&rows.attempt)),
                ("status", Arg::Strings(&rows.status)),
                ("result", Arg::Strings(&rows.text)),
            ],
            // While the deployment runs; once it was cancelled, still a task's last word (the cancel
            // ended it, or it finished as the stop order travelled), once per attempt: the report then
            // shows how each task really ended, and the agent has nothing to quarantine.
            filter: "EXISTS (SELECT 1 FROM deployments d WHERE d.id = v.deployment_id \
                     AND (d.status = 'running' OR (d.status = 'cancelled' AND v.status <> 'running' \
                     AND NOT EXISTS (SELECT 1 FROM results o WHERE o.node_id = v.node_id \
                     AND o.deployment_id = v.deployment_id AND o.revision = v.revision \
                     AND o.task_id = v.task_id AND o.attempt = v.attempt \
                     AND o.status <> 'running'))))",
            tail: "ON CONFLICT DO NOTHING",
            set: "",
        },
        6,
    )?;
    let mut out = Vec::with_capacity(batches.len());
    let mut i = 0;
    for (node_id, results) in batches {
        let mut stored = Vec::with_capacity(results.len());
        for r in *results {
            let new = inserted.get(i).copied().unwrap_or(false);
            if new {
                lifecycle::record(t, *node_id, r)?;
            }
            stored.push(if new {
                Stored::New
            } else if t.exists(
                "SELECT 1 FROM results WHERE node_id = $1 AND deployment_id = $2 AND revision = $3 \
                 AND task_id = $4 AND attempt = $5 AND status = $6",
                args![
                    rows.node[i],
                    rows.deployment[i],
                    rows.revision[i],
                    &rows.task[i],
                    rows.attempt[i],
                    &rows.status[i]
                ],
            )? {
                Stored::Duplicate
            } else {
                Stored::Final
            });
            i += 1;
        }
        out.push(stored);
    }
    Ok(out)
}

/// Results as columns, for one bulk insert.
struct ResultRows {
    node: Vec<i64>,
    deployment: Vec<i64>,
    revision: Vec<i64>,
    task: Vec<String>,
    attempt: Vec<i64>,
    status: Vec<String>,
    text: Vec<String>,
}

impl ResultRows {
    fn with_capacity(n: usize) -> Self {
        ResultRows {
            node: Vec::with_capacity(n),
            deployment: Vec::with_capacity(n),
            revision: Vec::with_capacity(n),
            task: Vec::with_capacity(n),
            attempt: Vec::with_capacity(n),
            status: Vec::with_capacity(n),
            text: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, node_id: u64, r: &TaskResult) {
        let status = to_json(&r.status);
        self.node.push(sql_id(node_id));
        self.deployment.push(sql_id(r.deployment_id));
        self.revision.push(sql_id(r.revision));
        self.task.push(r.task_id.clone());
        self.attempt.push(i64::from(r.attempt));
        self.status.push(status.trim_matches('"').to_string());
        self.text.push(to_json(r));
    }
}

/// Every result of a deployment, by node, in arrival order.
pub(crate) fn deployment_results(
    t: &dyn Tx,
    deployment_id: u64,
) -> StoreResult<Vec<(u64, TaskResult)>> {
    t.rows(
        "SELECT node_id, result FROM results WHERE deployment_id = $1 ORDER BY seq",
        args![sql_id(deployment_id)],
        |r| Ok((r.id(0)?, r.json(1, "task result")?)),
    )
}

/// These nodes' results in a deployment, by node (nodes without any left out), each in arrival order.
pub(crate) fn results_of_nodes(
    t: &dyn Tx,
    deployment: u64,
    nodes: &[u64],
) -> StoreResult<Vec<(u64, Vec<TaskResult>)>> {
    let ids = sql_ids(nodes);
    let mut out: Vec<(u64, Vec<TaskResult>)> = Vec::new();
    t.each(
        &format!(
            "SELECT node_id, result FROM results WHERE deployment_id = $1 AND node_id {} \
             ORDER BY node_id, seq",
            t.dialect().in_list(2)
        ),
        args![sql_id(deployment), &ids],
        &mut |r| {
            let node = id(r.int(0)?);
            let result: TaskResult = r.json(1, "task result")?;
            match out.last_mut() {
                Some((n, rs)) if *n == node => rs.push(result),
                _ => out.push((node, vec![result])),
            }
            Ok(())
        },
    )?;
    Ok(out)
}

/// Records what a node sent that was refused, keeping the newest [`MAX_REFUSALS_PER_NODE`].
pub(crate) fn record_refusals(
    t: &dyn Tx,
    node_id: u64,
    refusals: &[NewRefusal],
) -> StoreResult<()> {
    for r in refusals {
        t.exec(
            "INSERT INTO refusals (node_id, at_ms, kind, deployment_id, reason, detail) \
             VALUES ($1, $2, $3, $4, $5, $6)",
            args![
                sql_id(node_id),
                r.at_ms,
                &r.kind,
                r.deployment_id.map(sql_id),
                &r.reason,
                &to_json(&r.detail)
            ],
        )?;
    }
    t.exec(
        "DELETE FROM refusals WHERE node_id = $1 AND seq NOT IN \
         (SELECT seq FROM refusals WHERE node_id = $1 ORDER BY seq DESC LIMIT $2)",
        args![sql_id(node_id), MAX_REFUSALS_PER_NODE as i64],
    )?;
    Ok(())
}

/// A node's recorded refusals, newest first.
pub(crate) fn node_refusals(t: &dyn Tx, node_id: u64) -> StoreResult<Vec<RefusalRecord>> {
    t.rows(
        "SELECT seq, at_ms, kind, deployment_id, reason, detail FROM refusals \
         WHERE node_id = $1 ORDER BY seq DESC",
        args![sql_id(node_id)],
        |r| {
            Ok(RefusalRecord {
                seq: r.id(0)?,
                node_id,
                refusal: NewRefusal {
                    kind: r.string(2)?,
                    deployment_id: r.opt_id(3)?,
                    reason: r.string(4)?,
                    detail: r.json(5, "refusal")?,
                    at_ms: r.int(1)?,
                },
            })
        },
    )
}
