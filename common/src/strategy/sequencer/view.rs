//! What the sequencer tells about a deployment without changing it: the running phases, node and group
//! states, and the report.

use super::{InFlightPhase, Sequencer};
use crate::strategy::model::Strategy;
use crate::strategy::report::{GroupReport, NodeReport, PhaseReport, Report};
use crate::strategy::status::{GroupStatus, NodeOutcome, NodeStatus};

impl Sequencer {
    /// The strategy being run.
    pub fn strategy(&self) -> &Strategy {
        &self.state.strategy
    }

    /// The phases handed to the controller that still await results, in group order.
    pub fn in_flight(&self) -> Vec<InFlightPhase> {
        let strategy = &self.state.strategy;
        self.state
            .groups
            .iter()
            .enumerate()
            .filter(|(_, run)| run.state == GroupStatus::Running && run.announced)
            .map(|(g, run)| {
                let phase = &strategy.phases[run.phase];
                InFlightPhase {
                    group: strategy.groups[g].name.clone(),
                    phase: phase.name.clone(),
                    graph_type: phase.graph_type.clone(),
                    timeout_secs: strategy.timeout_of(phase),
                    nodes: run
                        .sent
                        .iter()
                        .map(|&n| self.state.nodes[n].name.clone())
                        .collect(),
                    awaiting: run
                        .sent
                        .iter()
                        .zip(&run.results)
                        .filter(|(_, result)| result.is_none())
                        .map(|(&n, _)| self.state.nodes[n].name.clone())
                        .collect(),
                }
            })
            .collect()
    }

    /// A node's status, if the node is part of the deployment.
    pub fn node_status(&self, node: &str) -> Option<NodeStatus> {
        self.node_index
            .get(node)
            .map(|&n| self.state.nodes[n].status)
    }

    /// One node's part of the report, if the node is part of the deployment (its groups left out).
    pub fn node_report(&self, node: &str) -> Option<NodeReport> {
        let n = *self.node_index.get(node)?;
        Some(self.node_line(n, Vec::new()))
    }

    fn node_line(&self, n: usize, groups: Vec<String>) -> NodeReport {
        let strategy = &self.state.strategy;
        let node = &self.state.nodes[n];
        let phase_name = |index: usize| strategy.phases[index].name.clone();
        NodeReport {
            name: node.name.clone(),
            status: node.status,
            groups,
            sent_by: node.last_group.map(|g| strategy.groups[g].name.clone()),
            phases_passed: (0..node.phases_done).map(phase_name).collect(),
            failed_phase: node.failed_phase.map(phase_name),
            failure: node.failure,
            failure_detail: match (node.failure, node.failed_phase) {
                (Some(NodeOutcome::TimedOut), Some(k)) => Some(format!(
                    "timed out after {} s",
                    strategy.timeout_of(&strategy.phases[k])
                )),
                _ => None,
            },
        }
    }

    /// A group's state, if the strategy has the group.
    pub fn group_state(&self, group: &str) -> Option<GroupStatus> {
        self.group_index
            .get(group)
            .map(|&g| self.state.groups[g].state)
    }

    /// The report: overall status, each group's state, reason and nodes, each node's status.
    pub fn report(&self) -> Report {
        let strategy = &self.state.strategy;
        let nodes = &self.state.nodes;
        let phase_name = |index: usize| strategy.phases[index].name.clone();
        let mut node_groups: Vec<Vec<String>> = vec![Vec::new(); nodes.len()];
        for (g, run) in self.state.groups.iter().enumerate() {
            for &n in &run.members {
                node_groups[n].push(strategy.groups[g].name.clone());
            }
        }
        let groups = self
            .state
            .groups
            .iter()
            .zip(&strategy.groups)
            .map(|(run, group)| {
                let names_with = |status: NodeStatus| -> Vec<String> {
                    run.members
                        .iter()
                        .filter(|&&n| nodes[n].status == status)
                        .map(|&n| nodes[n].name.clone())
                        .collect()
                };
                GroupReport {
                    name: group.name.clone(),
                    critical: group.critical,
                    state: run.state,
                    current_phase: (run.state == GroupStatus::Running)
                        .then(|| phase_name(run.phase)),
                    reason: run.reason.clone(),
                    depends_on: group.depends_on.clone(),
                    success_criteria: group.success_criteria.clone(),
                    phases: run
                        .phases
                        .iter()
                        .enumerate()
                        .map(|(index, outcome)| PhaseReport {
                            phase: phase_name(index),
                            outcome: outcome.clone(),
                        })
                        .collect(),
                    nodes: run.members.iter().map(|&n| nodes[n].name.clone()).collect(),
                    succeeded: names_with(NodeStatus::Success),
                    prepared: names_with(NodeStatus::Prepared),
                    failed: names_with(NodeStatus::Failure),
                    not_started: names_with(NodeStatus::NotStarted),
                    running: Vec::new(),
                    cancelled: Vec::new(),
                }
            })
            .collect();
        let node_reports = (0..nodes.len())
            .zip(node_groups)
            .map(|(n, groups)| self.node_line(n, groups))
            .collect();
        Report {
            strategy: strategy.name.clone(),
            status: self.status(),
            failed_critical_groups: self
                .state
                .groups
                .iter()
                .zip(&strategy.groups)
                .filter(|(run, group)| group.critical && run.state == GroupStatus::Failed)
                .map(|(_, group)| group.name.clone())
                .collect(),
            phases: strategy
                .phases
                .iter()
                .map(|phase| phase.name.clone())
                .collect(),
            order: self
                .state
                .order
                .iter()
                .map(|&g| strategy.groups[g].name.clone())
                .collect(),
            groups,
            succeeded_nodes: nodes
                .iter()
                .filter(|node| node.status == NodeStatus::Success)
                .map(|node| node.name.clone())
                .collect(),
            nodes: node_reports,
            unselected_nodes: self.state.unselected.clone(),
        }
    }
}
