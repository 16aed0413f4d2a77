//! Turning a cluster's graphs into each node's task list.
//!
//! The merge is the seeds' rule (release, then cluster; a later task with the same id replaces the earlier
//! one whole). A task goes to a node when the node carries one of the task's `tags` (or, for Fuel's older
//! form, `roles`/`role`); `*` matches every node. Tasks keep graph order, moved only as far as their
//! `requires`/`required_for` on the same node demand.

use plinth_common::wire::{TaskKind, TaskSpec};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};

/// Why a graph cannot be resolved.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ResolveError {
    /// A task is malformed.
    #[error("task {index} ({id}): {message}")]
    BadTask {
        /// Its position in the merged graph.
        index: usize,
        /// Its id, or `?`.
        id: String,
        /// What is wrong.
        message: String,
    },
    /// The tasks of a node depend on each other in a circle.
    #[error("dependency cycle on node {node}: {}", cycle.join(" -> "))]
    Cycle {
        /// The node.
        node: String,
        /// The tasks in the cycle.
        cycle: Vec<String>,
    },
}

/// Merges graphs by task id: later sources replace earlier tasks whole; order is first appearance.
pub fn merge(sources: &[&[Value]]) -> Result<Vec<Value>, ResolveError> {
    let mut order: Vec<String> = Vec::new();
    let mut by_id: HashMap<String, Value> = HashMap::new();
    for source in sources {
        for (index, task) in source.iter().enumerate() {
            let id = task
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| ResolveError::BadTask {
                    index,
                    id: "?".into(),
                    message: "has no string `id`".into(),
                })?;
            if by_id.insert(id.to_string(), task.clone()).is_none() {
                order.push(id.to_string());
            }
        }
    }
    Ok(order
        .into_iter()
        .filter_map(|id| by_id.remove(&id))
        .collect())
}

fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether a task goes to a node carrying `node_tags`.
pub fn matches(task: &Value, node_tags: &BTreeSet<String>) -> bool {
    let mut wanted = strings(task.get("tags"));
    if wanted.is_empty() {
        wanted = strings(task.get("roles"));
    }
    if wanted.is_empty() {
        wanted = strings(task.get("role"));
    }
    wanted.iter().any(|t| t == "*" || node_tags.contains(t))
}

fn kind_of(index: usize, id: &str, task: &Value) -> Result<TaskKind, ResolveError> {
    let text = task.get("type").and_then(Value::as_str).unwrap_or("shell");
    serde_json::from_value(Value::String(text.to_string())).map_err(|_| ResolveError::BadTask {
        index,
        id: id.to_string(),
        message: format!(
            "unknown type {text:?} (expected shell, puppet, upload_file, copy_files, sync, reboot, skipped, stage or group)"
        ),
    })
}

/// The ordered task list of one node.
pub fn tasks_for_node(
    merged: &[Value],
    node_name: &str,
    node_tags: &BTreeSet<String>,
) -> Result<Vec<TaskSpec>, ResolveError> {
    let mut picked: Vec<(usize, &Value)> = merged
        .iter()
        .enumerate()
        .filter(|(_, t)| matches(t, node_tags))
        .collect();
    let ids: HashMap<&str, usize> = picked
        .iter()
        .enumerate()
        .filter_map(|(pos, (_, t))| t.get("id").and_then(Value::as_str).map(|id| (id, pos)))
        .collect();
    // Edges among the picked tasks: requires (before me) and required_for (after me).
    let n = picked.len();
    let mut before: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (pos, (_, task)) in picked.iter().enumerate() {
        for dep in strings(task.get("requires")) {
            if let Some(&d) = ids.get(dep.as_str()) {
                before[pos].push(d);
            }
        }
        for after in strings(task.get("required_for")) {
            if let Some(&a) = ids.get(after.as_str()) {
                before[a].push(pos);
            }
        }
    }
    let order = stable_topo(&before).map_err(|cycle| ResolveError::Cycle {
        node: node_name.to_string(),
        cycle: cycle
            .iter()
            .map(|&i| {
                picked[i]
                    .1
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_string()
            })
            .collect(),
    })?;
    let mut out = Vec::with_capacity(n);
    let original = std::mem::take(&mut picked);
    for pos in order {
        let (index, task) = original[pos];
        let id = task
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let kind = kind_of(index, &id, task)?;
        let parameters = match task.get("parameters") {
            None | Some(Value::Null) => serde_json::Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => {
                return Err(ResolveError::BadTask {
                    index,
                    id,
                    message: "`parameters` must be a mapping".into(),
                })
            }
        };
        out.push(TaskSpec {
            id,
            kind,
            parameters,
            skip_reason: None,
            waits_for: Vec::new(),
            gated: false,
        });
    }
    Ok(out)
}

/// Kahn's algorithm that always takes the lowest-numbered ready task, so the original order is kept where
/// dependencies allow. On a cycle, returns the tasks of one cycle.
fn stable_topo(before: &[Vec<usize>]) -> Result<Vec<usize>, Vec<usize>> {
    let n = before.len();
    let mut indegree = vec![0usize; n];
    let mut after: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (node, deps) in before.iter().enumerate() {
        for &d in deps {
            indegree[node] += 1;
            after[d].push(node);
        }
    }
    let mut ready: std::collections::BTreeSet<usize> =
        (0..n).filter(|&i| indegree[i] == 0).collect();
    let mut out = Vec::with_capacity(n);
    while let Some(&next) = ready.iter().next() {
        ready.remove(&next);
        out.push(next);
        for &a in &after[next] {
            indegree[a] -= 1;
            if indegree[a] == 0 {
                ready.insert(a);
            }
        }
    }
    if out.len() == n {
        return Ok(out);
    }
    // Walk backwards along unfinished dependencies until a task repeats: that loop is a cycle.
    let mut seen = vec![usize::MAX; n];
    let mut path = Vec::new();
    let mut cur = (0..n).find(|&i| indegree[i] > 0).unwrap_or(0);
    while seen[cur] == usize::MAX {
        seen[cur] = path.len();
        path.push(cur);
        cur = before[cur]
            .iter()
            .copied()
            .find(|&d| indegree[d] > 0)
            .unwrap_or(cur);
    }
    let mut cycle = path[seen[cur]..].to_vec();
    cycle.reverse();
    cycle.push(cycle[0]);
    Err(cycle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tags(t: &[&str]) -> BTreeSet<String> {
        t.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn later_sources_replace_tasks_whole() {
        let release = vec![
            json!({"id": "a", "type": "shell", "tags": ["x"], "parameters": {"cmd": "old"}}),
            json!({"id": "b", "tags": ["x"]}),
        ];
        let cluster = vec![json!({"id": "a", "type": "puppet", "tags": ["y"]})];
        let merged = merge(&[&release, &cluster]).unwrap();
        assert_eq!(merged.len(), 2);
        assert_eq!(
            merged[0],
            json!({"id": "a", "type": "puppet", "tags": ["y"]})
        );
    }

    #[test]
    fn tasks_go_to_nodes_by_tag_and_keep_dependency_order() {
        let graph = vec![
            json!({"id": "late", "tags": ["web"], "requires": ["early"], "parameters": {"cmd": "true"}}),
            json!({"id": "early", "tags": ["web", "db"], "parameters": {"cmd": "true"}}),
            json!({"id": "dbonly", "roles": ["db"]}),
            json!({"id": "everywhere", "role": "*"}),
        ];
        let web: Vec<_> = tasks_for_node(&graph, "n1", &tags(&["web"]))
            .unwrap()
            .into_iter()
            .map(|t| t.id)
            .collect();
        assert_eq!(web, ["early", "late", "everywhere"]);
        let db: Vec<_> = tasks_for_node(&graph, "n2", &tags(&["db"]))
            .unwrap()
            .into_iter()
            .map(|t| t.id)
            .collect();
        assert_eq!(db, ["early", "dbonly", "everywhere"]);
    }

    #[test]
    fn a_cycle_is_named() {
        let graph = vec![
            json!({"id": "a", "tags": ["x"], "requires": ["c"]}),
            json!({"id": "b", "tags": ["x"], "requires": ["a"]}),
            json!({"id": "c", "tags": ["x"], "requires": ["b"]}),
        ];
        let err = tasks_for_node(&graph, "node-1", &tags(&["x"]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("node-1") && err.contains("a") && err.contains("b") && err.contains("c"),
            "{err}"
        );
    }

    #[test]
    fn bad_tasks_are_named() {
        assert!(merge(&[&[json!({"type": "shell"})]])
            .unwrap_err()
            .to_string()
            .contains("no string `id`"));
        let err = tasks_for_node(
            &[json!({"id": "t", "type": "teleport", "tags": ["x"]})],
            "n",
            &tags(&["x"]),
        )
        .unwrap_err();
        assert!(err.to_string().contains("teleport"));
    }
}
