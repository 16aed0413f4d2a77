//! The opt-in plain-HTTP listener (`nailgun_listen`) that serves Nailgun's operator API to `fuel2`.
//! It never serves the agent API: agents authenticate by their TLS client certificate, which a plain
//! connection cannot carry. Its connections count in the same untrusted pool as the TLS port's until
//! they authenticate as an operator.

use crate::intake::connections::PeerKey;
use crate::limits::PeerAddr;
use crate::state::AppState;
use anyhow::{Context, Result};
use axum::extract::Request;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tower::ServiceExt;

/// How long a request's headers may take to arrive (and how long a kept-alive connection may idle).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether an address is reachable from this machine only.
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// Binds `addr`, warning when it is not on loopback (Fuel kept Nailgun behind a local proxy).
pub async fn bind(addr: SocketAddr) -> Result<TcpListener> {
    if !is_loopback(&addr) {
        tracing::warn!(
            nailgun_listen = %addr,
            "the Nailgun API listens on plain HTTP beyond this machine: tokens cross the network \
             unencrypted; keep it on loopback behind a TLS proxy"
        );
    }
    TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} (nailgun_listen)"))
}

/// Serves Nailgun's API on `listener` until `close` changes.
pub async fn serve(
    state: Arc<AppState>,
    listener: TcpListener,
    mut close: tokio::sync::watch::Receiver<bool>,
) {
    let router = super::router(state.clone());
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = close.changed() => return,
        };
        let (tcp, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed (nailgun_listen)");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        // Every connection starts untrusted; the oldest untrusted one makes room when the pool is full.
        let Some(ticket) = state.admit_connection(peer.ip()) else {
            continue;
        };
        let router = router.clone();
        let mut close_rx = close.clone();
        tokio::spawn(async move {
            let request_ticket = ticket.clone();
            let service =
                hyper::service::service_fn(move |mut req: Request<hyper::body::Incoming>| {
                    req.extensions_mut().insert(PeerKey(None));
                    req.extensions_mut().insert(PeerAddr(peer));
                    req.extensions_mut().insert(request_ticket.clone());
                    router.clone().oneshot(req.map(axum::body::Body::new))
                });
            let conn = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .timer(hyper_util::rt::TokioTimer::new())
                .serve_connection(TokioIo::new(tcp), service);
            tokio::pin!(conn);
            tokio::select! {
                res = conn.as_mut() => {
                    if let Err(e) = res {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                }
                _ = ticket.evicted() => {}
                _ = close_rx.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_count_as_local() {
        assert!(is_loopback(&"127.0.0.1:8000".parse().unwrap()));
        assert!(is_loopback(&"[::1]:8000".parse().unwrap()));
        assert!(!is_loopback(&"0.0.0.0:8000".parse().unwrap()));
        assert!(!is_loopback(&"10.20.0.2:8000".parse().unwrap()));
    }
}
