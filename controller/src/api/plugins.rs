//! `/api/v1/plugins` (seed 003): register a plugin from its files (metadata, node roles, volumes, graphs by
//! type), list, show, delete; and enabling or disabling a plugin per cluster, where a plugin whose role is
//! assigned or deployed on a node of the cluster cannot be disabled.

use super::auth::Operator;
use super::body::DocText;
use super::error::{ApiError, Json};
use super::graphs::{check_graph, UploadChecks};
use crate::cluster_model::{graph_model, plugin_model, ClusterModel};
use crate::state::AppState;
use crate::store::{ClusterRecord, GraphBody, NewPlugin, PluginRecord, StoreError};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plinth_api::answers::Stored;
use plinth_common::model::{Plugin, DEFAULT_GRAPH_TYPE};
use plinth_common::tags::{validate_catalog, Catalog};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// `POST /api/v1/plugins` body: a plugin's files in one document (JSON or YAML).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisterPlugin {
    name: String,
    version: String,
    /// `metadata.yaml` as written (title, description, releases, ...).
    #[serde(default)]
    metadata: serde_json::Value,
    /// `node_roles.yaml`.
    #[serde(default, alias = "node_roles")]
    roles_metadata: serde_json::Map<String, serde_json::Value>,
    /// Tags the plugin defines.
    #[serde(default)]
    tags_metadata: serde_json::Map<String, serde_json::Value>,
    /// `volumes.yaml`.
    #[serde(default, alias = "volumes")]
    volumes_metadata: serde_json::Value,
    /// Graphs by type.
    #[serde(default)]
    graphs: BTreeMap<String, GraphBody>,
    /// `deployment_tasks.yaml`: the plugin's `default` graph, as Fuel plugins ship it.
    #[serde(default)]
    deployment_tasks: Option<Vec<serde_json::Value>>,
    /// `tasks.yaml` in the old format (no ids, `stage: post_deployment/100`), added to the `default`
    /// graph.
    #[serde(default)]
    tasks: Option<Vec<serde_json::Value>>,
    /// The rest of a Fuel plugin's `metadata.yaml`, given at the top as that file has it; kept in
    /// `metadata`.
    #[serde(flatten)]
    metadata_fields: FuelMetadata,
}

/// The fields of a Fuel plugin's `metadata.yaml` besides `name` and `version`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FuelMetadata {
    title: Option<serde_json::Value>,
    description: Option<serde_json::Value>,
    releases: Option<serde_json::Value>,
    package_version: Option<serde_json::Value>,
    fuel_version: Option<serde_json::Value>,
    licenses: Option<serde_json::Value>,
    authors: Option<serde_json::Value>,
    homepage: Option<serde_json::Value>,
    groups: Option<serde_json::Value>,
    is_hotpluggable: Option<serde_json::Value>,
}

/// `GET /api/v1/plugins`.
#[utoipa::path(
    get,
    path = "/plugins/",
    tag = "plugins",
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = Vec<plinth_api::records::PluginRecord>),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn list(
    State(state): State<Arc<AppState>>,
    _op: Operator,
) -> Result<Json<Vec<PluginRecord>>, ApiError> {
    state.blocking(|s| Ok(Json(s.store.list_plugins()?))).await
}

/// `GET /api/v1/plugins/{id}`.
#[utoipa::path(
    get,
    path = "/plugins/{id}/",
    tag = "plugins",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::records::PluginRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn show(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<PluginRecord>, ApiError> {
    state
        .blocking(move |s| Ok(Json(s.store.get_plugin(id)?)))
        .await
}

/// `POST /api/v1/plugins`: registers a plugin; 409 when its name and version exist.
#[utoipa::path(
    post,
    path = "/plugins/",
    tag = "plugins",
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 201, description = "stored: the record, with `findings` (the checks' warnings, and errors `force=true` stored) and `forced` (what force overrode) when there are any", body = plinth_api::records::PluginRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn create(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    super::error::Query(q): super::error::Query<super::graphs::ForceQuery>,
    upload: DocText<RegisterPlugin>,
) -> Result<(StatusCode, Json<Stored<PluginRecord>>), ApiError> {
    let Prepared {
        plugin,
        graphs,
        checks,
        what,
    } = prepare(upload.doc, &upload.value, upload.text.as_deref(), q.force)?;
    state
        .blocking(move |s| {
            let created = s.store.create_plugin(&plugin, &graphs)?;
            tracing::info!(plugin = %what, "plugin registered");
            Ok((StatusCode::CREATED, Json(checks.stored(created, &what))))
        })
        .await
}

/// A plugin document read and checked: what to store, the checks' findings, and its name in words.
pub(super) struct Prepared {
    /// The record to store.
    pub plugin: NewPlugin,
    /// Its graphs by type.
    pub graphs: BTreeMap<String, GraphBody>,
    /// The checks' findings.
    pub checks: UploadChecks,
    /// `plugin NAME VERSION`.
    pub what: String,
}

/// Reads a plugin document (`value` as written, `text` its text when it has lines) as registering
/// does: its metadata, roles, volumes and graphs (`deployment_tasks`, old-format `tasks`), each
/// graph checked as uploads are (`force` stores despite errors).
pub(super) fn prepare(
    body: RegisterPlugin,
    value: &serde_json::Value,
    text: Option<&str>,
    force: bool,
) -> Result<Prepared, ApiError> {
    let mut checks =
        UploadChecks::with_keys(plinth_common::graph::DocumentKind::Plugin, value, text);
    if body.name.trim().is_empty() || body.version.trim().is_empty() {
        return Err(ApiError::bad_request(
            "plugin `name` and `version` must not be empty",
        ));
    }
    let mut metadata = match body.metadata {
        serde_json::Value::Null => serde_json::json!({}),
        other => other,
    };
    let m = body.metadata_fields;
    for (key, value) in [
        ("title", m.title),
        ("description", m.description),
        ("releases", m.releases),
        ("package_version", m.package_version),
        ("fuel_version", m.fuel_version),
        ("licenses", m.licenses),
        ("authors", m.authors),
        ("homepage", m.homepage),
        ("groups", m.groups),
        ("is_hotpluggable", m.is_hotpluggable),
    ] {
        if let (Some(v), Some(map)) = (value, metadata.as_object_mut()) {
            map.insert(key.into(), v);
        }
    }
    let mut graphs = body.graphs;
    if let Some(tasks) = body.deployment_tasks {
        if graphs.contains_key(DEFAULT_GRAPH_TYPE) {
            return Err(ApiError::bad_request(
                "give the default graph either as `deployment_tasks` or under `graphs`, not both",
            ));
        }
        graphs.insert(
            DEFAULT_GRAPH_TYPE.into(),
            GraphBody {
                tasks,
                ..GraphBody::default()
            },
        );
    }
    if let Some(old) = body.tasks {
        let converted =
            plinth_common::model::convert_legacy_tasks(&body.name, &old).map_err(|e| {
                ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "invalid_plugin",
                    format!("plugin {} {}: {e}", body.name, body.version),
                )
            })?;
        graphs
            .entry(DEFAULT_GRAPH_TYPE.into())
            .or_default()
            .tasks
            .extend(converted);
    }
    let plugin = NewPlugin {
        name: body.name,
        version: body.version,
        data: serde_json::json!({
            "metadata": metadata,
            "roles_metadata": body.roles_metadata,
            "tags_metadata": body.tags_metadata,
            "volumes_metadata": body.volumes_metadata,
        }),
    };
    let what = format!("plugin {} {}", plugin.name, plugin.version);
    let model = plugin_model(&PluginRecord {
        id: 0,
        name: plugin.name.clone(),
        version: plugin.version.clone(),
        data: plugin.data.clone(),
    })?;
    let problems = model.volume_problems();
    if !problems.is_empty() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_plugin",
            format!("{what}: {}", problems.join("; ")),
        ));
    }
    for (graph_type, graph) in &graphs {
        check_graph(graph_type, graph, force, &mut checks)?;
        graph_model(&what, graph_type, graph)?;
    }
    Ok(Prepared {
        plugin,
        graphs,
        checks,
        what,
    })
}

/// `DELETE /api/v1/plugins/{id}`: 409 while a cluster has it enabled.
#[utoipa::path(
    delete,
    path = "/plugins/{id}/",
    tag = "plugins",
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
            s.store.delete_plugin(id)?;
            Ok(StatusCode::NO_CONTENT)
        })
        .await
}

/// `PUT /api/v1/clusters/{id}/plugins/{plugin_id}`: enables a plugin in a cluster. Its roles and tags
/// must fit the release's and the other plugins' (an unknown tag in a role is refused).
#[utoipa::path(
    put,
    path = "/clusters/{id}/plugins/{plugin_id}/",
    tag = "plugins",
    params(("id" = u64, Path, description = "the record's id"), ("plugin_id" = u64, Path, description = "the plugin's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::records::ClusterRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn enable(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((cluster_id, plugin_id)): Path<(u64, u64)>,
) -> Result<Json<ClusterRecord>, ApiError> {
    state
        .blocking(move |s| {
            let model = ClusterModel::load(s.store.as_ref(), cluster_id, &[])?;
            let record = s.store.get_plugin(plugin_id)?;
            let plugin = plugin_model(&record)?;
            if model.snapshot.plugins.iter().any(|p| p.name == plugin.name) {
                if model.record.data.plugins.contains(&plugin_id) {
                    return Ok(Json(model.record));
                }
                return Err(ApiError::conflict(format!(
                    "another version of plugin {} is enabled in cluster {cluster_id}",
                    plugin.name
                )));
            }
            let mut plugins: Vec<&Plugin> = model.snapshot.plugins.iter().collect();
            plugins.push(&plugin);
            let catalog = Catalog::new(
                &model.snapshot.release,
                &plugins,
                Some(&model.snapshot.cluster),
            );
            if let Some(problem) = validate_catalog(&catalog).into_iter().next() {
                return Err(ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "invalid_plugin",
                    format!("plugin {} {}: {problem}", record.name, record.version),
                ));
            }
            let updated = s.store.modify_cluster(cluster_id, &mut |cluster, _| {
                if !cluster.data.plugins.contains(&plugin_id) {
                    cluster.data.plugins.push(plugin_id);
                }
                Ok(())
            })?;
            Ok(Json(updated))
        })
        .await
}

/// `DELETE /api/v1/clusters/{id}/plugins/{plugin_id}`: disables a plugin, unless one of its roles is
/// assigned (pending) or deployed on a node of the cluster (409 naming the role and the node).
#[utoipa::path(
    delete,
    path = "/clusters/{id}/plugins/{plugin_id}/",
    tag = "plugins",
    params(("id" = u64, Path, description = "the record's id"), ("plugin_id" = u64, Path, description = "the plugin's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::records::ClusterRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn disable(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((cluster_id, plugin_id)): Path<(u64, u64)>,
) -> Result<Json<ClusterRecord>, ApiError> {
    state
        .blocking(move |s| {
            let record = s.store.get_plugin(plugin_id)?;
            let plugin = plugin_model(&record)?;
            let updated = s.store.modify_cluster(cluster_id, &mut |cluster, nodes| {
                if !cluster.data.plugins.contains(&plugin_id) {
                    return Err(StoreError::NotFound {
                        kind: "enabled plugin",
                        id: format!("{} in cluster {cluster_id}", record.name),
                    });
                }
                for node in nodes {
                    for role in plugin.roles_metadata.keys() {
                        let how = if node.roles.contains(role) {
                            "deployed on"
                        } else if node.pending_roles.contains(role) {
                            "assigned to"
                        } else {
                            continue;
                        };
                        return Err(StoreError::Conflict(format!(
                            "plugin {} cannot be disabled: its role {role:?} is {how} node {} ({})",
                            record.name, node.id, node.name
                        )));
                    }
                }
                cluster.data.plugins.retain(|p| *p != plugin_id);
                Ok(())
            })?;
            Ok(Json(updated))
        })
        .await
}
