//! Transactions (`fuel2 task list/show`): Plinth's deployments in Nailgun's shape, and starting one.

use super::{id_param, records, Params};
use crate::api::auth::Operator;
use crate::api::error::ApiError;
use crate::api::error::Json;
use crate::api::error::Query;
use crate::engine::{DeployOptions, DeployRequest};
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};

/// A deployment to start, as Nailgun's execute and changes requests ask for one.
#[derive(Debug, Clone)]
pub struct Run {
    /// The cluster.
    pub cluster_id: u64,
    /// The graph type (`default` when absent).
    pub graph_type: Option<String>,
    /// Some nodes, or the cluster's.
    pub node_ids: Option<Vec<u64>>,
    /// Puppet's no-op mode.
    pub noop: bool,
    /// Everything counts as changed.
    pub force: bool,
    /// Resolve and check only.
    pub dry_run: bool,
}

/// Where dry runs' ids start: apart from deployments' ids, which come from the database.
pub const DRY_RUN_IDS: u64 = 1_000_000_000;
/// How many dry runs are kept (in memory: a dry run stores nothing durable).
const DRY_RUNS_KEPT: usize = 64;

/// The latest dry runs as transactions, newest last.
fn dry_runs() -> &'static Mutex<(u64, VecDeque<Value>)> {
    static DRY_RUNS: OnceLock<Mutex<(u64, VecDeque<Value>)>> = OnceLock::new();
    DRY_RUNS.get_or_init(|| Mutex::new((DRY_RUN_IDS, VecDeque::new())))
}

/// Keeps a dry run's transaction and returns it with its id.
fn remember_dry_run(mut transaction: Value) -> Value {
    let mut guard = dry_runs().lock().unwrap_or_else(|p| p.into_inner());
    guard.0 += 1;
    transaction["id"] = json!(guard.0);
    transaction["uuid"] = json!(format!("plinth-dry-run-{}", guard.0));
    if guard.1.len() == DRY_RUNS_KEPT {
        guard.1.pop_front();
    }
    guard.1.push_back(transaction.clone());
    transaction
}

fn dry_run(id: u64) -> Option<Value> {
    let guard = dry_runs().lock().unwrap_or_else(|p| p.into_inner());
    guard.1.iter().find(|t| t["id"] == id).cloned()
}

/// Starts a deployment (202 with its transaction), or answers a dry run (200). A dry run resolves and
/// checks and stores nothing durable: its transaction is `ready` at once, carries the resolution in
/// `result`, and is kept in memory (the last 64, ids above [`DRY_RUN_IDS`]) so `fuel2` can read it.
pub async fn start(state: &Arc<AppState>, run: Run) -> Result<(StatusCode, Json<Value>), ApiError> {
    if let Some(t) = &run.graph_type {
        crate::api::graphs::check_graph_type(t)?;
    }
    let request = DeployRequest {
        cluster_id: run.cluster_id,
        graph_type: run.graph_type.clone(),
        node_ids: run.node_ids.clone(),
        strategy: None,
        action: None,
        inputs_from: None,
        options: DeployOptions {
            noop: run.noop,
            force: run.force,
        },
    };
    state
        .blocking(move |s| {
            if run.dry_run {
                let report = s.engine.dry_run(&request)?;
                return Ok((
                    StatusCode::OK,
                    Json(remember_dry_run(json!({
                        "id": 0,
                        "name": "dry_run_deployment",
                        "status": "ready",
                        "progress": 100,
                        "message": "Dry run: resolved and checked; nothing was stored or run",
                        "cluster": run.cluster_id,
                        "graph_type": run.graph_type.unwrap_or_else(|| "default".into()),
                        "dry_run": true,
                        "noop_run": run.noop,
                        "force": run.force,
                        "parent_id": null,
                        "result": report,
                        "time_start": null,
                        "time_end": null,
                    }))),
                ));
            }
            let dep = s.engine.start(&request)?.record;
            tracing::info!(deployment = dep.id, cluster = dep.cluster_id, graph_type = %dep.graph_type, nodes = dep.node_ids.len(), "deployment started (nailgun API)");
            Ok((StatusCode::ACCEPTED, Json(records::transaction(&dep))))
        })
        .await
}

/// `GET /transactions/?cluster_id=&statuses=`: deployments, then the dry runs kept.
pub async fn list(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Query(params): Query<Params>,
) -> Result<Json<Value>, ApiError> {
    let cluster = id_param(&params, "cluster_id")?;
    let statuses: Vec<String> = params
        .get("statuses")
        .map(|s| {
            s.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    state
        .blocking(move |s| {
            let all = s.store.list_deployments(cluster)?;
            let remembered: Vec<Value> = {
                let guard = dry_runs().lock().unwrap_or_else(|p| p.into_inner());
                guard
                    .1
                    .iter()
                    .filter(|t| cluster.is_none_or(|c| t["cluster"] == c))
                    .cloned()
                    .collect()
            };
            let out: Vec<Value> = all
                .iter()
                .map(records::transaction)
                .chain(remembered)
                .filter(|t| {
                    statuses.is_empty() || statuses.iter().any(|w| t["status"].as_str() == Some(w))
                })
                .collect();
            Ok(Json(Value::Array(out)))
        })
        .await
}

/// `GET /transactions/{id}/`.
pub async fn show(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<Value>, ApiError> {
    if id > DRY_RUN_IDS {
        return dry_run(id).map(Json).ok_or_else(|| {
            ApiError::not_found(format!(
                "dry run {id} not found (the last {DRY_RUNS_KEPT} are kept until a restart)"
            ))
        });
    }
    state
        .blocking(move |s| Ok(Json(records::transaction(&s.store.get_deployment(id)?))))
        .await
}

/// `GET /transactions/{id}/deployment_history/?nodes=&statuses=&tasks_names=&include_summary=`
/// (`fuel2 task history show`): each task of each node with its last attempt's status
/// (`ready`, `error`, `running`, `skipped`) and times; a task not started yet is not listed.
pub async fn history(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    Query(params): Query<Params>,
) -> Result<Json<Value>, ApiError> {
    let list = |name: &str| -> Option<Vec<String>> {
        params.get(name).map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
    };
    let nodes = super::node_ids_param(&params, "nodes")?;
    let statuses = list("statuses");
    let names = list("tasks_names");
    let summary = super::flag(&params, "include_summary")?;
    state
        .blocking(move |s| {
            s.store.get_deployment(id)?;
            // The last attempt of each node's task, in the order results came.
            let mut last: indexmap::IndexMap<(u64, String), plinth_common::wire::TaskResult> =
                indexmap::IndexMap::new();
            for (node, result) in s.store.deployment_results(id)? {
                let key = (node, result.task_id.clone());
                let newer = last
                    .get(&key)
                    .is_none_or(|seen| result.attempt >= seen.attempt);
                if newer {
                    last.insert(key, result);
                }
            }
            let records: Vec<Value> = last
                .into_iter()
                .filter(|((node, task), _)| {
                    nodes.as_ref().is_none_or(|n| n.contains(node))
                        && names.as_ref().is_none_or(|n| n.contains(task))
                })
                .map(|((node, task), r)| history_record(node, &task, &r, summary))
                .filter(|record| {
                    statuses.as_ref().is_none_or(|wanted| {
                        record["status"]
                            .as_str()
                            .is_some_and(|s| wanted.iter().any(|w| w == s))
                    })
                })
                .collect();
            Ok(Json(Value::Array(records)))
        })
        .await
}

/// One record of Nailgun's deployment history.
fn history_record(
    node: u64,
    task: &str,
    r: &plinth_common::wire::TaskResult,
    summary: bool,
) -> Value {
    use plinth_common::wire::ResultStatus;
    let status = match r.status {
        ResultStatus::Running => "running",
        ResultStatus::Succeeded => "ready",
        ResultStatus::Skipped => "skipped",
        ResultStatus::Failed | ResultStatus::TimedOut | ResultStatus::Interrupted => "error",
    };
    let ended = r.status.is_terminal();
    let end_ms = r
        .started_at_ms
        .saturating_add(i64::try_from(r.duration_ms).unwrap_or(i64::MAX));
    let mut record = json!({
        "task_name": task,
        "node_id": node.to_string(),
        "status": status,
        "time_start": records::iso_time(r.started_at_ms),
        "time_end": if ended { records::iso_time(end_ms) } else { Value::Null },
    });
    if summary {
        record["summary"] = json!({
            "message": r.message,
            "exit_code": r.exit_code,
            "attempt": r.attempt,
        });
    }
    record
}

/// The snapshot a deployment was resolved from, as stored with it.
fn stored_snapshot(s: &AppState, id: u64) -> Result<plinth_common::snapshot::Snapshot, ApiError> {
    s.store.get_deployment(id)?;
    serde_json::from_value(s.store.deployment_inputs(id)?).map_err(|e| {
        ApiError::internal(format!(
            "the inputs stored with deployment {id} cannot be read: {e}"
        ))
    })
}

/// `GET /transactions/{id}/deployment_info/` (`fuel2 task deployment-info download`): what each
/// node's tasks ran against (Nailgun's deployment info, by node id), made again from the inputs
/// stored with the deployment.
pub async fn deployment_info(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<Value>, ApiError> {
    state
        .blocking(move |s| {
            let snapshot = stored_snapshot(s, id)?;
            let plugins: Vec<&plinth_common::model::Plugin> = snapshot.plugins.iter().collect();
            let catalog = plinth_common::tags::Catalog::new(
                &snapshot.release,
                &plugins,
                Some(&snapshot.cluster),
            );
            let data = snapshot.data(&catalog);
            let mut by_node = serde_json::Map::new();
            for node in &snapshot.nodes {
                if let Some(state) = data.state(node.id) {
                    by_node.insert(node.id.to_string(), state.merged());
                }
            }
            Ok(Json(Value::Object(by_node)))
        })
        .await
}

/// `GET /transactions/{id}/settings/` (`fuel2 task settings download`): the cluster's settings the
/// deployment ran with, as Nailgun's attributes (`editable`).
pub async fn settings(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<Value>, ApiError> {
    state
        .blocking(move |s| {
            let snapshot = stored_snapshot(s, id)?;
            Ok(Json(json!({"editable": snapshot.cluster.settings})))
        })
        .await
}
