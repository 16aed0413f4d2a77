#![warn(missing_docs)]
//! Task graphs: merging release, plugin and cluster graphs, resolving tasks onto nodes, ordering them.
//!
//! See this folder's README for the pipeline, the decisions and the public API.
//!
//! | module | owns |
//! |---|---|
//! | `merge` | release → plugins → cluster by task id ([`merge`], [`merge_for_cluster`], [`MergedGraph`]) |
//! | `evaluate` | the evaluation seam ([`FieldEvaluator`], [`NoExpressions`]) |
//! | `compile` | placements, dependency patterns and static edges, prepared once |
//! | `classes` | nodes resolved alike, each class placed once |
//! | `order` | petgraph ordering and cycle finding |
//! | `compute` | `yaql_exp` values and conditions through the seam |
//! | `structure` | computed placement, `requires`, `type`, ... per node: the graph's variants |
//! | `waits` | shared cross-node wait sets |
//! | `schedule` | one order for every class at once, consistent across nodes; cycles |
//! | `resolve` | the pipeline ([`resolve`], [`ResolveRequest`]) |
//! | `plan` | the output ([`Plan`], [`NodePlan`], [`ResolvedTask`], [`WaitSet`]) and its agent form |
//! | `error` | [`ResolveError`] |
//! | `finding` | pre-deployment findings ([`Finding`], [`Severity`]) |
//! | `checks` | the pre-deployment checks ([`check_deployment`]; [`check_and_resolve`] gives the resolution they made too) |
//! | `keys` | unknown keys of tasks, parameters, graphs, releases, plugins and clusters ([`key_findings`], [`DocumentKind`]) |
//! | `key_lines` | the line of a key's path in a YAML or JSON text |
//! | `dot` | Graphviz output with filters ([`to_dot`], [`DotOptions`]) |

mod checks;
mod classes;
mod compile;
mod compute;
mod dot;
mod error;
mod evaluate;
mod finding;
mod fuel_steps;
mod key_lines;
mod keys;
mod master_shell;
mod merge;
mod order;
mod plan;
mod resolve;
mod schedule;
mod shape;
mod stage_anchors;
mod structure;
mod waits;

pub use checks::{check_and_resolve, check_deployment};
pub use dot::{to_dot, DotOptions};
pub use error::ResolveError;
pub use evaluate::{truthy, EvalContext, FieldEvaluator, NoExpressions};
pub use finding::{Finding, Severity};
pub use key_lines::PathStep;
pub use keys::{
    key_findings, path_text, text_key_findings, unknown_keys, DocumentKind, UnknownKey, UNKNOWN_KEY,
};
pub use master_shell::copy_id as master_shell_copy_id;
pub use merge::{
    merge, merge_for_cluster, GraphSource, MergedGraph, MergedTask, Origin, PluginOverlap,
};
pub use plan::{
    task_kind, FaultToleranceGroup, NodePlan, Plan, ResolvedTask, SpecError, WaitSet, WaitTarget,
    MAX_INLINE_WAITS,
};
pub use resolve::{check_plugin_overlaps, resolve, ResolveRequest};
pub use shape::{check_shape, check_tasks, FUEL_ONLY_TYPES};

/// The node id of the controller's own host, which runs the tasks placed on `master`.
pub const MASTER_NODE_ID: u64 = 0;
