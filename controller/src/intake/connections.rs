//! One client connection on the controller's listener: the TLS handshake, the client's node key (when it
//! shows one) counted against its key's limit, then HTTP/1 until the client closes, the connection is
//! closed to make room for a newer one, or the controller stops.
//!
//! What one connection holds is held once per agent: a fleet keeps a connection open per agent, most of
//! them holding a long poll (16,700 on each of six controllers at 100,000 agents). So the HTTP/1
//! connection (with the TLS session in it, about 1.8 KiB) is boxed once it exists, and the handshake's
//! future is boxed while it runs: a task is allocated at the largest of the states it may be in, and
//! without the boxes it held the handshake's TLS session, the connection and a moved copy of it side by
//! side (4.7 KiB a connection).

use super::registry::NodeRegistry;
use crate::limits::{ConnectionTicket, PeerAddr, Trust};
use crate::tls;
use axum::extract::Request;
use hyper_util::rt::TokioIo;
use plinth_common::signing::fingerprint;
use std::net::SocketAddr;
use std::sync::Arc;

/// The node key a connection authenticated with, set for every request on it (`None` when the client
/// showed no certificate).
#[derive(Debug, Clone)]
pub struct PeerKey(pub Option<Arc<(String, ed25519_dalek::VerifyingKey)>>);
use std::time::Duration;
use tokio::net::TcpStream;
use tower::ServiceExt;

/// How long a TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a request's headers may take to arrive (and how long a kept-alive connection may idle).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a connection may take to finish its request once the controller stops.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// What a connection is served with, shared by every connection of a listener.
#[derive(Clone)]
pub struct Listener {
    /// The TLS acceptor in force (replaced on reload; each connection takes the one of its time).
    pub acceptor: tokio_rustls::TlsAcceptor,
    /// The router every request goes through.
    pub router: axum::Router,
    /// The node keys, which tell how far a connection's key is trusted.
    pub registry: Arc<NodeRegistry>,
    /// Turns true when the controller stops.
    pub closing: tokio::sync::watch::Receiver<bool>,
}

/// Serves one accepted connection until it ends.
pub async fn serve(
    listener: Listener,
    tcp: TcpStream,
    peer: SocketAddr,
    ticket: Arc<ConnectionTicket>,
) {
    let Listener {
        acceptor,
        router,
        registry,
        mut closing,
    } = listener;
    // In a block: the TLS stream, once moved into the connection, must not keep a place of its own in
    // the task (a local lives in the task's state if its scope spans an await).
    let mut conn = {
        // Boxed: the handshake's future holds a TLS session of its own, needed only until it ends.
        let handshake = Box::pin(tokio::time::timeout(
            HANDSHAKE_TIMEOUT,
            acceptor.accept(tcp),
        ));
        let tls = tokio::select! {
            done = handshake => match done {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => return,
            },
            _ = ticket.evicted() => return,
        };
        let peer_key = tls
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|c| c.first())
            .and_then(tls::node_key_of)
            .map(|k| Arc::new((fingerprint(&k), k)));
        if let Some(key) = &peer_key {
            let trust = match registry.get(&key.0) {
                Some(n) if n.accepted() => Trust::Accepted,
                Some(_) => Trust::Discovered,
                None => Trust::Unknown,
            };
            if !ticket.trust_key(&key.0, trust) {
                tracing::debug!(%peer, key = %key.0, "too many connections for one node key");
                return;
            }
        }
        let peer_key = PeerKey(peer_key);
        let request_ticket = ticket.clone();
        let service = hyper::service::service_fn(move |mut req: Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(peer_key.clone());
            req.extensions_mut().insert(PeerAddr(peer));
            req.extensions_mut().insert(request_ticket.clone());
            router.clone().oneshot(req.map(axum::body::Body::new))
        });
        Box::pin(
            hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .timer(hyper_util::rt::TokioTimer::new())
                .serve_connection(TokioIo::new(tls), service),
        )
    };
    tokio::select! {
        res = conn.as_mut() => {
            if let Err(e) = res {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        }
        _ = ticket.evicted() => {
            tracing::debug!(%peer, "closed an untrusted connection to make room");
        }
        _ = closing.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(STOP_GRACE, conn).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The task a connection runs in is allocated at its largest state, for the connection's life.
    #[test]
    fn a_connections_task_holds_no_tls_session_of_its_own() {
        fn future_size<F: std::future::Future>(
            _: fn(Listener, TcpStream, SocketAddr, Arc<ConnectionTicket>) -> F,
        ) -> usize {
            std::mem::size_of::<F>()
        }
        let task = future_size(serve);
        let session = std::mem::size_of::<rustls::ServerConnection>();
        assert!(
            task < session,
            "a connection's task holds {task} bytes, a TLS session alone {session}"
        );
    }
}
