//! Nodes (`fuel2 node list [--env]`, `fuel2 node show`) in Nailgun's shape.

use super::{id_param, records, Params};
use crate::api::auth::Operator;
use crate::api::error::ApiError;
use crate::api::error::Json;
use crate::api::error::Query;
use crate::clock::now_ms;
use crate::state::AppState;
use crate::store::NodeRecord;
use axum::extract::{Path, State};
use serde_json::Value;
use std::sync::Arc;

fn shape(s: &AppState, nodes: Vec<NodeRecord>) -> Result<Vec<Value>, ApiError> {
    let threshold = i64::try_from(s.config().offline_after.as_millis()).unwrap_or(i64::MAX);
    let now = now_ms();
    let tags = crate::api::tags::effective_tags_of(s, &nodes);
    let mut out = Vec::with_capacity(nodes.len());
    for n in nodes {
        let seen = s
            .agents
            .registry
            .get(&n.node_key)
            .map_or(0, |e| e.last_seen_ms())
            .max(n.last_seen_ms);
        let online = now - seen <= threshold;
        let tags = tags.get(&n.id).map(Vec::as_slice).unwrap_or_default();
        out.push(records::node(&n, online, tags));
    }
    Ok(out)
}

/// `GET /nodes/?cluster_id=`: every node, or the cluster's.
pub async fn list(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Query(params): Query<Params>,
) -> Result<Json<Value>, ApiError> {
    let cluster = id_param(&params, "cluster_id")?;
    state
        .blocking(move |s| {
            let mut nodes = s.store.list_nodes()?;
            if let Some(c) = cluster {
                s.store.get_cluster(c)?;
                nodes.retain(|n| n.cluster_id == Some(c));
            }
            nodes.sort_by_key(|n| n.id);
            Ok(Json(Value::Array(shape(s, nodes)?)))
        })
        .await
}

/// `GET /nodes/{id}/`.
pub async fn show(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<Value>, ApiError> {
    state
        .blocking(move |s| {
            let n = s.store.get_node(id)?;
            let mut one = shape(s, vec![n])?;
            Ok(Json(one.pop().unwrap_or(Value::Null)))
        })
        .await
}
