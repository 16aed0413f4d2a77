//! `GET /metrics`: Prometheus's exposition of [`crate::metrics`], on the main listener behind an
//! operator token (read-only suffices), and without one on the listener of its own (`metrics_listen`).

use super::auth::Operator;
use super::error::ApiError;
use crate::metrics::{render, Snapshot, CONTENT_TYPE};
use crate::state::AppState;
use anyhow::{Context, Result};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use plinth_api::records::NodeStatus;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Reads what a scrape reports besides the kept metrics: two counting queries of the store.
fn snapshot(state: &AppState) -> Result<Snapshot, ApiError> {
    let counts = state.store.counts()?;
    // Statuses as the store spells them, mapped to the fixed label values (an unknown one is skipped).
    let node_status = |s: &str| {
        [
            NodeStatus::Discover,
            NodeStatus::Provisioning,
            NodeStatus::Provisioned,
            NodeStatus::Deploying,
            NodeStatus::Ready,
            NodeStatus::Error,
        ]
        .into_iter()
        .map(NodeStatus::as_str)
        .find(|known| *known == s)
    };
    let mut agents: BTreeMap<(&'static str, &'static str), u64> = BTreeMap::new();
    for (status, admission, n) in &counts.nodes {
        let admission = match admission.as_str() {
            "accepted" => "accepted",
            "discovered" => "discovered",
            _ => continue,
        };
        if let Some(status) = node_status(status) {
            *agents.entry((status, admission)).or_default() += n;
        }
    }
    let mut deployments: BTreeMap<&'static str, u64> = BTreeMap::new();
    for status in [
        plinth_common::wire::DeploymentStatus::Running,
        plinth_common::wire::DeploymentStatus::Success,
        plinth_common::wire::DeploymentStatus::SuccessWithFailures,
        plinth_common::wire::DeploymentStatus::Failed,
        plinth_common::wire::DeploymentStatus::Cancelled,
    ] {
        let stored = counts
            .deployments
            .iter()
            .filter(|(s, _)| s == status.as_str())
            .map(|(_, n)| n)
            .sum();
        deployments.insert(status.as_str(), stored);
    }
    Ok(Snapshot {
        lists_published: state.engine.published_count(),
        agents_connected: state.agents.connections.connected_keys() as u64,
        connections_untrusted: state.agents.connections.untrusted() as u64,
        lease_holder: state.engine.is_sequencing(),
        agents: agents.into_iter().collect(),
        deployments: deployments.into_iter().collect(),
        pool: state.store.pool_use(),
    })
}

async fn exposition(state: &Arc<AppState>) -> Result<Response, ApiError> {
    let snap = state.blocking(snapshot).await?;
    Ok(([(header::CONTENT_TYPE, CONTENT_TYPE)], render(&snap)).into_response())
}

/// `GET /metrics` on the main listener: an operator's token, any role.
pub async fn with_token(
    State(state): State<Arc<AppState>>,
    _operator: Operator,
) -> Result<Response, ApiError> {
    exposition(&state).await
}

/// `GET /metrics` on the metrics listener: no token.
async fn open(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    exposition(&state).await
}

/// Binds the metrics listener, warning when it is not on loopback.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener> {
    if !addr.ip().is_loopback() {
        tracing::warn!(
            metrics_listen = %addr,
            "metrics are served without a token beyond this machine: keep metrics_listen on a private network"
        );
    }
    TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} (metrics_listen)"))
}

/// Serves `/metrics` (and `/healthz`) over plain HTTP on `listener` until `close` changes.
pub async fn serve(
    state: Arc<AppState>,
    listener: TcpListener,
    mut close: tokio::sync::watch::Receiver<bool>,
) {
    let router = Router::new()
        .route("/metrics", get(open))
        .route("/healthz", get(super::probes::healthz))
        .fallback(|| async { ApiError::not_found("no such endpoint") })
        .with_state(state);
    let stop = async move {
        let _ = close.changed().await;
    };
    if let Err(e) = axum::serve(listener, router)
        .with_graceful_shutdown(stop)
        .await
    {
        tracing::error!(error = %e, "the metrics listener stopped");
    }
}
