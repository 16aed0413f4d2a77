//! Typed graphs of releases, plugins and clusters (seed 002): list, show, create (409 if it exists),
//! replace, patch, delete (204), by owner and type or by graph id. Uploads are JSON or YAML, either a
//! graph (`name`, `tasks`, `node_filter`) or a bare list of tasks as Fuel's `tasks.yaml` holds them;
//! downloads are JSON, or YAML with `Accept: application/yaml` or `?format=yaml`. Every task must load as
//! the model reads it (a task that does not is named with its position), or nothing is stored.

use super::auth::Operator;
use super::body::{Answer, DocText};
use super::error::{ApiError, Json, Query};
use crate::cluster_model::graph_model;
use crate::state::AppState;
use crate::store::{GraphBody, GraphOwner, GraphRecord};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use plinth_api::answers::Stored;
use plinth_common::graph::{key_findings, DocumentKind, Finding, Severity};
use serde::Deserialize;
use std::sync::Arc;

/// Checks a graph type's spelling.
pub fn check_graph_type(graph_type: &str) -> Result<(), ApiError> {
    let ok = !graph_type.is_empty()
        && graph_type.len() <= 64
        && graph_type
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "graph type {graph_type:?} is not a name (letters, digits, `_`, `-`, `.`; at most 64)"
        )))
    }
}

/// The owner named by a path's collection and id.
pub fn owner(kind: &str, id: u64) -> Result<GraphOwner, ApiError> {
    match kind {
        "releases" => Ok(GraphOwner::Release(id)),
        "clusters" => Ok(GraphOwner::Cluster(id)),
        "plugins" => Ok(GraphOwner::Plugin(id)),
        other => Err(ApiError::not_found(format!("no such collection {other:?}"))),
    }
}

/// An uploaded graph: a whole graph, or only its tasks.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum GraphUpload {
    /// Fuel's `tasks.yaml`: a list of tasks.
    Tasks(Vec<serde_json::Value>),
    /// `name`, `tasks`, `node_filter`.
    Graph(GraphBody),
}

impl GraphUpload {
    fn into_body(self) -> GraphBody {
        match self {
            GraphUpload::Tasks(tasks) => GraphBody {
                tasks,
                ..GraphBody::default()
            },
            GraphUpload::Graph(g) => g,
        }
    }
}

/// The download format.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormatQuery {
    /// `yaml` or `json`.
    #[serde(default)]
    format: Option<String>,
}

/// `GET /api/v1/{kind}/{id}/deployment_graphs`.
#[utoipa::path(
    get,
    path = "/{kind}/{id}/deployment_graphs/",
    tag = "graphs",
    params(("kind" = String, Path, description = "`releases`, `plugins` or `clusters`"), ("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = Vec<plinth_api::records::GraphRecord>),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn list(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id)): Path<(String, u64)>,
    headers: HeaderMap,
    Query(q): Query<FormatQuery>,
) -> Result<Answer<Vec<GraphRecord>>, ApiError> {
    let owner = owner(&kind, id)?;
    let graphs = state
        .blocking(move |s| Ok(s.store.list_graphs(owner)?))
        .await?;
    Ok(Answer::negotiated(graphs, &headers, q.format.as_deref()))
}

/// `GET /api/v1/{kind}/{id}/deployment_graphs/{type}`.
#[utoipa::path(
    get,
    path = "/{kind}/{id}/deployment_graphs/{graph_type}/",
    tag = "graphs",
    params(("kind" = String, Path, description = "`releases`, `plugins` or `clusters`"), ("id" = u64, Path, description = "the record's id"), ("graph_type" = String, Path, description = "the graph type")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::records::GraphRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn show(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id, graph_type)): Path<(String, u64, String)>,
    headers: HeaderMap,
    Query(q): Query<FormatQuery>,
) -> Result<Answer<GraphRecord>, ApiError> {
    let owner = owner(&kind, id)?;
    let graph = state
        .blocking(move |s| Ok(s.store.get_graph(owner, &graph_type)?))
        .await?;
    Ok(Answer::negotiated(graph, &headers, q.format.as_deref()))
}

/// `?force=true`: store a graph whose shape has errors (a cycle, a type no one defines) all the same.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
pub struct ForceQuery {
    /// Store even with error findings (the controller logs that it did).
    #[serde(default)]
    pub force: bool,
}

/// The name findings give an uploaded document in place of a file's (`upload:12: tasks[0].requries:
/// ...`).
pub const UPLOAD: &str = "upload";

/// What the checks of an upload found: the findings to answer with (warnings, and errors stored
/// because `force` asked), and the errors `force` overrode.
#[derive(Debug, Default)]
pub struct UploadChecks {
    /// Every finding to answer with.
    pub findings: Vec<Finding>,
    /// The errors stored anyway, as `force` asked.
    pub forced: Vec<String>,
}

impl UploadChecks {
    /// Starts with the unknown keys of the uploaded document (`value`, as written; `text`, when the
    /// body spans lines, for their line numbers).
    pub fn with_keys(kind: DocumentKind, value: &serde_json::Value, text: Option<&str>) -> Self {
        UploadChecks {
            findings: key_findings(kind, value, text, UPLOAD),
            forced: Vec::new(),
        }
    }

    /// The answer: `record` with the findings, and, when errors were overridden, a `forced` notice
    /// naming `what` was stored and the errors.
    pub fn stored<T>(self, record: T, what: &str) -> Stored<T> {
        let forced = (!self.forced.is_empty()).then(|| {
            format!(
                "{what} stored despite {} error(s), as force=true asks: {}",
                self.forced.len(),
                self.forced.join("; ")
            )
        });
        Stored {
            record,
            findings: self.findings,
            forced,
        }
    }
}

/// Checks a graph: its type's spelling, every task as the model loads it, and its shape (cycles among
/// its tasks, types no one defines): an error finding refuses it (422, the findings in the details)
/// unless `force`, which stores it, logs that it did and says so in the answer (`checks.forced`).
/// Warnings never refuse; they join `checks.findings` for the answer. Dependencies naming tasks of
/// other graphs are checked once the graphs merge (`graph check`, `cluster check`, a deployment's
/// start).
pub fn check_graph(
    graph_type: &str,
    body: &GraphBody,
    force: bool,
    checks: &mut UploadChecks,
) -> Result<(), ApiError> {
    check_graph_type(graph_type)?;
    for (i, task) in body.tasks.iter().enumerate() {
        if task
            .get("id")
            .and_then(|v| v.as_str())
            .is_none_or(str::is_empty)
        {
            return Err(ApiError::bad_request(format!(
                "task {i} of graph {graph_type:?} has no string `id`"
            )));
        }
    }
    let graph = graph_model("the upload", graph_type, body)?;
    let tasks: Vec<&plinth_common::model::Task> = graph.tasks.iter().collect();
    let findings = plinth_common::graph::check_tasks(&tasks);
    let errors: Vec<String> = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| format!("graph {graph_type:?}: {}", f.message))
        .collect();
    if errors.is_empty() {
        checks.findings.extend(findings);
        return Ok(());
    }
    if force {
        tracing::warn!(
            graph_type,
            errors = %errors.join("; "),
            "storing a graph with errors: the upload asked to force it"
        );
        checks.findings.extend(findings);
        checks.forced.extend(errors);
        return Ok(());
    }
    let messages: Vec<&str> = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.message.as_str())
        .collect();
    let mut all = findings.clone();
    all.extend(checks.findings.iter().cloned());
    Err(ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "graph_error",
        format!(
            "graph {graph_type:?}: {}; fix the graph, or upload it with force=true to store it anyway",
            messages.join("; ")
        ),
    )
    .with_details(serde_json::json!({ "findings": all })))
}

async fn put(
    state: Arc<AppState>,
    owner: GraphOwner,
    graph_type: String,
    body: GraphBody,
    replace: bool,
    force: bool,
    mut checks: UploadChecks,
) -> Result<(StatusCode, Json<Stored<GraphRecord>>), ApiError> {
    check_graph(&graph_type, &body, force, &mut checks)?;
    state
        .blocking(move |s| {
            let g = s.store.put_graph(owner, &graph_type, &body, replace)?;
            let what = format!("graph {graph_type:?}");
            Ok((
                if replace {
                    StatusCode::OK
                } else {
                    StatusCode::CREATED
                },
                Json(checks.stored(g, &what)),
            ))
        })
        .await
}

/// `POST /api/v1/{kind}/{id}/deployment_graphs/{type}`: 409 when the owner has one of that type.
#[utoipa::path(
    post,
    path = "/{kind}/{id}/deployment_graphs/{graph_type}/",
    tag = "graphs",
    params(("kind" = String, Path, description = "`releases`, `plugins` or `clusters`"), ("id" = u64, Path, description = "the record's id"), ("graph_type" = String, Path, description = "the graph type"), ForceQuery),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 201, description = "stored: the record, with `findings` (the checks' warnings, and errors `force=true` stored) and `forced` (what force overrode) when there are any", body = plinth_api::records::GraphRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn create(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id, graph_type)): Path<(String, u64, String)>,
    Query(q): Query<ForceQuery>,
    upload: DocText<GraphUpload>,
) -> Result<(StatusCode, Json<Stored<GraphRecord>>), ApiError> {
    let checks =
        UploadChecks::with_keys(DocumentKind::Graph, &upload.value, upload.text.as_deref());
    put(
        state,
        owner(&kind, id)?,
        graph_type,
        upload.doc.into_body(),
        false,
        q.force,
        checks,
    )
    .await
}

/// `PUT /api/v1/{kind}/{id}/deployment_graphs/{type}`: creates or replaces (every task is replaced).
#[utoipa::path(
    put,
    path = "/{kind}/{id}/deployment_graphs/{graph_type}/",
    tag = "graphs",
    params(("kind" = String, Path, description = "`releases`, `plugins` or `clusters`"), ("id" = u64, Path, description = "the record's id"), ("graph_type" = String, Path, description = "the graph type")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "stored: the record, with `findings` (the checks' warnings, and errors `force=true` stored) and `forced` (what force overrode) when there are any", body = plinth_api::records::GraphRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn replace(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id, graph_type)): Path<(String, u64, String)>,
    Query(q): Query<ForceQuery>,
    upload: DocText<GraphUpload>,
) -> Result<(StatusCode, Json<Stored<GraphRecord>>), ApiError> {
    let checks =
        UploadChecks::with_keys(DocumentKind::Graph, &upload.value, upload.text.as_deref());
    put(
        state,
        owner(&kind, id)?,
        graph_type,
        upload.doc.into_body(),
        true,
        q.force,
        checks,
    )
    .await
}

/// A partial change: the fields given replace the stored ones.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphPatch {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    tasks: Option<Vec<serde_json::Value>>,
    #[serde(default)]
    node_filter: Option<String>,
}

/// `PATCH /api/v1/{kind}/{id}/deployment_graphs/{type}`: changes the name, tasks or node filter given.
#[utoipa::path(
    patch,
    path = "/{kind}/{id}/deployment_graphs/{graph_type}/",
    tag = "graphs",
    params(("kind" = String, Path, description = "`releases`, `plugins` or `clusters`"), ("id" = u64, Path, description = "the record's id"), ("graph_type" = String, Path, description = "the graph type")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "stored: the record, with `findings` (the checks' warnings, and errors `force=true` stored) and `forced` (what force overrode) when there are any", body = plinth_api::records::GraphRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn patch(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id, graph_type)): Path<(String, u64, String)>,
    Query(q): Query<ForceQuery>,
    upload: DocText<GraphPatch>,
) -> Result<(StatusCode, Json<Stored<GraphRecord>>), ApiError> {
    let checks =
        UploadChecks::with_keys(DocumentKind::Graph, &upload.value, upload.text.as_deref());
    let change = upload.doc;
    let owner = owner(&kind, id)?;
    let gt = graph_type.clone();
    let current = state
        .blocking(move |s| Ok(s.store.get_graph(owner, &gt)?))
        .await?;
    let mut body = current.body;
    if let Some(name) = change.name {
        body.name = Some(name);
    }
    if let Some(tasks) = change.tasks {
        body.tasks = tasks;
    }
    if let Some(filter) = change.node_filter {
        body.node_filter = Some(filter);
    }
    put(state, owner, graph_type, body, true, q.force, checks).await
}

/// `DELETE /api/v1/{kind}/{id}/deployment_graphs/{type}` (204).
#[utoipa::path(
    delete,
    path = "/{kind}/{id}/deployment_graphs/{graph_type}/",
    tag = "graphs",
    params(("kind" = String, Path, description = "`releases`, `plugins` or `clusters`"), ("id" = u64, Path, description = "the record's id"), ("graph_type" = String, Path, description = "the graph type")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 204, description = "success"),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn delete(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((kind, id, graph_type)): Path<(String, u64, String)>,
) -> Result<StatusCode, ApiError> {
    let owner = owner(&kind, id)?;
    state
        .blocking(move |s| {
            s.store.delete_graph(owner, &graph_type)?;
            Ok(StatusCode::NO_CONTENT)
        })
        .await
}

/// `GET /api/v1/graphs`: every graph with its relation (owner and type).
#[utoipa::path(
    get,
    path = "/graphs/",
    tag = "graphs",
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = Vec<plinth_api::records::GraphRecord>),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn all(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    headers: HeaderMap,
    Query(q): Query<FormatQuery>,
) -> Result<Answer<Vec<GraphRecord>>, ApiError> {
    let graphs = state.blocking(|s| Ok(s.store.list_all_graphs()?)).await?;
    Ok(Answer::negotiated(graphs, &headers, q.format.as_deref()))
}

/// `GET /api/v1/graphs/{id}`.
#[utoipa::path(
    get,
    path = "/graphs/{id}/",
    tag = "graphs",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::records::GraphRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn by_id(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    headers: HeaderMap,
    Query(q): Query<FormatQuery>,
) -> Result<Answer<GraphRecord>, ApiError> {
    let graph = state
        .blocking(move |s| Ok(s.store.graph_by_id(id)?))
        .await?;
    Ok(Answer::negotiated(graph, &headers, q.format.as_deref()))
}

/// `PUT /api/v1/graphs/{id}`: replaces the graph's name, tasks and node filter.
#[utoipa::path(
    put,
    path = "/graphs/{id}/",
    tag = "graphs",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "stored: the record, with `findings` (the checks' warnings, and errors `force=true` stored) and `forced` (what force overrode) when there are any", body = plinth_api::records::GraphRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn replace_by_id(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
    Query(q): Query<ForceQuery>,
    upload: DocText<GraphUpload>,
) -> Result<(StatusCode, Json<Stored<GraphRecord>>), ApiError> {
    let checks =
        UploadChecks::with_keys(DocumentKind::Graph, &upload.value, upload.text.as_deref());
    let current = state
        .blocking(move |s| Ok(s.store.graph_by_id(id)?))
        .await?;
    put(
        state,
        current.owner,
        current.graph_type,
        upload.doc.into_body(),
        true,
        q.force,
        checks,
    )
    .await
}

/// `DELETE /api/v1/graphs/{id}` (204).
#[utoipa::path(
    delete,
    path = "/graphs/{id}/",
    tag = "graphs",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 204, description = "success"),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn delete_by_id(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<StatusCode, ApiError> {
    state
        .blocking(move |s| {
            let g = s.store.graph_by_id(id)?;
            s.store.delete_graph(g.owner, &g.graph_type)?;
            Ok(StatusCode::NO_CONTENT)
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(tasks: serde_json::Value) -> GraphBody {
        GraphBody {
            tasks: serde_json::from_value(tasks).expect("tasks"),
            ..GraphBody::default()
        }
    }

    #[test]
    fn warnings_join_the_answer_and_force_says_what_it_stored_despite() {
        let text = "- id: a\n  type: shell\n  parameters:\n    cmd: 'true'\n    timout: 5\n";
        let value: serde_json::Value = serde_yaml_ng::from_str(text).expect("YAML");
        let mut checks = UploadChecks::with_keys(DocumentKind::Graph, &value, Some(text));
        check_graph("default", &body(value.clone()), false, &mut checks).expect("warnings pass");
        let answer = serde_json::to_value(checks.stored(json!({"id": 1}), "graph \"default\""))
            .expect("serializes");
        assert_eq!(answer["id"], 1);
        assert_eq!(answer["findings"][0]["code"], "unknown_key");
        assert_eq!(answer["findings"][0]["line"], 5);
        assert!(answer.get("forced").is_none(), "{answer}");

        let cycle = json!([
            {"id": "a", "type": "shell", "requires": ["b"]},
            {"id": "b", "type": "shell", "requires": ["a"]}
        ]);
        let mut checks = UploadChecks::default();
        let refused = check_graph("default", &body(cycle.clone()), false, &mut checks);
        assert!(refused.is_err());
        let mut checks = UploadChecks::default();
        check_graph("default", &body(cycle), true, &mut checks).expect("forced");
        let answer = serde_json::to_value(checks.stored(json!({"id": 2}), "graph \"default\""))
            .expect("serializes");
        let forced = answer["forced"].as_str().unwrap_or_default();
        assert!(
            forced.starts_with("graph \"default\" stored despite 1 error(s), as force=true asks")
                && forced.contains("a -> b -> a"),
            "{answer}"
        );
        assert_eq!(answer["findings"][0]["severity"], "error", "{answer}");
    }
}
