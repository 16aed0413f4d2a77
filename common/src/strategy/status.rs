//! The states a deployment, its groups, their phases and its nodes go through, and why a group failed.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::criteria::CriterionFailure;

pub use crate::wire::{DeploymentEvent, DeploymentStatus, GroupStatus, NodeStatus};

/// How one node ended one phase, as the controller reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeOutcome {
    /// The node ran the phase's tasks successfully.
    Succeeded,
    /// A task failed on the node.
    Failed,
    /// The node started but had not finished when the phase's timeout passed.
    TimedOut,
    /// The node never reported anything for the phase.
    NeverReported,
}

impl NodeOutcome {
    /// Whether the node passed the phase.
    pub fn is_success(self) -> bool {
        self == NodeOutcome::Succeeded
    }

    /// The outcome as words.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeOutcome::Succeeded => "succeeded",
            NodeOutcome::Failed => "failed",
            NodeOutcome::TimedOut => "timed out",
            NodeOutcome::NeverReported => "never reported",
        }
    }
}

impl fmt::Display for NodeOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a group failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FailureReason {
    /// After the phase, the group missed these success criteria.
    Criteria {
        /// The phase after which the criteria were checked.
        phase: String,
        /// Every criterion missed, with its numbers.
        failures: Vec<CriterionFailure>,
    },
    /// The phase's timeout passed with these nodes unfinished. This fails the group whatever its criteria
    /// (the seed: "a failure based on these values will be treated as a failure for the group").
    Timeout {
        /// The phase that timed out.
        phase: String,
        /// Nodes that had not finished (timed out or never reported).
        nodes: Vec<String>,
        /// Every criterion missed as well, with its numbers (may be empty).
        failures: Vec<CriterionFailure>,
        /// The phase's timeout, in seconds.
        #[serde(default)]
        after_secs: u64,
    },
    /// A group this one depends on failed, so this one was not attempted.
    Dependency {
        /// The group in this one's `depends_on` that failed.
        dependency: String,
        /// The group whose own failure started the chain (the same as `dependency` when direct).
        root: String,
    },
}

impl fmt::Display for FailureReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |failures: &[CriterionFailure]| {
            failures
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        };
        match self {
            FailureReason::Criteria { phase, failures } => {
                write!(
                    f,
                    "success criteria not met after {phase}: {}",
                    list(failures)
                )
            }
            FailureReason::Timeout {
                phase,
                nodes,
                failures,
                after_secs,
            } => {
                write!(
                    f,
                    "{phase} timed out after {after_secs} s with {} node{} unfinished ({})",
                    nodes.len(),
                    if nodes.len() == 1 { "" } else { "s" },
                    nodes.join(", "),
                )?;
                if failures.is_empty() {
                    Ok(())
                } else {
                    write!(f, "; also {}", list(failures))
                }
            }
            FailureReason::Dependency { dependency, root } if dependency == root => {
                write!(f, "group {dependency} it depends on failed")
            }
            FailureReason::Dependency { dependency, root } => {
                write!(
                    f,
                    "group {dependency} it depends on failed (because {root} failed)"
                )
            }
        }
    }
}

/// Why a phase of a group was not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SkipCause {
    /// An earlier phase of the group failed its criteria.
    EarlierPhaseFailed {
        /// That phase.
        phase: String,
    },
    /// A group this one depends on failed.
    DependencyFailed {
        /// The group in `depends_on` that failed.
        dependency: String,
    },
    /// The deployment was cancelled before the phase began.
    Cancelled,
}

/// How one phase of one group went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum PhaseOutcome {
    /// Not reached yet.
    Pending,
    /// Its nodes are running it.
    Running,
    /// The group met its criteria after this phase.
    Succeeded {
        /// Nodes of the group that had passed this phase.
        succeeded: u64,
        /// Nodes of the group that had not.
        failed: u64,
        /// Nodes in the group.
        total: u64,
    },
    /// The group missed its criteria after this phase.
    Failed {
        /// Nodes of the group that had passed this phase.
        succeeded: u64,
        /// Nodes of the group that had not.
        failed: u64,
        /// Nodes in the group.
        total: u64,
        /// Every criterion missed.
        failures: Vec<CriterionFailure>,
        /// Nodes that timed out or never reported in this phase.
        timed_out: Vec<String>,
        /// The phase's timeout in seconds, when it ended by reaching it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_secs: Option<u64>,
    },
    /// Its nodes were running it when the deployment was cancelled.
    Cancelled,
    /// The phase was not run.
    Skipped {
        /// Why.
        cause: SkipCause,
    },
}

/// What the controller must do next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Run the phase's graph type on these nodes, then report each node's outcome
    /// ([`crate::strategy::Sequencer::phase_result`]) or the timeout
    /// ([`crate::strategy::Sequencer::phase_timed_out`]).
    StartPhase {
        /// The group.
        group: String,
        /// The phase's name.
        phase: String,
        /// The graph type the phase runs.
        graph_type: String,
        /// Seconds after which unfinished nodes count as failed.
        timeout_secs: u64,
        /// The nodes to send (never empty; nodes already done or failed are left out).
        nodes: Vec<String>,
    },
    /// Every group has succeeded or failed; the deployment is over.
    Finished {
        /// How it ended.
        status: DeploymentStatus,
    },
}

/// One node's outcome in a phase, as passed to [`crate::strategy::Sequencer::phase_result`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeResult {
    /// The node's name.
    pub node: String,
    /// How it ended the phase.
    pub outcome: NodeOutcome,
}

impl NodeResult {
    /// A result for this node.
    pub fn new(node: impl Into<String>, outcome: NodeOutcome) -> NodeResult {
        NodeResult {
            node: node.into(),
            outcome,
        }
    }
}
