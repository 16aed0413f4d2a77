//! Answers that are not records: resolutions and checks.

use plinth_common::graph::{Finding, Plan};
use serde::{Deserialize, Serialize};

/// `GET /clusters/{id}/serialized_tasks/`: every node's resolved, ordered tasks as a deployment would
/// send them, with the wait sets and primaries, and the checks' warnings.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SerializedTasks {
    /// The plan of the graph type asked for (`graph_type`, `nodes`, `wait_sets`,
    /// `fault_tolerance_groups`, `primaries`).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub plan: Option<Plan>,
    /// The pre-deployment checks' warnings.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub findings: Vec<Finding>,
}

/// `GET /clusters/{id}/checks/`: the pre-deployment checks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Checks {
    /// False when a deployment would be refused (a finding is an error).
    pub ok: bool,
    /// Every finding (`severity`, `code`, `message`).
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub findings: Vec<Finding>,
}

/// `GET|PUT|PATCH /clusters/{id}/attributes/` and `GET .../attributes/defaults/`: a cluster's settings
/// in Nailgun's shape, `{editable: {section: {attribute: {value: ...}}}}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Attributes {
    /// The settings by section and attribute.
    pub editable: serde_json::Value,
}

/// The answer to an upload (a graph, a release, a plugin): the record as stored, with what the checks
/// found in what was uploaded. Warnings (unknown keys, Fuel's types no agent runs, ...) never refuse
/// an upload; errors do, unless `force=true` is given, and then `forced` says it was stored despite
/// them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stored<T> {
    /// The record as stored.
    #[serde(flatten)]
    pub record: T,
    /// The checks' findings (`severity`, `code`, `message`, and where: `file`, `line`, `path`); absent
    /// when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// Set when `force=true` stored the upload despite error findings: says so, with the errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forced: Option<String>,
}
