//! Nodes (`fuel2 node list [--env]`, `fuel2 node show`) in Nailgun's shape.

use super::{id_param, records, Params};
use crate::api::auth::Operator;
use crate::api::error::ApiError;
use crate::api::error::Json;
use crate::api::error::Query;
use crate::clock::now_ms;
use crate::cluster_model::{node_model, ClusterModel};
use crate::state::AppState;
use crate::store::NodeRecord;
use axum::extract::{Path, State};
use plinth_common::tags::{node_tags, Catalog};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The node's effective tags: its roles' tags, the operator's changes, and the primaries it holds.
fn effective_tags(n: &NodeRecord, catalog: Option<&Catalog>) -> Vec<String> {
    let mut tags: Vec<String> = match catalog {
        Some(c) => node_tags(&node_model(n), c).tags.into_iter().collect(),
        None => node_model(n).tags_added,
    };
    for p in &n.model.primary_tags {
        if !tags.contains(p) {
            tags.push(p.clone());
        }
    }
    tags
}

fn shape(s: &AppState, nodes: Vec<NodeRecord>) -> Result<Vec<Value>, ApiError> {
    let threshold = i64::try_from(s.config().offline_after.as_millis()).unwrap_or(i64::MAX);
    let now = now_ms();
    let mut catalogs: BTreeMap<u64, Catalog> = BTreeMap::new();
    let mut out = Vec::with_capacity(nodes.len());
    for n in nodes {
        if let Some(c) = n.cluster_id {
            if let std::collections::btree_map::Entry::Vacant(e) = catalogs.entry(c) {
                e.insert(ClusterModel::load(s.store.as_ref(), c, &[])?.catalog());
            }
        }
        let seen = s
            .nodes
            .get(&n.node_key)
            .map_or(0, |e| e.last_seen_ms())
            .max(n.last_seen_ms);
        let online = now - seen <= threshold;
        let tags = effective_tags(&n, n.cluster_id.and_then(|c| catalogs.get(&c)));
        out.push(records::node(&n, online, &tags));
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
