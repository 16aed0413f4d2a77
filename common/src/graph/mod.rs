#![warn(missing_docs)]
//! Task graphs: merging release, plugin and cluster graphs, resolving tasks onto nodes, ordering them.
//!
//! See this folder's README for the pipeline, the decisions and the public API.

mod evaluate;
mod finding;

pub use evaluate::{truthy, EvalContext, FieldEvaluator, NoExpressions};
pub use finding::{Finding, Severity};

/// The node id of the controller's own host, which runs the tasks placed on `master`.
pub const MASTER_NODE_ID: u64 = 0;
