//! Deployment strategies of a cluster (seed 004): create, replace, show, list, delete, and validate
//! (with each group's nodes, against the cluster's nodes). Bodies are YAML (read as Shipyard's PyYAML reads
//! it) or JSON, in Shipyard's form or the plain form, or a site design stream whose layered strategy is
//! taken; a rejected document changes nothing and its findings name the group and field. The document is
//! stored as uploaded (unknown fields kept, each named in a warning) beside its normalised form.

use super::auth::Operator;
use super::error::{ApiError, Json, Query};
use crate::engine::plan::{inventory_node, DeployNode};
use crate::state::AppState;
use crate::store::StrategyRecord;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plinth_api::records::StrategyCheck;
use plinth_common::strategy::{self, LoadedStrategy, Source, Strategy, StrategyError};
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

/// `?format=plain` for the normalised form; the document as uploaded by default.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormatQuery {
    #[serde(default)]
    format: Option<String>,
}

/// Whether `?format=` asks for the normalised form (anything but `plain` or `uploaded` is refused).
pub(crate) fn wants_plain(format: Option<&str>) -> Result<bool, ApiError> {
    match format {
        None | Some("uploaded") => Ok(false),
        Some("plain") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "`format`: {other:?} is not a format; use `uploaded` (the default) or `plain`"
        ))),
    }
}

/// The findings of a refused document as the API's error details.
pub(crate) fn refusal(e: StrategyError) -> ApiError {
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
}

fn load(body: &str) -> Result<LoadedStrategy, ApiError> {
    strategy::load_strategy(&[Source::new("", body)]).map_err(refusal)
}

/// What is stored beside the normalised form: the document as uploaded, where it came from, warnings.
fn source_of(loaded: &LoadedStrategy) -> Value {
    json!({
        "uploaded": loaded.document,
        "provenance": loaded.provenance,
        "warnings": loaded.warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
    })
}

/// A record as shown: the document as uploaded unless `plain` (stored before uploads were kept: plain).
fn shown(mut record: StrategyRecord, plain: bool) -> StrategyRecord {
    if !plain {
        if let Some(uploaded) = record.source.get("uploaded").filter(|u| !u.is_null()) {
            record.document = uploaded.clone();
        }
    }
    record
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
#[utoipa::path(
    get,
    path = "/clusters/{id}/strategies/",
    tag = "strategies",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = Vec<plinth_api::records::StrategyRecord>),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
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
#[utoipa::path(
    post,
    path = "/clusters/{id}/strategies/",
    tag = "strategies",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 201, description = "success", body = plinth_api::records::StrategyRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn create(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    Query(q): Query<NameQuery>,
    body: String,
) -> Result<(StatusCode, Json<StrategyRecord>), ApiError> {
    let loaded = load(&body)?;
    let name = q
        .name
        .or_else(|| loaded.strategy.name.clone())
        .ok_or_else(|| {
            ApiError::bad_request(
                "the strategy has no name: give `metadata.name`, `name`, or `?name=`",
            )
        })?;
    check_name(&name)?;
    let doc = document(&loaded.strategy);
    let source = source_of(&loaded);
    state
        .blocking(move |s| {
            Ok((
                StatusCode::CREATED,
                Json(shown(
                    s.store.put_strategy(id, &name, &doc, &source, false)?,
                    false,
                )),
            ))
        })
        .await
}

/// `GET /api/v1/clusters/{id}/strategies/{name}/?format=uploaded|plain`: the document as uploaded
/// (envelope, metadata and unknown fields kept), or its normalised plain form.
#[utoipa::path(
    get,
    path = "/clusters/{id}/strategies/{name}/",
    tag = "strategies",
    params(("id" = u64, Path, description = "the record's id"), ("name" = String, Path, description = "the name")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::records::StrategyRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn show(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((id, name)): Path<(u64, String)>,
    Query(q): Query<FormatQuery>,
) -> Result<Json<StrategyRecord>, ApiError> {
    let plain = wants_plain(q.format.as_deref())?;
    state
        .blocking(move |s| Ok(Json(shown(s.store.get_strategy(id, &name)?, plain))))
        .await
}

/// `PUT /api/v1/clusters/{id}/strategies/{name}/`: creates or replaces.
#[utoipa::path(
    put,
    path = "/clusters/{id}/strategies/{name}/",
    tag = "strategies",
    params(("id" = u64, Path, description = "the record's id"), ("name" = String, Path, description = "the name")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::records::StrategyRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn replace(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((id, name)): Path<(u64, String)>,
    body: String,
) -> Result<Json<StrategyRecord>, ApiError> {
    check_name(&name)?;
    let loaded = load(&body)?;
    let doc = document(&loaded.strategy);
    let source = source_of(&loaded);
    state
        .blocking(move |s| {
            Ok(Json(shown(
                s.store.put_strategy(id, &name, &doc, &source, true)?,
                false,
            )))
        })
        .await
}

/// `DELETE /api/v1/clusters/{id}/strategies/{name}/`.
#[utoipa::path(
    delete,
    path = "/clusters/{id}/strategies/{name}/",
    tag = "strategies",
    params(("id" = u64, Path, description = "the record's id"), ("name" = String, Path, description = "the name")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 204, description = "success"),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
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
#[utoipa::path(
    post,
    path = "/clusters/{id}/strategies/validate/",
    tag = "strategies",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "the strategy checked against the cluster's nodes", body = StrategyCheck),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn validate(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    body: String,
) -> Result<Json<StrategyCheck>, ApiError> {
    let loaded = load(&body)?;
    let warnings: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
    let provenance = loaded.provenance.clone();
    let parsed = loaded.strategy;
    state
        .blocking(move |s| {
            let mut answer = check_against_nodes(s, id, &parsed)?;
            answer.warnings = Some(warnings);
            answer.provenance = Some(json!(provenance));
            Ok(Json(answer))
        })
        .await
}

/// Checks a parsed strategy against the cluster's nodes: the validator's answer.
fn check_against_nodes(
    s: &AppState,
    id: u64,
    parsed: &Strategy,
) -> Result<StrategyCheck, ApiError> {
    let model = crate::cluster_model::ClusterModel::load(s.store.as_ref(), id, &[])?;
    let tags = plinth_common::tags::cluster_tags(&model.snapshot.nodes, &model.catalog());
    let tags = tags
        .nodes
        .into_iter()
        .map(|(n, t)| (n, t.tags.into_iter().collect()))
        .collect();
    let inventory: Vec<_> = model
        .node_records
        .into_iter()
        .map(|n| inventory_node(&DeployNode::from(n), &tags))
        .collect();
    let report = strategy::check(parsed, &inventory).map_err(|e| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_strategy",
            e.to_string(),
        )
    })?;
    Ok(StrategyCheck {
        valid: true,
        strategy: document(parsed),
        check: json!(report),
        text: report.to_text(),
        warnings: None,
        provenance: None,
    })
}

/// `GET /api/v1/clusters/{id}/strategies/{name}/check`: the stored strategy checked against the
/// cluster's nodes now (each group's criteria, dependencies and the nodes it selects), as `validate`
/// answers; a read, so read-only tokens may ask.
#[utoipa::path(
    get,
    path = "/clusters/{id}/strategies/{name}/check/",
    tag = "strategies",
    params(("id" = u64, Path, description = "the record's id"), ("name" = String, Path, description = "the name")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "the stored strategy checked against the cluster's nodes", body = StrategyCheck),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn check_stored(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((id, name)): Path<(u64, String)>,
) -> Result<Json<StrategyCheck>, ApiError> {
    state
        .blocking(move |s| {
            let record = s.store.get_strategy(id, &name)?;
            let text = serde_json::to_string(&record.document).unwrap_or_default();
            let loaded = load(&text)?;
            check_against_nodes(s, id, &loaded.strategy).map(Json)
        })
        .await
}
