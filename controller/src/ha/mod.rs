//! Several controllers on one database.
//!
//! Every controller serves polls, results, heartbeats, registrations, the gate and the operator API.
//! Exactly one at a time sequences deployments: the holder of the sequencing lease, a row in the
//! database with an expiry and a fencing token (`lease.rs`). Every step the holder records checks the
//! token in its transaction, so a controller that lost the lease (paused, cut off) can record nothing
//! more; any controller takes the lease over when it expires and rebuilds the running deployments from
//! the database, as after a restart.
//!
//! The others follow through the database (`notices.rs`, PostgreSQL's `LISTEN`/`NOTIFY`): lists the
//! holder publishes wake long polls held elsewhere (`follow.rs` reads what was published since the last
//! look); results stored elsewhere are folded in by the holder; a deployment started or cancelled
//! elsewhere is taken on by the holder; a gate question asked elsewhere is forwarded to it (`peer.rs`).
//! With the embedded SQLite database one controller is alone and always sequences.

pub mod follow;
pub mod identity;
pub mod lease;
pub mod notices;
pub mod peer;

use crate::clock::now_ms;
use crate::engine::Engine;
use crate::intake::board::Board;
use crate::intake::registry::NodeRegistry;
use crate::limits::ConnectionGate;
use crate::store::{ControllerRecord, LeaseRecord, Store, StoreResult};
use plinth_api::controllers::{ClusterStatus, ControllerView, LeaseView};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long the sequencing lease lasts unless renewed.
pub const LEASE_TTL: Duration = Duration::from_secs(5);
/// How often a controller beats and renews (or tries to take) the lease.
pub const BEAT_EVERY: Duration = Duration::from_secs(1);
/// A controller silent for longer is shown as not live.
pub const LIVE_WITHIN: Duration = Duration::from_secs(5);

/// What keeping in step with the other controllers touches (the beat and the lease on their thread,
/// the notices on theirs), each part shared with the rest of the controller.
#[derive(Clone)]
pub struct Parts {
    /// This controller among the others.
    pub membership: Arc<Membership>,
    /// The database the beat, the lease and the notices go through.
    pub store: Arc<dyn Store>,
    /// The engine, which sequences while the lease is held and takes on what other controllers ask.
    pub engine: Arc<Engine>,
    /// The board a follower keeps in step with the lists published elsewhere.
    pub board: Arc<Board>,
    /// The node keys, changed by other controllers' notices.
    pub registry: Arc<NodeRegistry>,
    /// The agents' connections, counted in each beat.
    pub connections: Arc<ConnectionGate>,
}

/// This controller among the others.
pub struct Membership {
    /// Its id (kept in the data directory).
    pub id: String,
    /// Its name for operators.
    pub name: String,
    /// The URL the others reach it at.
    pub url: String,
    /// When this process started.
    pub started_ms: i64,
    /// Whether other controllers may share the database (PostgreSQL); with SQLite it is alone.
    pub shared: bool,
    /// The lease token it holds now, if it holds the lease.
    held: Mutex<Option<u64>>,
    /// When it last renewed the lease (milliseconds since the epoch).
    renewed_ms: std::sync::atomic::AtomicI64,
    /// Held for each beat, so that giving the lease up at a stop waits for a beat in flight.
    beating: Mutex<()>,
    /// Set at a clean stop: no beat after the lease was given up.
    stopping: std::sync::atomic::AtomicBool,
    /// Follows the lists other controllers publish.
    pub follower: follow::Follower,
    /// Forwards gate questions to the controller that sequences.
    pub peers: peer::Peers,
}

impl Membership {
    /// This controller: `shared` when the database is PostgreSQL.
    pub fn new(id: String, name: String, url: String, shared: bool, peers: peer::Peers) -> Self {
        Membership {
            id,
            name,
            url,
            started_ms: now_ms(),
            shared,
            held: Mutex::new(None),
            renewed_ms: std::sync::atomic::AtomicI64::new(0),
            beating: Mutex::new(()),
            stopping: std::sync::atomic::AtomicBool::new(false),
            follower: follow::Follower::default(),
            peers,
        }
    }

    /// The lease token this controller holds now, if any.
    pub fn held(&self) -> Option<u64> {
        *self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set_held(&self, token: Option<u64>) {
        *self.held.lock().unwrap_or_else(|p| p.into_inner()) = token;
    }

    /// What `GET /api/v1/cluster-status` answers.
    pub fn status(&self, store: &dyn Store, sequencing: bool) -> StoreResult<ClusterStatus> {
        let now = now_ms();
        let lease: Option<LeaseRecord> = if self.shared {
            store.lease()?
        } else {
            // Alone, it sequences: there is no lease to take.
            Some(LeaseRecord {
                holder: self.id.clone(),
                token: 0,
                expires_ms: i64::MAX,
            })
        };
        let holder = lease
            .as_ref()
            .filter(|l| l.expires_ms > now)
            .map(|l| l.holder.clone());
        let mut controllers: Vec<ControllerRecord> = store.controllers()?;
        if !controllers.iter().any(|c| c.id == self.id) {
            // Before its first beat.
            controllers.push(ControllerRecord {
                id: self.id.clone(),
                name: self.name.clone(),
                url: self.url.clone(),
                started_ms: self.started_ms,
                seen_ms: now,
                agents: 0,
            });
        }
        let live_ms = i64::try_from(LIVE_WITHIN.as_millis()).unwrap_or(i64::MAX);
        Ok(ClusterStatus {
            answered_by: self.id.clone(),
            database: if self.shared { "postgresql" } else { "sqlite" }.into(),
            lease: lease.map(|l| LeaseView {
                held: l.expires_ms > now,
                holder: l.holder,
                token: l.token,
                expires_ms: l.expires_ms,
            }),
            controllers: controllers
                .into_iter()
                .map(|c| ControllerView {
                    live: c.id == self.id || now - c.seen_ms <= live_ms,
                    sequencer: holder.as_deref() == Some(c.id.as_str())
                        && (c.id != self.id || sequencing),
                    id: c.id,
                    name: c.name,
                    url: c.url,
                    agents: c.agents,
                    started_ms: c.started_ms,
                    seen_ms: c.seen_ms,
                })
                .collect(),
        })
    }
}

/// The URL of the controller holding the sequencing lease now, if one does.
pub fn sequencer_url(store: &dyn Store) -> StoreResult<Option<String>> {
    let now = now_ms();
    let Some(lease) = store.lease()?.filter(|l| l.expires_ms > now) else {
        return Ok(None);
    };
    Ok(store
        .controllers()?
        .into_iter()
        .find(|c| c.id == lease.holder)
        .map(|c| c.url))
}

/// The URL others reach a controller at: the configured one, else `https://` and the listen address
/// (the host's name when it listens on every address).
pub fn advertised_url(configured: Option<&str>, listen: std::net::SocketAddr) -> String {
    if let Some(url) = configured {
        return url.trim_end_matches('/').to_string();
    }
    let host = if listen.ip().is_unspecified() {
        host_name().unwrap_or_else(|| "localhost".into())
    } else if listen.is_ipv6() {
        format!("[{}]", listen.ip())
    } else {
        listen.ip().to_string()
    };
    format!("https://{host}:{}", listen.port())
}

/// The host's name, if it has one.
pub fn host_name() -> Option<String> {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_advertised_url_comes_from_the_configuration_or_the_listen_address() {
        let l: std::net::SocketAddr = "10.0.0.5:8443".parse().unwrap();
        assert_eq!(advertised_url(None, l), "https://10.0.0.5:8443");
        assert_eq!(
            advertised_url(Some("https://ctl-a.example:8443/"), l),
            "https://ctl-a.example:8443"
        );
        let v6: std::net::SocketAddr = "[::1]:8443".parse().unwrap();
        assert_eq!(advertised_url(None, v6), "https://[::1]:8443");
        let any: std::net::SocketAddr = "0.0.0.0:8443".parse().unwrap();
        assert!(advertised_url(None, any).ends_with(":8443"));
    }
}
