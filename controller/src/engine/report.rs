//! The deployment report: per group its state and why (criteria, dependency, timeout), its succeeded,
//! prepared, failed and not-started nodes; per node its status and each task's latest result. Built from
//! the database, with the engine's orchestration state in memory while the deployment runs here (the
//! stored state is saved only when lists are published, so node outcomes in between would not show).

use super::EngineState;
use crate::store::{DeploymentRecord, DeploymentStatus, Store, StoreResult};
use plinth_common::wire::{DeploymentEvent, NodeStatus, ResultStatus, TaskResult};
use std::collections::HashMap;

pub use plinth_api::deployments::{GroupLine, NodeLine, Report, TaskLine};

/// Builds the report of a deployment from the database alone (blocking).
pub fn build(store: &dyn Store, dep: &DeploymentRecord) -> StoreResult<Report> {
    build_with(store, dep, None)
}

/// Builds the report of a deployment (blocking), from `live` (the engine's state in memory, while the
/// deployment runs here) or else from the state stored with it.
pub fn build_with(
    store: &dyn Store,
    dep: &DeploymentRecord,
    live: Option<EngineState>,
) -> StoreResult<Report> {
    let state: EngineState = match live {
        Some(state) => state,
        None => serde_json::from_value(dep.state.clone()).map_err(|e| {
            crate::store::StoreError::Corrupt(format!("deployment {} state: {e}", dep.id))
        })?,
    };
    let cancelled = dep.status == DeploymentStatus::Cancelled;
    // The phase each node is awaited in, found once (not once per node).
    let mut awaited_in: HashMap<String, String> = HashMap::new();
    for p in state.run.sequencer.in_flight() {
        for n in p.awaiting {
            awaited_in.entry(n).or_insert_with(|| p.phase.clone());
        }
    }
    // Every view reads the run's state through this one overlay (`as_seen`): running and cancelled
    // nodes, each group's nodes by status, a cancelled deployment's groups and phases final.
    let plan = state.run.sequencer.report().as_seen(&awaited_in, cancelled);
    let now = crate::clock::now_ms();
    let lists = store.published_lists(dep.id)?;
    let results = store.deployment_results(dep.id)?;
    let names: HashMap<u64, String> = store.node_names()?.into_iter().collect();

    // The latest report of each (node, revision, task), and how many attempts it had.
    let mut latest: HashMap<(u64, u64, &str), (&TaskResult, u32)> = HashMap::new();
    for (node, r) in &results {
        let entry = latest
            .entry((*node, r.revision, r.task_id.as_str()))
            .or_insert((r, 0));
        entry.1 = entry.1.max(r.attempt);
        if (r.attempt, r.status.is_terminal()) >= (entry.0.attempt, entry.0.status.is_terminal()) {
            entry.0 = r;
        }
    }

    let mut nodes = Vec::new();
    // Each node's lists, found once (not once per node).
    let mut lists_of: HashMap<u64, Vec<_>> = HashMap::new();
    for l in &lists {
        lists_of.entry(l.node_id).or_default().push(l);
    }
    let planned_of: HashMap<&str, _> = plan.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    for node_id in &dep.node_ids {
        let name = names
            .get(node_id)
            .cloned()
            .unwrap_or_else(|| format!("node-{node_id}"));
        let mine = lists_of.remove(node_id).unwrap_or_default();
        let mut tasks = Vec::new();
        for list in &mine {
            for spec in &list.tasks {
                if let Some((r, attempts)) =
                    latest.get(&(*node_id, list.revision, spec.id.as_str()))
                {
                    // A task still running when its deployment was cancelled was ended by the cancel.
                    let cut_short = cancelled && r.status == ResultStatus::Running;
                    // A task still running shows how long it has run; one the cancel ended, how long
                    // it ran until then.
                    let duration_ms = match (r.status, dep.finished_at_ms) {
                        (ResultStatus::Running, Some(end)) if cut_short => elapsed(r, end),
                        (ResultStatus::Running, None) => elapsed(r, now),
                        _ => r.duration_ms,
                    };
                    tasks.push(TaskLine {
                        phase: list.phase.clone(),
                        id: spec.id.clone(),
                        status: if cut_short {
                            ResultStatus::Interrupted
                        } else {
                            r.status
                        },
                        attempts: *attempts,
                        exit_code: r.exit_code,
                        duration_ms,
                        message: if cut_short {
                            "ended: the deployment was cancelled while it ran".into()
                        } else {
                            r.message.clone()
                        },
                        stdout_tail: r.stdout_tail.clone(),
                        stderr_tail: r.stderr_tail.clone(),
                        details: r.details.clone(),
                    });
                }
            }
        }
        // The last list with tasks: a cancel's stop order (no tasks) does not make the progress 0/0.
        let last = mine.iter().rev().find(|l| !l.cancel).copied();
        let total = last.map_or(0, |l| l.tasks.len());
        let finished = last.map_or(0, |l| {
            l.tasks
                .iter()
                .filter(|t| {
                    latest
                        .get(&(*node_id, l.revision, t.id.as_str()))
                        .is_some_and(|(r, _)| r.last)
                })
                .count()
        });
        let succeeded = last.map_or(0, |l| {
            l.tasks
                .iter()
                .filter(|t| {
                    latest
                        .get(&(*node_id, l.revision, t.id.as_str()))
                        .is_some_and(|(r, _)| r.last && r.status == ResultStatus::Succeeded)
                })
                .count()
        });
        let planned = planned_of.get(name.as_str()).copied();
        let status = planned.map_or(NodeStatus::NotStarted, |p| p.status);
        let in_flight = awaited_in
            .get(&name)
            .filter(|_| status == NodeStatus::Running)
            .cloned();
        // The first task of the failed phase's list, in the list's order, that failed the node: the
        // same words the run wrote on the node's record when the deployment ended.
        let failed_task = planned
            .and_then(|p| p.failed_phase.as_ref())
            .and_then(|failed| {
                tasks
                    .iter()
                    .find(|t| &t.phase == failed && t.status.is_failure())
            });
        let reason =
            planned.and_then(|p| p.failure_reason(failed_task.map(|t| (t.id.as_str(), t.status))));
        let failed_task = failed_task.map(|t| t.id.clone());
        nodes.push(NodeLine {
            id: *node_id,
            name,
            status,
            phase: in_flight,
            failed_phase: planned.and_then(|p| p.failed_phase.clone()),
            reason,
            total_tasks: total,
            finished_tasks: finished,
            succeeded_tasks: succeeded,
            failed_task,
            tasks,
        });
    }

    let groups = plan
        .groups
        .iter()
        .map(|g| GroupLine {
            name: g.name.clone(),
            critical: g.critical,
            state: g.state,
            current_phase: g.current_phase.clone(),
            reason: g.reason.as_ref().map(ToString::to_string),
            failure: g.reason.clone(),
            depends_on: g.depends_on.clone(),
            success_criteria: g.success_criteria.clone(),
            nodes: g.nodes.clone(),
            succeeded: g.succeeded.clone(),
            prepared: g.prepared.clone(),
            failed: g.failed.clone(),
            not_started: g.not_started.clone(),
            running: g.running.clone(),
            cancelled: g.cancelled.clone(),
        })
        .collect();
    Ok(Report {
        id: dep.id,
        cluster_id: dep.cluster_id,
        graph_type: dep.graph_type.clone(),
        strategy: state.strategy.clone(),
        chosen_by: state.chosen_by.clone(),
        action: state.action.clone(),
        steps: plan.steps(),
        status: dep.status,
        created_at_ms: dep.created_at_ms,
        finished_at_ms: dep.finished_at_ms,
        phases: plan.phases.clone(),
        order: plan.order.clone(),
        groups,
        nodes,
        unselected_nodes: plan.unselected_nodes.clone(),
        notices: store
            .events(dep.id, 0)?
            .into_iter()
            .map(|(_, e)| e)
            .filter(DeploymentEvent::is_notice)
            .collect(),
    })
}

/// How long a task that reported it started has run by `until` (ms).
fn elapsed(r: &TaskResult, until: i64) -> u64 {
    u64::try_from(until.saturating_sub(r.started_at_ms)).unwrap_or(0)
}
