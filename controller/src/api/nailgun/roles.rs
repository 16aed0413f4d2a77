//! Role changes through Nailgun's paths (`fuel2 role create|update|delete --release|--env N`),
//! made by Plinth's own role writes (`PUT /releases/{id}/roles/{name}`, `PUT
//! /clusters/{id}/roles/{name}`), so both ports check a role the same way.

use super::catalog::roles_of;
use crate::api::auth::Operator;
use crate::api::body::Doc;
use crate::api::error::{ApiError, Json};
use crate::api::releases::RoleBody;
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::Value;
use std::sync::Arc;

/// Whether `kind`'s `id` has a role named `name` (its own, its release's or its plugins').
async fn exists(state: &Arc<AppState>, kind: &str, id: u64, name: &str) -> Result<bool, ApiError> {
    let (kind, name) = (kind.to_string(), name.to_string());
    state
        .blocking(move |s| {
            Ok(roles_of(s, &kind, id)?
                .iter()
                .any(|r| r["name"] == name.as_str()))
        })
        .await
}

async fn write(
    state: State<Arc<AppState>>,
    op: Operator,
    kind: &str,
    id: u64,
    name: String,
    body: Value,
) -> Result<Json<Value>, ApiError> {
    let path = Path((id, name));
    let body = Doc(RoleBody(body));
    match kind {
        "releases" => crate::api::releases::put_role(state, op, path, body).await,
        "clusters" => crate::api::clusters::put_role(state, op, path, body).await,
        other => Err(ApiError::not_found(format!(
            "{other:?} has no roles (releases and clusters do)"
        ))),
    }
}

/// `POST /{releases|clusters}/{id}/roles/` (`fuel2 role create`): a new role (`name`, `meta`); one
/// of that name is refused (409).
pub async fn create(
    state: State<Arc<AppState>>,
    op: Operator,
    Path((kind, id)): Path<(String, u64)>,
    Doc(body): Doc<Value>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let name = body
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| ApiError::bad_request("a role has a `name`"))?
        .to_string();
    if exists(&state, &kind, id, &name).await? {
        return Err(ApiError::conflict(format!(
            "role {name:?} exists already in {kind} {id}: change it with `fuel2 role update`"
        )));
    }
    let written = write(state, op, &kind, id, name, body).await?;
    Ok((StatusCode::CREATED, written))
}

/// `PUT /{releases|clusters}/{id}/roles/{name}/` (`fuel2 role update`): replaces an existing role.
pub async fn update(
    state: State<Arc<AppState>>,
    op: Operator,
    Path((kind, id, name)): Path<(String, u64, String)>,
    Doc(body): Doc<Value>,
) -> Result<Json<Value>, ApiError> {
    if !exists(&state, &kind, id, &name).await? {
        return Err(ApiError::not_found(format!(
            "no role {name:?} in {kind} {id}: make it with `fuel2 role create`"
        )));
    }
    write(state, op, &kind, id, name, body).await
}

/// `DELETE /{releases|clusters}/{id}/roles/{name}/` (`fuel2 role delete`): removes a role of the
/// release (or of the cluster's own); refused (409) while a node holds it, as Nailgun refuses, or
/// when it comes from somewhere else (a plugin, or the release for a cluster).
pub async fn delete(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id, name)): Path<(String, u64, String)>,
) -> Result<StatusCode, ApiError> {
    state
        .blocking(move |s| {
            let holders = |cluster_ids: &[u64]| -> Result<Vec<u64>, ApiError> {
                Ok(s.store
                    .list_nodes()?
                    .into_iter()
                    .filter(|n| n.cluster_id.is_some_and(|c| cluster_ids.contains(&c)))
                    .filter(|n| n.roles.iter().chain(&n.pending_roles).any(|r| *r == name))
                    .map(|n| n.id)
                    .collect())
            };
            let in_use = |nodes: Vec<u64>| {
                ApiError::conflict(format!(
                    "role {name:?} is held by node(s) {nodes:?}: remove it from them first"
                ))
            };
            match kind.as_str() {
                "releases" => {
                    let clusters: Vec<u64> = s
                        .store
                        .list_clusters()?
                        .iter()
                        .filter(|c| c.release_id == id)
                        .map(|c| c.id)
                        .collect();
                    let held = holders(&clusters)?;
                    if !held.is_empty() {
                        return Err(in_use(held));
                    }
                    let mut found = false;
                    s.store.update_release_data(id, &mut |r| {
                        found = r
                            .data
                            .get_mut("roles_metadata")
                            .and_then(Value::as_object_mut)
                            .and_then(|roles| roles.remove(&name))
                            .is_some();
                        Ok(())
                    })?;
                    if !found {
                        return Err(ApiError::not_found(format!(
                            "release {id} has no role {name:?} of its own"
                        )));
                    }
                }
                "clusters" => {
                    let held = holders(&[id])?;
                    if !held.is_empty() {
                        return Err(in_use(held));
                    }
                    let mut found = false;
                    s.store.modify_cluster(id, &mut |c, _| {
                        found = c.data.roles_metadata.shift_remove(&name).is_some();
                        Ok(())
                    })?;
                    if !found {
                        return Err(ApiError::conflict(format!(
                            "role {name:?} is not cluster {id}'s own (it comes from its release or a plugin): delete it there"
                        )));
                    }
                }
                other => {
                    return Err(ApiError::not_found(format!(
                        "{other:?} has no roles (releases and clusters do)"
                    )))
                }
            }
            Ok(StatusCode::NO_CONTENT)
        })
        .await
}
