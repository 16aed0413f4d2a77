//! The deployment report: overall status, each group's state, reason and nodes, each node's status; as
//! serde data and as text (the seed's processing diagram followed by tables) for `plinthctl`.

use std::collections::HashMap;
use std::fmt::{self, Write as _};

use serde::{Deserialize, Serialize};

use super::model::SuccessCriteria;
use super::status::{
    DeploymentStatus, FailureReason, GroupStatus, NodeOutcome, NodeStatus, PhaseOutcome, SkipCause,
};
use crate::wire::ResultStatus;

/// Where a deployment stands, or how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// The strategy's name, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// The overall status.
    pub status: DeploymentStatus,
    /// Critical groups that failed (the deployment then fails).
    pub failed_critical_groups: Vec<String>,
    /// The phases, in order.
    pub phases: Vec<String>,
    /// Groups in the order they were processed (started, or failed because of a dependency).
    pub order: Vec<String>,
    /// Every group, in document order.
    pub groups: Vec<GroupReport>,
    /// Every node of the deployment (selected by some group), in inventory order.
    pub nodes: Vec<NodeReport>,
    /// Nodes that finished every phase: the ones whose pending roles become deployed.
    pub succeeded_nodes: Vec<String>,
    /// Inventory nodes no group selects; they are not part of the deployment.
    pub unselected_nodes: Vec<String>,
}

/// One group in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupReport {
    /// The group's name.
    pub name: String,
    /// Whether it is critical.
    pub critical: bool,
    /// Its state.
    pub state: GroupStatus,
    /// The phase it is running, while running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_phase: Option<String>,
    /// Why it failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<FailureReason>,
    /// The groups it depends on.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Its success criteria, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_criteria: Option<SuccessCriteria>,
    /// How each phase went, in phase order.
    pub phases: Vec<PhaseReport>,
    /// Every node it selects.
    pub nodes: Vec<String>,
    /// Its nodes that finished every phase.
    pub succeeded: Vec<String>,
    /// Its nodes that passed some phases but not all (left prepared when the group failed its criteria).
    pub prepared: Vec<String>,
    /// Its nodes that failed a phase (here or in another group).
    pub failed: Vec<String>,
    /// Its nodes never attempted.
    pub not_started: Vec<String>,
    /// Its nodes running a phase now (only [`Report::as_seen`] fills it: the sequencer keeps the status
    /// a node had before its phase).
    #[serde(default)]
    pub running: Vec<String>,
    /// Its nodes that were running when the deployment was cancelled (see [`Report::as_seen`]).
    #[serde(default)]
    pub cancelled: Vec<String>,
}

/// One phase of one group in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseReport {
    /// The phase's name.
    pub phase: String,
    /// How it went.
    pub outcome: PhaseOutcome,
}

/// One node in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeReport {
    /// The node's name.
    pub name: String,
    /// Its status.
    pub status: NodeStatus,
    /// The groups that select it, in document order.
    pub groups: Vec<String>,
    /// The group that last sent it to a phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_by: Option<String>,
    /// The phases it passed.
    pub phases_passed: Vec<String>,
    /// The phase it failed, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_phase: Option<String>,
    /// How it failed that phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<NodeOutcome>,
    /// How it failed, in words (`timed out after 60 s` when its phase reached its timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_detail: Option<String>,
}

impl NodeReport {
    /// Why the node failed, in one line (`task boom failed in phase deploy`, `timed out after 60 s in
    /// phase deploy`), given the task that failed it when one did; `None` when it did not fail. Every
    /// view that says why a node failed (the report, the summary, the node's record) says it with this.
    pub fn failure_reason(&self, failed_task: Option<(&str, ResultStatus)>) -> Option<String> {
        let phase = self.failed_phase.as_ref()?;
        Some(match (failed_task, self.failure, &self.failure_detail) {
            // The phase reached its timeout: "timed out after N s".
            (_, _, Some(detail)) => format!("{detail} in phase {phase}"),
            (Some((task, status)), _, None) => {
                let how = match status {
                    ResultStatus::Failed => "failed",
                    ResultStatus::TimedOut => "timed out",
                    ResultStatus::Interrupted => "was interrupted",
                    _ => "ended",
                };
                format!("task {task} {how} in phase {phase}")
            }
            (None, Some(outcome), None) => format!("{outcome} in phase {phase}"),
            (None, None, None) => format!("failed phase {phase}"),
        })
    }
}

/// One step of a deployment as Shipyard's `describe action` lists them: a phase of a group, in the order
/// groups were processed (groups not reached yet last, in document order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// 1-based position.
    pub index: usize,
    /// `PHASE GROUP`, as the seed's processing diagram names it.
    pub name: String,
    /// The group.
    pub group: String,
    /// The phase.
    pub phase: String,
    /// `pending`, `running`, `success`, `failed` or `skipped`.
    pub state: String,
    /// How it went, in the seed's words (`SUCCESS`, `FAILED, due to dependency (ntp-node)`, ...).
    pub detail: String,
}

impl Report {
    /// The deployment's steps: each phase of each group, in processing order.
    pub fn steps(&self) -> Vec<Step> {
        let listed = |name: &str| self.order.iter().any(|processed| processed == name);
        let unprocessed = self.groups.iter().filter(|group| !listed(&group.name));
        self.order
            .iter()
            .filter_map(|name| self.group(name))
            .chain(unprocessed)
            .flat_map(|group| {
                group.phases.iter().map(move |phase| {
                    let state = match &phase.outcome {
                        PhaseOutcome::Pending => "pending",
                        PhaseOutcome::Running => "running",
                        PhaseOutcome::Cancelled => "cancelled",
                        PhaseOutcome::Succeeded { .. } => "success",
                        PhaseOutcome::Failed { .. } => "failed",
                        PhaseOutcome::Skipped { .. } => "skipped",
                    };
                    (group, phase, state)
                })
            })
            .enumerate()
            .map(|(index, (group, phase, state))| Step {
                index: index + 1,
                name: format!("{} {}", phase.phase, group.name),
                group: group.name.clone(),
                phase: phase.phase.clone(),
                state: state.to_string(),
                detail: phase_text(&phase.outcome),
            })
            .collect()
    }

    /// The report as every view shows it (the API's report and summary, `plinthctl`, the console), so
    /// that none can disagree with another: a node holding a list of a phase not ended (`in_flight`:
    /// node → phase) is `running`, or `cancelled` when the deployment was cancelled under it; each
    /// group's nodes are sorted by those statuses; a cancelled deployment's pending and running groups
    /// are `cancelled`, its running phases `CANCELLED` and its pending ones skipped.
    pub fn as_seen(mut self, in_flight: &HashMap<String, String>, cancelled: bool) -> Report {
        for node in &mut self.nodes {
            if in_flight.contains_key(&node.name) && !node.status.is_final() {
                node.status = if cancelled {
                    NodeStatus::Cancelled
                } else {
                    NodeStatus::Running
                };
            }
        }
        let status: HashMap<&str, NodeStatus> = self
            .nodes
            .iter()
            .map(|n| (n.name.as_str(), n.status))
            .collect();
        for group in &mut self.groups {
            let (mut succeeded, mut prepared, mut failed) = (Vec::new(), Vec::new(), Vec::new());
            let (mut not_started, mut running, mut stopped) = (Vec::new(), Vec::new(), Vec::new());
            for name in &group.nodes {
                let bucket = match status.get(name.as_str()) {
                    Some(NodeStatus::Success) => &mut succeeded,
                    Some(NodeStatus::Prepared) => &mut prepared,
                    Some(NodeStatus::Failure) => &mut failed,
                    Some(NodeStatus::Running) => &mut running,
                    Some(NodeStatus::Cancelled) => &mut stopped,
                    Some(NodeStatus::NotStarted) | None => &mut not_started,
                };
                bucket.push(name.clone());
            }
            (group.succeeded, group.prepared, group.failed) = (succeeded, prepared, failed);
            (group.not_started, group.running, group.cancelled) = (not_started, running, stopped);
            if cancelled && matches!(group.state, GroupStatus::Pending | GroupStatus::Running) {
                group.state = GroupStatus::Cancelled;
                group.current_phase = None;
                for phase in &mut group.phases {
                    match phase.outcome {
                        PhaseOutcome::Running => phase.outcome = PhaseOutcome::Cancelled,
                        PhaseOutcome::Pending => {
                            phase.outcome = PhaseOutcome::Skipped {
                                cause: SkipCause::Cancelled,
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        self
    }

    /// The group with this name.
    pub fn group(&self, name: &str) -> Option<&GroupReport> {
        self.groups.iter().find(|group| group.name == name)
    }

    /// The node with this name.
    pub fn node(&self, name: &str) -> Option<&NodeReport> {
        self.nodes.iter().find(|node| node.name == name)
    }

    /// The report as text: the processing diagram, then a table of groups and a table of nodes.
    pub fn to_text(&self) -> String {
        self.to_string()
    }

    fn write_diagram(&self, out: &mut String) -> fmt::Result {
        let mut lines: Vec<Vec<(String, String)>> = Vec::new();
        let listed = |name: &str| self.order.iter().any(|processed| processed == name);
        let unprocessed = self.groups.iter().filter(|group| !listed(&group.name));
        for group in self
            .order
            .iter()
            .filter_map(|name| self.group(name))
            .chain(unprocessed)
        {
            lines.push(
                group
                    .phases
                    .iter()
                    .map(|phase| {
                        (
                            format!("{} {}", phase.phase, group.name),
                            phase_text(&phase.outcome),
                        )
                    })
                    .collect(),
            );
        }
        let width = lines
            .iter()
            .flatten()
            .map(|(label, _)| label.len())
            .max()
            .unwrap_or(0)
            + 3;
        writeln!(out, "Start")?;
        writeln!(out, "|")?;
        for (index, group_lines) in lines.iter().enumerate() {
            if index > 0 {
                writeln!(out, "V")?;
            }
            for (label, result) in group_lines {
                writeln!(out, "| {label:<width$}<{result}>")?;
            }
        }
        writeln!(out, "|")?;
        match self.status {
            DeploymentStatus::Running => writeln!(out, "(running)"),
            DeploymentStatus::Success => writeln!(out, "Finish (success)"),
            DeploymentStatus::SuccessWithFailures => {
                writeln!(out, "Finish (success with some nodes/groups failed)")
            }
            DeploymentStatus::Failed => writeln!(
                out,
                "Finish (failed due to critical group failed: {})",
                self.failed_critical_groups.join(", ")
            ),
            DeploymentStatus::Cancelled => writeln!(out, "Finish (cancelled)"),
        }
    }
}

/// The seed's words for how a phase went.
fn phase_text(outcome: &PhaseOutcome) -> String {
    match outcome {
        PhaseOutcome::Pending => "PENDING".to_string(),
        PhaseOutcome::Running => "RUNNING".to_string(),
        PhaseOutcome::Cancelled => "CANCELLED while running".to_string(),
        PhaseOutcome::Succeeded { .. } => "SUCCESS".to_string(),
        PhaseOutcome::Failed {
            failures,
            timed_out,
            timeout_secs,
            ..
        } => {
            let criteria: Vec<String> = failures.iter().map(ToString::to_string).collect();
            match (timeout_secs, timed_out.is_empty()) {
                (Some(secs), _) if criteria.is_empty() => format!(
                    "FAILED, timed out after {secs} s on {}",
                    timed_out.join(", ")
                ),
                (Some(secs), _) => format!(
                    "FAILED, timed out after {secs} s on {}: {}",
                    timed_out.join(", "),
                    criteria.join("; ")
                ),
                (None, true) => format!("FAILED: {}", criteria.join("; ")),
                (None, false) => format!(
                    "FAILED, no report from {}: {}",
                    timed_out.join(", "),
                    criteria.join("; ")
                ),
            }
        }
        PhaseOutcome::Skipped {
            cause: SkipCause::EarlierPhaseFailed { phase },
        } => format!("FAILED, due to {phase} failure"),
        PhaseOutcome::Skipped {
            cause: SkipCause::DependencyFailed { dependency },
        } => format!("FAILED, due to dependency ({dependency})"),
        PhaseOutcome::Skipped {
            cause: SkipCause::Cancelled,
        } => "SKIPPED, the deployment was cancelled".to_string(),
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        match &self.strategy {
            Some(name) => writeln!(out, "Strategy {name}: {}", self.status)?,
            None => writeln!(out, "Deployment: {}", self.status)?,
        }
        writeln!(out)?;
        self.write_diagram(&mut out)?;
        writeln!(out)?;
        let yes_no = |flag: bool| if flag { "yes" } else { "no" }.to_string();
        let group_rows: Vec<Vec<String>> = self
            .groups
            .iter()
            .map(|group| {
                let state = match &group.current_phase {
                    Some(phase) => format!("{} ({phase})", group.state),
                    None => group.state.to_string(),
                };
                vec![
                    group.name.clone(),
                    yes_no(group.critical),
                    state,
                    group.nodes.len().to_string(),
                    group.succeeded.len().to_string(),
                    group.prepared.len().to_string(),
                    group.failed.len().to_string(),
                    group.not_started.len().to_string(),
                    group
                        .reason
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                ]
            })
            .collect();
        out.push_str(&render_table(
            &[
                "GROUP",
                "CRITICAL",
                "STATE",
                "NODES",
                "SUCCEEDED",
                "PREPARED",
                "FAILED",
                "NOT STARTED",
                "REASON",
            ],
            &group_rows,
        ));
        writeln!(out)?;
        let node_rows: Vec<Vec<String>> = self
            .nodes
            .iter()
            .map(|node| {
                let detail = match (&node.failed_phase, &node.failure_detail, node.failure) {
                    (Some(phase), Some(detail), _) => format!("{phase}: {detail}"),
                    (Some(phase), None, Some(failure)) => format!("{phase}: {failure}"),
                    _ => String::new(),
                };
                vec![
                    node.name.clone(),
                    node.status.to_string(),
                    node.sent_by.clone().unwrap_or_else(|| "-".to_string()),
                    node.groups.join(", "),
                    detail,
                ]
            })
            .collect();
        out.push_str(&render_table(
            &["NODE", "STATUS", "SENT BY", "GROUPS", "FAILURE"],
            &node_rows,
        ));
        if !self.unselected_nodes.is_empty() {
            writeln!(out)?;
            writeln!(
                out,
                "Not selected by any group: {}",
                self.unselected_nodes.join(", ")
            )?;
        }
        f.write_str(&out)
    }
}

/// A plain text table: a header row and left-aligned columns two spaces apart; trailing spaces trimmed.
pub(crate) fn render_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|header| header.len()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header_row: Vec<String> = headers.iter().map(|header| header.to_string()).collect();
    for row in std::iter::once(&header_row).chain(rows) {
        let mut line = String::new();
        for (index, cell) in row.iter().enumerate() {
            let width = widths.get(index).copied().unwrap_or(0);
            line.push_str(cell);
            if index + 1 < row.len() {
                let pad = width.saturating_sub(cell.chars().count()) + 2;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align() {
        let table = render_table(
            &["A", "LONGER"],
            &[
                vec!["wide cell".into(), "x".into()],
                vec!["y".into(), "".into()],
            ],
        );
        assert_eq!(table, "A          LONGER\nwide cell  x\ny\n");
    }
}
