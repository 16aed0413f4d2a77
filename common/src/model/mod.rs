#![warn(missing_docs)]
//! The data model: releases, plugins, clusters, nodes, tasks and graphs.
//!
//! Everything here is plain serde data in the form its authors write it: a Fuel `tasks.yaml` loads as it is
//! (with the hyphenated `cross-depends` / `cross-depended-by` keys, `role` as a string or a list, `yaql_exp`
//! fields at any depth, and fields Plinth does not know kept in [`Task::extra`]).
//!
//! | module | owns |
//! |---|---|
//! | `list` | [`StringList`]: one string or a list of strings |
//! | `computed` | [`yaql_expression`] and [`contains_expression`]: spotting `{yaql_exp: ...}` values |
//! | `task` | [`Task`], [`TaskType`], [`CrossDep`], [`Dependencies`], [`Condition`], [`FaultTolerance`], [`Concurrency`] |
//! | `release` | [`Release`], [`RoleMeta`], [`TagMeta`], [`Limits`], [`Restriction`] |
//! | `plugin` | [`Plugin`] |
//! | `attributes` | [`new_cluster_attributes`]: a cluster's settings and generated attributes from its release, [`merged_values`] |
//! | `settings` | [`check_settings`]: settings against the release's editable metadata |
//! | `cluster` | [`Cluster`], [`ClusterStatus`] |
//! | `node` | [`Node`], [`NodeStatus`] |
//! | `graph` | [`Graph`], [`DEFAULT_NODE_FILTER`], [`default_node_filter`] |
//! | `legacy_tasks` | [`convert_legacy_tasks`]: Fuel plugins' old `tasks.yaml` (`stage: post_deployment/100`) |
//! | `load` | reading Fuel's YAML: [`parse_tasks`], [`parse_release_fixture`], [`LoadError`] |

mod attributes;
mod cluster;
mod computed;
mod graph;
mod legacy_tasks;
mod list;
mod load;
mod node;
mod plugin;
mod release;
mod settings;
mod task;

pub use attributes::{
    dict_merge, format_cluster_id, merged_values, new_cluster_attributes, traverse, AttributeError,
    AttributeSite, ClusterAttributes,
};
pub use cluster::{Cluster, ClusterStatus, ProvisionOverrides};
pub use computed::{contains_expression, yaql_expression, YAQL_KEY};
pub use graph::{default_node_filter, Graph, DEFAULT_GRAPH_TYPE, DEFAULT_NODE_FILTER};
pub use legacy_tasks::convert_legacy_tasks;
pub use list::StringList;
pub use load::{
    parse_graph, parse_release_fixture, parse_release_fixture_named, parse_tasks,
    release_fixture_names, FixtureRelease, LoadError,
};
pub use node::{Node, NodeStatus};
pub use plugin::Plugin;
pub use release::{
    Conflicts, LimitOverride, LimitValue, Limits, Release, Restriction, RoleMeta, TagMeta,
};
pub use settings::{check_settings, SettingProblem};
pub use task::{
    Concurrency, Condition, CrossDep, Dependencies, FaultTolerance, Policy, StrategyKind, Task,
    TaskType, COMPUTABLE_FIELDS,
};
