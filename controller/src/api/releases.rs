//! `/api/v1/releases` and their typed graphs.

use super::auth::Operator;
use super::error::{ApiError, Json};
use super::graphs::check_graph;
use crate::state::AppState;
use crate::store::{GraphBody, GraphOwner, NewRelease, ReleaseRecord};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// `POST /api/v1/releases` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateRelease {
    name: String,
    version: String,
    #[serde(default)]
    roles_metadata: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    tags_metadata: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    volumes_metadata: serde_json::Map<String, serde_json::Value>,
    /// A new cluster's attributes (`editable` and `generated`), as Nailgun's release has them.
    #[serde(default)]
    attributes_metadata: serde_json::Map<String, serde_json::Value>,
    /// Graphs by type, created with the release.
    #[serde(default)]
    graphs: BTreeMap<String, GraphBody>,
}

/// `GET /api/v1/releases`.
pub async fn list(
    State(state): State<Arc<AppState>>,
    _op: Operator,
) -> Result<Json<Vec<ReleaseRecord>>, ApiError> {
    state.blocking(|s| Ok(Json(s.store.list_releases()?))).await
}

/// `GET /api/v1/releases/{id}`.
pub async fn show(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<ReleaseRecord>, ApiError> {
    state
        .blocking(move |s| Ok(Json(s.store.get_release(id)?)))
        .await
}

/// `POST /api/v1/releases`: creates a release with its graphs, all or nothing.
pub async fn create(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    super::body::Doc(body): super::body::Doc<CreateRelease>,
) -> Result<(StatusCode, Json<ReleaseRecord>), ApiError> {
    if body.name.trim().is_empty() || body.version.trim().is_empty() {
        return Err(ApiError::bad_request(
            "release `name` and `version` must not be empty",
        ));
    }
    for (graph_type, graph) in &body.graphs {
        check_graph(graph_type, graph)?;
    }
    let release = NewRelease {
        name: body.name,
        version: body.version,
        data: serde_json::json!({
            "roles_metadata": body.roles_metadata,
            "tags_metadata": body.tags_metadata,
            "volumes_metadata": body.volumes_metadata,
            "attributes_metadata": body.attributes_metadata,
        }),
    };
    let model = crate::cluster_model::release_model(&crate::store::ReleaseRecord {
        id: 0,
        name: release.name.clone(),
        version: release.version.clone(),
        data: release.data.clone(),
    })?;
    let catalog = plinth_common::tags::Catalog::new(&model, &[], None);
    if let Some(problem) = plinth_common::tags::validate_catalog(&catalog)
        .into_iter()
        .next()
    {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_release",
            format!("release {} {}: {problem}", release.name, release.version),
        ));
    }
    let what = format!("release {} {}", release.name, release.version);
    for (graph_type, graph) in &body.graphs {
        crate::cluster_model::graph_model(&what, graph_type, graph)?;
    }
    let graphs = body.graphs;
    state
        .blocking(move |s| {
            let created = s.store.create_release(&release, &graphs)?;
            Ok((StatusCode::CREATED, Json(created)))
        })
        .await
}

/// The owner of release graph routes.
pub fn owner(id: u64) -> GraphOwner {
    GraphOwner::Release(id)
}
