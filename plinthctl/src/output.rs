//! Printing for people (aligned tables) and for scripts (`-o json`).

use plinth_api::deployments::Report;
use plinth_common::strategy::SuccessCriteria;
use plinth_common::wire::{DeploymentEvent, ResultStatus};
use serde::Serialize;
use serde_json::Value;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns.
    Table,
    /// JSON, for scripts.
    Json,
}

/// Prints rows as aligned columns under a header.
pub fn table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let line = |cells: Vec<String>| {
        let mut out = String::new();
        for (i, c) in cells.iter().enumerate() {
            let w = widths.get(i).copied().unwrap_or(0);
            if i + 1 == cells.len() {
                out.push_str(c);
            } else {
                out.push_str(&format!("{c:<w$}  "));
            }
        }
        println!("{}", out.trim_end());
    };
    line(header.iter().map(|h| h.to_uppercase()).collect());
    for row in rows {
        line(row.clone());
    }
}

/// Prints a JSON value, pretty.
pub fn json(v: &Value) {
    println!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
}

/// Prints a typed answer as JSON, pretty: as the controller sent it (the same type serializes the same
/// way).
pub fn json_of<T: Serialize>(v: &T) {
    json(&serde_json::to_value(v).unwrap_or_default());
}

/// A value's serde spelling (for enums such as a task's status), `-` when it has none.
pub fn word<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        _ => "-".into(),
    }
}

/// A list as a cell: `a,b` (empty when empty).
pub fn list<T: ToString>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// An optional value as a cell, `-` when absent.
pub fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

/// A group's success criteria in words (`none` when it has none: it always succeeds).
fn criteria(c: Option<&SuccessCriteria>) -> String {
    let parts: Vec<String> = c
        .into_iter()
        .flat_map(|c| {
            [
                c.percent_successful_nodes
                    .map(|v| format!("at least {v}% succeed")),
                c.minimum_successful_nodes
                    .map(|v| format!("at least {v} succeed")),
                c.maximum_failed_nodes.map(|v| format!("at most {v} fail")),
            ]
        })
        .flatten()
        .collect();
    if parts.is_empty() {
        "none".to_string()
    } else {
        parts.join(", ")
    }
}

/// A notice's node (if it names one) and its message (`-` if it has none).
fn notice(e: &DeploymentEvent) -> (Option<&str>, &str) {
    match e {
        DeploymentEvent::Warning { message, .. }
        | DeploymentEvent::Stopped { message }
        | DeploymentEvent::Cancelled { message, .. } => (None, message),
        DeploymentEvent::NodeError { node, message, .. }
        | DeploymentEvent::ResultRefused { node, message, .. }
        | DeploymentEvent::ListRefused { node, message, .. } => (Some(node), message),
        DeploymentEvent::NodeStatusChanged { node, .. }
        | DeploymentEvent::TaskResult { node, .. } => (Some(node), "-"),
        DeploymentEvent::GroupStarted { .. }
        | DeploymentEvent::PhaseStarted { .. }
        | DeploymentEvent::PhaseFinished { .. }
        | DeploymentEvent::GroupSucceeded { .. }
        | DeploymentEvent::GroupFailed { .. }
        | DeploymentEvent::DeploymentFinished { .. } => (None, "-"),
    }
}

/// Prints a deployment report for people: action and strategy, the steps, the groups with their criteria,
/// then each node's tasks.
pub fn report(r: &Report) {
    println!(
        "Deployment {} of cluster {} ({}): {}",
        r.id,
        r.cluster_id,
        r.graph_type,
        r.status.as_str().to_uppercase()
    );
    if let Some(action) = &r.action {
        println!("Action: {action}");
    }
    if let Some(name) = &r.strategy {
        println!("Strategy: {name}");
    }
    if let Some(by) = &r.chosen_by {
        println!("Chosen by: {by}");
    }
    println!();
    // Steps, as Shipyard's `describe action` lists them.
    let steps: Vec<Vec<String>> = r
        .steps
        .iter()
        .map(|s| {
            vec![
                format!("step/{}/{}", r.id, s.name.replace(' ', "/")),
                s.index.to_string(),
                s.state.clone(),
                s.detail.clone(),
            ]
        })
        .collect();
    if !steps.is_empty() {
        table(&["steps", "index", "state", "detail"], &steps);
        println!();
    }
    let groups: Vec<Vec<String>> = r
        .groups
        .iter()
        .map(|g| {
            vec![
                g.name.clone(),
                g.state.to_string(),
                g.critical.to_string(),
                list(&g.depends_on),
                criteria(g.success_criteria.as_ref()),
                list(&g.running),
                list(&g.succeeded),
                list(&g.prepared),
                list(&g.failed),
                list(&g.cancelled),
                list(&g.not_started),
                opt(g.reason.as_ref()),
            ]
        })
        .collect();
    table(
        &[
            "group",
            "state",
            "critical",
            "depends on",
            "success criteria",
            "running",
            "succeeded",
            "prepared",
            "failed",
            "cancelled",
            "not started",
            "why",
        ],
        &groups,
    );
    println!();
    let mut rows = Vec::new();
    for n in &r.nodes {
        for t in &n.tasks {
            rows.push(vec![
                n.name.clone(),
                t.phase.clone(),
                t.id.clone(),
                word(&t.status),
                t.attempts.to_string(),
                opt(t.exit_code),
                format!("{} ms", t.duration_ms),
                t.message.lines().next().unwrap_or("").to_string(),
            ]);
        }
        let mut row = vec![
            n.name.clone(),
            String::new(),
            "(node)".into(),
            n.status.to_string(),
        ];
        row.extend([String::new(), String::new(), String::new()]);
        row.push(opt(n.reason.as_ref()));
        rows.push(row);
    }
    table(
        &[
            "node", "phase", "task", "status", "attempts", "exit", "took", "message",
        ],
        &rows,
    );
    // The end of what each failed task printed: the first thing an operator reads a failure for.
    let failed = failed_output(r);
    if !failed.is_empty() {
        println!();
        print!("{failed}");
    }
    // Warnings, why it stopped or who cancelled it, and what its nodes sent that was refused.
    let notices: Vec<String> = r
        .notices
        .iter()
        .map(|e| {
            let (node, message) = notice(e);
            let node = node
                .map(|name| format!("node {name}: "))
                .unwrap_or_default();
            format!("! {}: {node}{message}", e.kind())
        })
        .collect();
    if !notices.is_empty() {
        println!();
        for line in notices {
            println!("{line}");
        }
    }
}

/// How many lines of a failed task's output the report shows, per stream.
const TAIL_LINES: usize = 10;

/// The last `TAIL_LINES` lines of a text, each indented under `label`.
fn tail(label: &str, text: &str) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let start = lines.len().saturating_sub(TAIL_LINES);
    let mut out = String::new();
    if start > 0 {
        out.push_str(&format!(
            "    {label} (last {TAIL_LINES} of {} lines):\n",
            lines.len()
        ));
    } else {
        out.push_str(&format!("    {label}:\n"));
    }
    for line in &lines[start..] {
        out.push_str(&format!("      {line}\n"));
    }
    out
}

/// The failed, timed-out and interrupted tasks with the tail of their output (standard error first).
pub fn failed_output(r: &Report) -> String {
    let mut out = String::new();
    for n in &r.nodes {
        for t in &n.tasks {
            if !matches!(
                t.status,
                ResultStatus::Failed | ResultStatus::TimedOut | ResultStatus::Interrupted
            ) {
                continue;
            }
            if out.is_empty() {
                out.push_str("Failed tasks' output:\n");
            }
            let exit = t
                .exit_code
                .map(|c| format!(", exit {c}"))
                .unwrap_or_default();
            out.push_str(&format!(
                "  {} {}/{} ({}{exit}):\n",
                n.name,
                t.phase,
                t.id,
                word(&t.status)
            ));
            let (stderr, stdout) = (t.stderr_tail.trim(), t.stdout_tail.trim());
            if stderr.is_empty() && stdout.is_empty() {
                out.push_str("    (no output)\n");
            }
            if !stderr.is_empty() {
                out.push_str(&tail("stderr", stderr));
            }
            if !stdout.is_empty() {
                out.push_str(&tail("stdout", stdout));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_keeps_the_last_lines() {
        let text: String = (1..=25).map(|i| format!("line {i}\n")).collect();
        let t = tail("stderr", &text);
        assert!(t.starts_with("    stderr (last 10 of 25 lines):\n"), "{t}");
        assert!(
            t.contains("      line 16\n") && t.ends_with("      line 25\n"),
            "{t}"
        );
        assert!(!t.contains("line 15\n"), "{t}");
        assert_eq!(tail("stdout", "one\n"), "    stdout:\n      one\n");
    }
}
