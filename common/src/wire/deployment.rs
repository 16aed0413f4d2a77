//! A deployment's vocabulary on the wire: the one spelling of every node, group and deployment status,
//! and the typed events the controller records, streams (SSE) and `plinthctl` and the console read.
//!
//! Every status is spelled in `snake_case`, the same in the database, in JSON, in the report and in
//! `Display` (see docs/DECISIONS.md, "One status vocabulary").

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::strategy::{FailureReason, NodeOutcome};
use crate::wire::ResultStatus;

/// A node's status in one deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    /// Not sent to any phase yet.
    NotStarted,
    /// Holding a list of a phase that has not ended (only reports say it; the sequencer keeps the
    /// status the node had before the phase).
    Running,
    /// Finished at least one phase, not yet the last (with the default phases: prepared, not deployed).
    Prepared,
    /// Finished every phase.
    Success,
    /// Failed a phase (failed, timed out or never reported); it is not sent again in this deployment.
    Failure,
    /// Was running a phase when the deployment was cancelled; its tasks were ended (only reports say
    /// it, as `running`).
    Cancelled,
}

impl NodeStatus {
    /// The status as it is spelled everywhere.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeStatus::NotStarted => "not_started",
            NodeStatus::Running => "running",
            NodeStatus::Prepared => "prepared",
            NodeStatus::Success => "success",
            NodeStatus::Failure => "failure",
            NodeStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the node is done with this deployment (succeeded, failed or cancelled).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            NodeStatus::Success | NodeStatus::Failure | NodeStatus::Cancelled
        )
    }
}

impl fmt::Display for NodeStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a group of a deployment's strategy is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupStatus {
    /// Waiting for its dependencies (or for a free slot).
    Pending,
    /// Going through its phases.
    Running,
    /// Met its success criteria after every phase.
    Succeeded,
    /// Missed its criteria after a phase, or a group it depends on failed.
    Failed,
    /// Was pending or running when the deployment was cancelled.
    Cancelled,
}

impl GroupStatus {
    /// The status as it is spelled everywhere.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupStatus::Pending => "pending",
            GroupStatus::Running => "running",
            GroupStatus::Succeeded => "succeeded",
            GroupStatus::Failed => "failed",
            GroupStatus::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for GroupStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A deployment's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeploymentStatus {
    /// Groups are still pending or running.
    Running,
    /// Every group succeeded and every node of the deployment finished every phase.
    Success,
    /// No critical group failed, but some group failed or some node did not succeed.
    SuccessWithFailures,
    /// A critical group failed (by its criteria or because a group it depends on failed), or the
    /// controller stopped it (a fault tolerance was exceeded).
    Failed,
    /// An operator stopped it: nothing new started, running tasks were ended.
    Cancelled,
}

impl DeploymentStatus {
    /// The status as it is spelled everywhere (and stored).
    pub fn as_str(self) -> &'static str {
        match self {
            DeploymentStatus::Running => "running",
            DeploymentStatus::Success => "success",
            DeploymentStatus::SuccessWithFailures => "success_with_failures",
            DeploymentStatus::Failed => "failed",
            DeploymentStatus::Cancelled => "cancelled",
        }
    }

    /// Reads the spelling [`DeploymentStatus::as_str`] gives.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "running" => DeploymentStatus::Running,
            "success" => DeploymentStatus::Success,
            "success_with_failures" => DeploymentStatus::SuccessWithFailures,
            "failed" => DeploymentStatus::Failed,
            "cancelled" => DeploymentStatus::Cancelled,
            _ => return None,
        })
    }

    /// Whether the deployment has ended.
    pub fn is_final(self) -> bool {
        self != DeploymentStatus::Running
    }
}

impl fmt::Display for DeploymentStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Something that happened in a deployment: recorded with it (except task results, which are stored
/// as results), sent live to watchers, shown by `plinthctl deploy watch` and the console. On the wire a
/// JSON object whose `event` field names the kind (`snake_case`), beside the variant's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum DeploymentEvent {
    /// A group began its first phase.
    GroupStarted {
        /// The group.
        group: String,
    },
    /// A group began a phase.
    PhaseStarted {
        /// The group.
        group: String,
        /// The phase.
        phase: String,
        /// The graph type it runs.
        graph_type: String,
        /// Nodes sent (may be empty when every node of the group is already done or failed).
        nodes: Vec<String>,
    },
    /// A node's result for a phase was recorded.
    NodeStatusChanged {
        /// The node.
        node: String,
        /// The group that sent it.
        group: String,
        /// The phase.
        phase: String,
        /// How the node ended the phase.
        outcome: NodeOutcome,
        /// Its status before.
        from: NodeStatus,
        /// Its status now.
        to: NodeStatus,
    },
    /// A group finished a phase and its criteria were checked.
    PhaseFinished {
        /// The group.
        group: String,
        /// The phase.
        phase: String,
        /// Whether the criteria were met.
        passed: bool,
        /// Nodes of the group that had passed the phase.
        succeeded: u64,
        /// Nodes that had not.
        failed: u64,
        /// Nodes in the group.
        total: u64,
    },
    /// A group met its criteria after every phase.
    GroupSucceeded {
        /// The group.
        group: String,
    },
    /// A group failed.
    GroupFailed {
        /// The group.
        group: String,
        /// Whether it is critical (the deployment will end failed).
        critical: bool,
        /// Why.
        reason: FailureReason,
    },
    /// Every group is done.
    DeploymentFinished {
        /// How the deployment ended.
        status: DeploymentStatus,
    },
    /// A pre-deployment check warned.
    Warning {
        /// The finding's code (`unassigned_tag`, ...).
        code: String,
        /// The finding, in words.
        message: String,
    },
    /// A node could not be given its list for a phase (it counts as failed there).
    NodeError {
        /// The node.
        node: String,
        /// The phase.
        phase: String,
        /// Why.
        message: String,
    },
    /// The controller stopped the deployment: no further list is published.
    Stopped {
        /// Why (which fault tolerance was exceeded).
        message: String,
    },
    /// An operator cancelled the deployment.
    Cancelled {
        /// `cancelled by <operator>`.
        message: String,
        /// The operator.
        by: String,
    },
    /// A task reported (live only: results are stored as results, not as events).
    TaskResult {
        /// The node.
        node: String,
        /// The task.
        task: String,
        /// The attempt.
        attempt: u32,
        /// Its status.
        status: ResultStatus,
        /// Whether this is the task's last word.
        last: bool,
    },
    /// A node's result was refused.
    ResultRefused {
        /// The node.
        node: String,
        /// Why.
        message: String,
        /// What was refused (task, revision, attempt, status).
        #[serde(default)]
        detail: serde_json::Value,
    },
    /// A node refused its list.
    ListRefused {
        /// The node.
        node: String,
        /// Why.
        message: String,
        /// What the agent said about the list.
        #[serde(default)]
        detail: serde_json::Value,
    },
}

impl DeploymentEvent {
    /// The kind, as the `event` field and the SSE event name spell it.
    pub fn kind(&self) -> &'static str {
        match self {
            DeploymentEvent::GroupStarted { .. } => "group_started",
            DeploymentEvent::PhaseStarted { .. } => "phase_started",
            DeploymentEvent::NodeStatusChanged { .. } => "node_status_changed",
            DeploymentEvent::PhaseFinished { .. } => "phase_finished",
            DeploymentEvent::GroupSucceeded { .. } => "group_succeeded",
            DeploymentEvent::GroupFailed { .. } => "group_failed",
            DeploymentEvent::DeploymentFinished { .. } => "deployment_finished",
            DeploymentEvent::Warning { .. } => "warning",
            DeploymentEvent::NodeError { .. } => "node_error",
            DeploymentEvent::Stopped { .. } => "stopped",
            DeploymentEvent::Cancelled { .. } => "cancelled",
            DeploymentEvent::TaskResult { .. } => "task_result",
            DeploymentEvent::ResultRefused { .. } => "result_refused",
            DeploymentEvent::ListRefused { .. } => "list_refused",
        }
    }

    /// Whether the report lists it among its notices (warnings, stops, cancels, refusals).
    pub fn is_notice(&self) -> bool {
        matches!(
            self,
            DeploymentEvent::Warning { .. }
                | DeploymentEvent::Stopped { .. }
                | DeploymentEvent::Cancelled { .. }
                | DeploymentEvent::ResultRefused { .. }
                | DeploymentEvent::ListRefused { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_the_event_field_serde_writes() {
        let events = [
            DeploymentEvent::GroupStarted { group: "g".into() },
            DeploymentEvent::Stopped {
                message: "m".into(),
            },
            DeploymentEvent::TaskResult {
                node: "n".into(),
                task: "t".into(),
                attempt: 1,
                status: ResultStatus::Succeeded,
                last: true,
            },
            DeploymentEvent::ListRefused {
                node: "n".into(),
                message: "m".into(),
                detail: serde_json::Value::Null,
            },
            DeploymentEvent::DeploymentFinished {
                status: DeploymentStatus::SuccessWithFailures,
            },
        ];
        for e in events {
            let v = serde_json::to_value(&e).unwrap();
            assert_eq!(v["event"], e.kind());
            assert_eq!(serde_json::from_value::<DeploymentEvent>(v).unwrap(), e);
        }
    }

    #[test]
    fn statuses_spell_the_same_in_json_and_words() {
        for s in [
            DeploymentStatus::Running,
            DeploymentStatus::Success,
            DeploymentStatus::SuccessWithFailures,
            DeploymentStatus::Failed,
            DeploymentStatus::Cancelled,
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
            assert_eq!(DeploymentStatus::parse(s.as_str()), Some(s));
        }
        for s in [
            NodeStatus::NotStarted,
            NodeStatus::Running,
            NodeStatus::Prepared,
            NodeStatus::Success,
            NodeStatus::Failure,
            NodeStatus::Cancelled,
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.to_string());
        }
        for s in [
            GroupStatus::Pending,
            GroupStatus::Running,
            GroupStatus::Succeeded,
            GroupStatus::Failed,
            GroupStatus::Cancelled,
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.to_string());
        }
    }
}
