//! The agent endpoints under `/agent/v1`: register, poll, results, refusals, heartbeat, gate.

use super::auth::{secrets_equal, Agent, AgentKey};
use super::error::{ApiError, Json, Query};
use crate::clock::{now_ms, now_secs};
use crate::intake::board::Found;
use crate::limits::{ConnectionTicket, PeerAddr};
use crate::state::AppState;
use crate::store::{NewRefusal, NodeAdmission, NodeIdentity, NodeRegistration};
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use plinth_common::signing::{
    public_key_to_text, sign_gate_answer, sign_task_list, SignedEnvelope,
};
use plinth_common::wire::{
    valid_nonce, GateAnswer, GateQuery, PollQuery, Refusal, Registration, RegistrationAck,
    ResultAck, ResultsBatch, MAX_MESSAGE_BYTES, MAX_POLL_WAIT_SECS, OLDEST_AGENT_PROTOCOL,
    PRIMARY_TAG_PREFIX, PROTOCOL_VERSION,
};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// `POST /agent/v1/register`. A node's first registration records what it says (its name made unique,
/// its tags, labels and rack); later ones refresh its facts, and while it is accepted what it says of its
/// name, tags, labels and rack is kept apart as `reported` (the operator's record stands). New keys are
/// bounded: registrations per source address, and discovered nodes in all.
pub async fn register(
    State(state): State<Arc<AppState>>,
    key: AgentKey,
    addr: Option<Extension<PeerAddr>>,
    ticket: Option<Extension<Arc<ConnectionTicket>>>,
    Json(mut reg): Json<Registration>,
) -> Result<Json<RegistrationAck>, ApiError> {
    reg.check_sizes()
        .map_err(|e| ApiError::bad_request(format!("registration refused: {e}")))?;
    check_protocol(&reg)?;
    let config = state.config();
    let known = state.agents.registry.get(&key.fingerprint).is_some();
    if !known {
        if let Some(Extension(PeerAddr(addr))) = addr {
            let per_minute = config.limits.registrations_per_minute;
            if let Err(wait) =
                state
                    .agents
                    .registrations
                    .take(addr.ip(), per_minute, std::time::Instant::now())
            {
                crate::metrics::metrics().registrations_limited.inc();
                return Err(ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too_many_registrations",
                    format!(
                        "{addr} registered more than {per_minute} new nodes a minute; try again in {wait} s"
                    ),
                ));
            }
        }
    }
    let reported_primaries: Vec<String> = reg
        .tags
        .iter()
        .filter(|t| t.starts_with(PRIMARY_TAG_PREFIX))
        .cloned()
        .collect();
    if !reported_primaries.is_empty() {
        tracing::warn!(key = %key.fingerprint, tags = ?reported_primaries, "a node reported primary tags; only election gives them, so they are dropped");
        reg.tags.retain(|t| !t.starts_with(PRIMARY_TAG_PREFIX));
    }
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
    let identity = NodeIdentity {
        macs: reg.facts.physical_macs(),
        serial: reg
            .facts
            .dmi
            .product_serial
            .clone()
            .filter(|s| !s.trim().is_empty()),
        uuid: reg
            .facts
            .dmi
            .product_uuid
            .as_deref()
            .filter(|u| !u.trim().is_empty())
            .map(|u| u.trim().to_ascii_lowercase()),
        bmc_address: reg
            .facts
            .bmc_address
            .as_deref()
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_string),
    };
    let mut facts =
        serde_json::to_value(&reg.facts).map_err(|e| ApiError::bad_request(e.to_string()))?;
    // What the agent said of itself, kept with its facts (`NodeView::agent` reads it back).
    if let Some(map) = facts.as_object_mut() {
        map.insert(
            "agent".into(),
            json!({"version": reg.agent_version, "protocol": reg.protocol}),
        );
    }
    let record = NodeRegistration {
        node_key: key.fingerprint.clone(),
        public_key: public_key_to_text(&key.key),
        name,
        facts,
        tags: reg.tags,
        labels: reg.labels,
        rack: reg.rack,
        now_ms: now_ms(),
        max_discovered: config.limits.max_discovered_nodes,
        identity,
    };
    let node = state
        .agents
        .enrol
        .submit(record, admission, token_ok)
        .await?;
    if let Some(Extension(ticket)) = ticket {
        ticket.trust();
    }
    tracing::info!(node = node.id, key = %node.node_key, admission = ?node.admission, "node registered");
    Ok(Json(RegistrationAck {
        node_id: node.id,
        node_key: node.node_key,
        admission: node.admission,
        revision: node.revision,
        controller_version: env!("CARGO_PKG_VERSION").to_string(),
        protocol: PROTOCOL_VERSION,
    }))
}

/// An agent of a protocol this controller does not serve is refused (426) saying which side to
/// upgrade: this controller serves [`OLDEST_AGENT_PROTOCOL`] to [`PROTOCOL_VERSION`].
fn check_protocol(reg: &Registration) -> Result<(), ApiError> {
    let version = env!("CARGO_PKG_VERSION");
    let why = if reg.protocol < OLDEST_AGENT_PROTOCOL {
        format!(
            "agent {} speaks protocol {}; this controller ({version}) serves protocols \
             {OLDEST_AGENT_PROTOCOL} to {PROTOCOL_VERSION}: upgrade the agent to {version}",
            reg.agent_version, reg.protocol
        )
    } else if reg.protocol > PROTOCOL_VERSION {
        format!(
            "agent {} speaks protocol {}, newer than this controller's ({version}, protocol \
             {PROTOCOL_VERSION}): upgrade the controller to {} or later",
            reg.agent_version, reg.protocol, reg.agent_version
        )
    } else {
        return Ok(());
    };
    Err(ApiError::new(
        StatusCode::UPGRADE_REQUIRED,
        "protocol_unsupported",
        why,
    ))
}

/// `GET /agent/v1/tasks?nonce=&after=&wait=`: the node's next signed list, or 204 after `wait` seconds.
pub async fn poll(
    State(state): State<Arc<AppState>>,
    agent: Agent,
    Query(q): Query<PollQuery>,
) -> Result<Response, ApiError> {
    let (node_key, nonce) = (agent.node_key.clone(), q.nonce.clone());
    let mut response = poll_answer(state.clone(), agent, q).await?;
    key_headers(&state.keys.now(), &node_key, &nonce, response.headers_mut());
    Ok(response)
}

/// What every answer to a poll says about the controller's keys: the key that signs its lists and,
/// while a rotation is announced, the signed announcement of the next key (see
/// [`plinth_common::wire::KeyAnnouncement`]).
fn key_headers(
    keys: &crate::keys::Keys,
    node_key: &str,
    nonce: &str,
    headers: &mut axum::http::HeaderMap,
) {
    use axum::http::HeaderValue;
    use plinth_common::wire::{KEY_ANNOUNCEMENT_HEADER, SIGNING_KEY_HEADER};
    if let Ok(value) = HeaderValue::from_str(&keys.signer_fingerprint()) {
        headers.insert(SIGNING_KEY_HEADER, value);
    }
    if let Some(announcement) = keys.announcement(node_key, nonce) {
        if let Ok(value) = HeaderValue::from_str(&announcement) {
            headers.insert(KEY_ANNOUNCEMENT_HEADER, value);
        }
    }
}

async fn poll_answer(
    state: Arc<AppState>,
    agent: Agent,
    q: PollQuery,
) -> Result<Response, ApiError> {
    if !valid_nonce(&q.nonce) {
        return Err(ApiError::bad_request(
            "nonce must be 16 to 64 lowercase hex characters",
        ));
    }
    // `after` only chooses what to answer: revisions are the controller's alone, and nothing a node
    // sends moves them.
    let wait = Duration::from_secs(q.wait.min(MAX_POLL_WAIT_SECS));
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let found = if agent.node.accepted() {
            state.agents.board.newer_than(agent.node.id, q.after)
        } else {
            Found::Wait(state.agents.board.watch(agent.node.id))
        };
        match found {
            Found::Noted(revision) => {
                // Published while this node was not attached here: read it once, then it is.
                let node_id = agent.node.id;
                let list = state
                    .blocking(move |s| Ok(s.store.issued_list(node_id, revision)?))
                    .await?;
                match list {
                    Some(list) => state.agents.board.fill(Arc::new(list)),
                    None => state.agents.board.forget_noted(node_id, revision),
                }
            }
            Found::List(list) => {
                let mut list = (*list).clone();
                let now = now_secs();
                list.nonce = q.nonce;
                list.issued_at = now;
                list.expires_at = now + state.engine.list_ttl_secs();
                let signed = sign_task_list(&state.keys.now().signer, &list);
                agent.node.seen(now_ms());
                crate::metrics::metrics().poll(q.wait > 0, true);
                return Ok(Json(signed).into_response());
            }
            Found::Wait(mut rx) => {
                let woke = tokio::time::timeout_at(deadline, rx.changed()).await;
                if !matches!(woke, Ok(Ok(()))) {
                    agent.node.seen(now_ms());
                    crate::metrics::metrics().poll(q.wait > 0, false);
                    return Ok(StatusCode::NO_CONTENT.into_response());
                }
            }
        }
    }
}

/// `POST /agent/v1/results`: judges each result on its own (accepted, duplicate, or refused with the
/// reason), stores the accepted ones durably before answering, and moves deployments on. One bad result
/// never holds back the others: the agent settles refused ones and goes on.
pub async fn results(
    State(state): State<Arc<AppState>>,
    agent: Agent,
    Json(batch): Json<ResultsBatch>,
) -> Result<Json<ResultAck>, ApiError> {
    let verdicts = state
        .agents
        .results
        .submit(agent.node.id, agent.node.accepted(), batch)
        .await?;
    for v in &verdicts {
        crate::metrics::metrics().verdict(v.verdict);
    }
    Ok(Json(ResultAck { verdicts }))
}

/// `POST /agent/v1/refusals`: an agent refused a list. The refusal is recorded on the node and in the
/// events (and so the report) of the deployment whose list the node holds now.
pub async fn refusal(
    State(state): State<Arc<AppState>>,
    agent: Agent,
    Json(r): Json<Refusal>,
) -> Result<StatusCode, ApiError> {
    tracing::warn!(
        node = agent.node.id,
        key = %agent.node_key,
        reason = %r.reason.escape_debug(),
        claimed_revision = ?r.claimed_revision,
        "agent refused a task list"
    );
    crate::metrics::metrics().refusal("list");
    let node_id = agent.node.id;
    let deployment_id = state.agents.board.current(node_id).map(|l| l.deployment_id);
    let mut reason = r.reason;
    if reason.len() > MAX_MESSAGE_BYTES {
        let mut end = MAX_MESSAGE_BYTES;
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        reason.truncate(end);
    }
    let row = NewRefusal {
        kind: "list".into(),
        deployment_id,
        reason,
        detail: json!({"claimed_revision": r.claimed_revision}),
        at_ms: now_ms(),
    };
    state
        .blocking(move |s| {
            s.store
                .record_refusals(node_id, std::slice::from_ref(&row))?;
            let (store, engine, rows) = (s.store.as_ref(), &s.engine, std::slice::from_ref(&row));
            crate::intake::judge::note_refusal_events(store, engine, node_id, rows);
            Ok(())
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /agent/v1/heartbeat`.
pub async fn heartbeat(_agent: Agent) -> StatusCode {
    StatusCode::NO_CONTENT
}

/// `GET /agent/v1/gate?deployment=&task=&nonce=&wait=`: may a gated task start? The answer is signed
/// with the list signing key and bound to the node, the deployment, the task and the request's nonce.
/// At a controller that does not sequence, the question goes to the one that does, whose signed
/// answer is passed on unchanged.
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
    // While the sequencing lease changes hands, no controller may answer for a while: this one holds
    // the question (asking again each second, and answering itself once it sequences) rather than
    // answering 503, which agents take as a reason to leave for another controller.
    loop {
        if state.engine.is_sequencing() {
            let mut q = q;
            q.wait = deadline
                .saturating_duration_since(tokio::time::Instant::now())
                .as_secs();
            return answer_gate(&state, agent.node.id, agent.node_key.clone(), q).await;
        }
        let why = match forward_gate(&state, &agent, &q).await {
            Ok(answer) => return Ok(answer),
            Err(Forward::Answer(e)) => return Err(e),
            Err(Forward::Unavailable(why)) => why,
        };
        if tokio::time::Instant::now() + HANDOVER_RETRY >= deadline {
            return Ok(not_yet(
                &state,
                &agent.node_key,
                q,
                format!("the sequencing controller ({why}); asking again"),
            ));
        }
        tokio::time::sleep(HANDOVER_RETRY).await;
    }
}

/// How long a controller that is taking a deployment on waits before looking at it again.
const TAKING_ON_RETRY: Duration = Duration::from_millis(250);

/// How long a controller waits before asking the sequencer again while the lease changes hands.
const HANDOVER_RETRY: Duration = Duration::from_secs(1);

/// A signed gate answer saying the task may not start yet, and why (the agent asks again).
fn not_yet(state: &AppState, node_key: &str, q: GateQuery, why: String) -> Json<SignedEnvelope> {
    Json(sign_gate_answer(
        &state.keys.now().signer,
        &GateAnswer {
            node_key: node_key.to_string(),
            deployment: q.deployment,
            task: q.task,
            nonce: q.nonce,
            ready: false,
            blocked: false,
            waiting_for: vec![why],
        },
    ))
}

/// Why a forwarded gate question got no answer.
enum Forward {
    /// An answer to pass on as it is (the task is not running, say).
    Answer(ApiError),
    /// No controller sequences now, or the one that does cannot be reached: worth asking again.
    Unavailable(String),
}

/// Asks the sequencing controller the agent's gate question.
async fn forward_gate(
    state: &Arc<AppState>,
    agent: &Agent,
    q: &GateQuery,
) -> Result<Json<SignedEnvelope>, Forward> {
    let holder = state
        .blocking(|s| Ok(crate::ha::sequencer_url(s.store.as_ref())?))
        .await
        .map_err(|e| Forward::Unavailable(e.message))?
        .ok_or_else(|| {
            Forward::Unavailable(
                "no controller sequences right now: one takes over within seconds".into(),
            )
        })?;
    let wait = q.wait.min(MAX_POLL_WAIT_SECS);
    let path = format!(
        "/internal/v1/gate?{}",
        query_text(&[
            ("node_key", agent.node_key.as_str()),
            ("deployment", &q.deployment.to_string()),
            ("task", &q.task),
            ("nonce", &q.nonce),
            ("wait", &wait.to_string()),
        ])
    );
    let answer = state
        .ha
        .peers
        .gate(
            &state.keys.signer(),
            &holder,
            &path,
            Duration::from_secs(wait),
        )
        .await
        .map_err(|e| match e {
            crate::ha::peer::PeerError::Refused { status: 404, body } => {
                Forward::Answer(ApiError::not_found(body))
            }
            other => Forward::Unavailable(format!("{holder}: {other}")),
        })?;
    Ok(Json(answer))
}

/// Query text from pairs, each value percent-encoded.
fn query_text(pairs: &[(&str, &str)]) -> String {
    // A constant, valid URL: parsing it cannot fail.
    let mut url = reqwest::Url::parse("https://peer/").expect("a constant URL parses");
    url.query_pairs_mut().extend_pairs(pairs);
    url.query().unwrap_or_default().to_string()
}

/// `GET /internal/v1/gate?node_key=&deployment=&task=&nonce=&wait=`: another controller asks the gate
/// question of one of its agents (the request signed with the shared key, see
/// [`crate::ha::peer`]).
pub async fn peer_gate(
    State(state): State<Arc<AppState>>,
    axum::extract::OriginalUri(uri): axum::extract::OriginalUri,
    headers: axum::http::HeaderMap,
    Query(q): Query<PeerGateQuery>,
) -> Result<Json<SignedEnvelope>, ApiError> {
    // The whole path as sent (the nested router's `Uri` would lack its prefix): it is what was signed.
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or_default();
    let header = headers
        .get(crate::ha::peer::PEER_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !crate::ha::peer::peer_header_valid(&state.keys.now().verifiers(), header, path, now_ms()) {
        return Err(ApiError::unauthorized(
            "only a controller holding the signing key may ask this",
        ));
    }
    if !state.engine.is_sequencing() {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not_sequencing",
            "this controller does not sequence deployments (the lease passed on); ask again",
        ));
    }
    let node =
        state.agents.registry.get(&q.node_key).ok_or_else(|| {
            ApiError::not_found(format!("node key {} is not registered", q.node_key))
        })?;
    answer_gate(
        &state,
        node.id,
        q.node_key,
        GateQuery {
            deployment: q.deployment,
            task: q.task,
            nonce: q.nonce,
            wait: q.wait,
        },
    )
    .await
}

/// A gate question forwarded by another controller.
#[derive(Debug, serde::Deserialize)]
pub struct PeerGateQuery {
    /// The asking agent's node key fingerprint.
    pub node_key: String,
    /// The deployment.
    pub deployment: u64,
    /// The task.
    pub task: String,
    /// The agent's nonce.
    pub nonce: String,
    /// How long to wait for a change, in seconds.
    #[serde(default)]
    pub wait: u64,
}

/// Answers a gate question here (this controller sequences), waiting up to the query's `wait` for the
/// answer to become ready or blocked.
async fn answer_gate(
    state: &Arc<AppState>,
    node_id: u64,
    node_key: String,
    q: GateQuery,
) -> Result<Json<SignedEnvelope>, ApiError> {
    let deadline =
        tokio::time::Instant::now() + Duration::from_secs(q.wait.min(MAX_POLL_WAIT_SECS));
    let mut changes = None;
    loop {
        // Subscribed before each look, so no change between the look and the wait is missed (and again
        // after the deployment was rebuilt from the database, which gives it a new watch).
        if changes.is_none() {
            changes = state.engine.gate_watch(q.deployment);
        }
        if let Some(changes) = changes.as_mut() {
            changes.borrow_and_update();
        }
        let Some((ready, blocked, waiting_for)) = state.engine.gate(node_id, q.deployment, &q.task)
        else {
            // Running in the database but not yet here: this controller has just taken the
            // sequencing over and is taking the deployment on (within a tick). Not a 404.
            let id = q.deployment;
            let taking_on = !state.engine.is_running(id)
                && state
                    .blocking(move |s| {
                        Ok(s.store.get_deployment(id).is_ok_and(|d| {
                            d.status == plinth_common::wire::DeploymentStatus::Running
                        }))
                    })
                    .await
                    .unwrap_or(false);
            if !taking_on {
                return Err(ApiError::not_found(format!(
                    "task {} of deployment {} is not running on this node",
                    q.task, q.deployment
                )));
            }
            if tokio::time::Instant::now() + TAKING_ON_RETRY >= deadline {
                let why = format!("deployment {id} is being taken on by this controller");
                return Ok(not_yet(state, &node_key, q, why));
            }
            tokio::time::sleep(TAKING_ON_RETRY).await;
            continue;
        };
        if ready || blocked || tokio::time::Instant::now() >= deadline {
            let answer = GateAnswer {
                node_key,
                deployment: q.deployment,
                task: q.task,
                nonce: q.nonce,
                ready,
                blocked,
                waiting_for,
            };
            return Ok(Json(sign_gate_answer(&state.keys.now().signer, &answer)));
        }
        // Wait until the deployment's wait state changes (a task finished, a node settled, a phase began,
        // it ended) or the request's time is up.
        let Some(rx) = changes.as_mut() else {
            // It stopped running between the subscription and the look: the next look answers that.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        tokio::select! {
            changed = rx.changed() => {
                if changed.is_err() {
                    // The deployment was let go (it finished): the next look says so.
                    changes = None;
                }
            }
            _ = tokio::time::sleep_until(deadline) => {}
        }
    }
}
