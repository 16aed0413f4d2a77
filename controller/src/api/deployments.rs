//! `/api/v1/deployments`: list, report, summary, one node's part, events.

use super::auth::Operator;
use super::error::{ApiError, Json, Query};
use crate::engine::events::{SubscribeError, MAX_WATCHERS_PER_DEPLOYMENT, MAX_WATCHERS_PER_TOKEN};
use crate::engine::report::{self, NodeLine, Report};
use crate::engine::summary::Summary;
use crate::state::AppState;
use crate::store::DeploymentRecord;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use plinth_common::wire::DeploymentEvent;
use serde::Deserialize;
use std::convert::Infallible;
use std::sync::Arc;

/// `GET /api/v1/deployments` query.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    #[serde(default)]
    cluster_id: Option<u64>,
}

/// `GET /api/v1/deployments?cluster_id=`.
#[utoipa::path(
    get,
    path = "/deployments/",
    tag = "deployments",
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = Vec<plinth_api::deployments::DeploymentRecord>),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn list(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Query(q): Query<ListQuery>,
) -> Result<Json<Vec<DeploymentRecord>>, ApiError> {
    state
        .blocking(move |s| Ok(Json(s.store.list_deployments(q.cluster_id)?)))
        .await
}

/// `GET /api/v1/deployments/{id}`: the report, live while it runs.
#[utoipa::path(
    get,
    path = "/deployments/{id}/",
    tag = "deployments",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::deployments::Report),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn show(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<Report>, ApiError> {
    state
        .blocking(move |s| {
            let dep = s.store.get_deployment(id)?;
            Ok(Json(report::build_with(
                s.store.as_ref(),
                &dep,
                s.engine.live_state(id),
            )?))
        })
        .await
}

/// `GET /api/v1/deployments/{id}/summary`: the report without task output (status, groups with counts,
/// every node's status, phase and progress), for pages that watch many nodes.
#[utoipa::path(
    get,
    path = "/deployments/{id}/summary/",
    tag = "deployments",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::deployments::Summary),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn summary(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<Json<Summary>, ApiError> {
    state
        .blocking(move |s| {
            let dep = s.store.get_deployment(id)?;
            Ok(Json(Summary::from(report::build_with(
                s.store.as_ref(),
                &dep,
                s.engine.live_state(id),
            )?)))
        })
        .await
}

/// `GET /api/v1/deployments/{id}/nodes/{node_id}`: one node's part of the report, with every task's
/// latest result and output; 404 if the node is not in the deployment.
#[utoipa::path(
    get,
    path = "/deployments/{id}/nodes/{node_id}/",
    tag = "deployments",
    params(("id" = u64, Path, description = "the record's id"), ("node_id" = u64, Path, description = "the node's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success", body = plinth_api::deployments::NodeLine),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn node(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path((id, node_id)): Path<(u64, u64)>,
) -> Result<Json<NodeLine>, ApiError> {
    state
        .blocking(move |s| {
            let dep = s.store.get_deployment(id)?;
            if !dep.node_ids.contains(&node_id) {
                return Err(ApiError::not_found(format!(
                    "node {node_id} is not in deployment {id}"
                )));
            }
            report::build_with(s.store.as_ref(), &dep, s.engine.live_state(id))?
                .nodes
                .into_iter()
                .find(|n| n.id == node_id)
                .map(Json)
                .ok_or_else(|| {
                    ApiError::not_found(format!("node {node_id} is not in deployment {id}"))
                })
        })
        .await
}

/// `POST /api/v1/deployments/{id}/cancel`: stops a running deployment (202 with the deployment, now
/// `cancelled`); 409 when it is not running.
#[utoipa::path(
    post,
    path = "/deployments/{id}/cancel/",
    tag = "deployments",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 202, description = "success", body = plinth_api::deployments::DeploymentRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn cancel(
    State(state): State<Arc<AppState>>,
    op: Operator,
    Path(id): Path<u64>,
) -> Result<(StatusCode, Json<DeploymentRecord>), ApiError> {
    let by = format!("token {}", op.name);
    state
        .blocking(move |s| Ok((StatusCode::ACCEPTED, Json(s.engine.cancel(id, &by)?))))
        .await
}

/// `POST /api/v1/deployments/{id}/retry`: a new deployment of an ended one's failed and not-started
/// nodes, with the same graph type or strategy, options and inputs (202 with the new deployment).
#[utoipa::path(
    post,
    path = "/deployments/{id}/retry/",
    tag = "deployments",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 202, description = "success", body = plinth_api::deployments::DeploymentRecord),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn retry(
    State(state): State<Arc<AppState>>,
    _op: Operator,
    Path(id): Path<u64>,
) -> Result<(StatusCode, Json<DeploymentRecord>), ApiError> {
    state
        .blocking(move |s| {
            let dep = s.engine.retry(id)?.record;
            tracing::info!(
                deployment = dep.id,
                retry_of = id,
                nodes = dep.node_ids.len(),
                "retry started"
            );
            Ok((StatusCode::ACCEPTED, Json(dep)))
        })
        .await
}

/// The SSE stream's state: the stored-events cursor and the live channel.
struct Feed {
    state: Arc<AppState>,
    id: u64,
    cursor: u64,
    /// The live channel; `None` once the deployment is not running here.
    live: Option<crate::engine::events::Watch>,
    queue: std::collections::VecDeque<Event>,
    done: bool,
}

fn sse_event(event: &DeploymentEvent, id: Option<u64>) -> Event {
    let data = serde_json::to_string(event).unwrap_or_default();
    let e = Event::default().event(event.kind()).data(data);
    match id {
        Some(id) => e.id(id.to_string()),
        None => e,
    }
}

impl Feed {
    /// Reads stored events after the cursor into the queue; notes the end of the deployment.
    async fn pull(&mut self) {
        let (id, after) = (self.id, self.cursor);
        let stored = self
            .state
            .blocking(move |s| Ok(s.store.events(id, after)?))
            .await
            .unwrap_or_default();
        for (seq, e) in stored {
            self.cursor = seq;
            if matches!(e, DeploymentEvent::DeploymentFinished { .. }) {
                self.done = true;
            }
            self.queue.push_back(sse_event(&e, Some(seq)));
        }
    }

    async fn next(mut self) -> Option<(Result<Event, Infallible>, Feed)> {
        loop {
            if let Some(e) = self.queue.pop_front() {
                return Some((Ok(e), self));
            }
            if self.done {
                return None;
            }
            let Some(live) = self.live.as_mut() else {
                // Not running here: sequenced by another controller sharing the database, whose
                // events are read back from it until it finishes.
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                self.pull().await;
                if self.queue.is_empty() && !self.done {
                    let id = self.id;
                    let running = self
                        .state
                        .blocking(move |s| Ok(s.store.get_deployment(id)?.status))
                        .await
                        .map(|st| st == crate::store::DeploymentStatus::Running)
                        .unwrap_or(false);
                    if !running {
                        self.pull().await;
                        self.done = true;
                    }
                }
                continue;
            };
            tokio::select! {
                live = live.rx.recv() => match live {
                    // Task results are live only; everything else is read back from the store, in order.
                    Ok(e @ DeploymentEvent::TaskResult { .. }) => {
                        self.queue.push_back(sse_event(&e, None));
                    }
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => self.pull().await,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                        // Finished (its last event is stored), or its sequencing moved to another
                        // controller: read on from the database.
                        self.pull().await;
                        self.live = None;
                    }
                },
                _ = tokio::time::sleep(std::time::Duration::from_millis(500)) => self.pull().await,
            }
        }
    }
}

/// `GET /api/v1/deployments/{id}/events`: the deployment's events as Server-Sent Events: the stored ones
/// first (each with its sequence number as the SSE id; `Last-Event-ID` resumes after it), then live ones,
/// until the deployment finishes.
#[utoipa::path(
    get,
    path = "/deployments/{id}/events/",
    tag = "deployments",
    params(("id" = u64, Path, description = "the record's id")),
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success"),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn events(
    State(state): State<Arc<AppState>>,
    op: Operator,
    Path(id): Path<u64>,
    headers: axum::http::HeaderMap,
) -> Result<Sse<impl futures_util::Stream<Item = Result<Event, Infallible>>>, ApiError> {
    // Found first: a request for a deployment that does not exist makes nothing.
    let dep = state
        .blocking(move |s| Ok(s.store.get_deployment(id)?))
        .await?;
    let live = match state.engine.events.subscribe(id, &op.name) {
        Ok(watch) => Some(watch),
        Err(SubscribeError::NotRunning) => None,
        Err(SubscribeError::TooManyForToken) => {
            return Err(ApiError::new(
                axum::http::StatusCode::TOO_MANY_REQUESTS,
                "too_many_watchers",
                format!(
                    "token {:?} already watches deployment {id} {MAX_WATCHERS_PER_TOKEN} times, its \
                     share; close a stream first",
                    op.name
                ),
            ))
        }
        Err(SubscribeError::TooManyWatchers) => {
            return Err(ApiError::new(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                "too_many_watchers",
                format!(
                    "deployment {id} already has {MAX_WATCHERS_PER_DEPLOYMENT} watchers; try again later"
                ),
            ))
        }
    };
    let cursor = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut feed = Feed {
        state,
        id,
        cursor,
        live,
        queue: Default::default(),
        done: false,
    };
    feed.pull().await;
    if dep.status != crate::store::DeploymentStatus::Running {
        // Finished: everything is stored, and was just read.
        feed.done = true;
    }
    let stream = futures_util::stream::unfold(feed, Feed::next);
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}
