//! A graph: named tasks of one type, with the filter that picks the nodes it runs on.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::node::{Node, NodeStatus};
use super::task::Task;

/// The graph type used when none is named.
pub const DEFAULT_GRAPH_TYPE: &str = "default";

/// The nodes a graph runs on when it names no `node_filter`: nodes neither pending addition nor deletion
/// that are ready, or that failed their last deployment. [`default_node_filter`] is the same rule in Rust.
pub const DEFAULT_NODE_FILTER: &str =
    "$.pending_addition = false and $.pending_deletion = false and \
($.status = 'ready' or ($.status = 'error' and $.error_type = 'deploy'))";

/// [`DEFAULT_NODE_FILTER`] as a Rust predicate, used when a graph has no `node_filter`.
pub fn default_node_filter(node: &Node) -> bool {
    !node.pending_addition
        && !node.pending_deletion
        && (node.status == NodeStatus::Ready
            || (node.status == NodeStatus::Error && node.error_type.as_deref() == Some("deploy")))
}

/// A graph of tasks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Graph {
    /// Its human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its tasks, in order.
    #[serde(default)]
    pub tasks: Vec<Task>,
    /// A YAQL expression over each node (`$` is the node) that selects the nodes the graph runs on;
    /// `None` means [`DEFAULT_NODE_FILTER`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_filter: Option<String>,
    /// Everything else (`on_success`, `on_error`, ...), kept as written.
    #[serde(flatten)]
    pub extra: IndexMap<String, Value>,
}

impl Graph {
    /// A graph holding `tasks`.
    pub fn with_tasks(tasks: Vec<Task>) -> Graph {
        Graph {
            tasks,
            ..Graph::default()
        }
    }
}
