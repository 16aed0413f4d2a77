//! Offline checks of a strategy against an inventory: each group's nodes, the processing order, warnings;
//! and simulation of a whole deployment with chosen nodes failing chosen phases, through the same
//! [`Sequencer`] the controller drives.

use std::collections::{HashMap, HashSet};
use std::fmt::{self, Write as _};
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::criteria::CriterionFailure;
use super::inventory::InventoryNode;
use super::model::{Strategy, SuccessCriteria};
use super::report::{render_table, Report};
use super::sequencer::{SequenceError, Sequencer};
use super::status::{Action, DeploymentEvent, NodeOutcome, NodeResult};

/// What `check` found: the groups' nodes, the order they would run in, and warnings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckReport {
    /// The strategy's name, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// The phases each group goes through.
    pub phases: Vec<PhaseCheck>,
    /// How many groups may run at once.
    pub max_concurrent_groups: u32,
    /// Each group with the nodes it selects, in document order.
    pub groups: Vec<GroupCheck>,
    /// The order groups are processed in when every node succeeds.
    pub order: Vec<String>,
    /// Inventory nodes no group selects (they would not be deployed).
    pub unselected_nodes: Vec<String>,
    /// Things that are valid but probably not what the author meant.
    pub warnings: Vec<Warning>,
}

/// A phase as `check` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseCheck {
    /// The phase's name.
    pub name: String,
    /// The graph type it runs.
    pub graph_type: String,
    /// Its timeout in seconds.
    pub timeout_secs: u64,
}

/// A group as `check` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupCheck {
    /// The group's name.
    pub name: String,
    /// Whether it is critical.
    pub critical: bool,
    /// The groups it depends on.
    pub depends_on: Vec<String>,
    /// Its criteria, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_criteria: Option<SuccessCriteria>,
    /// The nodes it selects, in inventory order.
    pub nodes: Vec<String>,
}

/// Something valid but suspicious in a strategy applied to an inventory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Warning {
    /// The strategy has no group, so nothing would be deployed.
    NoGroups,
    /// Some inventory nodes are in no group.
    UnselectedNodes {
        /// Those nodes.
        nodes: Vec<String>,
    },
    /// A group selects no node: it counts as 100% successful, and fails any minimum above 0.
    EmptyGroup {
        /// The group.
        group: String,
    },
    /// A group's criteria cannot be met even if every one of its nodes succeeds.
    UnreachableCriteria {
        /// The group.
        group: String,
        /// The criteria that would still fail.
        failures: Vec<CriterionFailure>,
    },
    /// A selector names a node the inventory does not have.
    UnknownNodeName {
        /// The group.
        group: String,
        /// The name.
        node: String,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::NoGroups => write!(f, "the strategy has no group: no node will be deployed"),
            Warning::UnselectedNodes { nodes } => write!(
                f,
                "{} node{} selected by no group will not be deployed: {}",
                nodes.len(),
                if nodes.len() == 1 { "" } else { "s" },
                nodes.join(", ")
            ),
            Warning::EmptyGroup { group } => write!(
                f,
                "group {group} selects no node: it counts as 100% successful, but fails a minimum_successful_nodes above 0"
            ),
            Warning::UnreachableCriteria { group, failures } => {
                let list: Vec<String> = failures.iter().map(ToString::to_string).collect();
                write!(f, "group {group} fails even if all its nodes succeed: {}", list.join("; "))
            }
            Warning::UnknownNodeName { group, node } => {
                write!(f, "group {group} names node {node}, which is not in the inventory")
            }
        }
    }
}

/// Each group's nodes, the order groups are processed in when every node succeeds (by running the
/// sequencer), and warnings.
pub fn check(
    strategy: &Strategy,
    inventory: &[InventoryNode],
) -> Result<CheckReport, SequenceError> {
    let simulation = simulate(strategy, inventory, &[])?;
    let report = &simulation.report;
    let known: HashSet<&str> = inventory.iter().map(|node| node.name.as_str()).collect();
    let mut warnings = Vec::new();
    if strategy.groups.is_empty() {
        warnings.push(Warning::NoGroups);
    }
    if !report.unselected_nodes.is_empty() {
        warnings.push(Warning::UnselectedNodes {
            nodes: report.unselected_nodes.clone(),
        });
    }
    let mut groups = Vec::with_capacity(strategy.groups.len());
    for (group, group_report) in strategy.groups.iter().zip(&report.groups) {
        let total = group_report.nodes.len() as u64;
        if total == 0 {
            warnings.push(Warning::EmptyGroup {
                group: group.name.clone(),
            });
        }
        if let Some(criteria) = &group.success_criteria {
            let failures = criteria.evaluate(total, total);
            if !failures.is_empty() {
                warnings.push(Warning::UnreachableCriteria {
                    group: group.name.clone(),
                    failures,
                });
            }
        }
        let mut reported = HashSet::new();
        for selector in &group.selectors {
            for name in &selector.node_names {
                if !known.contains(name.as_str()) && reported.insert(name.as_str()) {
                    warnings.push(Warning::UnknownNodeName {
                        group: group.name.clone(),
                        node: name.clone(),
                    });
                }
            }
        }
        groups.push(GroupCheck {
            name: group.name.clone(),
            critical: group.critical,
            depends_on: group.depends_on.clone(),
            success_criteria: group.success_criteria.clone(),
            nodes: group_report.nodes.clone(),
        });
    }
    Ok(CheckReport {
        strategy: strategy.name.clone(),
        phases: strategy
            .phases
            .iter()
            .map(|phase| PhaseCheck {
                name: phase.name.clone(),
                graph_type: phase.graph_type.clone(),
                timeout_secs: strategy.timeout_of(phase),
            })
            .collect(),
        max_concurrent_groups: strategy.max_concurrent_groups,
        groups,
        order: report.order.clone(),
        unselected_nodes: report.unselected_nodes.clone(),
        warnings,
    })
}

impl CheckReport {
    /// The check as text: phases, a table of groups, the order, warnings.
    pub fn to_text(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        if let Some(name) = &self.strategy {
            writeln!(out, "Strategy {name}")?;
        }
        let phases: Vec<String> = self
            .phases
            .iter()
            .map(|phase| {
                format!(
                    "{} (graph {}, timeout {}s)",
                    phase.name, phase.graph_type, phase.timeout_secs
                )
            })
            .collect();
        writeln!(out, "Phases: {}", phases.join(" > "))?;
        writeln!(out, "Groups at a time: {}", self.max_concurrent_groups)?;
        writeln!(out)?;
        let rows: Vec<Vec<String>> = self
            .groups
            .iter()
            .map(|group| {
                vec![
                    group.name.clone(),
                    if group.critical { "yes" } else { "no" }.to_string(),
                    if group.depends_on.is_empty() {
                        "-".to_string()
                    } else {
                        group.depends_on.join(", ")
                    },
                    criteria_text(group.success_criteria.as_ref()),
                    group.nodes.len().to_string(),
                    group.nodes.join(", "),
                ]
            })
            .collect();
        out.push_str(&render_table(
            &[
                "GROUP",
                "CRITICAL",
                "DEPENDS ON",
                "CRITERIA",
                "COUNT",
                "NODES",
            ],
            &rows,
        ));
        writeln!(out)?;
        writeln!(out, "Order: {}", self.order.join(" > "))?;
        if !self.warnings.is_empty() {
            writeln!(out)?;
            for warning in &self.warnings {
                writeln!(out, "warning: {warning}")?;
            }
        }
        f.write_str(&out)
    }
}

/// Criteria in a few words: `90% 3+ <=1 failed`, or `-` for none.
fn criteria_text(criteria: Option<&SuccessCriteria>) -> String {
    let Some(criteria) = criteria else {
        return "-".to_string();
    };
    let mut parts = Vec::new();
    if let Some(percent) = criteria.percent_successful_nodes {
        parts.push(format!("{percent}%"));
    }
    if let Some(minimum) = criteria.minimum_successful_nodes {
        parts.push(format!("min {minimum}"));
    }
    if let Some(maximum) = criteria.maximum_failed_nodes {
        parts.push(format!("max {maximum} failed"));
    }
    if parts.is_empty() {
        "-".to_string()
    } else {
        parts.join(", ")
    }
}

/// A node made to fail a phase in a simulation: `node:phase` (failed), or `node:phase:OUTCOME` with
/// OUTCOME one of `failed`, `timed_out` (or `timeout`), `never_reported`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SimulatedFailure {
    /// The node.
    pub node: String,
    /// The phase it fails.
    pub phase: String,
    /// How it fails (never `succeeded`).
    pub outcome: NodeOutcome,
}

impl fmt::Display for SimulatedFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{} ({})", self.node, self.phase, self.outcome)
    }
}

impl SimulatedFailure {
    /// Why this failure never applied in a simulation that ended with `report`, as a sentence.
    pub fn why_never_applied(&self, report: &Report) -> String {
        let (node, phase) = (&self.node, &self.phase);
        if report.unselected_nodes.iter().any(|n| n == node) {
            return format!("{self} never applied: no group selects {node}");
        }
        match report.node(node) {
            Some(n) if n.failed_phase.is_some() && n.failed_phase.as_deref() != Some(phase) => format!(
                "{self} never applied: {node} failed {} before reaching {phase}",
                n.failed_phase.as_deref().unwrap_or_default()
            ),
            Some(n) => format!(
                "{self} never applied: {node} never reached {phase} (it ended {}; the groups that select it \
                 did not run {phase} for it)",
                n.status
            ),
            None => format!("{self} never applied: {node} is not in the deployment"),
        }
    }
}

/// A `--fail` argument that is not `node:phase[:outcome]`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid failure {text:?}: {reason} (expected NODE:PHASE or NODE:PHASE:OUTCOME, OUTCOME one of failed, timed_out, never_reported)")]
pub struct SimulatedFailureError {
    /// The text given.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

impl FromStr for SimulatedFailure {
    type Err = SimulatedFailureError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = |reason: &str| SimulatedFailureError {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let parts: Vec<&str> = text.split(':').collect();
        let (node, phase, outcome) = match parts.as_slice() {
            [node, phase] => (*node, *phase, NodeOutcome::Failed),
            [node, phase, outcome] => {
                let outcome = match *outcome {
                    "failed" | "fail" => NodeOutcome::Failed,
                    "timed_out" | "timed-out" | "timeout" => NodeOutcome::TimedOut,
                    "never_reported" | "never-reported" => NodeOutcome::NeverReported,
                    _ => return Err(error("unknown outcome")),
                };
                (*node, *phase, outcome)
            }
            _ => return Err(error("wrong number of parts")),
        };
        if node.is_empty() || phase.is_empty() {
            return Err(error("the node and the phase must not be empty"));
        }
        Ok(SimulatedFailure {
            node: node.to_string(),
            phase: phase.to_string(),
            outcome,
        })
    }
}

/// The result of a simulation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Simulation {
    /// The final report.
    pub report: Report,
    /// Every event, in order.
    pub events: Vec<DeploymentEvent>,
    /// Every action the sequencer asked for, in order (the last is `Finished`).
    pub actions: Vec<Action>,
    /// Failures asked for that never applied (the node was never sent in that phase).
    pub unused_failures: Vec<SimulatedFailure>,
}

/// Runs the whole sequencing with every node succeeding every phase except the given failures, answering
/// each phase at once. Failures must name inventory nodes and strategy phases.
pub fn simulate(
    strategy: &Strategy,
    inventory: &[InventoryNode],
    failures: &[SimulatedFailure],
) -> Result<Simulation, SequenceError> {
    let mut sequencer = Sequencer::new(strategy, inventory)?;
    let known: HashSet<&str> = inventory.iter().map(|node| node.name.as_str()).collect();
    let mut planned: HashMap<(&str, &str), NodeOutcome> = HashMap::with_capacity(failures.len());
    for failure in failures {
        if !known.contains(failure.node.as_str()) {
            return Err(SequenceError::UnknownNode(failure.node.clone()));
        }
        if strategy.phase(&failure.phase).is_none() {
            return Err(SequenceError::UnknownPhase(failure.phase.clone()));
        }
        planned.insert(
            (failure.node.as_str(), failure.phase.as_str()),
            failure.outcome,
        );
    }
    let mut used: HashSet<(String, String)> = HashSet::new();
    let mut actions = Vec::new();
    let mut events = Vec::new();
    loop {
        let next = sequencer.next_actions();
        let finished = next
            .iter()
            .any(|action| matches!(action, Action::Finished { .. }));
        for action in &next {
            if let Action::StartPhase {
                group,
                phase,
                nodes,
                ..
            } = action
            {
                let mut results = Vec::with_capacity(nodes.len());
                for node in nodes {
                    let outcome = planned
                        .get(&(node.as_str(), phase.as_str()))
                        .copied()
                        .unwrap_or(NodeOutcome::Succeeded);
                    if outcome != NodeOutcome::Succeeded {
                        used.insert((node.clone(), phase.clone()));
                    }
                    // A node that never reports is simply left out of the results.
                    if outcome != NodeOutcome::NeverReported {
                        results.push(NodeResult::new(node.clone(), outcome));
                    }
                }
                sequencer.phase_result(group, phase, &results)?;
            }
        }
        actions.extend(next);
        events.extend(sequencer.take_events());
        if finished {
            break;
        }
    }
    let unused_failures = failures
        .iter()
        .filter(|failure| failure.outcome != NodeOutcome::Succeeded)
        .filter(|failure| !used.contains(&(failure.node.clone(), failure.phase.clone())))
        .cloned()
        .collect();
    Ok(Simulation {
        report: sequencer.report(),
        events,
        actions,
        unused_failures,
    })
}
