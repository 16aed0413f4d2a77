//! Typed graphs of releases and clusters (seed 002): list, show, create (409 if it exists), replace, delete.

use super::auth::Operator;
use super::error::{ApiError, Json};
use crate::state::AppState;
use crate::store::{GraphBody, GraphOwner, GraphRecord};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use std::sync::Arc;

/// Graph types are names: letters, digits, `_`, `-`, `.`; 1 to 64 characters.
pub fn check_graph_type(graph_type: &str) -> Result<(), ApiError> {
    let ok = !graph_type.is_empty()
        && graph_type.len() <= 64
        && graph_type
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "graph type {graph_type:?} is not a name (letters, digits, `_`, `-`, `.`; at most 64)"
        )))
    }
}

fn owner(kind: &str, id: u64) -> Result<GraphOwner, ApiError> {
    match kind {
        "releases" => Ok(GraphOwner::Release(id)),
        "clusters" => Ok(GraphOwner::Cluster(id)),
        "plugins" => Ok(GraphOwner::Plugin(id)),
        other => Err(ApiError::not_found(format!("no such collection {other:?}"))),
    }
}

/// `GET /api/v1/{releases|clusters}/{id}/deployment_graphs/`.
pub async fn list(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id)): Path<(String, u64)>,
) -> Result<Json<Vec<GraphRecord>>, ApiError> {
    let owner = owner(&kind, id)?;
    state
        .blocking(move |s| Ok(Json(s.store.list_graphs(owner)?)))
        .await
}

/// `GET .../deployment_graphs/{type}/`.
pub async fn show(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id, graph_type)): Path<(String, u64, String)>,
) -> Result<Json<GraphRecord>, ApiError> {
    let owner = owner(&kind, id)?;
    state
        .blocking(move |s| Ok(Json(s.store.get_graph(owner, &graph_type)?)))
        .await
}

/// Checks an uploaded graph: a valid type name, and every task a mapping with a non-empty string `id`.
pub fn check_graph(graph_type: &str, body: &GraphBody) -> Result<(), ApiError> {
    check_graph_type(graph_type)?;
    for (i, task) in body.tasks.iter().enumerate() {
        if task
            .get("id")
            .and_then(|v| v.as_str())
            .is_none_or(str::is_empty)
        {
            return Err(ApiError::bad_request(format!(
                "task {i} of graph {graph_type:?} has no string `id`"
            )));
        }
    }
    Ok(())
}

async fn put(
    state: Arc<AppState>,
    kind: String,
    id: u64,
    graph_type: String,
    body: GraphBody,
    replace: bool,
) -> Result<(StatusCode, Json<GraphRecord>), ApiError> {
    check_graph(&graph_type, &body)?;
    let owner = owner(&kind, id)?;
    state
        .blocking(move |s| {
            let g = s.store.put_graph(owner, &graph_type, &body, replace)?;
            Ok((
                if replace {
                    StatusCode::OK
                } else {
                    StatusCode::CREATED
                },
                Json(g),
            ))
        })
        .await
}

/// `POST .../deployment_graphs/{type}/`: creates; 409 if a graph of that type exists.
pub async fn create(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id, graph_type)): Path<(String, u64, String)>,
    Json(body): Json<GraphBody>,
) -> Result<(StatusCode, Json<GraphRecord>), ApiError> {
    put(state, kind, id, graph_type, body, false).await
}

/// `PUT .../deployment_graphs/{type}/`: creates or replaces.
pub async fn replace(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id, graph_type)): Path<(String, u64, String)>,
    Json(body): Json<GraphBody>,
) -> Result<(StatusCode, Json<GraphRecord>), ApiError> {
    put(state, kind, id, graph_type, body, true).await
}

/// `DELETE .../deployment_graphs/{type}/`.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id, graph_type)): Path<(String, u64, String)>,
) -> Result<StatusCode, ApiError> {
    let owner = owner(&kind, id)?;
    state
        .blocking(move |s| {
            s.store.delete_graph(owner, &graph_type)?;
            Ok(StatusCode::NO_CONTENT)
        })
        .await
}
