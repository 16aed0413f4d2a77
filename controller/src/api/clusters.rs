//! `/api/v1/clusters`: create, list, show, assign nodes, deploy.

use super::auth::Operator;
use super::error::{ApiError, Json, Query};
use super::graphs::check_graph_type;
use crate::cluster_model::{node_model, ClusterModel};
use crate::engine::{DeployOptions, DeployRequest};
use crate::state::AppState;
use crate::store::{ClusterRecord, NewCluster, NodeAssignment};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plinth_common::deploy::OldStates;
use plinth_common::tags::check_assignment;
use std::sync::Arc;

pub use plinth_api::requests::{AssignNodes, CreateCluster, DeployQuery, UnassignNodes};

/// `GET /api/v1/clusters`.
#[utoipa::path(
    get,
    path = "/clusters/",
    tag = "clusters",
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = Vec<plinth_api::records::ClusterRecord>),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn list(
    State(state): State<Arc<AppState>>,
    _op: Operator,
) -> Result<Json<Vec<ClusterRecord>>, ApiError> {
    state.blocking(|s| Ok(Json(s.store.list_clusters()?))).await
}

/// `GET /api/v1/clusters/{id}`.
#[utoipa::path(
    get,
    path = "/clusters/{id}/",
    tag = "clusters",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::records::ClusterRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn show(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<ClusterRecord>, ApiError> {
    state
        .blocking(move |s| Ok(Json(s.store.get_cluster(id)?)))
        .await
}

/// `GET /api/v1/clusters/{id}/generated`: the attributes made at creation (Nailgun's generated data).
#[utoipa::path(
    get,
    path = "/clusters/{id}/generated/",
    tag = "clusters",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success"),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn generated(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<serde_json::Value>, ApiError> {
    state
        .blocking(move |s| Ok(Json(s.store.get_cluster(id)?.generated)))
        .await
}

/// `POST /api/v1/clusters`.
#[utoipa::path(
    post,
    path = "/clusters/",
    tag = "clusters",
    request_body = plinth_api::requests::CreateCluster,
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 201, description = "success", body = plinth_api::records::ClusterRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn create(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Json(body): Json<CreateCluster>,
) -> Result<(StatusCode, Json<ClusterRecord>), ApiError> {
    if body.name.trim().is_empty() {
        return Err(ApiError::bad_request("cluster `name` must not be empty"));
    }
    state
        .blocking(move |s| {
            // As Nailgun: a cluster starts with its release's attributes (editable defaults with the
            // given settings over them, and the generated ones).
            let release =
                crate::cluster_model::release_model(&s.store.get_release(body.release_id)?)?;
            let attrs = crate::cluster_model::starting_attributes(
                &release,
                &serde_json::Value::Object(body.settings),
                &master_ip(&s.config()),
            )?;
            let new = NewCluster {
                name: body.name,
                release_id: body.release_id,
                settings: attrs.editable,
                generated: attrs.generated,
            };
            Ok((StatusCode::CREATED, Json(s.store.create_cluster(&new)?)))
        })
        .await
}

/// The controller's address as nodes reach it (Nailgun's `MASTER_IP`): the first TLS name that is an
/// IP address, else the listening address.
pub fn master_ip(config: &crate::config::Config) -> String {
    config
        .tls_names
        .iter()
        .find(|n| n.parse::<std::net::IpAddr>().is_ok())
        .cloned()
        .unwrap_or_else(|| config.listen.ip().to_string())
}

/// `PUT /api/v1/clusters/{id}/nodes`: adds nodes with their pending roles, all or nothing.
#[utoipa::path(
    put,
    path = "/clusters/{id}/nodes/",
    tag = "clusters",
    params(("id" = u64, Path, description = "the record's id")),
    request_body = plinth_api::requests::AssignNodes,
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 204, description = "success"),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn assign(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    Json(body): Json<AssignNodes>,
) -> Result<StatusCode, ApiError> {
    if body.nodes.is_empty() {
        return Err(ApiError::bad_request("`nodes` is empty"));
    }
    state
        .blocking(move |s| {
            check_roles(s, id, &body.nodes)?;
            s.store.assign_nodes(id, &body.nodes)?;
            Ok(StatusCode::NO_CONTENT)
        })
        .await
}

/// Refuses an assignment whose roles the cluster does not know, that conflict with each other or with
/// the node's deployed roles, or that a role's restriction forbids (the role's message is the error's).
///
/// The cluster's data (its settings and every node's record), which restrictions read, is built only
/// when an assigned role has a restriction: for a cluster of 100,000 nodes it costs what a deployment's
/// start does, and a fleet assigned in pages would pay it once a page.
fn check_roles(s: &AppState, cluster_id: u64, nodes: &[NodeAssignment]) -> Result<(), ApiError> {
    let catalog = crate::cluster_model::catalog_of(s.store.as_ref(), cluster_id)?;
    let restricted = nodes.iter().flat_map(|a| &a.roles).any(|role| {
        catalog
            .role(role)
            .is_some_and(|e| e.meta.restrictions.iter().any(|r| r.blocks_assignment()))
    });
    let evaluator = if restricted {
        ClusterModel::load(s.store.as_ref(), cluster_id, &[])?.evaluator(
            &s.exprs,
            OldStates::new(),
            false,
        )
    } else {
        // Asked nothing: no assigned role has a restriction to evaluate.
        plinth_common::deploy::YaqlFields::new(
            s.exprs.engine.clone(),
            s.exprs.cache.clone(),
            plinth_common::deploy::DeployData::default(),
            OldStates::new(),
            false,
        )
    };
    for a in nodes {
        let record = s.store.get_node(a.id)?;
        let mut node = node_model(&record);
        node.pending_roles.clear();
        for role in &a.roles {
            if node.roles.contains(role) {
                continue;
            }
            check_assignment(&catalog, &node, role, &evaluator)?;
            node.pending_roles.push(role.clone());
        }
    }
    Ok(())
}

/// `DELETE /api/v1/clusters/{id}/nodes`: takes nodes out, all or nothing.
#[utoipa::path(
    delete,
    path = "/clusters/{id}/nodes/",
    tag = "clusters",
    params(("id" = u64, Path, description = "the record's id")),
    request_body = plinth_api::requests::UnassignNodes,
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 204, description = "success"),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn unassign(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    Json(body): Json<UnassignNodes>,
) -> Result<StatusCode, ApiError> {
    state
        .blocking(move |s| {
            s.store.unassign_nodes(id, &body.node_ids)?;
            Ok(StatusCode::NO_CONTENT)
        })
        .await
}

fn parse_node_list(text: &str) -> Result<Vec<u64>, ApiError> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("`nodes`: {s:?} is not a node id")))
        })
        .collect()
}

/// `PUT /api/v1/clusters/{id}/deploy/?graph_type=&nodes=`: starts a deployment (202), 409 if one runs.
#[utoipa::path(
    put,
    path = "/clusters/{id}/deploy/",
    tag = "clusters",
    params(("id" = u64, Path, description = "the record's id"), plinth_api::requests::DeployQuery),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 202, description = "success", body = plinth_api::deployments::StartedDeployment),
        (status = 200, description = "a dry run: what would run"),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn deploy(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    Query(q): Query<DeployQuery>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    if let Some(t) = &q.graph_type {
        check_graph_type(t)?;
    }
    let dry_run = q.dry_run;
    let action = match (&q.action, &q.node) {
        (Some(name), node) => Some(
            crate::engine::plan::SiteAction::parse(name, node.as_deref())
                .map_err(|e| ApiError::bad_request(format!("`action`: {e}")))?,
        ),
        (None, Some(_)) => {
            return Err(ApiError::bad_request(
                "`node` goes with action=redeploy_server",
            ))
        }
        (None, None) => None,
    };
    let request = DeployRequest {
        cluster_id: id,
        graph_type: q.graph_type,
        node_ids: q.nodes.as_deref().map(parse_node_list).transpose()?,
        strategy: q.strategy,
        action,
        options: DeployOptions {
            noop: q.noop,
            force: q.force,
        },
        inputs_from: None,
    };
    state
        .blocking(move |s| {
            if dry_run {
                return Ok((StatusCode::OK, Json(s.engine.dry_run(&request)?)));
            }
            // With what it runs, as `plinthctl deploy start` tells the operator: strategy, how chosen,
            // timeouts.
            let body = s.engine.start(&request)?;
            let dep = &body.record;
            tracing::info!(deployment = dep.id, cluster = id, graph_type = %dep.graph_type, nodes = dep.node_ids.len(), "deployment started");
            Ok((
                StatusCode::ACCEPTED,
                Json(serde_json::to_value(body).unwrap_or_default()),
            ))
        })
        .await
}

/// `PUT /api/v1/clusters/{id}/stop_deployment/` (Nailgun's path): cancels the cluster's running
/// deployment (202 with it); 409 when none runs.
#[utoipa::path(
    put,
    path = "/clusters/{id}/stop_deployment/",
    tag = "clusters",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 202, description = "success", body = plinth_api::deployments::DeploymentRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn stop_deployment(
    State(state): State<Arc<AppState>>,
    op: crate::api::auth::Operator,
    Path(id): Path<u64>,
) -> Result<(StatusCode, Json<crate::store::DeploymentRecord>), ApiError> {
    let by = format!("token {}", op.name);
    state
        .blocking(move |s| {
            s.store.get_cluster(id)?;
            let running = s
                .store
                .list_deployments(Some(id))?
                .into_iter()
                .find(|d| d.status == crate::store::DeploymentStatus::Running)
                .ok_or_else(|| {
                    ApiError::conflict(format!("cluster {id} has no running deployment"))
                })?;
            Ok((
                StatusCode::ACCEPTED,
                Json(s.engine.cancel(running.id, &by)?),
            ))
        })
        .await
}

/// `PUT /api/v1/clusters/{id}/roles/{name}`: changes a role for this cluster only (its tags included),
/// or adds one; Nailgun's `{name, meta}` or the metadata alone. Checked as the cluster's catalog, refused
/// whole.
#[utoipa::path(
    put,
    path = "/clusters/{id}/roles/{name}/",
    tag = "clusters",
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
    super::body::Doc(super::releases::RoleBody(body)): super::body::Doc<super::releases::RoleBody>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let meta = super::releases::role_meta(&name, body)?;
    let findings = super::releases::role_key_findings(&meta);
    state
        .blocking(move |s| {
            let model = ClusterModel::load(s.store.as_ref(), id, &[])?;
            let mut problem: Option<ApiError> = None;
            let updated = s.store.modify_cluster(id, &mut |record, _nodes| {
                let mut next = record.clone();
                next.data.roles_metadata.insert(name.clone(), meta.clone());
                let checked = crate::cluster_model::cluster_model(
                    &next,
                    &model.snapshot.release,
                    &model.snapshot.plugins,
                )
                .map_err(|e| e.to_string())
                .and_then(|cluster| {
                    let plugins: Vec<&plinth_common::model::Plugin> =
                        model.snapshot.plugins.iter().collect();
                    let catalog = plinth_common::tags::Catalog::new(
                        &model.snapshot.release,
                        &plugins,
                        Some(&cluster),
                    );
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
                *record = next;
                Ok(())
            });
            match (updated, problem) {
                (_, Some(e)) => Err(e),
                (Ok(record), None) => Ok(Json(super::releases::role_answer(
                    &name,
                    &serde_json::json!(record.data.roles_metadata.get(&name)),
                    findings,
                ))),
                (Err(e), None) => Err(e.into()),
            }
        })
        .await
}

/// `PUT /api/v1/clusters/{id}/reset`: the cluster's nodes back to pending (their roles pending
/// again, status `discover`, what their tasks last ran against forgotten: the next deployment runs
/// every task), as Nailgun resets an environment. Refused (409) while a deployment runs. Answers the
/// nodes reset.
#[utoipa::path(
    put,
    path = "/clusters/{id}/reset/",
    tag = "clusters",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success: `{cluster_id, nodes}`", body = serde_json::Value),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn reset(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<serde_json::Value>, ApiError> {
    state
        .blocking(move |s| {
            let nodes = s.store.reset_cluster(id)?;
            for node in &nodes {
                s.store.notify(&crate::store::Notice::Node { id: *node });
            }
            tracing::info!(cluster = id, nodes = nodes.len(), "cluster reset");
            Ok(Json(serde_json::json!({"cluster_id": id, "nodes": nodes})))
        })
        .await
}

/// `DELETE /api/v1/clusters/{id}`: deletes the cluster with its graphs, strategies, configuration and
/// deployments (their lists, events and results); its nodes stay, unassigned. Refused (409) while a
/// deployment runs.
#[utoipa::path(
    delete,
    path = "/clusters/{id}/",
    tag = "clusters",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 204, description = "deleted"),
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
            let nodes = s.store.delete_cluster(id)?;
            for node in &nodes {
                s.store.notify(&crate::store::Notice::Node { id: *node });
            }
            tracing::info!(cluster = id, nodes = nodes.len(), "cluster deleted");
            Ok(StatusCode::NO_CONTENT)
        })
        .await
}
