//! `GET /api/v1/cluster-status`: the controllers sharing the database, which one sequences, and each
//! one's connected agents.

use super::auth::Operator;
use super::error::{ApiError, Json};
use crate::state::AppState;
use axum::extract::State;
use plinth_api::controllers::ClusterStatus;
use std::sync::Arc;

/// `GET /api/v1/cluster-status`.
#[utoipa::path(
    get,
    path = "/cluster-status/",
    tag = "controllers",
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::controllers::ClusterStatus),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn status(
    State(state): State<Arc<AppState>>,
    _op: Operator,
) -> Result<Json<ClusterStatus>, ApiError> {
    state
        .blocking(|s| {
            Ok(Json(
                s.ha.status(s.store.as_ref(), s.engine.is_sequencing())?,
            ))
        })
        .await
}
