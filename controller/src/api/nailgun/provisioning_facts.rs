//! Provisioning facts (`fuel2 env provisioning-facts get-default|download|upload|delete`), in
//! Nailgun's shape: `{"engine": {...}, "nodes": [{"uid": "3", ...}, ...]}`.
//!
//! Where Nailgun's facts were what it handed Cobbler, Plinth's are what each node's `provision`
//! task is given: a node's facts are its `uid`, its `name`, and the parameters of its `provision`
//! task as the cluster's `provision` graph resolves for it now (`image`, `root_device`, `network`,
//! ...). `engine` holds parameters put over every node's. Uploaded facts are put over the graph's
//! parameters at the next deployment that provisions, key by key (`engine`'s first, then the
//! node's own); their keys are checked as a `provision` task's parameters are.

use crate::api::error::{ApiError, Json};
use crate::state::AppState;
use plinth_common::graph::{unknown_keys, DocumentKind};
use plinth_common::model::{ProvisionOverrides, TaskType};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The graph type whose `provision` tasks the facts are about.
const PROVISION_GRAPH: &str = "provision";

/// Keys of a node's facts that say which node it is, not what it is given.
const NODE_KEYS: &[&str] = &["uid", "name"];

/// Each chosen node's facts computed now, with no uploaded facts put over them.
pub async fn defaults(
    state: Arc<AppState>,
    id: u64,
    nodes: Option<Vec<u64>>,
) -> Result<Json<Value>, ApiError> {
    state
        .blocking(move |s| {
            let model =
                crate::cluster_model::ClusterModel::load(s.store.as_ref(), id, &[PROVISION_GRAPH])?;
            let mut snapshot = model.snapshot;
            if !snapshot.defines(PROVISION_GRAPH) {
                return Err(ApiError::bad_request(format!(
                    "cluster {id} has no `provision` graph (neither its release, its plugins nor \
                     itself define one), so nothing provisions its nodes and there are no \
                     provisioning facts"
                )));
            }
            snapshot.cluster.replaced_provisioning_info = ProvisionOverrides::default();
            let resolved = plinth_common::snapshot::resolve(
                &snapshot,
                &[PROVISION_GRAPH.to_string()],
                &s.exprs,
            )?;
            let mut facts = Vec::new();
            if let Some(plan) = resolved.plans.get(PROVISION_GRAPH) {
                for node in &plan.nodes {
                    if nodes
                        .as_ref()
                        .is_some_and(|want| !want.contains(&node.node_id))
                    {
                        continue;
                    }
                    let Some(task) = node
                        .tasks
                        .iter()
                        .find(|t| t.task_type == TaskType::Provision)
                    else {
                        continue;
                    };
                    let mut fact = Map::new();
                    fact.insert("uid".into(), json!(node.node_id.to_string()));
                    fact.insert("name".into(), json!(node.name));
                    fact.extend(task.parameters.iter().map(|(k, v)| (k.clone(), v.clone())));
                    facts.push(Value::Object(fact));
                }
            }
            Ok(Json(json!({"engine": {}, "nodes": facts})))
        })
        .await
}

/// The uploaded facts, or `{}` when none were (which `fuel2` reports as no facts).
pub async fn uploaded(state: Arc<AppState>, id: u64) -> Result<Json<Value>, ApiError> {
    state
        .blocking(move |s| {
            let cluster = s.store.get_cluster(id)?;
            let stored = &cluster.data.replaced_provisioning_info;
            if stored.is_empty() {
                return Ok(Json(json!({})));
            }
            let overrides = read_stored(stored, id)?;
            let mut names = std::collections::BTreeMap::new();
            for uid in overrides.nodes.keys() {
                if let Ok(node) = s.store.get_node(*uid) {
                    names.insert(*uid, node.name);
                }
            }
            let nodes: Vec<Value> = overrides
                .nodes
                .iter()
                .map(|(uid, params)| {
                    let mut fact = Map::new();
                    fact.insert("uid".into(), json!(uid.to_string()));
                    if let Some(name) = names.get(uid) {
                        fact.insert("name".into(), json!(name));
                    }
                    fact.extend(params.iter().map(|(k, v)| (k.clone(), v.clone())));
                    Value::Object(fact)
                })
                .collect();
            Ok(Json(json!({"engine": overrides.engine, "nodes": nodes})))
        })
        .await
}

/// Replaces the uploaded facts with `body` (`{"engine": ..., "nodes": [...]}`), after checking every
/// key; a node that is not the cluster's, or a key no `provision` task knows, refuses the whole
/// upload and is named.
pub async fn upload(state: Arc<AppState>, id: u64, body: Value) -> Result<Json<Value>, ApiError> {
    let overrides = read_upload(body)?;
    let given = serde_json::to_value(&overrides)
        .ok()
        .and_then(|v| match v {
            Value::Object(m) => Some(m),
            _ => None,
        })
        .ok_or_else(|| ApiError::internal("provisioning facts did not serialize as a mapping"))?;
    let count = overrides.nodes.len();
    let uids = overrides.nodes.keys().map(u64::to_string).collect();
    super::facts::store_uploaded(&state, id, "provisioning facts: ", uids, move |data| {
        data.replaced_provisioning_info = given.clone()
    })
    .await?;
    Ok(Json(json!({ "uploaded": count })))
}

/// The stored facts as the model reads them.
fn read_stored(stored: &Map<String, Value>, id: u64) -> Result<ProvisionOverrides, ApiError> {
    serde_json::from_value(Value::Object(stored.clone())).map_err(|e| {
        ApiError::internal(format!(
            "cluster {id}'s stored provisioning facts are unreadable: {e}"
        ))
    })
}

/// Reads an upload: `engine` (a mapping, or null as `fuel2` sends when there is no `engine` file)
/// and `nodes` (a list of mappings, each with its `uid`).
fn read_upload(body: Value) -> Result<ProvisionOverrides, ApiError> {
    let Value::Object(mut body) = body else {
        return Err(ApiError::bad_request(
            "provisioning facts are a mapping of `engine` and `nodes`",
        ));
    };
    if let Some(stranger) = body
        .keys()
        .find(|k| !["engine", "nodes"].contains(&k.as_str()))
    {
        return Err(ApiError::bad_request(format!(
            "provisioning facts: unknown key `{stranger}`; they hold `engine` and `nodes`"
        )));
    }
    let mut out = ProvisionOverrides::default();
    match body.remove("engine") {
        None | Some(Value::Null) => {}
        Some(Value::Object(engine)) => {
            check_parameters(&engine, "engine")?;
            out.engine = engine;
        }
        Some(_) => {
            return Err(ApiError::bad_request(
                "provisioning facts: `engine` is a mapping of provision parameters",
            ))
        }
    }
    let nodes = match body.remove("nodes") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(nodes)) => nodes,
        Some(_) => {
            return Err(ApiError::bad_request(
                "provisioning facts: `nodes` is a list of mappings, one per node",
            ))
        }
    };
    for (i, fact) in nodes.into_iter().enumerate() {
        let Value::Object(mut fact) = fact else {
            return Err(ApiError::bad_request(format!(
                "provisioning facts: nodes[{i}] is not a mapping"
            )));
        };
        let uid = match fact.get("uid") {
            Some(Value::String(u)) => u.trim().parse::<u64>().ok(),
            Some(Value::Number(n)) => n.as_u64(),
            _ => None,
        }
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "provisioning facts: nodes[{i}] names its node by `uid` (a node id)"
            ))
        })?;
        for key in NODE_KEYS {
            fact.remove(*key);
        }
        check_parameters(&fact, &format!("node {uid}"))?;
        if out.nodes.insert(uid, fact).is_some() {
            return Err(ApiError::bad_request(format!(
                "provisioning facts: node {uid} is given twice"
            )));
        }
    }
    Ok(out)
}

/// Refuses a key no `provision` task knows, naming it, the nearest known one and where it is.
fn check_parameters(params: &Map<String, Value>, whose: &str) -> Result<(), ApiError> {
    let as_task = json!([{"id": "provision", "type": "provision", "parameters": params}]);
    let Some(unknown) = unknown_keys(DocumentKind::Tasks, &as_task)
        .into_iter()
        .next()
    else {
        return Ok(());
    };
    let nearest = unknown
        .nearest
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default();
    Err(ApiError::bad_request(format!(
        "provisioning facts of {whose}: unknown key `{}`{nearest}; a provision task knows {}",
        unknown.key,
        unknown
            .known
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    )))
}
