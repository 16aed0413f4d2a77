//! `/api/v1/clusters/{id}/attributes` (Nailgun's): the cluster's settings as `{editable: ...}`, read,
//! replaced (`PUT`) or merged (`PATCH`), each change checked against the release's
//! `attributes_metadata.editable`; and `/attributes/defaults`, what a new cluster of the release starts
//! with. A change shows in the next deployment's data, so `changed($.storage...)` sees it.

use super::auth::Operator;
use super::error::{ApiError, Json};
use crate::cluster_model::{release_model, starting_attributes};
use crate::state::AppState;
use crate::store::StoreError;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plinth_common::model::{check_settings, dict_merge};
use serde_json::{json, Value};
use std::sync::Arc;

pub use plinth_api::answers::Attributes;
pub use plinth_api::requests::AttributesBody;

/// `GET /api/v1/clusters/{id}/attributes`.
#[utoipa::path(
    get,
    path = "/clusters/{id}/attributes/",
    tag = "clusters",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::answers::Attributes),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn show(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<Attributes>, ApiError> {
    state
        .blocking(move |s| {
            Ok(Json(Attributes {
                editable: s.store.get_cluster(id)?.settings,
            }))
        })
        .await
}

/// `GET /api/v1/clusters/{id}/attributes/defaults`: the release's editable defaults, generators run.
#[utoipa::path(
    get,
    path = "/clusters/{id}/attributes/defaults/",
    tag = "clusters",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::answers::Attributes),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn defaults(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<Attributes>, ApiError> {
    state
        .blocking(move |s| {
            let cluster = s.store.get_cluster(id)?;
            let release = release_model(&s.store.get_release(cluster.release_id)?)?;
            let master = super::clusters::master_ip(&s.config());
            let mut attrs = starting_attributes(&release, &Value::Null, &master)?;
            plinth_common::model::format_cluster_id(&mut attrs.editable, id);
            Ok(Json(Attributes {
                editable: attrs.editable,
            }))
        })
        .await
}

/// `PUT /api/v1/clusters/{id}/attributes`: replaces the settings.
#[utoipa::path(
    put,
    path = "/clusters/{id}/attributes/",
    tag = "clusters",
    params(("id" = u64, Path, description = "the record's id")),
    request_body = plinth_api::requests::AttributesBody,
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::answers::Attributes),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn replace(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    super::body::Doc(body): super::body::Doc<AttributesBody>,
) -> Result<Json<Attributes>, ApiError> {
    change(state, id, body, false).await
}

/// `PATCH /api/v1/clusters/{id}/attributes`: merges into the settings (mappings key by key).
#[utoipa::path(
    patch,
    path = "/clusters/{id}/attributes/",
    tag = "clusters",
    params(("id" = u64, Path, description = "the record's id")),
    request_body = plinth_api::requests::AttributesBody,
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::answers::Attributes),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn patch(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    super::body::Doc(body): super::body::Doc<AttributesBody>,
) -> Result<Json<Attributes>, ApiError> {
    change(state, id, body, true).await
}

async fn change(
    state: Arc<AppState>,
    id: u64,
    body: AttributesBody,
    merge: bool,
) -> Result<Json<Attributes>, ApiError> {
    state
        .blocking(move |s| {
            let cluster = s.store.get_cluster(id)?;
            let release = release_model(&s.store.get_release(cluster.release_id)?)?;
            let metadata = release
                .attributes_metadata
                .get("editable")
                .cloned()
                .unwrap_or(Value::Null);
            let given = Value::Object(body.editable);
            let mut refused: Option<ApiError> = None;
            let stored = s.store.modify_cluster(id, &mut |record, _nodes| {
                let mut next = if merge {
                    record.settings.clone()
                } else {
                    json!({})
                };
                dict_merge(&mut next, &given);
                let problems = check_settings(&metadata, &next);
                if !problems.is_empty() {
                    let list: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
                    refused = Some(
                        ApiError::new(
                            StatusCode::UNPROCESSABLE_ENTITY,
                            "invalid_attributes",
                            format!("cluster {id} attributes: {}", list.join("; ")),
                        )
                        .with_details(json!(list)),
                    );
                    return Err(StoreError::Conflict("refused".into()));
                }
                record.settings = next;
                Ok(())
            });
            match (stored, refused) {
                (_, Some(e)) => Err(e),
                (Ok(record), None) => Ok(Json(Attributes {
                    editable: record.settings,
                })),
                (Err(e), None) => Err(e.into()),
            }
        })
        .await
}
