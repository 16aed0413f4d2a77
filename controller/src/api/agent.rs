//! The agent endpoints under `/agent/v1`: register, poll, results, refusals, heartbeat, gate.

use super::auth::{secrets_equal, Agent, AgentKey};
use super::error::{ApiError, Json, Query};
use crate::clock::{now_ms, now_secs};
use crate::state::AppState;
use crate::store::{NodeAdmission, NodeRegistration};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use plinth_common::signing::{
    public_key_to_text, sign_gate_answer, sign_task_list, SignedEnvelope,
};
use plinth_common::wire::{
    valid_nonce, GateAnswer, GateQuery, PollQuery, Refusal, Registration, RegistrationAck,
    ResultAck, ResultsBatch, MAX_POLL_WAIT_SECS,
};
use std::sync::Arc;
use std::time::Duration;

/// `POST /agent/v1/register`.
pub async fn register(
    State(state): State<Arc<AppState>>,
    key: AgentKey,
    Json(reg): Json<Registration>,
) -> Result<Json<RegistrationAck>, ApiError> {
    let config = state.config();
    let token_ok = match (&config.enrollment_token, &reg.enrollment_token) {
        (Some(expected), Some(given)) => secrets_equal(expected, given),
        _ => false,
    };
    let admission = if config.auto_accept || token_ok {
        NodeAdmission::Accepted
    } else {
        NodeAdmission::Discovered
    };
    let name = reg
        .name
        .clone()
        .filter(|n| !n.trim().is_empty())
        .or_else(|| reg.facts.hostname.clone())
        .unwrap_or_else(|| format!("node-{}", &key.fingerprint[..8]));
    let facts =
        serde_json::to_value(&reg.facts).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let record = NodeRegistration {
        node_key: key.fingerprint.clone(),
        public_key: public_key_to_text(&key.key),
        name,
        facts,
        tags: reg.tags,
        labels: reg.labels,
        rack: reg.rack,
        now_ms: now_ms(),
    };
    let node = state
        .blocking(move |s| {
            let mut node = s.store.register_node(&record, admission)?;
            // A valid enrollment token admits a node that registered earlier without one.
            if token_ok && node.admission != NodeAdmission::Accepted {
                node = s.store.set_admission(node.id, NodeAdmission::Accepted)?;
            }
            s.nodes.upsert(&node);
            Ok(node)
        })
        .await?;
    tracing::info!(node = node.id, key = %node.node_key, admission = ?node.admission, "node registered");
    Ok(Json(RegistrationAck {
        node_id: node.id,
        node_key: node.node_key,
        admission: node.admission,
        revision: node.revision,
    }))
}

/// `GET /agent/v1/tasks?nonce=&after=&wait=`: the node's next signed list, or 204 after `wait` seconds.
pub async fn poll(
    State(state): State<Arc<AppState>>,
    agent: Agent,
    Query(q): Query<PollQuery>,
) -> Result<Response, ApiError> {
    if !valid_nonce(&q.nonce) {
        return Err(ApiError::bad_request(
            "nonce must be 16 to 64 lowercase hex characters",
        ));
    }
    agent.node.note_after(q.after);
    let wait = Duration::from_secs(q.wait.min(MAX_POLL_WAIT_SECS));
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let found = if agent.node.accepted() {
            state.board.newer_than(agent.node.id, q.after)
        } else {
            Err(state.board.watch(agent.node.id))
        };
        match found {
            Ok(list) => {
                let mut list = (*list).clone();
                let now = now_secs();
                list.nonce = q.nonce;
                list.issued_at = now;
                list.expires_at = now + state.engine.list_ttl_secs();
                let signed = sign_task_list(&state.signer, &list);
                agent.node.seen(now_ms());
                return Ok(Json(signed).into_response());
            }
            Err(mut rx) => {
                let woke = tokio::time::timeout_at(deadline, rx.changed()).await;
                if !matches!(woke, Ok(Ok(()))) {
                    agent.node.seen(now_ms());
                    return Ok(StatusCode::NO_CONTENT.into_response());
                }
            }
        }
    }
}

/// `POST /agent/v1/results`: stores results idempotently and acknowledges them.
pub async fn results(
    State(state): State<Arc<AppState>>,
    agent: Agent,
    Json(batch): Json<ResultsBatch>,
) -> Result<Json<ResultAck>, ApiError> {
    if !agent.node.accepted() {
        return Err(ApiError::forbidden("this node is not accepted"));
    }
    let node_id = agent.node.id;
    let acked = state
        .blocking(move |s| {
            for r in &batch.results {
                let owned = match s.engine.owns(node_id, r) {
                    Some(owned) => owned,
                    None => s.store.issued_list(node_id, r.revision)?.is_some_and(|l| {
                        l.deployment_id == r.deployment_id
                            && l.tasks.iter().any(|t| t.id == r.task_id)
                    }),
                };
                if !owned {
                    return Err(ApiError::forbidden(format!(
                        "task {} of deployment {} revision {} was not issued to this node",
                        r.task_id, r.deployment_id, r.revision
                    )));
                }
            }
            let started = std::time::Instant::now();
            let keys = s.store.store_results(node_id, &batch.results)?;
            let published = s.engine.on_results(node_id, &batch.results);
            if published > 0 {
                tracing::info!(
                    node = node_id,
                    lists = published,
                    took_ms = started.elapsed().as_secs_f64() * 1000.0,
                    "a result moved a deployment on: next lists published"
                );
            }
            Ok(keys)
        })
        .await?;
    Ok(Json(ResultAck { acked }))
}

/// `POST /agent/v1/refusals`: an agent refused a list; operators see it in the log.
pub async fn refusal(agent: Agent, Json(r): Json<Refusal>) -> StatusCode {
    tracing::warn!(node = agent.node.id, key = %agent.node_key, reason = %r.reason, claimed_revision = ?r.claimed_revision, "agent refused a task list");
    StatusCode::NO_CONTENT
}

/// `POST /agent/v1/heartbeat`.
pub async fn heartbeat(_agent: Agent) -> StatusCode {
    StatusCode::NO_CONTENT
}

/// `GET /agent/v1/gate?deployment=&task=&nonce=&wait=`: may a gated task start? The answer is signed
/// with the list signing key and bound to the node, the deployment, the task and the request's nonce.
pub async fn gate(
    State(state): State<Arc<AppState>>,
    agent: Agent,
    Query(q): Query<GateQuery>,
) -> Result<Json<SignedEnvelope>, ApiError> {
    if !valid_nonce(&q.nonce) {
        return Err(ApiError::bad_request(
            "nonce must be 16 to 64 lowercase hex characters",
        ));
    }
    let deadline =
        tokio::time::Instant::now() + Duration::from_secs(q.wait.min(MAX_POLL_WAIT_SECS));
    loop {
        let Some((ready, blocked, waiting_for)) =
            state.engine.gate(agent.node.id, q.deployment, &q.task)
        else {
            return Err(ApiError::not_found(format!(
                "task {} of deployment {} is not running on this node",
                q.task, q.deployment
            )));
        };
        if ready || blocked || tokio::time::Instant::now() >= deadline {
            let answer = GateAnswer {
                node_key: agent.node_key.clone(),
                deployment: q.deployment,
                task: q.task,
                nonce: q.nonce,
                ready,
                blocked,
                waiting_for,
            };
            return Ok(Json(sign_gate_answer(&state.signer, &answer)));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
