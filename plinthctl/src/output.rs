//! Printing for people (aligned tables) and for scripts (`-o json`).

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

/// A JSON field as text for a table cell.
pub fn cell(v: &Value, pointer: &str) -> String {
    match v.pointer(pointer) {
        None | Some(Value::Null) => "-".into(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| x.to_string())
            })
            .collect::<Vec<_>>()
            .join(","),
        Some(other) => other.to_string(),
    }
}

/// A group's success criteria in words (`none` when it has none: it always succeeds).
fn criteria(c: &Value) -> String {
    let parts: Vec<String> = c
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| match k.as_str() {
            "percent_successful_nodes" => format!("at least {v}% succeed"),
            "minimum_successful_nodes" => format!("at least {v} succeed"),
            "maximum_failed_nodes" => format!("at most {v} fail"),
            other => format!("{other}: {v}"),
        })
        .collect();
    if parts.is_empty() {
        "none".to_string()
    } else {
        parts.join(", ")
    }
}

/// Prints a deployment report for people: action and strategy, the steps, the groups with their criteria,
/// then each node's tasks.
pub fn report(r: &Value) {
    println!(
        "Deployment {} of cluster {} ({}): {}",
        cell(r, "/id"),
        cell(r, "/cluster_id"),
        cell(r, "/graph_type"),
        cell(r, "/status").to_uppercase()
    );
    if let Some(action) = r["action"].as_str() {
        println!("Action: {action}");
    }
    if let Some(name) = r["strategy"].as_str() {
        println!("Strategy: {name}");
    }
    if let Some(by) = r["chosen_by"].as_str() {
        println!("Chosen by: {by}");
    }
    println!();
    // Steps, as Shipyard's `describe action` lists them.
    let steps: Vec<Vec<String>> = r["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            vec![
                format!(
                    "step/{}/{}",
                    cell(r, "/id"),
                    cell(s, "/name").replace(' ', "/")
                ),
                cell(s, "/index"),
                cell(s, "/state"),
                cell(s, "/detail"),
            ]
        })
        .collect();
    if !steps.is_empty() {
        table(&["steps", "index", "state", "detail"], &steps);
        println!();
    }
    let groups: Vec<Vec<String>> = r["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| {
            let mut row: Vec<String> = ["/name", "/state", "/critical", "/depends_on"]
                .iter()
                .map(|p| cell(g, p))
                .collect();
            row.push(criteria(&g["success_criteria"]));
            row.extend(
                [
                    "/succeeded",
                    "/prepared",
                    "/failed",
                    "/not_started",
                    "/reason",
                ]
                .iter()
                .map(|p| cell(g, p)),
            );
            row
        })
        .collect();
    table(
        &[
            "group",
            "state",
            "critical",
            "depends on",
            "success criteria",
            "succeeded",
            "prepared",
            "failed",
            "not started",
            "why",
        ],
        &groups,
    );
    println!();
    let mut rows = Vec::new();
    for n in r["nodes"].as_array().into_iter().flatten() {
        for t in n["tasks"].as_array().into_iter().flatten() {
            let mut row: Vec<String> = [&"/name"].iter().map(|p| cell(n, p)).collect();
            row.extend(
                ["/phase", "/id", "/status", "/attempts", "/exit_code"]
                    .iter()
                    .map(|p| cell(t, p)),
            );
            row.push(format!("{} ms", cell(t, "/duration_ms")));
            row.push(cell(t, "/message").lines().next().unwrap_or("").to_string());
            rows.push(row);
        }
        let mut row = vec![
            cell(n, "/name"),
            String::new(),
            "(node)".into(),
            cell(n, "/status"),
        ];
        row.extend([String::new(), String::new(), String::new()]);
        row.push(cell(n, "/reason"));
        rows.push(row);
    }
    table(
        &[
            "node", "phase", "task", "status", "attempts", "exit", "took", "message",
        ],
        &rows,
    );
    // Warnings, why it stopped or who cancelled it, and what its nodes sent that was refused.
    let notices: Vec<String> = r["notices"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| {
            let node = n["node"]
                .as_str()
                .map(|name| format!("node {name}: "))
                .unwrap_or_default();
            format!("! {}: {node}{}", cell(n, "/event"), cell(n, "/message"))
        })
        .collect();
    if !notices.is_empty() {
        println!();
        for line in notices {
            println!("{line}");
        }
    }
}
