//! Graphs (`fuel2 graph list/upload/download/delete/execute`): graph records with `relations`, the
//! four download levels of a cluster's tasks, and `POST /graphs/execute/` answering a transaction.

use super::{flag, records, transactions, Params};
use crate::api::auth::Operator;
use crate::api::body::{Doc, DocText};
use crate::api::error::{ApiError, Json, Query};
use crate::api::graphs::{owner, GraphUpload};
use crate::cluster_model::{graph_type_or_default, ClusterModel};
use crate::engine::StartError;
use crate::state::AppState;
use crate::store::{GraphBody, GraphOwner, StoreError};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plinth_common::graph::merge_for_cluster;
use plinth_common::model::Plugin;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::sync::Arc;

/// `GET /{releases|plugins|clusters}/{id}/deployment_graphs/` (`fetch_related` is accepted; each
/// owner's own graphs are listed, which is what `fuel2 graph list` shows per level).
pub async fn list(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id)): Path<(String, u64)>,
    Query(params): Query<Params>,
) -> Result<Json<Value>, ApiError> {
    flag(&params, "fetch_related")?;
    let owner = owner(&kind, id)?;
    state
        .blocking(move |s| {
            exists(s, owner)?;
            let graphs = s.store.list_graphs(owner)?;
            Ok(Json(Value::Array(
                graphs.iter().map(records::graph).collect(),
            )))
        })
        .await
}

/// 404 unless the owner exists.
fn exists(s: &AppState, owner: GraphOwner) -> Result<(), ApiError> {
    match owner {
        GraphOwner::Release(id) => s.store.get_release(id).map(drop)?,
        GraphOwner::Plugin(id) => s.store.get_plugin(id).map(drop)?,
        GraphOwner::Cluster(id) => s.store.get_cluster(id).map(drop)?,
    }
    Ok(())
}

/// `GET /graphs/`: every graph.
pub async fn all(
    State(state): State<Arc<AppState>>,
    _op: Operator,
) -> Result<Json<Value>, ApiError> {
    state
        .blocking(|s| {
            let graphs = s.store.list_all_graphs()?;
            Ok(Json(Value::Array(
                graphs.iter().map(records::graph).collect(),
            )))
        })
        .await
}

/// `GET /{kind}/{id}/deployment_graphs/{type}`.
pub async fn show(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id, graph_type)): Path<(String, u64, String)>,
) -> Result<Json<Value>, ApiError> {
    let owner = owner(&kind, id)?;
    state
        .blocking(move |s| {
            Ok(Json(records::graph(
                &s.store.get_graph(owner, &graph_type)?,
            )))
        })
        .await
}

/// A graph as `fuel2 graph upload` sends it: `{tasks, name?, node_filter?, metadata?}` or a bare list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Upload {
    /// A bare list of tasks.
    Tasks(Vec<Value>),
    /// A graph document.
    Graph(Map<String, Value>),
}

/// Nailgun graph fields Plinth keeps; any other is refused rather than silently dropped.
fn body_of(upload: Upload) -> Result<GraphBody, ApiError> {
    let mut doc = match upload {
        Upload::Tasks(tasks) => {
            return Ok(GraphBody {
                tasks,
                ..GraphBody::default()
            })
        }
        Upload::Graph(doc) => doc,
    };
    let tasks = match doc.remove("tasks") {
        Some(Value::Array(t)) => t,
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err(ApiError::bad_request("`tasks` must be a list of tasks")),
    };
    let metadata = doc.remove("metadata");
    let name = match doc.remove("name") {
        Some(Value::String(n)) => Some(n),
        _ => metadata
            .as_ref()
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .map(str::to_string),
    };
    let node_filter = match doc.remove("node_filter") {
        Some(Value::String(f)) => Some(f),
        None | Some(Value::Null) => None,
        Some(_) => return Err(ApiError::bad_request("`node_filter` must be a string")),
    };
    doc.remove("id");
    doc.remove("relations");
    if let Some(field) = doc.keys().next() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "unsupported_field",
            format!("graph field `{field}` is not supported (a graph has `tasks`, `name`, `node_filter`)"),
        ));
    }
    Ok(GraphBody {
        name,
        tasks,
        node_filter,
    })
}

/// A graph body as Plinth's graph routes take it (Nailgun's answers carry no findings, so without its
/// text).
fn upload_of(body: GraphBody) -> DocText<GraphUpload> {
    DocText {
        value: serde_json::to_value(&body).unwrap_or_default(),
        doc: GraphUpload::Graph(body),
        text: None,
    }
}

/// `POST /{kind}/{id}/deployment_graphs/{type}`: creates it (409 when it exists).
pub async fn create(
    state: State<Arc<AppState>>,
    op: Operator,
    Path((kind, id, graph_type)): Path<(String, u64, String)>,
    Doc(upload): Doc<Upload>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let body = upload_of(body_of(upload)?);
    let (status, Json(g)) = crate::api::graphs::create(
        state,
        op,
        Path((kind, id, graph_type)),
        crate::api::error::Query(crate::api::graphs::ForceQuery::default()),
        body,
    )
    .await?;
    Ok((status, Json(records::graph(&g.record))))
}

/// `PUT /{kind}/{id}/deployment_graphs/{type}`: replaces it.
pub async fn update(
    state: State<Arc<AppState>>,
    op: Operator,
    Path((kind, id, graph_type)): Path<(String, u64, String)>,
    Doc(upload): Doc<Upload>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let body = upload_of(body_of(upload)?);
    let (status, Json(g)) = crate::api::graphs::replace(
        state,
        op,
        Path((kind, id, graph_type)),
        crate::api::error::Query(crate::api::graphs::ForceQuery::default()),
        body,
    )
    .await?;
    Ok((status, Json(records::graph(&g.record))))
}

/// `DELETE /{kind}/{id}/deployment_graphs/{type}` (204).
pub async fn delete(
    state: State<Arc<AppState>>,
    op: Operator,
    path: Path<(String, u64, String)>,
) -> Result<StatusCode, ApiError> {
    crate::api::graphs::delete(state, op, path).await
}

fn graph_type(params: &Params) -> Result<String, ApiError> {
    let t = graph_type_or_default(params.get("graph_type").map(String::as_str)).to_string();
    crate::api::graphs::check_graph_type(&t)?;
    Ok(t)
}

/// `GET /clusters/{id}/deployment_tasks/?graph_type=` (`graph download --all`): the merged tasks.
pub async fn merged_tasks(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    Query(params): Query<Params>,
) -> Result<Json<Value>, ApiError> {
    let gt = graph_type(&params)?;
    state
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
            Ok(Json(
                serde_json::to_value(merged.task_list()).unwrap_or_default(),
            ))
        })
        .await
}

fn tasks_of(s: &AppState, owner: GraphOwner, graph_type: &str) -> Result<Vec<Value>, ApiError> {
    match s.store.get_graph(owner, graph_type) {
        Ok(g) => Ok(g.body.tasks),
        Err(StoreError::NotFound { kind: "graph", .. }) => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// `GET /clusters/{id}/deployment_tasks/{own|plugins|release}/?graph_type=` (`graph download
/// --cluster|--plugins|--release`): the cluster's own tasks, its enabled plugins' tasks merged by id
/// in the order the plugins were enabled, or its release's tasks.
pub async fn level_tasks(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((id, level)): Path<(u64, String)>,
    Query(params): Query<Params>,
) -> Result<Json<Value>, ApiError> {
    let gt = graph_type(&params)?;
    state
        .blocking(move |s| {
            let cluster = s.store.get_cluster(id)?;
            let tasks = match level.as_str() {
                "own" => tasks_of(s, GraphOwner::Cluster(id), &gt)?,
                "release" => tasks_of(s, GraphOwner::Release(cluster.release_id), &gt)?,
                "plugins" => {
                    let mut merged: Vec<Value> = Vec::new();
                    for p in &cluster.data.plugins {
                        for task in tasks_of(s, GraphOwner::Plugin(*p), &gt)? {
                            let tid = task.get("id").cloned();
                            match merged.iter_mut().find(|t| t.get("id") == tid.as_ref()) {
                                Some(slot) => *slot = task,
                                None => merged.push(task),
                            }
                        }
                    }
                    merged
                }
                other => {
                    return Err(ApiError::not_found(format!(
                        "no task level {other:?} (own, plugins or release)"
                    )))
                }
            };
            Ok(Json(Value::Array(tasks)))
        })
        .await
}

/// One graph of an execute request.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecuteGraph {
    #[serde(rename = "type")]
    graph_type: String,
    #[serde(default)]
    nodes: Option<Vec<u64>>,
    #[serde(default)]
    tasks: Option<Vec<String>>,
}

/// `POST /graphs/execute/` body.
#[derive(Debug, Deserialize)]
pub struct Execute {
    cluster: u64,
    #[serde(default)]
    graphs: Vec<ExecuteGraph>,
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    noop_run: bool,
    #[serde(default)]
    force: bool,
    #[serde(default)]
    debug: bool,
    #[serde(default)]
    subgraphs: Option<Value>,
}

/// `POST /graphs/execute/` (`fuel2 graph execute`): one graph type per execution; task subsets and
/// subgraphs are refused (Plinth runs whole graphs, resolved per node).
pub async fn execute(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Doc(body): Doc<Execute>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let _ = body.debug;
    if body.subgraphs.as_ref().is_some_and(|s| !s.is_null()) {
        return Err(ApiError::bad_request(
            "subgraphs are not supported: Plinth runs whole graphs (use a graph of those tasks)",
        ));
    }
    let graph = match body.graphs.as_slice() {
        [] => None,
        [one] => Some(one),
        more => {
            return Err(ApiError::bad_request(format!(
                "one graph type per execution ({} given); run them one after another, or name a strategy whose phases run them in order",
                more.len()
            )))
        }
    };
    if graph.is_some_and(|g| g.tasks.as_ref().is_some_and(|t| !t.is_empty())) {
        return Err(ApiError::bad_request(
            "task names are not supported: Plinth runs whole graphs (use a graph of those tasks)",
        ));
    }
    let run = transactions::Run {
        cluster_id: body.cluster,
        graph_type: graph.map(|g| g.graph_type.clone()),
        node_ids: graph.and_then(|g| g.nodes.clone()),
        noop: body.noop_run,
        force: body.force,
        dry_run: body.dry_run,
    };
    transactions::start(&state, run).await
}
