//! `/api/v1/nodes`: list, show (with facts), accept, delete.

use super::auth::Operator;
use super::error::{ApiError, Json, Query};
use crate::clock::now_ms;
use crate::state::AppState;
use crate::store::{NodeAdmission, NodeFilter, NodeRecord, NodeStatus, RefusalRecord};
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A node as operators see it.
#[derive(Debug, Serialize)]
pub struct NodeView {
    #[serde(flatten)]
    node: NodeRecord,
    /// Heard from within the offline threshold.
    online: bool,
    /// The roles deployed successfully (the same as `roles`, under Nailgun's other name).
    deployed_roles: Vec<String>,
}

/// The offline threshold in force, in milliseconds (read once per request).
fn offline_after_ms(state: &AppState) -> i64 {
    i64::try_from(state.config().offline_after.as_millis()).unwrap_or(i64::MAX)
}

fn view(state: &AppState, threshold: i64, mut node: NodeRecord, with_facts: bool) -> NodeView {
    if let Some(seen) = state.nodes.last_seen_of(node.id) {
        node.last_seen_ms = node.last_seen_ms.max(seen);
    }
    let online = now_ms() - node.last_seen_ms <= threshold;
    if !with_facts {
        node.facts = serde_json::Value::Null;
    }
    NodeView {
        deployed_roles: node.roles.clone(),
        node,
        online,
    }
}

/// Nodes a page holds when `limit` is not given.
pub const DEFAULT_PAGE: usize = 1000;
/// The most nodes one page may hold.
pub const MAX_PAGE: usize = 10_000;

/// `GET /api/v1/nodes` query: a page and its filters.
#[derive(Debug, Default, Deserialize)]
pub struct NodesQuery {
    /// At most this many nodes ([`DEFAULT_PAGE`] by default, at most [`MAX_PAGE`]).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Nodes after this id (the previous page's `X-Next-Marker`).
    #[serde(default)]
    pub marker: Option<u64>,
    /// Only nodes with this status (`discover`, `deploying`, `ready`, `error`).
    #[serde(default)]
    pub status: Option<NodeStatus>,
    /// Only `discovered` or `accepted` nodes.
    #[serde(default)]
    pub admission: Option<NodeAdmission>,
    /// Only nodes of this cluster.
    #[serde(default)]
    pub cluster_id: Option<u64>,
    /// Only nodes holding this tag or role.
    #[serde(default)]
    pub tag: Option<String>,
}

/// `GET /api/v1/nodes?limit=&marker=&status=&admission=&cluster_id=&tag=`: a page of nodes by id (an
/// array, as Nailgun answers). When more nodes follow, `X-Next-Marker` holds the marker of the next
/// page and `Link` its address.
pub async fn list(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Query(q): Query<NodesQuery>,
) -> Result<Response, ApiError> {
    let limit = q.limit.unwrap_or(DEFAULT_PAGE);
    if limit == 0 || limit > MAX_PAGE {
        return Err(ApiError::bad_request(format!(
            "limit must be 1 to {MAX_PAGE}"
        )));
    }
    let filter = NodeFilter {
        after_id: q.marker.unwrap_or(0),
        limit: limit + 1,
        status: q.status,
        admission: q.admission,
        cluster_id: q.cluster_id,
        tag: q.tag.clone(),
    };
    let (nodes, more) = state
        .blocking(move |s| {
            let threshold = offline_after_ms(s);
            let mut page = s.store.list_nodes_page(&filter)?;
            let more = page.len() > limit;
            page.truncate(limit);
            let views: Vec<NodeView> = page
                .into_iter()
                .map(|n| view(s, threshold, n, false))
                .collect();
            Ok((views, more))
        })
        .await?;
    let next = nodes.last().filter(|_| more).map(|n| n.node.id);
    let mut response = Json(nodes).into_response();
    if let Some(next) = next {
        let headers = response.headers_mut();
        headers.insert("x-next-marker", HeaderValue::from(next));
        if let Ok(link) = HeaderValue::from_str(&format!(
            "</api/v1/nodes?limit={limit}&marker={next}>; rel=\"next\""
        )) {
            headers.insert(header::LINK, link);
        }
    }
    Ok(response)
}

/// `GET /api/v1/nodes/{id}/refusals`: what the node sent that was refused (results, and lists it
/// refused), newest first.
pub async fn refusals(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<Vec<RefusalRecord>>, ApiError> {
    state
        .blocking(move |s| {
            s.store.get_node(id)?;
            Ok(Json(s.store.node_refusals(id)?))
        })
        .await
}

/// `GET /api/v1/nodes/{id}`.
pub async fn show(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<NodeView>, ApiError> {
    state
        .blocking(move |s| {
            Ok(Json(view(
                s,
                offline_after_ms(s),
                s.store.get_node(id)?,
                true,
            )))
        })
        .await
}

/// `POST /api/v1/nodes/{id}/accept`.
pub async fn accept(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<NodeView>, ApiError> {
    state
        .blocking(move |s| {
            let node = s.store.set_admission(id, NodeAdmission::Accepted)?;
            s.nodes.upsert(&node);
            tracing::info!(node = id, "node accepted");
            Ok(Json(view(s, offline_after_ms(s), node, false)))
        })
        .await
}

/// `DELETE /api/v1/nodes/{id}`.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<StatusCode, ApiError> {
    state
        .blocking(move |s| {
            let node = s.store.get_node(id)?;
            s.store.delete_node(id)?;
            s.nodes.remove(&node.node_key);
            tracing::info!(node = id, "node deleted");
            Ok(StatusCode::NO_CONTENT)
        })
        .await
}
