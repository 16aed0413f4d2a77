//! `/api/v1/releases` and their typed graphs.

use super::auth::Operator;
use super::error::{ApiError, Json};
use super::graphs::{check_graph, UploadChecks};
use crate::state::AppState;
use crate::store::{GraphBody, GraphOwner, NewRelease, ReleaseRecord};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plinth_api::answers::Stored;
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
    /// Nailgun's components (`name`, `compatible`, `requires`, ...), as `fuel2 release component
    /// list` shows them; Plinth chooses nothing by them.
    #[serde(default)]
    components_metadata: Vec<serde_json::Value>,
    /// Graphs by type, created with the release.
    #[serde(default)]
    graphs: BTreeMap<String, GraphBody>,
}

/// `GET /api/v1/releases`.
#[utoipa::path(
    get,
    path = "/releases/",
    tag = "releases",
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = Vec<plinth_api::records::ReleaseRecord>),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn list(
    State(state): State<Arc<AppState>>,
    _op: Operator,
) -> Result<Json<Vec<ReleaseRecord>>, ApiError> {
    state.blocking(|s| Ok(Json(s.store.list_releases()?))).await
}

/// `GET /api/v1/releases/{id}`.
#[utoipa::path(
    get,
    path = "/releases/{id}/",
    tag = "releases",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::records::ReleaseRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
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
#[utoipa::path(
    post,
    path = "/releases/",
    tag = "releases",
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 201, description = "stored: the record, with `findings` (the checks' warnings, and errors `force=true` stored) and `forced` (what force overrode) when there are any", body = plinth_api::records::ReleaseRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn create(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    super::error::Query(q): super::error::Query<super::graphs::ForceQuery>,
    upload: super::body::DocText<CreateRelease>,
) -> Result<(StatusCode, Json<Stored<ReleaseRecord>>), ApiError> {
    let mut checks = UploadChecks::with_keys(
        plinth_common::graph::DocumentKind::Release,
        &upload.value,
        upload.text.as_deref(),
    );
    let body = upload.doc;
    if body.name.trim().is_empty() || body.version.trim().is_empty() {
        return Err(ApiError::bad_request(
            "release `name` and `version` must not be empty",
        ));
    }
    for (graph_type, graph) in &body.graphs {
        check_graph(graph_type, graph, q.force, &mut checks)?;
    }
    let release = NewRelease {
        name: body.name,
        version: body.version,
        data: serde_json::json!({
            "roles_metadata": body.roles_metadata,
            "tags_metadata": body.tags_metadata,
            "volumes_metadata": body.volumes_metadata,
            "attributes_metadata": body.attributes_metadata,
            "components_metadata": body.components_metadata,
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
            Ok((StatusCode::CREATED, Json(checks.stored(created, &what))))
        })
        .await
}

/// The owner of release graph routes.
pub fn owner(id: u64) -> GraphOwner {
    GraphOwner::Release(id)
}

/// `PUT /api/v1/releases/{id}/roles/{name}` body: Nailgun's `{name, meta: {...}}`, or the role's
/// metadata alone (`{name, tags, conflicts, limits, ...}` as `roles_metadata` writes it).
#[derive(Debug, Deserialize)]
pub struct RoleBody(pub serde_json::Value);

/// `PUT /api/v1/releases/{id}/roles/{name}`: creates or replaces a role of the release (its tags
/// included), checked as the release's roles are; every cluster of the release sees it.
#[utoipa::path(
    put,
    path = "/releases/{id}/roles/{name}/",
    tag = "releases",
    params(("id" = u64, Path, description = "the record's id"), ("name" = String, Path, description = "the name")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success"),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn put_role(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((id, name)): Path<(u64, String)>,
    super::body::Doc(RoleBody(body)): super::body::Doc<RoleBody>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let meta = role_meta(&name, body)?;
    let findings = role_key_findings(&meta);
    state
        .blocking(move |s| {
            let mut problem: Option<ApiError> = None;
            let updated = s.store.update_release_data(id, &mut |r| {
                let mut next = r.clone();
                if let Some(data) = next.data.as_object_mut() {
                    let roles = data
                        .entry("roles_metadata")
                        .or_insert_with(|| serde_json::Value::Object(Default::default()));
                    if let serde_json::Value::Object(roles) = roles {
                        roles.insert(name.clone(), meta.clone());
                    }
                }
                let checked = crate::cluster_model::release_model(&next)
                    .map_err(|e| e.to_string())
                    .and_then(|model| {
                        let catalog = plinth_common::tags::Catalog::new(&model, &[], None);
                        super::tags::catalog_is_valid(&catalog)
                    });
                if let Err(message) = checked {
                    problem = Some(ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "invalid_role",
                        format!("role {name:?}: {message}"),
                    ));
                    return Err(crate::store::StoreError::Conflict("refused".into()));
                }
                *r = next;
                Ok(())
            });
            match (updated, problem) {
                (_, Some(e)) => Err(e),
                (Ok(record), None) => Ok(Json(role_answer(
                    &name,
                    &record.data["roles_metadata"][&name],
                    findings,
                ))),
                (Err(e), None) => Err(e.into()),
            }
        })
        .await
}

/// The unknown keys of a role's metadata, as an upload's warnings.
pub fn role_key_findings(meta: &serde_json::Value) -> Vec<plinth_common::graph::Finding> {
    plinth_common::graph::key_findings(
        plinth_common::graph::DocumentKind::Role,
        meta,
        None,
        super::graphs::UPLOAD,
    )
}

/// The answer to a role's upload: `{name, meta}`, and `findings` when its keys had any.
pub fn role_answer(
    name: &str,
    meta: &serde_json::Value,
    findings: Vec<plinth_common::graph::Finding>,
) -> serde_json::Value {
    let mut answer = serde_json::json!({ "name": name, "meta": meta });
    if !findings.is_empty() {
        answer["findings"] = serde_json::json!(findings);
    }
    answer
}

/// The role metadata of a role body: Nailgun's `{name, meta}` (the name must match the path's) or the
/// metadata alone; it must be a mapping.
pub fn role_meta(name: &str, body: serde_json::Value) -> Result<serde_json::Value, ApiError> {
    let meta = match body.get("meta") {
        Some(meta) => {
            if let Some(given) = body.get("name").and_then(|n| n.as_str()) {
                if given != name {
                    return Err(ApiError::bad_request(format!(
                        "the body names role {given:?}, the path {name:?}"
                    )));
                }
            }
            meta.clone()
        }
        None => body,
    };
    if !meta.is_object() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_role",
            format!("role {name:?}: the role's metadata is a mapping"),
        ));
    }
    Ok(meta)
}
