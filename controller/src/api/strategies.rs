//! Deployment strategies of a cluster (seed 004): create, replace, show, list, delete, and validate
//! (with each group's nodes, against the cluster's nodes). Bodies are YAML or JSON, in Shipyard's form or
//! the plain form; a rejected document changes nothing and its findings name the group and field.

use super::auth::Operator;
use super::error::{ApiError, Json, Query};
use crate::engine::plan::inventory_node;
use crate::state::AppState;
use crate::store::StrategyRecord;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plinth_common::strategy::{self, Strategy, StrategyError};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// `?name=` for creation when the document has no name.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NameQuery {
    #[serde(default)]
    name: Option<String>,
}

fn parse(body: &str) -> Result<Strategy, ApiError> {
    strategy::parse_strategy(body).map_err(|e| {
        let findings: Vec<Value> = e
            .findings()
            .iter()
            .map(|f| json!({"group": f.group, "field": f.field, "message": f.message}))
            .collect();
        let code = match e {
            StrategyError::Syntax(_) => "bad_document",
            StrategyError::Invalid(_) => "invalid_strategy",
        };
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, e.to_string())
            .with_details(json!({"findings": findings}))
    })
}

fn check_name(name: &str) -> Result<(), ApiError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "strategy name {name:?} is not a name (letters, digits, `_`, `-`, `.`; at most 64)"
        )))
    }
}

fn document(s: &Strategy) -> Value {
    serde_json::to_value(s).unwrap_or_default()
}

/// `GET /api/v1/clusters/{id}/strategies/`.
pub async fn list(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<Vec<StrategyRecord>>, ApiError> {
    state
        .blocking(move |s| Ok(Json(s.store.list_strategies(id)?)))
        .await
}

/// `POST /api/v1/clusters/{id}/strategies/?name=`: creates; 409 if the name is taken.
pub async fn create(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    Query(q): Query<NameQuery>,
    body: String,
) -> Result<(StatusCode, Json<StrategyRecord>), ApiError> {
    let parsed = parse(&body)?;
    let name = q.name.or_else(|| parsed.name.clone()).ok_or_else(|| {
        ApiError::bad_request("the strategy has no name: give `metadata.name`, `name`, or `?name=`")
    })?;
    check_name(&name)?;
    let doc = document(&parsed);
    state
        .blocking(move |s| {
            Ok((
                StatusCode::CREATED,
                Json(s.store.put_strategy(id, &name, &doc, false)?),
            ))
        })
        .await
}

/// `GET /api/v1/clusters/{id}/strategies/{name}/`.
pub async fn show(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((id, name)): Path<(u64, String)>,
) -> Result<Json<StrategyRecord>, ApiError> {
    state
        .blocking(move |s| Ok(Json(s.store.get_strategy(id, &name)?)))
        .await
}

/// `PUT /api/v1/clusters/{id}/strategies/{name}/`: creates or replaces.
pub async fn replace(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((id, name)): Path<(u64, String)>,
    body: String,
) -> Result<Json<StrategyRecord>, ApiError> {
    check_name(&name)?;
    let doc = document(&parse(&body)?);
    state
        .blocking(move |s| Ok(Json(s.store.put_strategy(id, &name, &doc, true)?)))
        .await
}

/// `DELETE /api/v1/clusters/{id}/strategies/{name}/`.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((id, name)): Path<(u64, String)>,
) -> Result<StatusCode, ApiError> {
    state
        .blocking(move |s| {
            s.store.delete_strategy(id, &name)?;
            Ok(StatusCode::NO_CONTENT)
        })
        .await
}

/// `POST /api/v1/clusters/{id}/strategies/validate/`: checks a document against the cluster's nodes and
/// answers each group's nodes and a valid order, without storing anything.
pub async fn validate(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    body: String,
) -> Result<Json<Value>, ApiError> {
    let parsed = parse(&body)?;
    state
        .blocking(move |s| check_against_nodes(s, id, &parsed))
        .await
}

/// Checks a parsed strategy against the cluster's nodes: the validator's answer.
fn check_against_nodes(s: &AppState, id: u64, parsed: &Strategy) -> Result<Json<Value>, ApiError> {
    let model = crate::cluster_model::ClusterModel::load(s.store.as_ref(), id, &[])?;
    let tags = plinth_common::tags::cluster_tags(&model.nodes, &model.catalog());
    let tags = tags.nodes.into_iter().map(|(n, t)| (n, t.tags)).collect();
    let inventory: Vec<_> = model
        .node_records
        .iter()
        .map(|n| inventory_node(n, &tags))
        .collect();
    let report = strategy::check(parsed, &inventory).map_err(|e| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_strategy",
            e.to_string(),
        )
    })?;
    Ok(Json(
        json!({"valid": true, "strategy": document(parsed), "check": report, "text": report.to_text()}),
    ))
}

/// `GET /api/v1/clusters/{id}/strategies/{name}/check`: the stored strategy checked against the
/// cluster's nodes now (each group's criteria, dependencies and the nodes it selects), as `validate`
/// answers; a read, so read-only tokens may ask.
pub async fn check_stored(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((id, name)): Path<(u64, String)>,
) -> Result<Json<Value>, ApiError> {
    state
        .blocking(move |s| {
            let record = s.store.get_strategy(id, &name)?;
            let text = serde_json::to_string(&record.document).unwrap_or_default();
            check_against_nodes(s, id, &parse(&text)?)
        })
        .await
}
