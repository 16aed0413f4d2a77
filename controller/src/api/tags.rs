//! Tags (seed 000): list, create, modify and delete the tags of a release or a cluster (user-defined
//! ones only: tags a role lists are read-only), and assign or unassign tags on nodes.

use super::auth::Operator;
use super::body::Doc;
use super::error::{ApiError, Json};
use crate::cluster_model::{node_model, release_model, ClusterModel};
use crate::state::AppState;
use crate::store::{NodeRecord, StoreError};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plinth_common::tags::{
    node_tags, validate_tag_assignment, validate_tag_create, validate_tag_delete,
    validate_tag_modify, Catalog, Owner, TagError,
};
use std::sync::Arc;

pub use plinth_api::records::{NodeTagsView, TagView};
pub use plinth_api::requests::{NewTag, NodeTagsBody, TagChange};

fn views(catalog: &Catalog) -> Vec<TagView> {
    catalog
        .tags
        .iter()
        .map(|(name, t)| TagView {
            name: name.clone(),
            has_primary: t.meta.has_primary,
            owner: t.owner.clone(),
            read_only: t.read_only,
        })
        .collect()
}

fn tag_meta(has_primary: bool) -> serde_json::Value {
    serde_json::json!({ "has_primary": has_primary })
}

fn owned_by(catalog: &Catalog, name: &str, owner: &Owner) -> Result<(), ApiError> {
    match catalog.tags.get(name) {
        Some(t) if &t.owner == owner => Ok(()),
        Some(t) => Err(ApiError::forbidden(format!(
            "tag {name:?} is defined by {}, not here",
            match &t.owner {
                Owner::Release => "the release".to_string(),
                Owner::Plugin(p) => format!("plugin {p:?}"),
                Owner::Cluster => "the cluster".to_string(),
            }
        ))),
        None => Err(TagError::UnknownTag(name.to_string()).into()),
    }
}

/// Whose tags a request is about.
#[derive(Debug, Clone, Copy)]
enum TagOwner {
    Release(u64),
    Cluster(u64),
}

impl TagOwner {
    fn parse(kind: &str, id: u64) -> Result<TagOwner, ApiError> {
        match kind {
            "releases" => Ok(TagOwner::Release(id)),
            "clusters" => Ok(TagOwner::Cluster(id)),
            other => Err(ApiError::not_found(format!(
                "{other:?} has no tags (releases and clusters do)"
            ))),
        }
    }
}

/// The tags an owner knows: a release's own, or everything a cluster knows (release, plugins, its own).
fn catalog_of(s: &AppState, owner: TagOwner) -> Result<Catalog, ApiError> {
    Ok(match owner {
        TagOwner::Release(id) => {
            let release = release_model(&s.store.get_release(id)?)?;
            Catalog::new(&release, &[], None)
        }
        // Without the cluster's nodes: a tag's operation costs the same at any size of cluster.
        TagOwner::Cluster(id) => crate::cluster_model::catalog_of(s.store.as_ref(), id)?,
    })
}

/// `GET /api/v1/{releases|clusters}/{id}/tags`.
#[utoipa::path(
    get,
    path = "/{kind}/{id}/tags/",
    tag = "tags",
    params(("kind" = String, Path, description = "`releases`, `plugins` or `clusters`"), ("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = Vec<plinth_api::records::TagView>),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn list(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id)): Path<(String, u64)>,
) -> Result<Json<Vec<TagView>>, ApiError> {
    let owner = TagOwner::parse(&kind, id)?;
    state
        .blocking(move |s| Ok(Json(views(&catalog_of(s, owner)?))))
        .await
}

enum Edit {
    Create(NewTag),
    Modify(String, TagChange),
    Delete(String),
}

fn check_edit(catalog: &Catalog, edit: &Edit, owner: &Owner) -> Result<(), ApiError> {
    match edit {
        Edit::Create(t) => validate_tag_create(catalog, &t.name)?,
        Edit::Modify(name, _) => {
            validate_tag_modify(catalog, name)?;
            owned_by(catalog, name, owner)?;
        }
        Edit::Delete(name) => {
            validate_tag_delete(catalog, name)?;
            owned_by(catalog, name, owner)?;
        }
    }
    Ok(())
}

fn apply_edit(tags: &mut serde_json::Map<String, serde_json::Value>, edit: &Edit) {
    match edit {
        Edit::Create(t) => {
            tags.insert(t.name.clone(), tag_meta(t.has_primary));
        }
        Edit::Modify(name, change) => {
            let entry = tags.entry(name.clone()).or_insert_with(|| tag_meta(false));
            if let serde_json::Value::Object(meta) = entry {
                meta.insert("has_primary".into(), change.has_primary.into());
            }
        }
        Edit::Delete(name) => {
            tags.remove(name);
        }
    }
}

/// Refuses to delete a tag some node was given explicitly.
fn not_assigned(nodes: &[NodeRecord], name: &str) -> Result<(), StoreError> {
    if let Some(n) = nodes
        .iter()
        .find(|n| n.model.tags_added.iter().any(|t| t == name))
    {
        return Err(StoreError::Conflict(format!(
            "tag {name:?} is assigned to node {} ({}); unassign it first",
            n.id, n.name
        )));
    }
    Ok(())
}

/// Checks an edit against the owner's catalog and writes it in one transaction.
async fn edit(
    state: Arc<AppState>,
    owner: TagOwner,
    edit: Edit,
) -> Result<Json<Vec<TagView>>, ApiError> {
    state
        .blocking(move |s| {
            let catalog = catalog_of(s, owner)?;
            match owner {
                TagOwner::Release(id) => {
                    check_edit(&catalog, &edit, &Owner::Release)?;
                    if let Edit::Delete(name) = &edit {
                        not_assigned(&s.store.list_nodes()?, name)?;
                    }
                    s.store.update_release_data(id, &mut |r| {
                        let data = r.data.as_object_mut().ok_or_else(|| {
                            StoreError::Corrupt(format!("release {id} data is not a mapping"))
                        })?;
                        let tags = data
                            .entry("tags_metadata")
                            .or_insert_with(|| serde_json::Value::Object(Default::default()));
                        if let serde_json::Value::Object(tags) = tags {
                            apply_edit(tags, &edit);
                        }
                        Ok(())
                    })?;
                }
                TagOwner::Cluster(id) => {
                    check_edit(&catalog, &edit, &Owner::Cluster)?;
                    s.store.modify_cluster(id, &mut |cluster, nodes| {
                        if let Edit::Delete(name) = &edit {
                            not_assigned(nodes, name)?;
                        }
                        apply_edit(&mut cluster.data.tags_metadata, &edit);
                        Ok(())
                    })?;
                }
            }
            Ok(Json(views(&catalog_of(s, owner)?)))
        })
        .await
}

/// `POST /api/v1/{releases|clusters}/{id}/tags`: a user-defined tag, for every cluster of a release or
/// for one cluster only (201).
#[utoipa::path(
    post,
    path = "/{kind}/{id}/tags/",
    tag = "tags",
    params(("kind" = String, Path, description = "`releases`, `plugins` or `clusters`"), ("id" = u64, Path, description = "the record's id")),
    request_body = plinth_api::requests::NewTag,
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 201, description = "success", body = Vec<plinth_api::records::TagView>),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn create(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id)): Path<(String, u64)>,
    Doc(tag): Doc<NewTag>,
) -> Result<(StatusCode, Json<Vec<TagView>>), ApiError> {
    let out = edit(state, TagOwner::parse(&kind, id)?, Edit::Create(tag)).await?;
    Ok((StatusCode::CREATED, out))
}

/// `PUT /api/v1/{releases|clusters}/{id}/tags/{name}`: changes a user-defined tag's metadata.
#[utoipa::path(
    put,
    path = "/{kind}/{id}/tags/{name}/",
    tag = "tags",
    params(("kind" = String, Path, description = "`releases`, `plugins` or `clusters`"), ("id" = u64, Path, description = "the record's id"), ("name" = String, Path, description = "the name")),
    request_body = plinth_api::requests::TagChange,
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = Vec<plinth_api::records::TagView>),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn modify(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id, name)): Path<(String, u64, String)>,
    Doc(change): Doc<TagChange>,
) -> Result<Json<Vec<TagView>>, ApiError> {
    edit(
        state,
        TagOwner::parse(&kind, id)?,
        Edit::Modify(name, change),
    )
    .await
}

/// `DELETE /api/v1/{releases|clusters}/{id}/tags/{name}`: deletes a user-defined tag (403 for
/// role-owned ones, 409 while a node has it).
#[utoipa::path(
    delete,
    path = "/{kind}/{id}/tags/{name}/",
    tag = "tags",
    params(("kind" = String, Path, description = "`releases`, `plugins` or `clusters`"), ("id" = u64, Path, description = "the record's id"), ("name" = String, Path, description = "the name")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 204, description = "success"),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn delete(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id, name)): Path<(String, u64, String)>,
) -> Result<StatusCode, ApiError> {
    edit(state, TagOwner::parse(&kind, id)?, Edit::Delete(name)).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn change_node_tags(
    state: Arc<AppState>,
    node_id: u64,
    tags: Vec<String>,
    assign: bool,
) -> Result<Json<NodeTagsView>, ApiError> {
    if tags.is_empty() {
        return Err(ApiError::bad_request("`tags` is empty"));
    }
    state
        .blocking(move |s| {
            let node = s.store.get_node(node_id)?;
            let cluster_id = node.cluster_id.ok_or_else(|| {
                ApiError::conflict(format!(
                    "node {node_id} is in no cluster: tags come from a cluster's release and plugins"
                ))
            })?;
            let catalog = crate::cluster_model::catalog_of(s.store.as_ref(), cluster_id)?;
            if assign {
                for tag in &tags {
                    validate_tag_assignment(&catalog, tag)?;
                }
            }
            let written = s.store.modify_node(node_id, &mut |n| {
                let mut from_roles = node_model(n);
                from_roles.tags_added.clear();
                from_roles.tags_removed.clear();
                let given = node_tags(&from_roles, &catalog);
                for tag in &tags {
                    if assign {
                        n.model.tags_removed.retain(|t| t != tag);
                        if !given.tags.contains(tag) && !n.model.tags_added.contains(tag) {
                            n.model.tags_added.push(tag.clone());
                        }
                    } else {
                        let added = n.model.tags_added.contains(tag) || n.tags.contains(tag);
                        if !added && !given.tags.contains(tag) {
                            return Err(StoreError::NotFound {
                                kind: "tag",
                                id: format!("{tag:?} on node {node_id}"),
                            });
                        }
                        n.model.tags_added.retain(|t| t != tag);
                        if (given.tags.contains(tag) || n.tags.contains(tag))
                            && !n.model.tags_removed.contains(tag)
                        {
                            n.model.tags_removed.push(tag.clone());
                        }
                    }
                }
                Ok(())
            })?;
            let now = node_tags(&node_model(&written), &catalog);
            Ok(Json(NodeTagsView {
                node_id,
                tags: now.tags.into_iter().collect(),
                tags_added: written.model.tags_added,
                tags_removed: written.model.tags_removed,
            }))
        })
        .await
}

/// `POST /api/v1/nodes/{id}/tags`: assigns tags (known to the node's cluster, or their instances).
#[utoipa::path(
    post,
    path = "/nodes/{id}/tags/",
    tag = "tags",
    params(("id" = u64, Path, description = "the record's id")),
    request_body = plinth_api::requests::NodeTagsBody,
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::records::NodeTagsView),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn node_assign(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    Doc(body): Doc<NodeTagsBody>,
) -> Result<Json<NodeTagsView>, ApiError> {
    change_node_tags(state, id, body.tags, true).await
}

/// `DELETE /api/v1/nodes/{id}/tags`: unassigns tags (including ones its roles give).
#[utoipa::path(
    delete,
    path = "/nodes/{id}/tags/",
    tag = "tags",
    params(("id" = u64, Path, description = "the record's id")),
    request_body = plinth_api::requests::NodeTagsBody,
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::records::NodeTagsView),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn node_unassign(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    Doc(body): Doc<NodeTagsBody>,
) -> Result<Json<NodeTagsView>, ApiError> {
    change_node_tags(state, id, body.tags, false).await
}

/// `GET /api/v1/nodes/{id}/tags`: the node's effective tags (from its roles, the operator's changes and
/// primary election, as a deployment would see them now), apart from what its agent reported.
#[utoipa::path(
    get,
    path = "/nodes/{id}/tags/",
    tag = "tags",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success"),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn node_show(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(node_id): Path<u64>,
) -> Result<Json<serde_json::Value>, ApiError> {
    state
        .blocking(move |s| {
            let record = s.store.get_node(node_id)?;
            let (effective, primaries) = match record.cluster_id {
                Some(cluster_id) => {
                    let all = effective_tags(s, cluster_id)?;
                    all.get(&node_id).cloned().unwrap_or_default()
                }
                None => (node_model(&record).tags_added, Vec::new()),
            };
            Ok(Json(serde_json::json!({
                "node_id": node_id,
                "tags": effective,
                "primary_for": primaries,
                "tags_added": record.model.tags_added,
                "tags_removed": record.model.tags_removed,
                "reported": record.model.reported.as_ref().map(|r| &r.tags).unwrap_or(&record.tags),
            })))
        })
        .await
}

/// A node's effective tags and the tags it is primary for.
pub type EffectiveTags = (Vec<String>, Vec<String>);

/// Every node of a cluster's effective tags (explicit, then implicit role-name tags; primaries
/// elected as a deployment would elect them now) and the tags it is primary for, by node id.
pub fn effective_tags(
    s: &AppState,
    cluster_id: u64,
) -> Result<std::collections::BTreeMap<u64, EffectiveTags>, ApiError> {
    let model = ClusterModel::load(s.store.as_ref(), cluster_id, &[])?;
    let catalog = model.catalog();
    let all = plinth_common::tags::cluster_tags(&model.snapshot.nodes, &catalog);
    Ok(all
        .nodes
        .iter()
        .map(|(id, t)| {
            let mut tags: Vec<String> = t.tags.iter().cloned().collect();
            tags.extend(t.roles.iter().filter(|r| !t.tags.contains(*r)).cloned());
            let primary_for = all
                .primaries
                .iter()
                .filter(|(_, n)| *n == id)
                .map(|(tag, _)| tag.clone())
                .collect();
            (*id, (tags, primary_for))
        })
        .collect())
}

/// A node's tags by itself, outside any cluster: the ones it carries and the ones an operator added,
/// less the ones removed, each once.
pub(crate) fn own_tags(node: &NodeRecord) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in node.tags.iter().chain(&node.model.tags_added) {
        if !node.model.tags_removed.contains(t) && !out.contains(t) {
            out.push(t.clone());
        }
    }
    out
}

/// Each node's effective tags by id, the one definition the operator API (`GET /nodes`, `nodes show`)
/// and Nailgun's node records show: in a cluster, what a deployment would see now ([`effective_tags`]:
/// roles' tags, the operator's changes, primaries elected as a deployment would elect them), each
/// cluster loaded once; outside a cluster, or in one whose model does not load, the node's own tags.
pub(crate) fn effective_tags_of<'a>(
    s: &AppState,
    nodes: impl IntoIterator<Item = &'a NodeRecord>,
) -> std::collections::BTreeMap<u64, Vec<String>> {
    let mut by_cluster = std::collections::BTreeMap::new();
    let mut out = std::collections::BTreeMap::new();
    for node in nodes {
        let in_cluster = node.cluster_id.and_then(|cluster_id| {
            by_cluster
                .entry(cluster_id)
                .or_insert_with(|| effective_tags(s, cluster_id).ok())
                .as_ref()
                .and_then(|t| t.get(&node.id))
                .map(|(effective, _)| effective.clone())
        });
        out.insert(node.id, in_cluster.unwrap_or_else(|| own_tags(node)));
    }
    out
}

/// The first problem of a catalog of roles and tags, in words (for a role edit that would break it).
pub(crate) fn catalog_is_valid(catalog: &plinth_common::tags::Catalog) -> Result<(), String> {
    match plinth_common::tags::validate_catalog(catalog)
        .into_iter()
        .next()
    {
        Some(problem) => Err(problem.to_string()),
        None => Ok(()),
    }
}
