//! `/api/v1/nodes`: list, show (with facts), accept, delete.

use super::auth::Operator;
use super::error::{ApiError, Json};
use crate::clock::now_ms;
use crate::state::AppState;
use crate::store::{NodeAdmission, NodeRecord};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Serialize;
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

/// `GET /api/v1/nodes`.
pub async fn list(
    State(state): State<Arc<AppState>>,
    _op: Operator,
) -> Result<Json<Vec<NodeView>>, ApiError> {
    state
        .blocking(|s| {
            let threshold = offline_after_ms(s);
            Ok(Json(
                s.store
                    .list_nodes()?
                    .into_iter()
                    .map(|n| view(s, threshold, n, false))
                    .collect(),
            ))
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
