//! `/api/v1/enrollments`: servers enrolled before they boot (from Plinth's or Ironic's enrollment
//! files), released to a new agent key, deleted. BMC passwords go in and never come out.

use super::auth::Operator;
use super::error::{ApiError, Json, Query};
use crate::clock::now_ms;
use crate::enrollment::file::{self, Format};
use crate::enrollment::secrets::Sealer;
use crate::state::AppState;
use crate::store::EnrollmentRecord;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plinth_api::enrollment::EnrollAnswer;
use serde::Deserialize;
use std::sync::Arc;

/// `?format=` of `POST /enrollments`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnrollQuery {
    /// `plinth` or `ironic`; guessed from the file when absent.
    #[serde(default)]
    pub format: Option<String>,
}

/// `POST /api/v1/enrollments`: the body is an enrollment file, YAML or JSON, in Plinth's format or
/// Ironic's. All of its servers are enrolled, or none.
#[utoipa::path(
    post,
    path = "/enrollments/",
    tag = "enrollments",
    params(("format" = Option<String>, Query, description = "plinth or ironic; guessed when absent")),
    request_body(content = String, description = "an enrollment file (YAML or JSON)"),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 201, description = "enrolled", body = plinth_api::enrollment::EnrollAnswer),
        (status = "4XX", description = "refused: the error names the node and field", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn enroll(
    State(state): State<Arc<AppState>>,
    op: Operator,
    Query(q): Query<EnrollQuery>,
    body: Bytes,
) -> Result<(StatusCode, Json<EnrollAnswer>), ApiError> {
    let format = match q.format.as_deref() {
        None => None,
        Some(name) => Some(Format::parse(name).ok_or_else(|| {
            ApiError::bad_request(format!("format {name:?} is not plinth or ironic"))
        })?),
    };
    let text = std::str::from_utf8(&body)
        .map_err(|_| ApiError::bad_request("the enrollment file is not UTF-8 text"))?;
    let (format, nodes) = file::read(text, format).map_err(|e| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "bad_enrollment",
            e.to_string(),
        )
    })?;
    state
        .blocking(move |s| {
            let sealer = Sealer::new(&s.signer);
            let now = now_ms();
            let new = nodes
                .into_iter()
                .map(|n| crate::enrollment::to_new(n, &sealer, now))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| ApiError::internal(e.to_string()))?;
            let enrolled = s.store.enroll(&new)?;
            let names: Vec<&str> = enrolled.iter().map(|e| e.name.as_str()).collect();
            tracing::info!(by = %op.name, format = format.as_str(), servers = ?names, "servers enrolled");
            Ok((
                StatusCode::CREATED,
                Json(EnrollAnswer {
                    format: format.as_str().to_string(),
                    enrolled,
                }),
            ))
        })
        .await
}

/// `GET /api/v1/enrollments`.
#[utoipa::path(
    get,
    path = "/enrollments/",
    tag = "enrollments",
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "every enrolled server", body = Vec<plinth_api::enrollment::EnrollmentRecord>),
        (status = "4XX", description = "refused", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn list(
    State(state): State<Arc<AppState>>,
    _op: Operator,
) -> Result<Json<Vec<EnrollmentRecord>>, ApiError> {
    state
        .blocking(|s| Ok(Json(s.store.list_enrollments()?)))
        .await
}

/// `GET /api/v1/enrollments/{name}`.
#[utoipa::path(
    get,
    path = "/enrollments/{name}/",
    tag = "enrollments",
    params(("name" = String, Path, description = "the enrolled server's name")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "the enrolled server", body = plinth_api::enrollment::EnrollmentRecord),
        (status = "4XX", description = "refused", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn show(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(name): Path<String>,
) -> Result<Json<EnrollmentRecord>, ApiError> {
    state
        .blocking(move |s| Ok(Json(s.store.get_enrollment(&name)?)))
        .await
}

/// `DELETE /api/v1/enrollments/{name}`: the server is forgotten (with its BMC password); its node, if
/// an agent became one, stays.
#[utoipa::path(
    delete,
    path = "/enrollments/{name}/",
    tag = "enrollments",
    params(("name" = String, Path, description = "the enrolled server's name")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 204, description = "deleted"),
        (status = "4XX", description = "refused", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn delete(
    State(state): State<Arc<AppState>>,
    op: Operator,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    state
        .blocking(move |s| {
            s.store.delete_enrollment(&name)?;
            tracing::info!(by = %op.name, server = %name, "enrollment deleted");
            Ok(StatusCode::NO_CONTENT)
        })
        .await
}

/// `POST /api/v1/enrollments/{name}/release`: the next agent that claims the server takes its node,
/// with a new key (a server reinstalled, or booted into a fresh discovery image by hand).
#[utoipa::path(
    post,
    path = "/enrollments/{name}/release/",
    tag = "enrollments",
    params(("name" = String, Path, description = "the enrolled server's name")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "released", body = plinth_api::enrollment::EnrollmentRecord),
        (status = "4XX", description = "refused", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn release(
    State(state): State<Arc<AppState>>,
    op: Operator,
    Path(name): Path<String>,
) -> Result<Json<EnrollmentRecord>, ApiError> {
    state
        .blocking(move |s| {
            let e = s.store.set_enrollment_boot(&name, true, None)?;
            tracing::info!(by = %op.name, server = %name, "enrolled server released to a new agent key");
            Ok(Json(e))
        })
        .await
}
