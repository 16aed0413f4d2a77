//! API errors: every failure is JSON `{"error": {"code", "message", "details"}}` with the right status.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::engine::StartError;
use crate::store::StoreError;

/// An error answer.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// A stable machine-readable code.
    pub code: &'static str,
    /// A message for people.
    pub message: String,
    /// Structured details.
    pub details: Value,
}

impl ApiError {
    /// An error with no details.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            details: Value::Null,
        }
    }
    /// 400.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }
    /// 401.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }
    /// 403.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }
    /// 404.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }
    /// 409.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", message)
    }
    /// 500.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }
    /// The same error, its message after `prefix` (what it is about: a file, a document).
    pub fn prefixed(mut self, prefix: &str) -> Self {
        self.message = format!("{prefix}{}", self.message);
        self
    }
    /// Adds details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::error!(code = self.code, message = %self.message, "request failed");
        }
        let body = plinth_api::errors::ErrorBody {
            error: plinth_api::errors::ErrorDetail {
                code: self.code.to_string(),
                message: self.message,
                details: self.details,
            },
        };
        (self.status, axum::Json(body)).into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound { .. } => ApiError::not_found(e.to_string()),
            StoreError::Conflict(_) => ApiError::conflict(e.to_string()),
            StoreError::Claimed(_) => ApiError::new(StatusCode::CONFLICT, "claimed", e.to_string()),
            StoreError::Full(_) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "full", e.to_string())
            }
            StoreError::Fenced(_) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "fenced", e.to_string())
            }
            StoreError::Database(_) | StoreError::Corrupt(_) => ApiError::internal(e.to_string()),
        }
    }
}

impl From<crate::intake::IntakeError> for ApiError {
    fn from(e: crate::intake::IntakeError) -> Self {
        match e {
            crate::intake::IntakeError::Store(e) => e.into(),
            other => ApiError::internal(other.to_string()),
        }
    }
}

impl From<StartError> for ApiError {
    fn from(e: StartError) -> Self {
        match e {
            StartError::Store(s) => s.into(),
            StartError::Invalid(m) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_deployment", m)
            }
            StartError::Resolve(r) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "graph_error",
                r.to_string(),
            ),
            StartError::Resolution(r) => r.into(),
            StartError::Model(m) => m.into(),
        }
    }
}

impl From<plinth_common::snapshot::ResolutionError> for ApiError {
    fn from(e: plinth_common::snapshot::ResolutionError) -> Self {
        use plinth_common::snapshot::ResolutionError as R;
        let code = match &e {
            R::Checks { findings, .. } => {
                let details = serde_json::json!({ "findings": findings });
                return ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "checks_failed",
                    e.to_string(),
                )
                .with_details(details);
            }
            R::Merge(_) | R::Unresolved { .. } => "graph_error",
            R::UndefinedGraphType(_) | R::NodeFilter(_) | R::TaskSpec(_) => "invalid_deployment",
        };
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, e.to_string())
    }
}

impl From<crate::cluster_model::ModelError> for ApiError {
    fn from(e: crate::cluster_model::ModelError) -> Self {
        match e {
            crate::cluster_model::ModelError::Store(s) => s.into(),
            invalid => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_model",
                invalid.to_string(),
            ),
        }
    }
}

impl From<plinth_common::tags::TagError> for ApiError {
    fn from(e: plinth_common::tags::TagError) -> Self {
        use plinth_common::tags::TagError;
        let (status, code) = match &e {
            TagError::UnknownTag(_) | TagError::UnknownRole(_) => {
                (StatusCode::NOT_FOUND, "not_found")
            }
            TagError::Exists(_) => (StatusCode::CONFLICT, "conflict"),
            TagError::ReadOnly { .. } => (StatusCode::FORBIDDEN, "read_only"),
            TagError::Conflict { .. } | TagError::Restricted { .. } => {
                (StatusCode::CONFLICT, "role_rejected")
            }
            _ => (StatusCode::BAD_REQUEST, "bad_request"),
        };
        ApiError::new(status, code, e.to_string())
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        let status = r.status();
        let code = match status {
            StatusCode::PAYLOAD_TOO_LARGE => "too_large",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
            _ => "bad_json",
        };
        ApiError::new(status, code, r.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_query", r.body_text())
    }
}

/// JSON body extractor whose rejections are [`ApiError`]s.
#[derive(Debug, axum::extract::FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct Json<T>(pub T);

impl<T: serde::Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

/// Query extractor whose rejections are [`ApiError`]s.
#[derive(Debug, axum::extract::FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct Query<T>(pub T);
