//! Deployment facts (`fuel2 env deployment-facts get-default|download|upload|delete`): what each
//! node's tasks run against, computed from the cluster as it is now (the defaults), and the facts an
//! operator uploads for some nodes, put over the computed ones at the next deployment (Nailgun's
//! replaced deployment info).

use super::{node_ids_param, Params};
use crate::api::auth::Operator;
use crate::api::body::Doc;
use crate::api::error::{ApiError, Json, Query};
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::{json, Value};
use std::sync::Arc;

/// The two kinds of facts Nailgun serves.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FactType {
    /// What each node's tasks run against.
    Deployment,
    /// What each node's `provision` tasks are given (see [`super::provisioning_facts`]).
    Provisioning,
}

fn fact_type(name: &str) -> Result<FactType, ApiError> {
    match name {
        "deployment" => Ok(FactType::Deployment),
        "provisioning" => Ok(FactType::Provisioning),
        other => Err(ApiError::not_found(format!(
            "no {other:?} facts: deployment and provisioning facts are served"
        ))),
    }
}

/// `GET /clusters/{id}/orchestrator/deployment/defaults/?nodes=`: each node's facts computed now,
/// uploaded ones left out, with its `uid`.
pub async fn defaults(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((id, kind)): Path<(u64, String)>,
    Query(params): Query<Params>,
) -> Result<Json<Value>, ApiError> {
    let nodes = node_ids_param(&params, "nodes")?;
    if fact_type(&kind)? == FactType::Provisioning {
        return super::provisioning_facts::defaults(state, id, nodes).await;
    }
    state
        .blocking(move |s| {
            let model = crate::cluster_model::ClusterModel::load(s.store.as_ref(), id, &[])?;
            let mut snapshot = model.snapshot;
            snapshot.cluster.replaced_deployment_info.clear();
            let plugins: Vec<&plinth_common::model::Plugin> = snapshot.plugins.iter().collect();
            let catalog = plinth_common::tags::Catalog::new(
                &snapshot.release,
                &plugins,
                Some(&snapshot.cluster),
            );
            let data = snapshot.data(&catalog);
            let facts: Vec<Value> = snapshot
                .nodes
                .iter()
                .filter(|n| nodes.as_ref().is_none_or(|want| want.contains(&n.id)))
                .filter_map(|n| {
                    let mut merged = data.state(n.id)?.merged();
                    merged["uid"] = json!(n.id.to_string());
                    Some(merged)
                })
                .collect();
            Ok(Json(Value::Array(facts)))
        })
        .await
}

/// `GET /clusters/{id}/orchestrator/deployment/`: the uploaded facts, each with its node's `uid`
/// (none: an empty list, which `fuel2` reports as no facts).
pub async fn uploaded(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((id, kind)): Path<(u64, String)>,
) -> Result<Json<Value>, ApiError> {
    if fact_type(&kind)? == FactType::Provisioning {
        return super::provisioning_facts::uploaded(state, id).await;
    }
    state
        .blocking(move |s| {
            let cluster = s.store.get_cluster(id)?;
            let facts: Vec<Value> = cluster
                .data
                .replaced_deployment_info
                .iter()
                .map(|(uid, facts)| {
                    let mut facts = facts.clone();
                    facts["uid"] = json!(uid);
                    facts
                })
                .collect();
            Ok(Json(Value::Array(facts)))
        })
        .await
}

/// `PUT /clusters/{id}/orchestrator/deployment/` (`fuel2 env deployment-facts upload`): the facts
/// of some nodes, each a mapping with the node's `uid`, replacing those uploaded before. A `uid`
/// that is no node of the cluster is refused, naming it.
pub async fn upload(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((id, kind)): Path<(u64, String)>,
    Doc(body): Doc<Value>,
) -> Result<Json<Value>, ApiError> {
    if fact_type(&kind)? == FactType::Provisioning {
        return super::provisioning_facts::upload(state, id, body).await;
    }
    let Value::Array(body) = body else {
        return Err(ApiError::bad_request(
            "deployment facts are a list of mappings, one per node",
        ));
    };
    let mut given = serde_json::Map::new();
    for (i, facts) in body.into_iter().enumerate() {
        let Value::Object(mut facts) = facts else {
            return Err(ApiError::bad_request(format!(
                "facts[{i}]: a node's facts are a mapping"
            )));
        };
        let uid = match facts.remove("uid") {
            Some(Value::String(u)) => u,
            Some(Value::Number(n)) => n.to_string(),
            _ => {
                return Err(ApiError::bad_request(format!(
                    "facts[{i}]: a node's facts name it by `uid`"
                )))
            }
        };
        given.insert(uid, Value::Object(facts));
    }
    let uids: Vec<String> = given.keys().cloned().collect();
    let count = given.len();
    store_uploaded(&state, id, "", uids, move |data| {
        data.replaced_deployment_info = given.clone()
    })
    .await?;
    Ok(Json(json!({ "uploaded": count })))
}

/// Stores facts uploaded for the nodes `uids` (node ids as text) with `put`, in one transaction that
/// first refuses a `uid` that is no node of cluster `id`, naming it (after `what`).
pub(super) async fn store_uploaded(
    state: &Arc<AppState>,
    id: u64,
    what: &'static str,
    uids: Vec<String>,
    put: impl Fn(&mut plinth_api::records::ClusterData) + Send + 'static,
) -> Result<(), ApiError> {
    state
        .blocking(move |s| {
            let mut problem = None;
            let stored = s.store.modify_cluster(id, &mut |c, nodes| {
                if let Some(stranger) = uids
                    .iter()
                    .find(|uid| !nodes.iter().any(|n| n.id.to_string() == **uid))
                {
                    problem = Some(ApiError::bad_request(format!(
                        "{what}uid {stranger:?} is no node of cluster {id}"
                    )));
                    return Err(crate::store::StoreError::Conflict("refused".into()));
                }
                put(&mut c.data);
                Ok(())
            });
            match (stored, problem) {
                (_, Some(p)) => Err(p),
                (Ok(_), None) => Ok(()),
                (Err(e), None) => Err(e.into()),
            }
        })
        .await
}

/// `DELETE /clusters/{id}/orchestrator/{deployment,provisioning}/` (`fuel2 env deployment-facts
/// delete`, `provisioning-facts delete`): the uploaded facts are forgotten; the next deployment uses
/// the computed ones.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((id, kind)): Path<(u64, String)>,
) -> Result<StatusCode, ApiError> {
    let kind = fact_type(&kind)?;
    state
        .blocking(move |s| {
            s.store.modify_cluster(id, &mut |c, _| {
                match kind {
                    FactType::Deployment => c.data.replaced_deployment_info.clear(),
                    FactType::Provisioning => c.data.replaced_provisioning_info.clear(),
                }
                Ok(())
            })?;
            Ok(StatusCode::NO_CONTENT)
        })
        .await
}
