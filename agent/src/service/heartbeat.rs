//! Heartbeats: `POST /agent/v1/heartbeat` every `heartbeat_secs` (±10%), also while a long task runs.

use super::registration::Registrar;
use crate::config::Settings;
use crate::shutdown::Shutdown;
use crate::transport::backoff::jittered;
use crate::transport::{Controller, TransportError};
use std::sync::Arc;
use tokio::sync::watch;

/// Sends heartbeats until stopped, every `heartbeat` of the current settings.
pub async fn run(
    controller: Controller,
    registrar: Arc<Registrar>,
    settings: watch::Receiver<Settings>,
    shutdown: Shutdown,
) {
    let mut failing = false;
    loop {
        let period = settings.borrow().heartbeat;
        if !shutdown.sleep(jittered(period)).await {
            return;
        }
        match registrar.call(|| controller.heartbeat()).await {
            Ok(()) => {
                if failing {
                    tracing::info!("heartbeats reach the controller again");
                }
                failing = false;
            }
            Err(TransportError::Unauthorized) => {}
            Err(e) => {
                if !failing {
                    tracing::warn!(error = %e, "heartbeat failed");
                }
                failing = true;
            }
        }
    }
}
