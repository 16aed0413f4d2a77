//! A cluster's deployment configuration (Shipyard's `shipyard/DeploymentConfiguration/v1`): which strategy
//! its deployments use by default and the prepare and deploy phases' timeouts. One per cluster; the body is
//! the document (YAML or JSON), or a site design stream holding one concrete configuration. Stored as
//! uploaded beside what Plinth uses; a refused document changes nothing.

use super::auth::Operator;
use super::error::{ApiError, Json};
use super::strategies::refusal;
use crate::state::AppState;
use crate::store::ConfigurationRecord;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plinth_common::strategy::{load_configuration, Source};
use serde_json::json;
use std::sync::Arc;

/// `PUT /api/v1/clusters/{id}/deployment_configuration/`: creates or replaces.
#[utoipa::path(
    put,
    path = "/clusters/{id}/deployment_configuration/",
    tag = "strategies",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::records::ConfigurationRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn put(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    body: String,
) -> Result<Json<ConfigurationRecord>, ApiError> {
    let loaded = load_configuration(&[Source::new("", &body)]).map_err(refusal)?;
    let record = ConfigurationRecord {
        cluster_id: id,
        name: loaded.configuration.name.clone(),
        configuration: serde_json::to_value(&loaded.configuration).unwrap_or_default(),
        source: json!({
            "uploaded": loaded.document,
            "warnings": loaded.warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
        }),
    };
    state
        .blocking(move |s| Ok(Json(s.store.put_configuration(&record)?)))
        .await
}

/// `GET /api/v1/clusters/{id}/deployment_configuration/`.
#[utoipa::path(
    get,
    path = "/clusters/{id}/deployment_configuration/",
    tag = "strategies",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::records::ConfigurationRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn show(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<ConfigurationRecord>, ApiError> {
    state
        .blocking(move |s| Ok(Json(s.store.get_configuration(id)?)))
        .await
}

/// `DELETE /api/v1/clusters/{id}/deployment_configuration/`.
#[utoipa::path(
    delete,
    path = "/clusters/{id}/deployment_configuration/",
    tag = "strategies",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 204, description = "success"),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn delete(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<StatusCode, ApiError> {
    state
        .blocking(move |s| {
            s.store.delete_configuration(id)?;
            Ok(StatusCode::NO_CONTENT)
        })
        .await
}
