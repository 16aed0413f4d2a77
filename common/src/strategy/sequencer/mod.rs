//! The sequencing state machine: which group runs which phase on which nodes, given the results so far.
//!
//! It has no I/O and no clock. The controller asks [`Sequencer::next_actions`] what to start, runs each
//! phase on the nodes named, and reports back with [`Sequencer::phase_result`] (or node by node with
//! [`Sequencer::record_result`], or [`Sequencer::phase_timed_out`] when the phase's timeout passes). The
//! whole state serializes, so a restarted controller resumes where it stopped; [`Sequencer::in_flight`]
//! says which phases were running.
//!
//! Rules (the seed's): groups run one at a time unless `max_concurrent_groups` allows more; a group is
//! ready when every group it depends on succeeded; among ready groups the first in document order starts.
//! A group goes through the phases in order, each sent to the group's nodes that are ready for it (a node
//! that already succeeded or failed is not sent again, but counts in the criteria); after each phase the
//! criteria are checked against all the group's nodes, and a miss fails the group (its later phases are
//! skipped), and every group depending on it, transitively, without attempting them. Groups that may run at
//! the same time never share a node that is still in progress.

use std::collections::{HashMap, VecDeque};

mod state;
mod view;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use self::state::{GroupRun, NodeState, Slot, State};
use super::criteria::evaluate;
use super::finding::StrategyError;
use super::inventory::{check_inventory, InventoryError, InventoryNode};
use super::model::Strategy;
use super::select::resolve_members;
use super::status::{
    Action, DeploymentEvent, DeploymentStatus, FailureReason, GroupStatus, NodeOutcome, NodeResult,
    NodeStatus, PhaseOutcome, SkipCause,
};

/// Why the sequencer refused a call.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SequenceError {
    /// The strategy breaks its rules.
    #[error(transparent)]
    Strategy(#[from] StrategyError),
    /// The inventory has an empty or repeated node name.
    #[error(transparent)]
    Inventory(#[from] InventoryError),
    /// No group has this name.
    #[error("no group named {0:?} in this deployment")]
    UnknownGroup(String),
    /// No node of the deployment has this name.
    #[error("no node named {0:?} in this deployment")]
    UnknownNode(String),
    /// The strategy has no phase with this name.
    #[error("no phase named {0:?} in this strategy")]
    UnknownPhase(String),
    /// The group is not waiting for results of this phase (not started, already over, or another phase).
    #[error("group {group:?} is not running phase {phase:?}")]
    PhaseNotRunning {
        /// The group named.
        group: String,
        /// The phase named.
        phase: String,
    },
    /// The node was not sent in this phase of this group.
    #[error("node {node:?} was not sent in phase {phase:?} of group {group:?}")]
    NodeNotSent {
        /// The node named.
        node: String,
        /// The group named.
        group: String,
        /// The phase named.
        phase: String,
    },
    /// The node already has a different result for this phase.
    #[error("node {node:?} already reported {recorded} in phase {phase:?} of group {group:?}, not {given}")]
    ConflictingResult {
        /// The node.
        node: String,
        /// The group.
        group: String,
        /// The phase.
        phase: String,
        /// The outcome recorded first.
        recorded: NodeOutcome,
        /// The outcome given now.
        given: NodeOutcome,
    },
}

/// A phase whose nodes the controller has been told to run and that still awaits results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InFlightPhase {
    /// The group.
    pub group: String,
    /// The phase.
    pub phase: String,
    /// The graph type it runs.
    pub graph_type: String,
    /// Seconds after which unfinished nodes count as failed.
    pub timeout_secs: u64,
    /// Every node sent.
    pub nodes: Vec<String>,
    /// The nodes sent that have not reported yet.
    pub awaiting: Vec<String>,
}

/// The sequencing state machine of one deployment. Serializes to (and resumes from) its whole state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sequencer {
    state: State,
    node_index: HashMap<String, usize>,
    group_index: HashMap<String, usize>,
}

impl Sequencer {
    /// A sequencer for the strategy over these nodes (the deployment's nodes). Nodes no group selects are not
    /// part of the deployment (the report lists them as unselected).
    pub fn new(
        strategy: &Strategy,
        inventory: &[InventoryNode],
    ) -> Result<Sequencer, SequenceError> {
        strategy.validate().map_err(StrategyError::Invalid)?;
        check_inventory(inventory)?;
        let selected = resolve_members(&strategy.groups, inventory);
        let mut position: Vec<Option<usize>> = vec![None; inventory.len()];
        for members in &selected {
            for &index in members {
                position[index] = Some(0);
            }
        }
        let mut nodes = Vec::new();
        let mut unselected = Vec::new();
        for (index, node) in inventory.iter().enumerate() {
            if position[index].is_some() {
                position[index] = Some(nodes.len());
                nodes.push(NodeState {
                    name: node.name.clone(),
                    status: NodeStatus::NotStarted,
                    phases_done: 0,
                    failed_phase: None,
                    failure: None,
                    last_group: None,
                    busy_with: None,
                    slot: None,
                });
            } else {
                unselected.push(node.name.clone());
            }
        }
        let group_index: HashMap<String, usize> = strategy
            .groups
            .iter()
            .enumerate()
            .map(|(index, group)| (group.name.clone(), index))
            .collect();
        let mut groups: Vec<GroupRun> = strategy
            .groups
            .iter()
            .zip(selected)
            .map(|(group, members)| {
                let mut depends_on: Vec<usize> = group
                    .depends_on
                    .iter()
                    .filter_map(|name| group_index.get(name).copied())
                    .collect();
                depends_on.sort_unstable();
                depends_on.dedup();
                GroupRun {
                    members: members
                        .iter()
                        .filter_map(|&index| position[index])
                        .collect(),
                    depends_on,
                    dependants: Vec::new(),
                    state: GroupStatus::Pending,
                    phase: 0,
                    announced: false,
                    sent: Vec::new(),
                    results: Vec::new(),
                    awaiting: 0,
                    phases: vec![PhaseOutcome::Pending; strategy.phases.len()],
                    reason: None,
                }
            })
            .collect();
        for index in 0..groups.len() {
            for dependency in groups[index].depends_on.clone() {
                groups[dependency].dependants.push(index);
            }
        }
        Ok(Sequencer::from_state(State {
            strategy: strategy.clone(),
            nodes,
            unselected,
            groups,
            order: Vec::new(),
            events: Vec::new(),
            finished: false,
        }))
    }

    fn from_state(state: State) -> Sequencer {
        let node_index = state
            .nodes
            .iter()
            .enumerate()
            .map(|(index, node)| (node.name.clone(), index))
            .collect();
        let group_index = state
            .strategy
            .groups
            .iter()
            .enumerate()
            .map(|(index, group)| (group.name.clone(), index))
            .collect();
        Sequencer {
            state,
            node_index,
            group_index,
        }
    }

    /// Starts whatever can start now and returns what the controller must do: a `StartPhase` for each phase
    /// to run (phases with no node to send are settled on the spot), or `Finished` once every group is done.
    /// Returns nothing while the running phases await results. A `StartPhase` is returned once; see
    /// [`Sequencer::in_flight`] to recover the running phases after a restart.
    pub fn next_actions(&mut self) -> Vec<Action> {
        let mut actions = Vec::new();
        let limit = self.state.strategy.max_concurrent_groups.max(1) as usize;
        loop {
            let mut progressed = false;
            while self.running_count() < limit {
                let Some(group) = self.ready_group() else {
                    break;
                };
                self.start_group(group);
                progressed = true;
            }
            for group in 0..self.state.groups.len() {
                let run = &self.state.groups[group];
                if run.state == GroupStatus::Running && !run.announced {
                    if let Some(action) = self.begin_phase(group) {
                        actions.push(action);
                    }
                    progressed = true;
                }
            }
            if !progressed {
                break;
            }
        }
        if actions.is_empty() && self.running_count() == 0 {
            if !self.state.finished {
                self.state.finished = true;
                let status = self.status();
                self.state
                    .events
                    .push(DeploymentEvent::DeploymentFinished { status });
            }
            actions.push(Action::Finished {
                status: self.status(),
            });
        }
        actions
    }

    /// Records one node's outcome for a running phase. When every node sent has reported, the phase ends
    /// and the group's criteria are checked. Repeating a recorded result is harmless; contradicting it is an
    /// error.
    pub fn record_result(
        &mut self,
        group: &str,
        phase: &str,
        node: &str,
        outcome: NodeOutcome,
    ) -> Result<(), SequenceError> {
        let g = self.running_group(group, phase)?;
        let position = self.slot_of(g, group, phase, node)?;
        match self.state.groups[g].results[position] {
            Some(recorded) if recorded == outcome => return Ok(()),
            Some(recorded) => return Err(conflict(node, group, phase, recorded, outcome)),
            None => {}
        }
        self.record(g, position, outcome);
        if self.state.groups[g].awaiting == 0 {
            self.complete_phase(g, NodeOutcome::NeverReported);
        }
        Ok(())
    }

    /// Records the outcomes of a running phase and ends it: nodes sent but missing from `results` count as
    /// [`NodeOutcome::NeverReported`]. Then the group's criteria are checked. Nothing is recorded if any
    /// result is refused.
    pub fn phase_result(
        &mut self,
        group: &str,
        phase: &str,
        results: &[NodeResult],
    ) -> Result<(), SequenceError> {
        let g = self.running_group(group, phase)?;
        let mut given: HashMap<usize, NodeOutcome> = HashMap::with_capacity(results.len());
        let mut planned = Vec::with_capacity(results.len());
        for result in results {
            let position = self.slot_of(g, group, phase, &result.node)?;
            let recorded =
                self.state.groups[g].results[position].or_else(|| given.get(&position).copied());
            match recorded {
                Some(recorded) if recorded == result.outcome => {}
                Some(recorded) => {
                    return Err(conflict(
                        &result.node,
                        group,
                        phase,
                        recorded,
                        result.outcome,
                    ))
                }
                None => {
                    given.insert(position, result.outcome);
                    planned.push((position, result.outcome));
                }
            }
        }
        for (position, outcome) in planned {
            self.record(g, position, outcome);
        }
        self.complete_phase(g, NodeOutcome::NeverReported);
        Ok(())
    }

    /// Ends a running phase because its timeout passed: nodes that have not reported count as
    /// [`NodeOutcome::TimedOut`], and the group fails whatever its criteria (the seed: a failure based on the
    /// timeouts "will be treated as a failure for the group").
    pub fn phase_timed_out(&mut self, group: &str, phase: &str) -> Result<(), SequenceError> {
        let g = self.running_group(group, phase)?;
        self.complete_phase(g, NodeOutcome::TimedOut);
        Ok(())
    }

    /// The events since the last call, oldest first (they are kept in the state until taken).
    pub fn take_events(&mut self) -> Vec<DeploymentEvent> {
        std::mem::take(&mut self.state.events)
    }

    /// Whether every group is done (the last `next_actions` returned `Finished`).
    pub fn is_finished(&self) -> bool {
        self.state.finished
    }

    /// The deployment's status: `Running` until finished, then how it ended.
    pub fn status(&self) -> DeploymentStatus {
        if !self.state.finished {
            return DeploymentStatus::Running;
        }
        let groups = &self.state.strategy.groups;
        let runs = &self.state.groups;
        if runs
            .iter()
            .zip(groups)
            .any(|(run, group)| group.critical && run.state == GroupStatus::Failed)
        {
            DeploymentStatus::Failed
        } else if runs.iter().any(|run| run.state != GroupStatus::Succeeded)
            || self
                .state
                .nodes
                .iter()
                .any(|node| node.status != NodeStatus::Success)
        {
            DeploymentStatus::SuccessWithFailures
        } else {
            DeploymentStatus::Success
        }
    }

    fn running_count(&self) -> usize {
        self.state
            .groups
            .iter()
            .filter(|run| run.state == GroupStatus::Running)
            .count()
    }

    /// The first pending group (document order) whose dependencies all succeeded and whose unfinished nodes
    /// no running group holds.
    fn ready_group(&self) -> Option<usize> {
        let groups = &self.state.groups;
        let nodes = &self.state.nodes;
        groups.iter().position(|run| {
            run.state == GroupStatus::Pending
                && run
                    .depends_on
                    .iter()
                    .all(|&d| groups[d].state == GroupStatus::Succeeded)
                && run.members.iter().all(|&n| nodes[n].busy_with.is_none())
        })
    }

    fn start_group(&mut self, g: usize) {
        let state = &mut self.state;
        let run = &mut state.groups[g];
        run.state = GroupStatus::Running;
        run.phase = 0;
        run.announced = false;
        for &n in &run.members {
            let node = &mut state.nodes[n];
            if !node.status.is_final() {
                node.busy_with = Some(g);
            }
        }
        state.order.push(g);
        state.events.push(DeploymentEvent::GroupStarted {
            group: state.strategy.groups[g].name.clone(),
        });
    }

    /// Sends the group's current phase to the nodes ready for it; settles it at once when there are none.
    fn begin_phase(&mut self, g: usize) -> Option<Action> {
        let state = &mut self.state;
        let run = &mut state.groups[g];
        let k = run.phase;
        let sent: Vec<usize> = run
            .members
            .iter()
            .copied()
            .filter(|&n| !state.nodes[n].status.is_final() && state.nodes[n].phases_done == k)
            .collect();
        run.phases[k] = PhaseOutcome::Running;
        let phase = &state.strategy.phases[k];
        let group = state.strategy.groups[g].name.clone();
        let names: Vec<String> = sent.iter().map(|&n| state.nodes[n].name.clone()).collect();
        state.events.push(DeploymentEvent::PhaseStarted {
            group: group.clone(),
            phase: phase.name.clone(),
            graph_type: phase.graph_type.clone(),
            nodes: names.clone(),
        });
        if sent.is_empty() {
            self.complete_phase(g, NodeOutcome::NeverReported);
            return None;
        }
        for (position, &n) in sent.iter().enumerate() {
            state.nodes[n].slot = Some(Slot { group: g, position });
        }
        run.results = vec![None; sent.len()];
        run.awaiting = sent.len();
        run.sent = sent;
        run.announced = true;
        Some(Action::StartPhase {
            group,
            phase: phase.name.clone(),
            graph_type: phase.graph_type.clone(),
            timeout_secs: state.strategy.timeout_of(phase),
            nodes: names,
        })
    }

    /// Applies one outcome to the node at `position` of the group's running phase.
    fn record(&mut self, g: usize, position: usize, outcome: NodeOutcome) {
        let state = &mut self.state;
        let run = &mut state.groups[g];
        if run.results[position].is_some() {
            return;
        }
        run.results[position] = Some(outcome);
        run.awaiting -= 1;
        let k = run.phase;
        let node = &mut state.nodes[run.sent[position]];
        let from = node.status;
        if outcome.is_success() {
            node.phases_done = k + 1;
            node.status = if k + 1 >= state.strategy.phases.len() {
                NodeStatus::Success
            } else {
                NodeStatus::Prepared
            };
        } else {
            node.status = NodeStatus::Failure;
            node.failed_phase = Some(k);
            node.failure = Some(outcome);
        }
        node.last_group = Some(g);
        state.events.push(DeploymentEvent::NodeStatusChanged {
            node: node.name.clone(),
            group: state.strategy.groups[g].name.clone(),
            phase: state.strategy.phases[k].name.clone(),
            outcome,
            from,
            to: node.status,
        });
    }

    /// Ends the group's running phase (unreported nodes get `missing`), checks the criteria and moves the
    /// group on: next phase, succeeded, or failed with its dependants.
    fn complete_phase(&mut self, g: usize, missing: NodeOutcome) {
        for position in 0..self.state.groups[g].results.len() {
            self.record(g, position, missing);
        }
        let state = &mut self.state;
        let run = &mut state.groups[g];
        let k = run.phase;
        let mut timed_out = Vec::new();
        for (&n, result) in run.sent.iter().zip(&run.results) {
            state.nodes[n].slot = None;
            if matches!(
                result,
                Some(NodeOutcome::TimedOut | NodeOutcome::NeverReported)
            ) {
                timed_out.push(state.nodes[n].name.clone());
            }
        }
        run.sent.clear();
        run.results.clear();
        run.awaiting = 0;
        run.announced = false;
        let total = run.members.len() as u64;
        let succeeded = run
            .members
            .iter()
            .filter(|&&n| {
                state.nodes[n].status != NodeStatus::Failure && state.nodes[n].phases_done > k
            })
            .count() as u64;
        let group = &state.strategy.groups[g];
        let phase_name = state.strategy.phases[k].name.clone();
        let failures = evaluate(group.success_criteria.as_ref(), succeeded, total);
        // A phase that reached its timeout fails its group, whatever the criteria (the seed).
        let timeout_secs = (missing == NodeOutcome::TimedOut && !timed_out.is_empty())
            .then(|| state.strategy.timeout_of(&state.strategy.phases[k]));
        let passed = failures.is_empty() && timeout_secs.is_none();
        state.events.push(DeploymentEvent::PhaseFinished {
            group: group.name.clone(),
            phase: phase_name.clone(),
            passed,
            succeeded,
            failed: total - succeeded,
            total,
        });
        if passed {
            run.phases[k] = PhaseOutcome::Succeeded {
                succeeded,
                failed: total - succeeded,
                total,
            };
            if k + 1 < state.strategy.phases.len() {
                run.phase = k + 1;
            } else {
                let name = group.name.clone();
                self.end_group(g, GroupStatus::Succeeded);
                self.state
                    .events
                    .push(DeploymentEvent::GroupSucceeded { group: name });
            }
            return;
        }
        run.phases[k] = PhaseOutcome::Failed {
            succeeded,
            failed: total - succeeded,
            total,
            failures: failures.clone(),
            timed_out: timed_out.clone(),
            timeout_secs,
        };
        for later in run.phases.iter_mut().skip(k + 1) {
            *later = PhaseOutcome::Skipped {
                cause: SkipCause::EarlierPhaseFailed {
                    phase: phase_name.clone(),
                },
            };
        }
        let reason = match timeout_secs {
            None => FailureReason::Criteria {
                phase: phase_name,
                failures,
            },
            Some(after_secs) => FailureReason::Timeout {
                phase: phase_name,
                nodes: timed_out,
                failures,
                after_secs,
            },
        };
        self.fail_group(g, reason);
        self.fail_dependants(g);
    }

    fn end_group(&mut self, g: usize, outcome: GroupStatus) {
        let state = &mut self.state;
        let run = &mut state.groups[g];
        run.state = outcome;
        for &n in &run.members {
            if state.nodes[n].busy_with == Some(g) {
                state.nodes[n].busy_with = None;
            }
        }
    }

    fn fail_group(&mut self, g: usize, reason: FailureReason) {
        self.end_group(g, GroupStatus::Failed);
        let group = &self.state.strategy.groups[g];
        self.state.events.push(DeploymentEvent::GroupFailed {
            group: group.name.clone(),
            critical: group.critical,
            reason: reason.clone(),
        });
        self.state.groups[g].reason = Some(reason);
    }

    /// Fails every pending group that depends on `root`, transitively, without attempting them.
    fn fail_dependants(&mut self, root: usize) {
        let root_name = self.state.strategy.groups[root].name.clone();
        let mut queue = VecDeque::from([root]);
        while let Some(parent) = queue.pop_front() {
            let parent_name = self.state.strategy.groups[parent].name.clone();
            for d in self.state.groups[parent].dependants.clone() {
                if self.state.groups[d].state != GroupStatus::Pending {
                    continue;
                }
                for phase in &mut self.state.groups[d].phases {
                    *phase = PhaseOutcome::Skipped {
                        cause: SkipCause::DependencyFailed {
                            dependency: parent_name.clone(),
                        },
                    };
                }
                self.state.order.push(d);
                self.fail_group(
                    d,
                    FailureReason::Dependency {
                        dependency: parent_name.clone(),
                        root: root_name.clone(),
                    },
                );
                queue.push_back(d);
            }
        }
    }

    /// The group running `phase` and waiting for its results.
    fn running_group(&self, group: &str, phase: &str) -> Result<usize, SequenceError> {
        let g = *self
            .group_index
            .get(group)
            .ok_or_else(|| SequenceError::UnknownGroup(group.to_string()))?;
        if self.state.strategy.phase(phase).is_none() {
            return Err(SequenceError::UnknownPhase(phase.to_string()));
        }
        let run = &self.state.groups[g];
        if run.state != GroupStatus::Running
            || !run.announced
            || self.state.strategy.phases[run.phase].name != phase
        {
            return Err(SequenceError::PhaseNotRunning {
                group: group.to_string(),
                phase: phase.to_string(),
            });
        }
        Ok(g)
    }

    /// The node's position in the running phase of group `g`.
    fn slot_of(
        &self,
        g: usize,
        group: &str,
        phase: &str,
        node: &str,
    ) -> Result<usize, SequenceError> {
        let n = *self
            .node_index
            .get(node)
            .ok_or_else(|| SequenceError::UnknownNode(node.to_string()))?;
        match self.state.nodes[n].slot {
            Some(slot) if slot.group == g => Ok(slot.position),
            _ => Err(SequenceError::NodeNotSent {
                node: node.to_string(),
                group: group.to_string(),
                phase: phase.to_string(),
            }),
        }
    }
}

fn conflict(
    node: &str,
    group: &str,
    phase: &str,
    recorded: NodeOutcome,
    given: NodeOutcome,
) -> SequenceError {
    SequenceError::ConflictingResult {
        node: node.to_string(),
        group: group.to_string(),
        phase: phase.to_string(),
        recorded,
        given,
    }
}
