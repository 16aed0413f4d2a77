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
