//! The sequencer's state as stored: nodes, groups, their running phases, pending events; and resuming from
//! it, which refuses a damaged record instead of letting it mislead the deployment.

use std::collections::HashMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Sequencer;
use crate::strategy::model::Strategy;
use crate::strategy::status::{
    DeploymentEvent, FailureReason, GroupStatus, NodeOutcome, NodeStatus, PhaseOutcome,
};

/// Where a node sits in a running phase: the group that sent it and its position in that phase's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Slot {
    pub(super) group: usize,
    pub(super) position: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
/// One node of the deployment.
pub(super) struct NodeState {
    pub(super) name: String,
    pub(super) status: NodeStatus,
    /// How many phases the node has passed.
    pub(super) phases_done: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) failed_phase: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) failure: Option<NodeOutcome>,
    /// The group that last sent the node to a phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) last_group: Option<usize>,
    /// The running group that holds the node while it is in progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) busy_with: Option<usize>,
    /// Where the node sits in its group's running phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) slot: Option<Slot>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
/// One group and its progress.
pub(super) struct GroupRun {
    pub(super) members: Vec<usize>,
    pub(super) depends_on: Vec<usize>,
    pub(super) dependants: Vec<usize>,
    pub(super) state: GroupStatus,
    /// The current phase while running.
    pub(super) phase: usize,
    /// Whether the current phase's nodes were handed to the controller.
    pub(super) announced: bool,
    pub(super) sent: Vec<usize>,
    pub(super) results: Vec<Option<NodeOutcome>>,
    pub(super) awaiting: usize,
    pub(super) phases: Vec<PhaseOutcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) reason: Option<FailureReason>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
/// Everything the sequencer knows.
pub(super) struct State {
    pub(super) strategy: Strategy,
    pub(super) nodes: Vec<NodeState>,
    pub(super) unselected: Vec<String>,
    pub(super) groups: Vec<GroupRun>,
    /// Groups in the order they started or were failed by a dependency.
    pub(super) order: Vec<usize>,
    pub(super) events: Vec<DeploymentEvent>,
    pub(super) finished: bool,
}

impl Serialize for Sequencer {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.state.serialize(serializer)
    }
}

/// Resuming checks that the stored state is consistent (every position in range, every cross-reference
/// matching).
impl<'de> Deserialize<'de> for Sequencer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let state = State::deserialize(deserializer)?;
        state.check().map_err(serde::de::Error::custom)?;
        Ok(Sequencer::from_state(state))
    }
}

impl State {
    /// Checks that every position is in range and every cross-reference matches.
    fn check(&self) -> Result<(), String> {
        let phases = self.strategy.phases.len();
        let node_count = self.nodes.len();
        let group_count = self.groups.len();
        if group_count != self.strategy.groups.len() {
            return Err(format!(
                "sequencer state has {group_count} groups but its strategy has {}",
                self.strategy.groups.len()
            ));
        }
        let mut names = HashMap::with_capacity(node_count);
        for (n, node) in self.nodes.iter().enumerate() {
            if names.insert(node.name.as_str(), n).is_some() {
                return Err(format!("sequencer state lists node {:?} twice", node.name));
            }
            if node.phases_done > phases || node.failed_phase.is_some_and(|k| k >= phases) {
                return Err(format!(
                    "sequencer state: node {:?} is past the last phase",
                    node.name
                ));
            }
            if node.last_group.is_some_and(|g| g >= group_count)
                || node.busy_with.is_some_and(|g| g >= group_count)
            {
                return Err(format!(
                    "sequencer state: node {:?} refers to an unknown group",
                    node.name
                ));
            }
            if let Some(slot) = node.slot {
                let run = self.groups.get(slot.group);
                if run.and_then(|run| run.sent.get(slot.position)) != Some(&n) {
                    return Err(format!(
                        "sequencer state: node {:?} is not where its phase says",
                        node.name
                    ));
                }
            }
        }
        for (g, run) in self.groups.iter().enumerate() {
            let name = &self.strategy.groups[g].name;
            let bad = |what: &str| Err(format!("sequencer state: group {name:?} has {what}"));
            if run.members.iter().any(|&n| n >= node_count)
                || run.sent.iter().any(|&n| n >= node_count)
            {
                return bad("an unknown node");
            }
            if run
                .depends_on
                .iter()
                .chain(&run.dependants)
                .any(|&d| d >= group_count)
            {
                return bad("an unknown dependency");
            }
            if run.phases.len() != phases || run.phase >= phases.max(1) {
                return bad("a wrong number of phases");
            }
            if run.sent.len() != run.results.len()
                || run.awaiting != run.results.iter().filter(|result| result.is_none()).count()
            {
                return bad("inconsistent results");
            }
            for (position, &n) in run.sent.iter().enumerate() {
                if self.nodes[n].slot != Some(Slot { group: g, position }) {
                    return bad("a sent node that does not know it");
                }
            }
        }
        if self.order.iter().any(|&g| g >= group_count) {
            return Err("sequencer state: its order refers to an unknown group".to_string());
        }
        Ok(())
    }
}
