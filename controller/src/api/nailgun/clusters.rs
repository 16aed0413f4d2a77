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
            // Nailgun answers the editable attributes alone, and refuses `generated` in a PUT: what
            // `fuel2 env settings download` writes uploads again unchanged.
            let mut editable = match &cluster.settings {
                Value::Object(m) if m.contains_key("editable") => m
                    .get("editable")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default(),
                Value::Object(m) => m.clone(),
                _ => Map::new(),
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
            Ok(Json(json!({ "editable": editable })))
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

/// What `fuel2 env create` posts.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewEnvironment {
    name: String,
    release_id: u64,
    /// Nailgun's network segmentation (`vlan`, `gre`, `tun`): Plinth configures no networks, so it
    /// is checked as Nailgun checks it and not kept.
    #[serde(default)]
    net_segment_type: Option<String>,
    /// Always empty from `fuel2`.
    #[serde(default)]
    nodes: Vec<Value>,
    /// Always empty from `fuel2`.
    #[serde(default)]
    tasks: Vec<Value>,
}

/// `POST /clusters/` (`fuel2 env create --name N --release R [--net-segmentation-type T]`): a cluster
/// made as Plinth's own `POST /clusters` makes it (the release's attributes), answered in Nailgun's
/// shape (201).
pub async fn create(
    state: State<Arc<AppState>>,
    op: Operator,
    crate::api::body::Doc(body): crate::api::body::Doc<NewEnvironment>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    if let Some(t) = &body.net_segment_type {
        if !matches!(t.as_str(), "vlan" | "gre" | "tun") {
            return Err(ApiError::bad_request(format!(
                "`net_segment_type` {t:?} is none of vlan, gre, tun"
            )));
        }
    }
    if !body.nodes.is_empty() || !body.tasks.is_empty() {
        return Err(ApiError::bad_request(
            "a new environment starts without nodes and tasks: add nodes with `fuel2 env add nodes`",
        ));
    }
    let request = plinth_api::requests::CreateCluster {
        name: body.name,
        release_id: body.release_id,
        settings: Map::new(),
    };
    let (status, Json(record)) = crate::api::clusters::create(state, op, Json(request)).await?;
    Ok((status, Json(records::cluster(&record))))
}

/// What `fuel2 env update` puts: only the name changes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentChange {
    name: String,
}

/// `PUT /clusters/{id}/` (`fuel2 env update --name N ID`): renames the cluster.
pub async fn update(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    crate::api::body::Doc(body): crate::api::body::Doc<EnvironmentChange>,
) -> Result<Json<Value>, ApiError> {
    let name = body.name.trim().to_string();
    if name.is_empty() {
        return Err(ApiError::bad_request("`name` must not be empty"));
    }
    state
        .blocking(move |s| {
            let renamed = s.store.modify_cluster(id, &mut |c, _| {
                c.name = name.clone();
                Ok(())
            })?;
            Ok(Json(records::cluster(&renamed)))
        })
        .await
}

/// `PUT /clusters/{id}/deploy/?nodes=1,2&force=0&noop_run=0` (`fuel2 env nodes deploy`): the
/// `default` graph on the chosen nodes.
pub async fn deploy_nodes(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    Query(params): Query<Params>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    on_nodes(&state, id, None, &params).await
}

/// `PUT /clusters/{id}/provision/?nodes=1,2` (`fuel2 env nodes provision`): the `provision` graph
/// on the chosen nodes.
pub async fn provision_nodes(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    Query(params): Query<Params>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    on_nodes(&state, id, Some("provision".into()), &params).await
}

async fn on_nodes(
    state: &Arc<AppState>,
    id: u64,
    graph_type: Option<String>,
    params: &Params,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let run = transactions::Run {
        cluster_id: id,
        graph_type,
        node_ids: super::node_ids_param(params, "nodes")?,
        noop: flag(params, "noop_run")?,
        force: flag(params, "force")?,
        dry_run: flag(params, "dry_run")?,
    };
    transactions::start(state, run).await
}

/// `PUT /clusters/{id}/changes/redeploy?dry_run=&noop_run=` (`fuel2 env redeploy`): the `default`
/// graph on every node of the cluster, deployed or not; tasks whose condition reads what changed
/// (`changed()`) run only when it did.
pub async fn redeploy(
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
        force: false,
        dry_run: flag(&params, "dry_run")?,
    };
    transactions::start(&state, run).await
}

/// A finished Nailgun task for an action that ends at once (reset, deletion).
fn done_task(name: &str, cluster: u64, message: String) -> Value {
    json!({
        "id": 0, "uuid": format!("{name}-{cluster}"), "name": name, "status": "ready",
        "progress": 100, "cluster": cluster, "message": message, "result": {},
    })
}

/// `PUT /clusters/{id}/reset/?force=` (`fuel2 env reset`): Plinth's reset (its nodes' roles pending
/// again, what their tasks ran against forgotten); a finished task answers (202). Refused (409) while
/// a deployment runs, `force` or not.
pub async fn reset(
    state: State<Arc<AppState>>,
    op: Operator,
    Path(id): Path<u64>,
    Query(params): Query<Params>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    flag(&params, "force")?;
    let Json(done) = crate::api::clusters::reset(state, op, Path(id)).await?;
    let count = done["nodes"].as_array().map_or(0, Vec::len);
    Ok((
        StatusCode::ACCEPTED,
        Json(done_task(
            "reset_environment",
            id,
            format!("environment {id} reset: {count} node(s) pending again"),
        )),
    ))
}

/// `DELETE /clusters/{id}/` (`fuel2 env delete`): Plinth's deletion (the cluster and what it owns;
/// its nodes stay, unassigned); a finished task answers (202).
pub async fn delete(
    state: State<Arc<AppState>>,
    op: Operator,
    Path(id): Path<u64>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    crate::api::clusters::delete(state, op, Path(id)).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(done_task(
            "cluster_deletion",
            id,
            format!("environment {id} deleted"),
        )),
    ))
}

/// `PUT /clusters/{id}/stop_deployment/` (`fuel2 env stop-deployment`): Plinth's stop (the running
/// deployment cancelled), answered as Nailgun's task: the deployment as a transaction (202).
pub async fn stop_deployment(
    state: State<Arc<AppState>>,
    op: Operator,
    Path(id): Path<u64>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let (status, Json(record)) = crate::api::clusters::stop_deployment(state, op, Path(id)).await?;
    Ok((status, Json(records::transaction(&record))))
}
