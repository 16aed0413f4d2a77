//! The controller's shared state, handed to every request handler.

use crate::config::Config;
use crate::engine::Engine;
use crate::store::Store;
use ed25519_dalek::SigningKey;
use std::sync::Arc;

/// Everything a handler may need.
pub struct AppState {
    /// Effective configuration; replaced whole when SIGHUP reloads it (see [`AppState::config`]).
    pub config: std::sync::RwLock<Config>,
    /// The database.
    pub store: Arc<dyn Store>,
    /// The task list signing key.
    pub signer: SigningKey,
    /// What agents send and are sent: their connections, keys, registrations, lists and results.
    pub agents: crate::intake::AgentSide,
    /// The orchestrator.
    pub engine: Arc<Engine>,
    /// The expression engine and its parse cache.
    pub exprs: plinth_common::snapshot::Expressions,
    /// Blocking work, a few jobs at once.
    pub workers: crate::workers::Workers,
    /// This controller among others sharing the database.
    pub ha: crate::ha::Membership,
}

impl AppState {
    /// The configuration in force now.
    pub fn config(&self) -> Config {
        self.config
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Applies a reloaded configuration: admission settings, thresholds and timings take effect at once.
    pub fn set_config(&self, config: Config) {
        self.engine
            .set_timing(config.list_ttl, config.phase_timeout);
        self.engine.set_lists_per_write(config.lists_per_write);
        self.engine.set_master_node(config.master_node.clone());
        *self.config.write().unwrap_or_else(|p| p.into_inner()) = config;
    }

    /// Admits a new connection from `addr` into the untrusted pool under the bounds in force (the oldest
    /// untrusted connection makes room when the pool is full); `None` only for zero bounds.
    pub fn admit_connection(
        &self,
        addr: std::net::IpAddr,
    ) -> Option<Arc<crate::limits::ConnectionTicket>> {
        let limits = self.config().limits;
        self.agents
            .connections
            .admit(
                addr,
                limits.max_untrusted_connections,
                limits.max_connections_per_address,
            )
            .map(Arc::new)
    }
}
