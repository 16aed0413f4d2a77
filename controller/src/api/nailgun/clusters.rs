//! Environments (`fuel2 env ...`): list, show, attributes (for the enabled plugins), adding and
//! removing nodes, and deploying changes.

use super::{flag, records, transactions, Params};
use crate::api::auth::Operator;
use crate::api::error::ApiError;
use crate::api::error::Json;
use crate::api::error::Query;
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// `GET /clusters/`.
pub async fn list(
    State(state): State<Arc<AppState>>,
    _op: Operator,
) -> Result<Json<Value>, ApiError> {
    state
        .blocking(|s| {
            let all = s.store.list_clusters()?;
            Ok(Json(Value::Array(
                all.iter().map(records::cluster).collect(),
            )))
        })
        .await
}

/// `GET /clusters/{id}/`.
pub async fn show(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<Value>, ApiError> {
    state
        .blocking(move |s| Ok(Json(records::cluster(&s.store.get_cluster(id)?))))
        .await
}

/// `GET /clusters/{id}/attributes/`: the cluster's settings as `editable`, each enabled plugin there as
/// Nailgun marks it (`metadata.class: plugin`, `enabled`, `chosen_id`), which is how `fuel2` finds them.
pub async fn attributes(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<Value>, ApiError> {
    state
        .blocking(move |s| {
            let cluster = s.store.get_cluster(id)?;
            let (mut editable, generated) = match &cluster.settings {
                Value::Object(m) if m.contains_key("editable") => (
                    m.get("editable")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default(),
                    m.get("generated").cloned().unwrap_or(json!({})),
                ),
                Value::Object(m) => (m.clone(), json!({})),
                _ => (Map::new(), json!({})),
            };
            for plugin_id in &cluster.data.plugins {
                let p = s.store.get_plugin(*plugin_id)?;
                let view = records::plugin(&p);
                let entry = editable.entry(p.name.clone()).or_insert_with(|| json!({}));
                if !entry.is_object() {
                    *entry = json!({});
                }
                entry["metadata"] = json!({
                    "class": "plugin",
                    "enabled": true,
                    "chosen_id": p.id,
                    "label": view["title"],
                    "versions": [{"metadata": {"plugin_id": p.id, "plugin_version": p.version}}],
                });
            }
            Ok(Json(json!({"editable": editable, "generated": generated})))
        })
        .await
}

/// One entry of `POST /clusters/{id}/assignment/`.
#[derive(Debug, Deserialize)]
pub struct Assignment {
    id: u64,
    #[serde(default)]
    roles: Vec<String>,
}

/// One entry of `POST /clusters/{id}/unassignment/`.
#[derive(Debug, Deserialize)]
pub struct Unassignment {
    id: u64,
}

/// `POST /clusters/{id}/assignment/` (`fuel2 env add nodes`): the nodes get the roles as pending roles;
/// the answer lists them (200, as Nailgun answers with a body `fuel2` decodes).
pub async fn assignment(
    state: State<Arc<AppState>>,
    op: Operator,
    Path(id): Path<u64>,
    crate::api::body::Doc(body): crate::api::body::Doc<Vec<Assignment>>,
) -> Result<Json<Value>, ApiError> {
    let nodes: Vec<Value> = body
        .iter()
        .map(|a| json!({"id": a.id, "roles": a.roles}))
        .collect();
    let plinth = serde_json::from_value(json!({ "nodes": nodes }))
        .map_err(|e| ApiError::bad_request(format!("assignment: {e}")))?;
    crate::api::clusters::assign(state, op, Path(id), Json(plinth)).await?;
    Ok(Json(Value::Array(nodes)))
}

/// `POST /clusters/{id}/unassignment/` (`fuel2 env remove nodes`).
pub async fn unassignment(
    state: State<Arc<AppState>>,
    op: Operator,
    Path(id): Path<u64>,
    crate::api::body::Doc(body): crate::api::body::Doc<Vec<Unassignment>>,
) -> Result<Json<Value>, ApiError> {
    let ids: Vec<u64> = body.iter().map(|u| u.id).collect();
    if ids.is_empty() {
        return Err(ApiError::bad_request("no nodes to remove"));
    }
    let plinth = serde_json::from_value(json!({ "node_ids": ids }))
        .map_err(|e| ApiError::bad_request(format!("unassignment: {e}")))?;
    crate::api::clusters::unassign(state, op, Path(id), Json(plinth)).await?;
    Ok(Json(json!(ids
        .iter()
        .map(|n| json!({"id": n}))
        .collect::<Vec<_>>())))
}

/// `PUT /clusters/{id}/changes?dry_run=&noop_run=` (`fuel2 env deploy`): deploys the `default` graph on
/// the cluster's nodes (those with pending changes join by themselves).
pub async fn changes(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    Query(params): Query<Params>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let run = transactions::Run {
        cluster_id: id,
        graph_type: None,
        node_ids: None,
        noop: flag(&params, "noop_run")?,
        force: flag(&params, "force")?,
        dry_run: flag(&params, "dry_run")?,
    };
    transactions::start(&state, run).await
}
