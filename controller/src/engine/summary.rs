//! The deployment summary: the report without task output, so a page watching a thousand nodes gets a
//! few bytes per node (status, phase, progress, reason) and asks for one node's tasks when it needs them.

use super::report::{NodeLine, Report};
use plinth_common::wire::{DeploymentEvent, DeploymentStatus, GroupStatus, NodeStatus};
use serde::Serialize;
use std::collections::BTreeMap;

/// One node's line in the summary.
#[derive(Debug, Clone, Serialize)]
pub struct NodeBrief {
    /// Node id.
    pub id: u64,
    /// Node name.
    pub name: String,
    /// As in the report.
    pub status: NodeStatus,
    /// The phase it is in, while in one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Why it failed, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Tasks of its current list.
    pub total_tasks: usize,
    /// Of those, finished.
    pub finished_tasks: usize,
    /// The task running now, or the last one reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_task: Option<String>,
}

/// One group's line: its state and how many of its nodes are where.
#[derive(Debug, Clone, Serialize)]
pub struct GroupBrief {
    /// Group name.
    pub name: String,
    /// Critical groups fail the deployment when they fail.
    pub critical: bool,
    /// Its status.
    pub state: GroupStatus,
    /// The phase it is in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_phase: Option<String>,
    /// Why it failed, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
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
}

/// `GET /api/v1/deployments/{id}/summary`.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Deployment id.
    pub id: u64,
    /// Cluster.
    pub cluster_id: u64,
    /// The graph type (or the first phase's).
    pub graph_type: String,
    /// The strategy's name, when one drives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// The deployment's status.
    pub status: DeploymentStatus,
    /// Started (ms).
    pub created_at_ms: i64,
    /// Finished (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at_ms: Option<i64>,
    /// Phases in order.
    pub phases: Vec<String>,
    /// Groups in dependency order.
    pub order: Vec<String>,
    /// Groups, in the report's order.
    pub groups: Vec<GroupBrief>,
    /// How many nodes have each status.
    pub counts: BTreeMap<NodeStatus, usize>,
    /// Every node, briefly.
    pub nodes: Vec<NodeBrief>,
    /// Nodes of the deployment that no group selects.
    pub unselected_nodes: Vec<String>,
    /// Warnings, stops and refusals, as in the report.
    pub notices: Vec<DeploymentEvent>,
}

fn brief(n: NodeLine) -> NodeBrief {
    let last_task = n
        .tasks
        .iter()
        .rev()
        .find(|t| !t.status.is_terminal())
        .or(n.tasks.last())
        .map(|t| t.id.clone());
    NodeBrief {
        id: n.id,
        name: n.name,
        status: n.status,
        phase: n.phase,
        reason: n.reason,
        total_tasks: n.total_tasks,
        finished_tasks: n.finished_tasks,
        last_task,
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
                })
                .collect(),
            counts,
            nodes: r.nodes.into_iter().map(brief).collect(),
            unselected_nodes: r.unselected_nodes,
            notices: r.notices,
        }
    }
}
