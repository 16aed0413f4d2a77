//! Deployments as the operator API answers with them: the stored record, the start answer with what it
//! runs, the report (groups, nodes, tasks, notices) and its summary. The controller builds them;
//! `plinthctl` reads them.

use plinth_common::strategy::{FailureReason, Step, SuccessCriteria};
use plinth_common::wire::{
    DeploymentEvent, DeploymentStatus, GroupStatus, NodeStatus, ResultStatus,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A deployment as stored; `GET /deployments/`, and the answer to cancel and retry.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DeploymentRecord {
    /// Id.
    pub id: u64,
    /// Cluster.
    pub cluster_id: u64,
    /// Graph type.
    pub graph_type: String,
    /// Status.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub status: DeploymentStatus,
    /// Nodes taking part.
    pub node_ids: Vec<u64>,
    /// Options.
    pub options: serde_json::Value,
    /// Orchestration state: where every node stands in the strategy. `null` in lists
    /// (`GET /deployments`) and in the answers that start one (deploy, retry), where it would weigh
    /// megabytes per deployment of a large fleet; a deployment's progress is its report,
    /// `GET /deployments/{id}`.
    pub state: serde_json::Value,
    /// Started (ms).
    pub created_at_ms: i64,
    /// Finished (ms).
    pub finished_at_ms: Option<i64>,
}

/// `PUT /clusters/{id}/deploy/`: the deployment started, and what it runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StartedDeployment {
    /// The deployment as stored.
    #[serde(flatten)]
    pub record: DeploymentRecord,
    /// Its strategy, how it was chosen and each phase's timeout (absent if its state did not read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<StrategySummary>,
}

/// What a deployment runs: the strategy's name (none for every node at once), how it was chosen, and
/// each phase with its graph type and timeout.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StrategySummary {
    /// The strategy's name.
    pub name: Option<String>,
    /// How the strategy and its timeouts were chosen.
    pub chosen_by: Option<String>,
    /// The phases in order.
    pub phases: Vec<PhaseSummary>,
}

/// One phase of [`StrategySummary`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PhaseSummary {
    /// The phase's name.
    pub name: String,
    /// The graph type it runs.
    pub graph_type: String,
    /// Seconds it may take.
    pub timeout_secs: u64,
}

/// One task's line in the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskLine {
    /// The phase whose list held the task.
    pub phase: String,
    /// Task id.
    pub id: String,
    /// Latest status.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub status: ResultStatus,
    /// Attempts made.
    pub attempts: u32,
    /// Exit code of the latest attempt.
    pub exit_code: Option<i32>,
    /// Duration of the latest attempt (ms); while it runs, the time since it started.
    pub duration_ms: u64,
    /// Explanation.
    pub message: String,
    /// Output tail of the latest attempt.
    pub stdout_tail: String,
    /// Error output tail of the latest attempt.
    pub stderr_tail: String,
    /// Details the task type adds (puppet's summary, ...).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub details: serde_json::Value,
}

/// One node's part of the report; `GET /deployments/{id}/nodes/{node_id}/`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeLine {
    /// Node id.
    pub id: u64,
    /// Node name.
    pub name: String,
    /// Its status in this deployment.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub status: NodeStatus,
    /// The phase it is running, while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The phase it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_phase: Option<String>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Tasks in its current (or last) list.
    pub total_tasks: usize,
    /// Of those, tasks with a final result.
    pub finished_tasks: usize,
    /// Of those, tasks that succeeded.
    #[serde(default)]
    pub succeeded_tasks: usize,
    /// The task that failed it (the one its `reason` names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_task: Option<String>,
    /// Every task of every list it was given, with its latest result.
    pub tasks: Vec<TaskLine>,
}

/// One group's part of the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GroupLine {
    /// Group name.
    pub name: String,
    /// Critical groups fail the deployment when they fail.
    pub critical: bool,
    /// Its status.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub state: GroupStatus,
    /// The phase it is in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_phase: Option<String>,
    /// Why it failed, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Why it failed, as data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub failure: Option<FailureReason>,
    /// The groups it depends on.
    pub depends_on: Vec<String>,
    /// Its success criteria (none: it always succeeds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub success_criteria: Option<SuccessCriteria>,
    /// Every node it selects.
    pub nodes: Vec<String>,
    /// Nodes that finished every phase.
    pub succeeded: Vec<String>,
    /// Nodes that finished some phases.
    pub prepared: Vec<String>,
    /// Nodes that failed.
    pub failed: Vec<String>,
    /// Nodes never sent.
    pub not_started: Vec<String>,
    /// Nodes running one of its phases now.
    #[serde(default)]
    pub running: Vec<String>,
    /// Nodes that were running when the deployment was cancelled.
    #[serde(default)]
    pub cancelled: Vec<String>,
}

/// The whole report; `GET /deployments/{id}/`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Report {
    /// Deployment id.
    pub id: u64,
    /// Cluster.
    pub cluster_id: u64,
    /// Graph type (or `strategy:<name>`).
    pub graph_type: String,
    /// The strategy named, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// How the strategy and its timeouts were chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen_by: Option<String>,
    /// Shipyard's action it runs (`deploy_site`, `update_site`, `redeploy_server`), if one was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Each phase of each group, in processing order, as Shipyard's `describe action` lists steps.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub steps: Vec<Step>,
    /// Status.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub status: DeploymentStatus,
    /// Started (ms).
    pub created_at_ms: i64,
    /// Finished (ms).
    pub finished_at_ms: Option<i64>,
    /// The phases each group goes through.
    pub phases: Vec<String>,
    /// Groups in the order they started.
    pub order: Vec<String>,
    /// Groups.
    pub groups: Vec<GroupLine>,
    /// Nodes.
    pub nodes: Vec<NodeLine>,
    /// Nodes of the deployment that no group selects.
    pub unselected_nodes: Vec<String>,
    /// What the pre-deployment checks warned about, why the controller stopped it if it did, and what
    /// its nodes sent that was refused (results, and lists an agent refused).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub notices: Vec<DeploymentEvent>,
}

/// One node's line in the summary.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeBrief {
    /// Node id.
    pub id: u64,
    /// Node name.
    pub name: String,
    /// As in the report.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub status: NodeStatus,
    /// The phase it is in, while in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The phase it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_phase: Option<String>,
    /// Why it failed, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Tasks of its current list.
    pub total_tasks: usize,
    /// Of those, finished.
    pub finished_tasks: usize,
    /// Of those, succeeded.
    #[serde(default)]
    pub succeeded_tasks: usize,
    /// The task that matters now: the one running, else the one that failed the node, else the last
    /// one reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_task: Option<String>,
    /// The task that failed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_task: Option<String>,
}

/// One group's line: its state and how many of its nodes are where.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GroupBrief {
    /// Group name.
    pub name: String,
    /// Critical groups fail the deployment when they fail.
    pub critical: bool,
    /// Its status.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub state: GroupStatus,
    /// The phase it is in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_phase: Option<String>,
    /// Why it failed, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Nodes it selects.
    pub nodes: usize,
    /// Nodes that finished every phase.
    pub succeeded: usize,
    /// Nodes that finished some phases.
    pub prepared: usize,
    /// Nodes that failed.
    pub failed: usize,
    /// Nodes never sent.
    pub not_started: usize,
    /// Nodes running one of its phases now.
    #[serde(default)]
    pub running: usize,
    /// Nodes that were running when the deployment was cancelled.
    #[serde(default)]
    pub cancelled: usize,
}

/// `GET /deployments/{id}/summary/`: the report without task output, so a page watching a thousand
/// nodes gets a few bytes per node (status, phase, progress, reason).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Summary {
    /// Deployment id.
    pub id: u64,
    /// Cluster.
    pub cluster_id: u64,
    /// The graph type (or the first phase's).
    pub graph_type: String,
    /// The strategy's name, when one drives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// The deployment's status.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub status: DeploymentStatus,
    /// Started (ms).
    pub created_at_ms: i64,
    /// Finished (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at_ms: Option<i64>,
    /// Phases in order.
    pub phases: Vec<String>,
    /// Groups in dependency order.
    pub order: Vec<String>,
    /// Groups, in the report's order.
    pub groups: Vec<GroupBrief>,
    /// How many nodes have each status.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub counts: BTreeMap<NodeStatus, usize>,
    /// Every node, briefly.
    pub nodes: Vec<NodeBrief>,
    /// Nodes of the deployment that no group selects.
    pub unselected_nodes: Vec<String>,
    /// Warnings, stops and refusals, as in the report.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub notices: Vec<DeploymentEvent>,
}

impl From<NodeLine> for NodeBrief {
    fn from(n: NodeLine) -> NodeBrief {
        let running = n.tasks.iter().rev().find(|t| !t.status.is_terminal());
        let last_task = running
            .map(|t| t.id.clone())
            .or_else(|| n.failed_task.clone())
            .or_else(|| n.tasks.last().map(|t| t.id.clone()));
        NodeBrief {
            id: n.id,
            name: n.name,
            status: n.status,
            phase: n.phase,
            failed_phase: n.failed_phase,
            reason: n.reason,
            total_tasks: n.total_tasks,
            finished_tasks: n.finished_tasks,
            succeeded_tasks: n.succeeded_tasks,
            last_task,
            failed_task: n.failed_task,
        }
    }
}

impl From<Report> for Summary {
    fn from(r: Report) -> Summary {
        let mut counts = BTreeMap::new();
        for n in &r.nodes {
            *counts.entry(n.status).or_insert(0) += 1;
        }
        Summary {
            id: r.id,
            cluster_id: r.cluster_id,
            graph_type: r.graph_type,
            strategy: r.strategy,
            status: r.status,
            created_at_ms: r.created_at_ms,
            finished_at_ms: r.finished_at_ms,
            phases: r.phases,
            order: r.order,
            groups: r
                .groups
                .into_iter()
                .map(|g| GroupBrief {
                    name: g.name,
                    critical: g.critical,
                    state: g.state,
                    current_phase: g.current_phase,
                    reason: g.reason,
                    nodes: g.nodes.len(),
                    succeeded: g.succeeded.len(),
                    prepared: g.prepared.len(),
                    failed: g.failed.len(),
                    not_started: g.not_started.len(),
                    running: g.running.len(),
                    cancelled: g.cancelled.len(),
                })
                .collect(),
            counts,
            nodes: r.nodes.into_iter().map(NodeBrief::from).collect(),
            unselected_nodes: r.unselected_nodes,
            notices: r.notices,
        }
    }
}
