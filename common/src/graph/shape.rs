//! The graph's own shape, checked whether or not any node is selected: every dependency names a task
//! of the graph, the tasks' `requires` and `required_for` form no cycle, and every task's type is one
//! that Plinth or Fuel defines. Resolution finds a cycle only among the tasks it places on a node, so a
//! graph uploaded before any node is assigned, or checked offline with a cluster that selects none,
//! would otherwise pass with a cycle in it; Nailgun refuses such a graph at upload, as this does.

use super::compile::compile;
use super::error::ResolveError;
use super::finding::Finding;
use super::merge::MergedGraph;
use crate::model::{Task, TaskType};
use petgraph::algo::tarjan_scc;
use petgraph::graphmap::DiGraphMap;
use std::collections::{HashMap, VecDeque};

/// Task types Fuel's graphs use that no Plinth agent runs (Astute ran them on the master or through
/// cobbler and fuel-agent): known, so a warning where a node would get them; any other type is a
/// misspelling.
pub const FUEL_ONLY_TYPES: &[&str] = &["cobbler_sync", "copy_files", "upload_file", "sync"];

/// Every type Plinth's agent runs or keeps for ordering.
const PLINTH_TYPES: &[&str] = &[
    "puppet",
    "shell",
    "upload_file",
    "copy_files",
    "sync",
    "reboot",
    "provision",
    "erase_node",
    "check_hardware",
    "move_to_bootstrap",
    "boot_device",
    "master_shell",
    "group",
    "stage",
    "skipped",
];

/// The findings about the graph's shape (see the module's text): errors for dependencies naming no
/// task, for cycles, and for types nobody defines; warnings for Fuel's types no agent runs.
pub fn check_shape(graph: &MergedGraph) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Err(e) = compile(graph) {
        out.push(Finding::error(
            match e {
                ResolveError::UnknownTask { .. } => "unknown_task",
                _ => "bad_field",
            },
            e.to_string(),
        ));
    }
    let tasks: Vec<&Task> = graph.tasks.iter().map(|t| &t.task).collect();
    out.extend(missing_required_for(&tasks));
    out.extend(check_tasks(&tasks));
    out
}

/// Warnings for `required_for` entries naming no task of the graph. Such an entry orders nothing (no
/// task waits for a task that does not exist), and Fuel's own graphs have them (`provision`'s
/// `node_reboot` names `set_status_provisioned`): Fuel drops them silently, Plinth drops them and says
/// so. A `requires` naming no task stays an error: the task would wait for something that never runs.
fn missing_required_for(tasks: &[&Task]) -> Vec<Finding> {
    let ids: std::collections::HashSet<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    let mut out = Vec::new();
    for task in tasks {
        for name in task
            .required_for
            .iter()
            .filter(|n| !ids.contains(n.as_str()))
        {
            out.push(Finding::warning(
                "unknown_task",
                format!(
                    "task {:?}: required_for names {name:?}, which is not a task of the merged graph; \
                     the dependency orders nothing and is dropped",
                    task.id
                ),
            ));
        }
    }
    out
}

/// The shape of one source's tasks alone, as an upload gives them: cycles and types. Their dependencies
/// may name tasks of the release or a plugin, so those are checked once the sources are merged.
pub fn check_tasks(tasks: &[&Task]) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(cycle) = find_cycle(tasks) {
        out.push(Finding::error(
            "cycle",
            format!(
                "dependency cycle {} in the tasks' requires and required_for, whichever nodes they \
                 run on",
                cycle.join(" -> ")
            ),
        ));
    }
    for task in tasks {
        if let TaskType::Other(kind) = &task.task_type {
            out.push(type_finding(&task.id, kind));
        }
    }
    out
}

/// What a type that is not Plinth's own calls for: a warning for Fuel's, an error naming the nearest
/// known type for any other.
fn type_finding(task: &str, kind: &str) -> Finding {
    if FUEL_ONLY_TYPES.contains(&kind) {
        return Finding::warning(
            "task_type",
            format!("task {task:?} has Fuel's type {kind:?}, which no Plinth agent runs"),
        );
    }
    let nearest = PLINTH_TYPES
        .iter()
        .chain(FUEL_ONLY_TYPES)
        .min_by_key(|known| strsim::levenshtein(known, kind))
        .filter(|known| strsim::levenshtein(known, kind) <= 3);
    let hint = match nearest {
        Some(known) => format!(" (did you mean {known:?}?)"),
        None => format!(" (known types: {})", PLINTH_TYPES.join(", ")),
    };
    Finding::error(
        "unknown_type",
        format!("task {task:?} has type {kind:?}, which is no task type{hint}"),
    )
}

/// A cycle among the tasks' static `requires` and `required_for` (names of missing tasks are left to
/// [`compile`]'s check), as task ids with the first repeated at the end.
fn find_cycle(tasks: &[&Task]) -> Option<Vec<String>> {
    let index: HashMap<&str, usize> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect();
    let mut graph: DiGraphMap<usize, ()> = DiGraphMap::new();
    for (i, task) in tasks.iter().enumerate() {
        graph.add_node(i);
        for before in task.requires.iter().filter_map(|n| index.get(n.as_str())) {
            graph.add_edge(*before, i, ());
        }
        for after in task
            .required_for
            .iter()
            .filter_map(|n| index.get(n.as_str()))
        {
            graph.add_edge(i, *after, ());
        }
    }
    let component = tarjan_scc(&graph)
        .into_iter()
        .find(|c| c.len() > 1 || graph.contains_edge(c[0], c[0]))?;
    // The shortest way from the component's first task back to itself, inside the component.
    let start = *component.iter().min()?;
    let inside: std::collections::HashSet<usize> = component.iter().copied().collect();
    let mut came_from: HashMap<usize, usize> = HashMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(at) = queue.pop_front() {
        for next in graph.neighbors(at).filter(|n| inside.contains(n)) {
            if next == start {
                let mut path = vec![at];
                while let Some(prev) = came_from.get(path.last()?) {
                    path.push(*prev);
                }
                path.reverse();
                let mut ids: Vec<String> = path.iter().map(|i| tasks[*i].id.clone()).collect();
                ids.push(tasks[start].id.clone());
                return Some(ids);
            }
            if next != start && !came_from.contains_key(&next) {
                came_from.insert(next, at);
                queue.push_back(next);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{merge, GraphSource, Origin};
    use crate::model::Graph;

    fn graph(yaml: &str) -> MergedGraph {
        let tasks: Vec<Task> = serde_yaml_ng::from_str(yaml).expect("tasks");
        let graph = Graph {
            tasks,
            ..Graph::default()
        };
        merge(&[GraphSource {
            origin: &Origin::Release,
            graph: &graph,
        }])
        .expect("merges")
    }

    #[test]
    fn a_cycle_is_named_with_no_node_selected() {
        let g = graph(
            "- {id: a, type: shell, roles: [x], requires: [c]}\n\
             - {id: b, type: shell, roles: [y], requires: [a]}\n\
             - {id: c, type: shell, roles: [z], requires: [b]}\n\
             - {id: d, type: shell, roles: [x]}\n",
        );
        let findings = check_shape(&g);
        let cycle = findings
            .iter()
            .find(|f| f.code == "cycle")
            .expect("a cycle");
        assert!(
            cycle.message.contains("a") && cycle.message.contains("c"),
            "{cycle:?}"
        );
        // A required_for closing the loop is a cycle too.
        let g = graph(
            "- {id: a, type: shell, roles: [x], required_for: [b]}\n\
             - {id: b, type: shell, roles: [x], required_for: [a]}\n",
        );
        assert!(check_shape(&g).iter().any(|f| f.code == "cycle"));
    }

    #[test]
    fn a_misspelled_type_is_an_error_with_the_nearest_type_and_fuels_types_a_warning() {
        let g = graph(
            "- {id: a, type: shel, roles: [x]}\n\
             - {id: b, type: cobbler_sync, roles: [master]}\n",
        );
        let findings = check_shape(&g);
        let typo = findings
            .iter()
            .find(|f| f.code == "unknown_type")
            .expect("an error");
        assert!(typo.message.contains("did you mean \"shell\""), "{typo:?}");
        assert!(findings
            .iter()
            .any(|f| f.code == "task_type" && f.severity == crate::graph::Severity::Warning));
    }

    #[test]
    fn a_sound_graph_has_no_finding() {
        let g = graph(
            "- {id: a, type: shell, roles: [x]}\n\
             - {id: b, type: puppet, roles: [x], requires: [a], required_for: [c]}\n\
             - {id: c, type: shell, roles: [y]}\n",
        );
        assert!(check_shape(&g).is_empty(), "{:?}", check_shape(&g));
    }
}
