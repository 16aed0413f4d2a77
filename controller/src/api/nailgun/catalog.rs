//! Releases, plugins, tags and roles as Nailgun lists them (`fuel2 release list`, `plugins list`,
//! `tag list/create/update/delete/download`, `role list/download`).

use super::records;
use crate::api::auth::Operator;
use crate::api::body::Doc;
use crate::api::error::{ApiError, Json};
use crate::api::tags::TagView;
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// `GET /releases/`.
pub async fn releases(
    State(state): State<Arc<AppState>>,
    _op: Operator,
) -> Result<Json<Value>, ApiError> {
    state
        .blocking(|s| {
            let all = s.store.list_releases()?;
            Ok(Json(Value::Array(
                all.iter().map(records::release).collect(),
            )))
        })
        .await
}

/// `GET /releases/{id}/`.
pub async fn release(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<Value>, ApiError> {
    state
        .blocking(move |s| Ok(Json(records::release(&s.store.get_release(id)?))))
        .await
}

/// `GET /plugins/`.
pub async fn plugins(
    State(state): State<Arc<AppState>>,
    _op: Operator,
) -> Result<Json<Value>, ApiError> {
    state
        .blocking(|s| {
            let all = s.store.list_plugins()?;
            Ok(Json(Value::Array(
                all.iter().map(records::plugin).collect(),
            )))
        })
        .await
}

/// A tag in Nailgun's shape: its name and `meta` (`has_primary`), with Plinth's owner and read-only flag.
fn tag_record(t: &TagView) -> Value {
    json!({
        "name": t.name,
        "meta": {"has_primary": t.has_primary},
        "owner": t.owner,
        "read_only": t.read_only,
    })
}

/// `GET /{releases|clusters}/{id}/tags/`.
pub async fn tags(
    state: State<Arc<AppState>>,
    op: Operator,
    path: Path<(String, u64)>,
) -> Result<Json<Value>, ApiError> {
    let Json(all) = crate::api::tags::list(state, op, path).await?;
    Ok(Json(Value::Array(all.iter().map(tag_record).collect())))
}

/// `GET /{releases|clusters}/{id}/tags/{name}/`.
pub async fn tag(
    state: State<Arc<AppState>>,
    op: Operator,
    Path((kind, id, name)): Path<(String, u64, String)>,
) -> Result<Json<Value>, ApiError> {
    let Json(all) = crate::api::tags::list(state, op, Path((kind.clone(), id))).await?;
    all.iter()
        .find(|t| t.name == name)
        .map(|t| Json(tag_record(t)))
        .ok_or_else(|| ApiError::not_found(format!("no tag {name:?} in {kind} {id}")))
}

/// `has_primary` from a tag document: `meta.has_primary` (Nailgun) or `has_primary` (Plinth).
fn has_primary(doc: &Map<String, Value>) -> Result<bool, ApiError> {
    let v = doc
        .get("meta")
        .and_then(|m| m.get("has_primary"))
        .or_else(|| doc.get("has_primary"));
    match v {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(ApiError::bad_request(format!(
            "`meta.has_primary` must be true or false, not {other}"
        ))),
    }
}

/// `POST /{releases|clusters}/{id}/tags/` with `{name, meta: {has_primary}}`.
pub async fn create_tag(
    state: State<Arc<AppState>>,
    op: Operator,
    Path((kind, id)): Path<(String, u64)>,
    Doc(doc): Doc<Map<String, Value>>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let name = doc
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| ApiError::bad_request("a tag needs a string `name`"))?
        .to_string();
    let new = serde_json::from_value(json!({"name": name, "has_primary": has_primary(&doc)?}))
        .map_err(|e| ApiError::bad_request(format!("tag: {e}")))?;
    let (status, Json(all)) =
        crate::api::tags::create(state, op, Path((kind, id)), Doc(new)).await?;
    let one = all
        .iter()
        .find(|t| t.name == name)
        .map(tag_record)
        .unwrap_or(Value::Null);
    Ok((status, Json(one)))
}

/// `PUT /{releases|clusters}/{id}/tags/{name}/` with `{meta: {has_primary}}`.
pub async fn update_tag(
    state: State<Arc<AppState>>,
    op: Operator,
    Path((kind, id, name)): Path<(String, u64, String)>,
    Doc(doc): Doc<Map<String, Value>>,
) -> Result<Json<Value>, ApiError> {
    if let Some(other) = doc.get("name").and_then(Value::as_str) {
        if other != name {
            return Err(ApiError::bad_request(format!(
                "the document names tag {other:?}, the path {name:?}"
            )));
        }
    }
    let change = serde_json::from_value(json!({"has_primary": has_primary(&doc)?}))
        .map_err(|e| ApiError::bad_request(format!("tag: {e}")))?;
    let Json(all) =
        crate::api::tags::modify(state, op, Path((kind, id, name.clone())), Doc(change)).await?;
    Ok(Json(
        all.iter()
            .find(|t| t.name == name)
            .map(tag_record)
            .unwrap_or(Value::Null),
    ))
}

/// `DELETE /{releases|clusters}/{id}/tags/{name}/` (204).
pub async fn delete_tag(
    state: State<Arc<AppState>>,
    op: Operator,
    path: Path<(String, u64, String)>,
) -> Result<StatusCode, ApiError> {
    crate::api::tags::delete(state, op, path).await
}

/// The roles an owner knows, in Nailgun's shape (`name`, `meta`, `volumes_roles_mapping`): a release's
/// own; for a cluster, its release's and then its enabled plugins'.
pub(crate) fn roles_of(s: &AppState, kind: &str, id: u64) -> Result<Vec<Value>, ApiError> {
    let mut sources: Vec<Value> = Vec::new();
    match kind {
        "releases" => sources.push(s.store.get_release(id)?.data),
        "clusters" => {
            let cluster = s.store.get_cluster(id)?;
            sources.push(s.store.get_release(cluster.release_id)?.data);
            for p in &cluster.data.plugins {
                sources.push(s.store.get_plugin(*p)?.data);
            }
            sources.push(json!({"roles_metadata": cluster.data.roles_metadata}));
        }
        other => {
            return Err(ApiError::not_found(format!(
                "{other:?} has no roles (releases and clusters do)"
            )))
        }
    }
    let mut out = Vec::new();
    for data in &sources {
        let mapping = data
            .get("volumes_metadata")
            .and_then(|v| v.get("volumes_roles_mapping"));
        for (name, meta) in data
            .get("roles_metadata")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            out.push(json!({
                "name": name,
                "meta": meta,
                "volumes_roles_mapping": mapping.and_then(|m| m.get(name)).cloned().unwrap_or(json!([])),
            }));
        }
    }
    Ok(out)
}

/// `GET /{releases|clusters}/{id}/roles/`.
pub async fn roles(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id)): Path<(String, u64)>,
) -> Result<Json<Value>, ApiError> {
    state
        .blocking(move |s| Ok(Json(Value::Array(roles_of(s, &kind, id)?))))
        .await
}

/// `GET /{releases|clusters}/{id}/roles/{name}/`.
pub async fn role(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id, name)): Path<(String, u64, String)>,
) -> Result<Json<Value>, ApiError> {
    state
        .blocking(move |s| {
            roles_of(s, &kind, id)?
                .into_iter()
                .find(|r| r["name"] == name.as_str())
                .map(Json)
                .ok_or_else(|| ApiError::not_found(format!("no role {name:?} in {kind} {id}")))
        })
        .await
}
