//! Why a graph cannot be merged or resolved.

use thiserror::Error;

/// Why a graph cannot be merged or resolved. Every message names the task, field and nodes concerned.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ResolveError {
    /// One source holds two tasks with the same id.
    #[error("{origin}: task {task:?} is defined twice")]
    DuplicateTask {
        /// The source (`release`, `plugin "x"`, `cluster`).
        origin: String,
        /// The task id.
        task: String,
    },
    /// Two plugins define the same task and some node carries roles of both.
    #[error("plugins {first:?} and {second:?} both define task {task:?}, and node(s) {} carry roles of both", .nodes.join(", "))]
    PluginOverlap {
        /// The task id.
        task: String,
        /// The first plugin (in merge order).
        first: String,
        /// The second plugin.
        second: String,
        /// The nodes carrying roles of both.
        nodes: Vec<String>,
    },
    /// A dependency names a task that exists in no graph.
    #[error("task {task:?}: {field} names {name:?}, which is not a task of the merged graph")]
    UnknownTask {
        /// The task holding the dependency.
        task: String,
        /// The field (`requires`, `required_for`, `cross_depends`, `cross_depended_by`, `groups`, `tasks`).
        field: String,
        /// The name (or `/regex/`) that matches no task.
        name: String,
    },
    /// A task field cannot be used.
    #[error("task {task:?}, field {field}: {message}")]
    BadField {
        /// The task.
        task: String,
        /// The field.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A computed field failed on a node, or computed to something unusable.
    #[error("task {task:?}, field {field}, node {node}: {message}")]
    Computed {
        /// The task.
        task: String,
        /// The field's path.
        field: String,
        /// The node.
        node: String,
        /// What went wrong.
        message: String,
    },
    /// The graph's node filter failed on a node.
    #[error("node filter on node {node}: {message}")]
    NodeFilter {
        /// The node.
        node: String,
        /// What went wrong.
        message: String,
    },
    /// A node to deploy is not in the cluster, or a node uses the reserved id 0.
    #[error("node {0}: {1}")]
    BadNode(String, String),
    /// Tasks depend on each other in a circle.
    #[error("dependency cycle {} on node(s) {}", .tasks.join(" -> "), .nodes.join(", "))]
    Cycle {
        /// The tasks of the cycle, the first repeated at the end (`node/task` when it crosses nodes).
        tasks: Vec<String>,
        /// The nodes concerned.
        nodes: Vec<String>,
    },
}
