//! The merged graph in Graphviz DOT, with Nailgun's filters: `tasks=`, `parents_for=`, `remove=`.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use super::compile::{compile, NamePattern};
use super::error::ResolveError;
use super::merge::MergedGraph;
use crate::model::{Dependencies, TaskType};

/// Which part of the graph to draw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DotOptions {
    /// Draw only these tasks (and the edges among them). Empty: every task.
    pub tasks: Vec<String>,
    /// Draw only this task and its ancestors (every task it depends on, directly or not).
    pub parents_for: Option<String>,
    /// Leave out tasks of these types (`skipped`, `group`, `stage`, ...) or with these ids; the order
    /// through them is kept as direct edges.
    pub remove: Vec<String>,
}

fn quote(s: &str) -> String {
    let escaped = s
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n");
    format!("\"{escaped}\"")
}

/// Draws the merged graph: one vertex per task (shaped by type), solid edges for `requires` /
/// `required_for`, dashed edges for static cross-node dependencies. Fails when the graph does not
/// compile or a filter names an unknown task.
pub fn to_dot(
    graph: &MergedGraph,
    graph_type: &str,
    options: &DotOptions,
) -> Result<String, ResolveError> {
    let compiled = compile(graph)?;
    let n = graph.tasks.len();
    let unknown = |name: &str, field: &str| ResolveError::UnknownTask {
        task: "graph.gv".to_string(),
        field: field.to_string(),
        name: name.to_string(),
    };
    // Edges: (from, to, cross).
    let mut edges: BTreeSet<(usize, usize, bool)> = BTreeSet::new();
    for (a, succ) in compiled.successors.iter().enumerate() {
        for &b in succ {
            edges.insert((a, b, false));
        }
    }
    for (t, merged) in graph.tasks.iter().enumerate() {
        let task = &merged.task;
        let mut add = |deps: &Option<Dependencies>, forward: bool| {
            if let Some(Dependencies::Static(list)) = deps {
                for d in list {
                    let Ok(pattern) = NamePattern::parse(&d.name) else {
                        continue;
                    };
                    for u in (0..n).filter(|&u| u != t && pattern.matches(&graph.tasks[u].task.id))
                    {
                        edges.insert(if forward { (u, t, true) } else { (t, u, true) });
                    }
                }
            }
        };
        add(&task.cross_depends, true);
        add(&task.cross_depended_by, false);
    }
    let mut keep = vec![true; n];
    if !options.tasks.is_empty() {
        keep = vec![false; n];
        for id in &options.tasks {
            let &i = compiled
                .index
                .get(id.as_str())
                .ok_or_else(|| unknown(id, "tasks"))?;
            keep[i] = true;
        }
    }
    if let Some(target) = &options.parents_for {
        let &root = compiled
            .index
            .get(target.as_str())
            .ok_or_else(|| unknown(target, "parents_for"))?;
        let mut preds: HashMap<usize, Vec<usize>> = HashMap::new();
        for &(a, b, _) in &edges {
            preds.entry(b).or_default().push(a);
        }
        let mut ancestors = vec![false; n];
        let mut stack = vec![root];
        while let Some(v) = stack.pop() {
            if std::mem::replace(&mut ancestors[v], true) {
                continue;
            }
            stack.extend(preds.get(&v).into_iter().flatten().copied());
        }
        for (k, a) in keep.iter_mut().zip(&ancestors) {
            *k &= *a;
        }
    }
    // Removing a task links its predecessors to its successors, so the order stays visible.
    for (i, merged) in graph.tasks.iter().enumerate() {
        let task = &merged.task;
        let removed = options
            .remove
            .iter()
            .any(|r| r == &task.id || r == task.task_type.as_str());
        if !removed {
            continue;
        }
        let ins: Vec<(usize, bool)> = edges
            .iter()
            .filter(|e| e.1 == i)
            .map(|e| (e.0, e.2))
            .collect();
        let outs: Vec<(usize, bool)> = edges
            .iter()
            .filter(|e| e.0 == i)
            .map(|e| (e.1, e.2))
            .collect();
        edges.retain(|e| e.0 != i && e.1 != i);
        for &(a, c1) in &ins {
            for &(b, c2) in &outs {
                if a != b {
                    edges.insert((a, b, c1 || c2));
                }
            }
        }
        keep[i] = false;
    }
    let mut out = String::new();
    let _ = writeln!(out, "digraph {} {{", quote(graph_type));
    let _ = writeln!(
        out,
        "  node [shape=box, style=\"filled, rounded\", fillcolor=\"#ffffff\"];"
    );
    for (_, merged) in graph.tasks.iter().enumerate().filter(|(i, _)| keep[*i]) {
        let task = &merged.task;
        let style = match task.task_type {
            TaskType::Stage => ", shape=ellipse, fillcolor=\"#dddddd\"",
            TaskType::Group => ", shape=box3d, fillcolor=\"#cce0ff\"",
            TaskType::Skipped => ", fillcolor=\"#eeeeee\", fontcolor=\"#888888\"",
            _ => "",
        };
        let _ = writeln!(
            out,
            "  {} [label={}{}];",
            quote(&task.id),
            quote(&format!("{}\n{}", task.id, task.task_type)),
            style
        );
    }
    for &(a, b, cross) in &edges {
        if keep[a] && keep[b] {
            let _ = writeln!(
                out,
                "  {} -> {}{};",
                quote(&graph.tasks[a].task.id),
                quote(&graph.tasks[b].task.id),
                if cross { " [style=dashed]" } else { "" }
            );
        }
    }
    out.push_str("}\n");
    Ok(out)
}
