//! The deployment report: per group its state and why, per node its status and each task's last result.
//! Built from the database alone, so it reads the same during a deployment, after it, and after a restart.

use super::{NodeOutcome, PhaseState};
use crate::store::{DeploymentRecord, DeploymentStatus, NodeRecord, Store, StoreResult};
use plinth_common::wire::{ResultStatus, TaskResult};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// A node's status in a deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeRunStatus {
    /// No result yet.
    NotStarted,
    /// Tasks are running.
    Running,
    /// Every task succeeded.
    Success,
    /// A task failed, or the phase timed out.
    Failure,
}

/// One task's line in the report.
#[derive(Debug, Clone, Serialize)]
pub struct TaskLine {
    /// Task id.
    pub id: String,
    /// Latest status.
    pub status: ResultStatus,
    /// Attempts made.
    pub attempts: u32,
    /// Exit code of the latest attempt.
    pub exit_code: Option<i32>,
    /// Duration of the latest attempt (ms).
    pub duration_ms: u64,
    /// Explanation.
    pub message: String,
    /// Output tail of the latest attempt.
    pub stdout_tail: String,
    /// Error output tail of the latest attempt.
    pub stderr_tail: String,
}

/// One node's part of the report.
#[derive(Debug, Clone, Serialize)]
pub struct NodeLine {
    /// Node id.
    pub id: u64,
    /// Node name.
    pub name: String,
    /// Status.
    pub status: NodeRunStatus,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Tasks in the node's list.
    pub total_tasks: usize,
    /// Tasks with a final result.
    pub finished_tasks: usize,
    /// Each task's latest result.
    pub tasks: Vec<TaskLine>,
}

/// One group's part of the report.
#[derive(Debug, Clone, Serialize)]
pub struct GroupLine {
    /// Group name.
    pub name: String,
    /// Critical groups fail the deployment when they fail.
    pub critical: bool,
    /// `running`, `succeeded` or `failed`.
    pub state: String,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Nodes that succeeded.
    pub succeeded: Vec<String>,
    /// Nodes that failed.
    pub failed: Vec<String>,
    /// Nodes not finished or never started.
    pub not_finished: Vec<String>,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Deployment id.
    pub id: u64,
    /// Cluster.
    pub cluster_id: u64,
    /// Graph type.
    pub graph_type: String,
    /// Status.
    pub status: DeploymentStatus,
    /// Started (ms).
    pub created_at_ms: i64,
    /// Finished (ms).
    pub finished_at_ms: Option<i64>,
    /// Groups.
    pub groups: Vec<GroupLine>,
    /// Nodes.
    pub nodes: Vec<NodeLine>,
}

/// Builds the report of a deployment (blocking).
pub fn build(store: &dyn Store, dep: &DeploymentRecord) -> StoreResult<Report> {
    let lists = store.published_lists(dep.id)?;
    let results = store.deployment_results(dep.id)?;
    let names: HashMap<u64, String> = store
        .list_nodes()?
        .into_iter()
        .map(|n: NodeRecord| (n.id, n.name))
        .collect();
    let state: PhaseState = serde_json::from_value(dep.state.clone()).unwrap_or_default();
    let outcomes: BTreeMap<u64, NodeOutcome> = dep
        .state
        .get("outcomes")
        .and_then(|o| serde_json::from_value(o.clone()).ok())
        .unwrap_or_default();

    let mut latest: HashMap<(u64, String), (&TaskResult, u32)> = HashMap::new();
    for (node, r) in &results {
        let entry = latest.entry((*node, r.task_id.clone())).or_insert((r, 0));
        entry.1 = entry.1.max(r.attempt);
        if (r.attempt, r.status.is_terminal()) >= (entry.0.attempt, entry.0.status.is_terminal()) {
            entry.0 = r;
        }
    }

    let mut nodes = Vec::new();
    for node_id in &dep.node_ids {
        let name = names
            .get(node_id)
            .cloned()
            .unwrap_or_else(|| format!("node-{node_id}"));
        let list = lists.iter().find(|l| l.node_id == *node_id);
        let mut tasks = Vec::new();
        let mut finished = 0;
        for spec in list.map(|l| l.tasks.as_slice()).unwrap_or_default() {
            if let Some((r, attempts)) = latest.get(&(*node_id, spec.id.clone())) {
                if r.last {
                    finished += 1;
                }
                tasks.push(TaskLine {
                    id: spec.id.clone(),
                    status: r.status,
                    attempts: *attempts,
                    exit_code: r.exit_code,
                    duration_ms: r.duration_ms,
                    message: r.message.clone(),
                    stdout_tail: r.stdout_tail.clone(),
                    stderr_tail: r.stderr_tail.clone(),
                });
            }
        }
        let total = list.map(|l| l.tasks.len()).unwrap_or(0);
        let outcome = outcomes.get(node_id).or_else(|| state.forced.get(node_id));
        let failed_task = tasks.iter().find(|t| {
            matches!(
                t.status,
                ResultStatus::Failed | ResultStatus::TimedOut | ResultStatus::Interrupted
            ) && latest
                .get(&(*node_id, t.id.clone()))
                .is_some_and(|(r, _)| r.last)
        });
        let (status, reason) = match (outcome, failed_task) {
            (Some(NodeOutcome::Succeeded), _) => (NodeRunStatus::Success, None),
            (Some(NodeOutcome::Failed(why)), _) => (NodeRunStatus::Failure, Some(why.clone())),
            (None, Some(t)) => (
                NodeRunStatus::Failure,
                Some(format!("task {} failed", t.id)),
            ),
            (None, None) if total > 0 && finished == total => (NodeRunStatus::Success, None),
            (None, None) if tasks.is_empty() => (NodeRunStatus::NotStarted, None),
            (None, None) => (NodeRunStatus::Running, None),
        };
        nodes.push(NodeLine {
            id: *node_id,
            name,
            status,
            reason,
            total_tasks: total,
            finished_tasks: finished,
            tasks,
        });
    }

    let pick = |s: NodeRunStatus| {
        nodes
            .iter()
            .filter(|n| n.status == s)
            .map(|n| n.name.clone())
            .collect::<Vec<_>>()
    };
    let failed = pick(NodeRunStatus::Failure);
    let group_state = match dep.status {
        DeploymentStatus::Running => "running",
        DeploymentStatus::Success | DeploymentStatus::SuccessWithFailures => "succeeded",
        DeploymentStatus::Failed => "failed",
    };
    let group = GroupLine {
        name: "default".into(),
        critical: true,
        state: group_state.into(),
        reason: (dep.status == DeploymentStatus::Failed).then(|| {
            format!(
                "{} of {} nodes failed; the group needs 100% successful nodes",
                failed.len(),
                nodes.len()
            )
        }),
        succeeded: pick(NodeRunStatus::Success),
        failed,
        not_finished: nodes
            .iter()
            .filter(|n| matches!(n.status, NodeRunStatus::NotStarted | NodeRunStatus::Running))
            .map(|n| n.name.clone())
            .collect(),
    };
    Ok(Report {
        id: dep.id,
        cluster_id: dep.cluster_id,
        graph_type: dep.graph_type.clone(),
        status: dep.status,
        created_at_ms: dep.created_at_ms,
        finished_at_ms: dep.finished_at_ms,
        groups: vec![group],
        nodes,
    })
}
