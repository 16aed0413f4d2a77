//! Merging graphs: release → enabled plugins → cluster, by task id (seed 002, seed 003).

use indexmap::IndexMap;
use serde::Serialize;
use std::fmt;

use super::error::ResolveError;
use crate::model::{Cluster, Graph, Plugin, Release, Task};

/// Where a task came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum Origin {
    /// The release's graph.
    Release,
    /// The named plugin's graph.
    Plugin(String),
    /// The cluster's own graph.
    Cluster,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Release => f.write_str("release"),
            Origin::Plugin(p) => write!(f, "plugin {p:?}"),
            Origin::Cluster => f.write_str("cluster"),
        }
    }
}

/// One graph to merge and where it comes from.
#[derive(Debug, Clone, Copy)]
pub struct GraphSource<'a> {
    /// Its origin.
    pub origin: &'a Origin,
    /// The graph.
    pub graph: &'a Graph,
}

/// A task of the merged graph.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MergedTask {
    /// The task as its last source wrote it.
    pub task: Task,
    /// The source the task comes from.
    pub origin: Origin,
    /// Earlier sources whose task of the same id this one replaced, in merge order.
    pub replaced: Vec<Origin>,
}

/// Two plugins defining the same task id. An error only when some node carries roles of both
/// (see [`super::check_plugin_overlaps`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PluginOverlap {
    /// The task id.
    pub task: String,
    /// The earlier plugin.
    pub first: String,
    /// The later plugin.
    pub second: String,
}

/// The merged graph: tasks in order of first appearance, each from the last source defining it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MergedGraph {
    /// The tasks.
    pub tasks: Vec<MergedTask>,
    /// The node filter of the last source that has one.
    pub node_filter: Option<String>,
    /// Task ids defined by two plugins.
    pub plugin_overlaps: Vec<PluginOverlap>,
}

impl MergedGraph {
    /// The position of task `id`.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.tasks.iter().position(|t| t.task.id == id)
    }

    /// The tasks alone, in order.
    pub fn task_list(&self) -> Vec<Task> {
        self.tasks.iter().map(|t| t.task.clone()).collect()
    }
}

/// Merges graphs by task id: a later source's task replaces an earlier one whole, in the place where the
/// id first appeared. A source holding one id twice is an error.
pub fn merge(sources: &[GraphSource<'_>]) -> Result<MergedGraph, ResolveError> {
    let mut by_id: IndexMap<String, MergedTask> = IndexMap::new();
    let mut node_filter = None;
    let mut overlaps = Vec::new();
    for source in sources {
        let mut seen = std::collections::HashSet::new();
        for task in &source.graph.tasks {
            if !seen.insert(task.id.as_str()) {
                return Err(ResolveError::DuplicateTask {
                    origin: source.origin.to_string(),
                    task: task.id.clone(),
                });
            }
            match by_id.get_mut(&task.id) {
                Some(existing) => {
                    let plugins = existing
                        .replaced
                        .iter()
                        .chain(std::iter::once(&existing.origin))
                        .filter_map(|o| match o {
                            Origin::Plugin(p) => Some(p.clone()),
                            _ => None,
                        })
                        .collect::<Vec<_>>();
                    if let Origin::Plugin(second) = source.origin {
                        for first in plugins {
                            if &first != second {
                                overlaps.push(PluginOverlap {
                                    task: task.id.clone(),
                                    first,
                                    second: second.clone(),
                                });
                            }
                        }
                    }
                    let previous = std::mem::replace(&mut existing.origin, source.origin.clone());
                    existing.replaced.push(previous);
                    existing.task = task.clone();
                }
                None => {
                    by_id.insert(
                        task.id.clone(),
                        MergedTask {
                            task: task.clone(),
                            origin: source.origin.clone(),
                            replaced: Vec::new(),
                        },
                    );
                }
            }
        }
        if source.graph.node_filter.is_some() {
            node_filter.clone_from(&source.graph.node_filter);
        }
    }
    let mut merged = MergedGraph {
        tasks: by_id.into_values().collect(),
        node_filter,
        plugin_overlaps: overlaps,
    };
    super::fuel_steps::map_fuel_steps(&mut merged);
    super::stage_anchors::supply_stage_anchors(&mut merged);
    Ok(merged)
}

/// Merges a cluster's graphs of `graph_type`: its release's, then its enabled plugins' (in `plugins`
/// order), then its own. A source without a graph of that type adds nothing.
pub fn merge_for_cluster(
    release: &Release,
    plugins: &[&Plugin],
    cluster: &Cluster,
    graph_type: &str,
) -> Result<MergedGraph, ResolveError> {
    let origins: Vec<(Origin, Option<&Graph>)> =
        std::iter::once((Origin::Release, release.graphs.get(graph_type)))
            .chain(
                plugins
                    .iter()
                    .map(|p| (Origin::Plugin(p.name.clone()), p.graphs.get(graph_type))),
            )
            .chain(std::iter::once((
                Origin::Cluster,
                cluster.graphs.get(graph_type),
            )))
            .collect();
    let sources: Vec<GraphSource<'_>> = origins
        .iter()
        .filter_map(|(origin, graph)| graph.map(|graph| GraphSource { origin, graph }))
        .collect();
    merge(&sources)
}
