//! `/api/v1/nodes`: list, show (with facts), accept, delete.

use super::auth::Operator;
use super::error::{ApiError, Json, Query};
use crate::clock::now_ms;
use crate::state::AppState;
use crate::store::{NodeAdmission, NodeFilter, NodeRecord, NodeStatus, RefusalRecord};
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use std::sync::Arc;

pub use plinth_api::records::{AgentInfo, Hardware, NodeView};

/// The offline threshold in force, in milliseconds (read once per request).
fn offline_after_ms(state: &AppState) -> i64 {
    i64::try_from(state.config().offline_after.as_millis()).unwrap_or(i64::MAX)
}

fn view(state: &AppState, threshold: i64, mut node: NodeRecord, with_facts: bool) -> NodeView {
    // By key: one lookup, so a page of thousands of nodes costs thousands of lookups, not a scan each.
    if let Some(entry) = state.agents.registry.get(&node.node_key) {
        node.last_seen_ms = node.last_seen_ms.max(entry.last_seen_ms());
    }
    let online = now_ms() - node.last_seen_ms <= threshold;
    let hardware = Hardware::of(&node.facts);
    let agent = AgentInfo::of(&node.facts);
    if !with_facts {
        node.facts = serde_json::Value::Null;
    }
    NodeView {
        deployed_roles: node.roles.clone(),
        effective_tags: super::tags::own_tags(&node),
        hardware,
        agent,
        node,
        online,
    }
}

/// Fills each view's effective tags ([`super::tags::effective_tags_of`], the one definition every API
/// shows).
fn with_effective_tags(s: &AppState, views: &mut [NodeView]) {
    let tags = super::tags::effective_tags_of(s, views.iter().map(|v| &v.node));
    for v in views.iter_mut() {
        if let Some(effective) = tags.get(&v.node.id) {
            v.effective_tags = effective.clone();
        }
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
    /// Only nodes with this status (`discover`, `provisioning`, `provisioned`, `deploying`, `ready`, `error`).
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
    /// Only nodes whose name contains this text (ignoring ASCII case).
    #[serde(default)]
    pub name: Option<String>,
}

/// `GET /api/v1/nodes?limit=&marker=&status=&admission=&cluster_id=&tag=&name=`: a page of nodes by id (an
/// array, as Nailgun answers). When more nodes follow, `X-Next-Marker` holds the marker of the next
/// page and `Link` its address.
#[utoipa::path(
    get,
    path = "/nodes/",
    tag = "nodes",
    params(
        ("limit" = Option<u64>, Query, description = "at most this many (1,000 by default, at most 10,000)"),
        ("marker" = Option<u64>, Query, description = "nodes after this id: the previous page's X-Next-Marker"),
        ("status" = Option<String>, Query, description = "discover, provisioning, provisioned, deploying, ready or error"),
        ("admission" = Option<String>, Query, description = "discovered or accepted"),
        ("cluster_id" = Option<u64>, Query, description = "nodes of this cluster"),
        ("tag" = Option<String>, Query, description = "nodes holding this tag or role")
    ),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "a page of nodes (X-Next-Marker and Link name the next page)", body = Vec<plinth_api::records::NodeView>),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn list(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Query(q): Query<NodesQuery>,
    RawQuery(raw): RawQuery,
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
        name: q.name.clone().filter(|n| !n.is_empty()),
    };
    let (nodes, more) = state
        .blocking(move |s| {
            let threshold = offline_after_ms(s);
            let mut page = s.store.list_nodes_page(&filter)?;
            let more = page.len() > limit;
            page.truncate(limit);
            let mut views: Vec<NodeView> = page
                .into_iter()
                .map(|n| view(s, threshold, n, false))
                .collect();
            with_effective_tags(s, &mut views);
            Ok((views, more))
        })
        .await?;
    let next = nodes.last().filter(|_| more).map(|n| n.node.id);
    let mut response = Json(nodes).into_response();
    if let Some(next) = next {
        let headers = response.headers_mut();
        headers.insert("x-next-marker", HeaderValue::from(next));
        // The next page keeps the filters, as they were sent.
        let filters: String = raw
            .as_deref()
            .unwrap_or("")
            .split('&')
            .filter(|p| !p.is_empty() && !p.starts_with("limit=") && !p.starts_with("marker="))
            .map(|p| format!("&{p}"))
            .collect();
        if let Ok(link) = HeaderValue::from_str(&format!(
            "</api/v1/nodes?limit={limit}&marker={next}{filters}>; rel=\"next\""
        )) {
            headers.insert(header::LINK, link);
        }
    }
    Ok(response)
}

/// `GET /api/v1/nodes/{id}/refusals`: what the node sent that was refused (results, and lists it
/// refused), newest first.
#[utoipa::path(
    get,
    path = "/nodes/{id}/refusals/",
    tag = "nodes",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = Vec<plinth_api::records::RefusalRecord>),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
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
#[utoipa::path(
    get,
    path = "/nodes/{id}/",
    tag = "nodes",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::records::NodeView),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn show(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<NodeView>, ApiError> {
    state
        .blocking(move |s| {
            let mut one = [view(s, offline_after_ms(s), s.store.get_node(id)?, true)];
            with_effective_tags(s, &mut one);
            let [shown] = one;
            Ok(Json(shown))
        })
        .await
}

/// `POST /api/v1/nodes/{id}/accept`.
#[utoipa::path(
    post,
    path = "/nodes/{id}/accept/",
    tag = "nodes",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::records::NodeView),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn accept(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<NodeView>, ApiError> {
    state
        .blocking(move |s| {
            let node = s.store.set_admission(id, NodeAdmission::Accepted)?;
            s.agents.registry.upsert(&node);
            s.store.notify(&crate::store::Notice::Node { id });
            tracing::info!(node = id, "node accepted");
            Ok(Json(view(s, offline_after_ms(s), node, false)))
        })
        .await
}

/// `DELETE /api/v1/nodes/{id}`.
#[utoipa::path(
    delete,
    path = "/nodes/{id}/",
    tag = "nodes",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 204, description = "success"),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn delete(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<StatusCode, ApiError> {
    state
        .blocking(move |s| {
            let node = s.store.get_node(id)?;
            s.store.delete_node(id)?;
            s.agents.registry.remove(&node.node_key);
            s.store.notify(&crate::store::Notice::Node { id });
            tracing::info!(node = id, "node deleted");
            Ok(StatusCode::NO_CONTENT)
        })
        .await
}
