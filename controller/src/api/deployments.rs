//! `/api/v1/deployments`: list and report.

use super::auth::Operator;
use super::error::{ApiError, Json, Query};
use crate::engine::report::{self, Report};
use crate::state::AppState;
use crate::store::DeploymentRecord;
use axum::extract::{Path, State};
use serde::Deserialize;
use std::sync::Arc;

/// `GET /api/v1/deployments` query.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    #[serde(default)]
    cluster_id: Option<u64>,
}

/// `GET /api/v1/deployments?cluster_id=`.
pub async fn list(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Query(q): Query<ListQuery>,
) -> Result<Json<Vec<DeploymentRecord>>, ApiError> {
    state
        .blocking(move |s| Ok(Json(s.store.list_deployments(q.cluster_id)?)))
        .await
}

/// `GET /api/v1/deployments/{id}`: the report, live while it runs.
pub async fn show(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<Report>, ApiError> {
    state
        .blocking(move |s| {
            let dep = s.store.get_deployment(id)?;
            Ok(Json(report::build(s.store.as_ref(), &dep)?))
        })
        .await
}
