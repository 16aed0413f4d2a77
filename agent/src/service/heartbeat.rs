//! Heartbeats: `POST /agent/v1/heartbeat` every `heartbeat_secs` (±10%), also while a long task runs.

use super::registration::Registrar;
use crate::shutdown::Shutdown;
use crate::transport::backoff::jittered;
use crate::transport::{Controller, TransportError};
use std::sync::Arc;
use std::time::Duration;

/// Sends heartbeats until stopped.
pub async fn run(
    controller: Controller,
    registrar: Arc<Registrar>,
    period: Duration,
    shutdown: Shutdown,
) {
    let mut failing = false;
    loop {
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
