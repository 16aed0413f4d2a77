//! Read-only views of a cluster's graphs (seed 002): the merged tasks of a graph type and each class's
//! tasks, the serialized (resolved) tasks per node, the Graphviz drawing, and the pre-deployment checks.

use super::auth::Operator;
use super::body::Answer;
use super::error::{ApiError, Query};
use super::graphs::check_graph_type;
use crate::cluster_model::{graph_type_or_default, ClusterModel};
use crate::engine::{DeployOptions, DeployRequest, StartError};
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::IntoResponse;
use plinth_api::answers::{Checks, SerializedTasks};
use plinth_common::graph::{merge_for_cluster, to_dot, DotOptions, Finding, Severity};
use plinth_common::model::Plugin;
use plinth_common::snapshot::ResolutionError;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// The query of the views.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ViewQuery {
    /// The graph type (`default` when absent).
    #[serde(default)]
    graph_type: Option<String>,
    /// `yaml` for YAML (else `Accept` decides).
    #[serde(default)]
    format: Option<String>,
    /// Comma-separated node ids (serialized tasks, checks).
    #[serde(default)]
    nodes: Option<String>,
    /// DOT: only these tasks (comma-separated).
    #[serde(default)]
    tasks: Option<String>,
    /// DOT: this task and its ancestors.
    #[serde(default)]
    parents_for: Option<String>,
    /// DOT: leave out these task types or ids (comma-separated).
    #[serde(default)]
    remove: Option<String>,
}

fn list(text: Option<&str>) -> Vec<String> {
    text.unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn node_ids(text: Option<&str>) -> Result<Option<Vec<u64>>, ApiError> {
    let Some(text) = text else { return Ok(None) };
    list(Some(text))
        .iter()
        .map(|s| {
            s.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("`nodes`: {s:?} is not a node id")))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn graph_type(q: &ViewQuery) -> Result<String, ApiError> {
    let t = graph_type_or_default(q.graph_type.as_deref()).to_string();
    check_graph_type(&t)?;
    Ok(t)
}

/// `GET /api/v1/clusters/{id}/deployment_tasks/?graph_type=`: the merged tasks (release → enabled
/// plugins → cluster), each as its last source wrote it.
#[utoipa::path(
    get,
    path = "/clusters/{id}/deployment_tasks/",
    tag = "graphs",
    params(("id" = u64, Path, description = "the record's id"), ViewQuery),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success"),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn cluster_tasks(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    headers: HeaderMap,
    Query(q): Query<ViewQuery>,
) -> Result<Answer<Value>, ApiError> {
    let gt = graph_type(&q)?;
    let merged = state
        .blocking(move |s| {
            let model = ClusterModel::load(s.store.as_ref(), id, &[gt.as_str()])?;
            let plugins: Vec<&Plugin> = model.snapshot.plugins.iter().collect();
            let merged = merge_for_cluster(
                &model.snapshot.release,
                &plugins,
                &model.snapshot.cluster,
                &gt,
            )
            .map_err(StartError::Resolve)?;
            Ok(serde_json::to_value(merged.task_list()).unwrap_or_default())
        })
        .await?;
    Ok(Answer::negotiated(merged, &headers, q.format.as_deref()))
}

/// `GET /api/v1/{releases|plugins}/{id}/deployment_tasks/?graph_type=`: that class's own tasks.
#[utoipa::path(
    get,
    path = "/{kind}/{id}/deployment_tasks/",
    tag = "graphs",
    params(("kind" = String, Path, description = "`releases`, `plugins` or `clusters`"), ("id" = u64, Path, description = "the record's id"), ViewQuery),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success"),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn class_tasks(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id)): Path<(String, u64)>,
    headers: HeaderMap,
    Query(q): Query<ViewQuery>,
) -> Result<Answer<Value>, ApiError> {
    let gt = graph_type(&q)?;
    let owner = super::graphs::owner(&kind, id)?;
    let tasks = state
        .blocking(move |s| match s.store.get_graph(owner, &gt) {
            Ok(g) => Ok(Value::Array(g.body.tasks)),
            Err(crate::store::StoreError::NotFound { kind: "graph", .. }) => Ok(json!([])),
            Err(e) => Err(e.into()),
        })
        .await?;
    Ok(Answer::negotiated(tasks, &headers, q.format.as_deref()))
}

fn request(cluster_id: u64, q: &ViewQuery) -> Result<DeployRequest, ApiError> {
    Ok(DeployRequest {
        cluster_id,
        graph_type: Some(graph_type(q)?),
        node_ids: node_ids(q.nodes.as_deref())?,
        strategy: None,
        action: None,
        options: DeployOptions::default(),
        inputs_from: None,
    })
}

/// `GET /api/v1/clusters/{id}/serialized_tasks/?graph_type=&nodes=`: every node's resolved, ordered tasks
/// as a deployment would send them, with the wait sets and primaries.
#[utoipa::path(
    get,
    path = "/clusters/{id}/serialized_tasks/",
    tag = "graphs",
    params(("id" = u64, Path, description = "the record's id"), ViewQuery),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::answers::SerializedTasks),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn serialized(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    headers: HeaderMap,
    Query(q): Query<ViewQuery>,
) -> Result<Answer<Value>, ApiError> {
    let req = request(id, &q)?;
    let out = state
        .blocking(move |s| {
            let mut resolved = s.engine.resolve_only(&req)?;
            Ok(SerializedTasks {
                plan: resolved.plans.pop_first().map(|(_, plan)| plan),
                findings: resolved.findings,
            })
        })
        .await?;
    let out = serde_json::to_value(out).unwrap_or_default();
    Ok(Answer::negotiated(out, &headers, q.format.as_deref()))
}

/// `GET /api/v1/clusters/{id}/checks/?graph_type=&nodes=`: the pre-deployment checks, errors and
/// warnings (`ok` is false when a deployment would be refused).
#[utoipa::path(
    get,
    path = "/clusters/{id}/checks/",
    tag = "graphs",
    params(("id" = u64, Path, description = "the record's id"), ViewQuery),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::answers::Checks),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn checks(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    Query(q): Query<ViewQuery>,
) -> Result<axum::Json<Checks>, ApiError> {
    let req = request(id, &q)?;
    state
        .blocking(move |s| match s.engine.resolve_only(&req) {
            Ok(r) => Ok(axum::Json(Checks {
                ok: true,
                findings: r.findings,
            })),
            Err(StartError::Resolution(ResolutionError::Checks { findings, .. })) => {
                Ok(axum::Json(Checks {
                    ok: !findings.iter().any(|f| f.severity == Severity::Error),
                    findings,
                }))
            }
            Err(StartError::Resolution(
                e @ (ResolutionError::Merge(_) | ResolutionError::Unresolved { .. }),
            )) => Ok(axum::Json(Checks {
                ok: false,
                findings: vec![Finding::error("graph_error", e.to_string())],
            })),
            Err(e) => Err(e.into()),
        })
        .await
}

/// `GET /api/v1/clusters/{id}/deploy_tasks/graph.gv?graph_type=&tasks=&parents_for=&remove=`: the
/// merged graph in Graphviz DOT.
#[utoipa::path(
    get,
    path = "/clusters/{id}/deploy_tasks/graph.gv",
    tag = "graphs",
    params(("id" = u64, Path, description = "the record's id"), ViewQuery),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success"),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn dot(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    Query(q): Query<ViewQuery>,
) -> Result<axum::response::Response, ApiError> {
    let gt = graph_type(&q)?;
    let options = DotOptions {
        tasks: list(q.tasks.as_deref()),
        parents_for: q.parents_for.clone().filter(|s| !s.is_empty()),
        remove: list(q.remove.as_deref()),
    };
    let text = state
        .blocking(move |s| {
            let model = ClusterModel::load(s.store.as_ref(), id, &[gt.as_str()])?;
            let plugins: Vec<&Plugin> = model.snapshot.plugins.iter().collect();
            let merged = merge_for_cluster(
                &model.snapshot.release,
                &plugins,
                &model.snapshot.cluster,
                &gt,
            )
            .map_err(StartError::Resolve)?;
            Ok(to_dot(&merged, &gt, &options).map_err(StartError::Resolve)?)
        })
        .await?;
    Ok((
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/vnd.graphviz; charset=utf-8"),
        )],
        text,
    )
        .into_response())
}
