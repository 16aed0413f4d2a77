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

/// `PUT /nodes/{id}/` (`fuel2 node update -n NAME | -H HOSTNAME`, `fuel2 node label set|delete`):
/// the node's name (Nailgun's `name` and `hostname` are both Plinth's one name) and labels (the whole
/// map; a label without a value is kept with an empty one). A name another node has is refused (409).
/// An accepted node keeps these over what its agent reports; a discovered one takes its agent's
/// report again at its next registration.
pub async fn update(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    crate::api::body::Doc(body): crate::api::body::Doc<serde_json::Map<String, Value>>,
) -> Result<Json<Value>, ApiError> {
    let mut name = None;
    let mut labels = None;
    for (key, value) in &body {
        match (key.as_str(), value) {
            ("name" | "hostname", Value::String(n)) if !n.trim().is_empty() => {
                name = Some(n.trim().to_string());
            }
            ("labels", Value::Object(map)) => {
                let mut set = indexmap::IndexMap::new();
                for (k, v) in map {
                    let v = match v {
                        Value::Null => String::new(),
                        Value::String(s) => s.clone(),
                        other => {
                            return Err(ApiError::bad_request(format!(
                                "label {k:?}: {other} is not text"
                            )))
                        }
                    };
                    set.insert(k.clone(), v);
                }
                labels = Some(set);
            }
            ("id", _) => {}
            (other, _) => {
                return Err(ApiError::bad_request(format!(
                    "node field {other:?} cannot be changed here: name, hostname and labels can"
                )))
            }
        }
    }
    state
        .blocking(move |s| {
            let node = s.store.modify_node(id, &mut |n| {
                if let Some(name) = &name {
                    n.name.clone_from(name);
                }
                if let Some(labels) = &labels {
                    n.labels = labels.clone().into_iter().collect();
                }
                Ok(())
            })?;
            s.store.notify(&crate::store::Notice::Node { id });
            let mut one = shape(s, vec![node])?;
            Ok(Json(one.pop().unwrap_or(Value::Null)))
        })
        .await
}

/// `DELETE /nodes/?ids=1,2` (`fuel2 node undiscover`): forgets the nodes, as Plinth's
/// `DELETE /nodes/{id}` does for one (an agent still running registers its node again, discovered).
pub async fn undiscover(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Query(params): Query<Params>,
) -> Result<Json<Value>, ApiError> {
    let ids = super::node_ids_param(&params, "ids")?
        .ok_or_else(|| ApiError::bad_request("`ids` names the nodes to forget"))?;
    state
        .blocking(move |s| {
            for id in &ids {
                let node = s.store.get_node(*id)?;
                s.store.delete_node(*id)?;
                s.agents.registry.remove(&node.node_key);
                s.store.notify(&crate::store::Notice::Node { id: *id });
                tracing::info!(node = id, "node deleted");
            }
            Ok(Json(serde_json::json!(ids)))
        })
        .await
}
