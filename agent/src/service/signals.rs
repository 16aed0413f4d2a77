//! SIGTERM and SIGINT pull the stop trigger: the running task's process group is stopped and journaled
//! as interrupted, and the agent exits 0.

use crate::shutdown::Trigger;
use tokio::signal::unix::{signal, SignalKind};

/// Waits for SIGTERM or SIGINT and pulls the trigger. Returns an error when the handlers cannot be set.
pub fn install(trigger: Trigger) -> std::io::Result<tokio::task::JoinHandle<()>> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(tokio::spawn(async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        tracing::info!(signal = name, "stopping");
        trigger.trigger();
        // Keep the handlers installed so a second signal does not kill the agent mid-cleanup.
        loop {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            tracing::info!("already stopping");
        }
    }))
}
