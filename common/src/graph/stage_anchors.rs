//! The stage anchors Fuel's release graphs define (`deployment_groups/tasks.yaml`:
//! `pre_deployment_start` → `pre_deployment_end` → `deploy_start` → `deploy_end` →
//! `post_deployment_start` → `post_deployment_end`, tasks of type `stage`), supplied when a merged
//! graph names them and does not define them: a plugin of the old task format (its tasks placed by
//! `stage: post_deployment/100`, see [`crate::model::convert_legacy_tasks`]) works on any release,
//! without its author adding anything.
//!
//! When the deployment stage's anchors are supplied too, the graph's own tasks (not stages, groups or
//! tasks already placed against an anchor) are put between `deploy_start` and `deploy_end`, so that
//! pre-deployment tasks run before them and post-deployment tasks after, as on a Fuel release.

use super::merge::{MergedGraph, MergedTask, Origin};
use crate::model::{Task, TaskType};

/// Fuel's stage anchors, in order.
pub const STAGE_ANCHORS: [&str; 6] = [
    "pre_deployment_start",
    "pre_deployment_end",
    "deploy_start",
    "deploy_end",
    "post_deployment_start",
    "post_deployment_end",
];

fn names_an_anchor(task: &Task) -> bool {
    task.requires
        .as_slice()
        .iter()
        .chain(task.required_for.as_slice())
        .any(|d| STAGE_ANCHORS.contains(&d.as_str()))
}

/// Adds the anchors the graph names and lacks (see the module's text).
pub(crate) fn supply_stage_anchors(graph: &mut MergedGraph) {
    let defined = |id: &str, graph: &MergedGraph| graph.tasks.iter().any(|t| t.task.id == id);
    if !graph.tasks.iter().any(|t| names_an_anchor(&t.task))
        || STAGE_ANCHORS.iter().all(|a| defined(a, graph))
    {
        return;
    }
    let supplies_deploy = !defined("deploy_start", graph) && !defined("deploy_end", graph);
    if supplies_deploy {
        for merged in &mut graph.tasks {
            let task = &mut merged.task;
            if matches!(task.task_type, TaskType::Stage | TaskType::Group) || names_an_anchor(task)
            {
                continue;
            }
            task.requires.0.push("deploy_start".into());
            task.required_for.0.push("deploy_end".into());
        }
    }
    let mut previous: Option<(&str, bool)> = None;
    let mut added = Vec::new();
    for anchor in STAGE_ANCHORS {
        let supplied = !defined(anchor, graph);
        if supplied {
            let mut task = Task::new(anchor, TaskType::Stage);
            if let Some((before, _)) = previous {
                task.requires.0.push(before.to_string());
            }
            added.push(MergedTask {
                task,
                origin: Origin::Release,
                replaced: Vec::new(),
            });
        } else if let Some((before, true)) = previous {
            // An anchor the graph defines follows one supplied here: chain it too.
            if let Some(existing) = graph.tasks.iter_mut().find(|t| t.task.id == anchor) {
                existing.task.requires.0.push(before.to_string());
            }
        }
        previous = Some((anchor, supplied));
    }
    graph.tasks.splice(0..0, added);
}

#[cfg(test)]
mod tests {
    use super::super::merge::{merge, GraphSource};
    use super::*;
    use crate::model::Graph;

    fn task(id: &str, requires: &[&str]) -> Task {
        let mut t = Task::new(id, TaskType::Shell);
        t.requires.0 = requires.iter().map(|s| s.to_string()).collect();
        t
    }

    fn merged(tasks: Vec<Task>) -> MergedGraph {
        let graph = Graph {
            tasks,
            ..Graph::default()
        };
        merge(&[GraphSource {
            origin: &Origin::Release,
            graph: &graph,
        }])
        .unwrap()
    }

    fn requires<'a>(graph: &'a MergedGraph, id: &str) -> Vec<&'a str> {
        let t = graph.tasks.iter().find(|t| t.task.id == id).unwrap();
        t.task
            .requires
            .as_slice()
            .iter()
            .map(String::as_str)
            .collect()
    }

    #[test]
    fn a_graph_naming_no_anchor_is_left_as_it_is() {
        let g = merged(vec![task("a", &[])]);
        assert_eq!(g.tasks.len(), 1);
    }

    #[test]
    fn missing_anchors_are_supplied_chained_and_the_graphs_tasks_put_between_deploy_ones() {
        let g = merged(vec![task("a", &[]), task("late", &["post_deployment_end"])]);
        let ids: Vec<&str> = g.tasks.iter().map(|t| t.task.id.as_str()).collect();
        assert_eq!(&ids[..6], &STAGE_ANCHORS);
        assert_eq!(requires(&g, "post_deployment_start"), ["deploy_end"]);
        assert_eq!(requires(&g, "a"), ["deploy_start"]);
        assert_eq!(requires(&g, "late"), ["post_deployment_end"]);
    }

    #[test]
    fn anchors_a_graph_defines_are_kept_and_chained_to_supplied_ones() {
        let mut start = Task::new("deploy_start", TaskType::Stage);
        start.requires.0.clear();
        let mut end = Task::new("deploy_end", TaskType::Stage);
        end.requires.0.push("deploy_start".into());
        let g = merged(vec![
            start,
            end,
            task("a", &["deploy_start"]),
            task("pre", &["pre_deployment_end"]),
        ]);
        assert_eq!(requires(&g, "deploy_start"), ["pre_deployment_end"]);
        assert_eq!(requires(&g, "a"), ["deploy_start"], "not wrapped again");
        assert_eq!(requires(&g, "post_deployment_start"), ["deploy_end"]);
    }
}
