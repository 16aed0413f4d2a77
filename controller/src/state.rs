//! The controller's shared state, handed to every request handler. Only the HTTP layer (`api`) and the
//! server's wiring (`server`) hold it whole: the modules below them are given the parts they use.

use crate::config::{Config, LiveConfig};
use crate::engine::Engine;
use crate::store::Store;
use std::sync::Arc;

/// Everything a handler may need.
pub struct AppState {
    /// Effective configuration; replaced whole when SIGHUP reloads it (see [`AppState::set_config`]).
    pub config: Arc<LiveConfig>,
    /// The database.
    pub store: Arc<dyn Store>,
    /// The signing keys in force (lists, gate answers, tokens, other controllers' requests) and
    /// their rotation.
    pub keys: Arc<crate::keys::KeyRing>,
    /// What agents send and are sent: their connections, keys, registrations, lists and results.
    pub agents: crate::intake::AgentSide,
    /// The orchestrator.
    pub engine: Arc<Engine>,
    /// The expression engine and its parse cache.
    pub exprs: plinth_common::snapshot::Expressions,
    /// Blocking work, a few jobs at once.
    pub workers: crate::workers::Workers,
    /// This controller among others sharing the database.
    pub ha: Arc<crate::ha::Membership>,
}

impl AppState {
    /// The configuration in force now.
    pub fn config(&self) -> Config {
        self.config.get()
    }

    /// Applies a reloaded configuration: admission settings, thresholds and timings take effect at once.
    pub fn set_config(&self, config: Config) {
        self.engine
            .set_timing(config.list_ttl, config.phase_timeout);
        self.engine.set_lists_per_write(config.lists_per_write);
        self.engine.set_master_node(config.master_node.clone());
        self.config.set(config);
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

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// Where the whole state may be named: the HTTP layer and the server's wiring.
    fn may_name_the_state(relative: &Path) -> bool {
        relative.starts_with("api")
            || ["server.rs", "state.rs", "main.rs", "lib.rs"]
                .iter()
                .any(|top| relative == Path::new(top))
    }

    fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }

    /// The modules below the HTTP layer are given the parts of the controller they use, so that a
    /// signature tells what a function touches: none of them names the whole state.
    #[test]
    fn only_the_api_and_the_servers_wiring_name_the_whole_state() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        assert!(
            files.len() > 20,
            "found only {} files under {}",
            files.len(),
            src.display()
        );
        let name = "AppState";
        let mut found = Vec::new();
        for path in files {
            let relative = path.strip_prefix(&src).unwrap();
            if may_name_the_state(relative) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, line) in text.lines().enumerate() {
                if line.contains(name) {
                    found.push(format!(
                        "controller/src/{}:{}: {}",
                        relative.display(),
                        i + 1,
                        line.trim()
                    ));
                }
            }
        }
        assert!(
            found.is_empty(),
            "only api/, server.rs and state.rs may name {name}; give these the parts they use:\n{}",
            found.join("\n")
        );
    }
}
