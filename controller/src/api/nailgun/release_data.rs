//! A release's `attributes_metadata` and `components` (`fuel2 release repos list|update`,
//! `fuel2 release component list`), and the extensions `fuel2 extension list` and
//! `fuel2 env extension show` read (Plinth enables none).

use crate::api::auth::Operator;
use crate::api::body::Doc;
use crate::api::error::{ApiError, Json};
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::{json, Value};
use std::sync::Arc;

/// `GET /releases/{id}/attributes_metadata/`: the attributes a new cluster of the release starts
/// with, as the release holds them (`editable.repo_setup.repos` are the repositories).
pub async fn attributes_metadata(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<Value>, ApiError> {
    state
        .blocking(move |s| {
            let release = s.store.get_release(id)?;
            Ok(Json(
                release
                    .data
                    .get("attributes_metadata")
                    .cloned()
                    .unwrap_or_else(|| json!({"editable": {}, "generated": {}})),
            ))
        })
        .await
}

/// `PUT /releases/{id}/attributes_metadata/` (`fuel2 release repos update`): replaces them, checked
/// as the release they make is checked (one transaction; a refused change changes nothing).
pub async fn put_attributes_metadata(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    Doc(body): Doc<Value>,
) -> Result<Json<Value>, ApiError> {
    if !body.get("editable").is_some_and(Value::is_object) {
        return Err(ApiError::bad_request(
            "attributes_metadata is a mapping with `editable` (and `generated`)",
        ));
    }
    state
        .blocking(move |s| {
            let mut problem: Option<ApiError> = None;
            let updated = s.store.update_release_data(id, &mut |r| {
                let mut next = r.clone();
                if let Some(data) = next.data.as_object_mut() {
                    data.insert("attributes_metadata".into(), body.clone());
                }
                if let Err(e) = crate::cluster_model::release_model(&next) {
                    problem = Some(ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "invalid_attributes_metadata",
                        e.to_string(),
                    ));
                    return Err(crate::store::StoreError::Conflict(
                        "attributes_metadata refused".into(),
                    ));
                }
                *r = next;
                Ok(())
            });
            match (updated, problem) {
                (_, Some(problem)) => Err(problem),
                (Ok(r), None) => Ok(Json(
                    r.data
                        .get("attributes_metadata")
                        .cloned()
                        .unwrap_or(Value::Null),
                )),
                (Err(e), None) => Err(e.into()),
            }
        })
        .await
}

/// `GET /releases/{id}/components/`: the release's `components_metadata` (Nailgun's components:
/// `name`, `compatible`, `requires`, ...), empty when it has none.
pub async fn components(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<Value>, ApiError> {
    state
        .blocking(move |s| {
            let release = s.store.get_release(id)?;
            Ok(Json(
                release
                    .data
                    .get("components_metadata")
                    .cloned()
                    .filter(Value::is_array)
                    .unwrap_or_else(|| json!([])),
            ))
        })
        .await
}

/// `GET /extensions/`: Nailgun's extensions (volume manager, network checks, ...) are parts of
/// Nailgun; Plinth has none, so none is listed.
pub async fn extensions(_op: Operator) -> Json<Value> {
    Json(json!([]))
}

/// `GET /clusters/{id}/extensions/`: the cluster's enabled extensions: none.
pub async fn cluster_extensions(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<Value>, ApiError> {
    state
        .blocking(move |s| {
            s.store.get_cluster(id)?;
            Ok(Json(json!([])))
        })
        .await
}
