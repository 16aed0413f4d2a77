//! Signals: SIGTERM and SIGINT pull the stop trigger (the running task's process group is stopped and
//! journaled as interrupted, and the agent exits 0); SIGHUP asks for the configuration to be reloaded.

use crate::shutdown::Trigger;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

/// Reload requests (SIGHUP); several signals while one reload runs make one more reload.
pub type ReloadRequests = mpsc::Receiver<()>;

/// Installs the handlers: SIGTERM/SIGINT pull `trigger`, SIGHUP sends a reload request. Returns an error
/// when the handlers cannot be set.
pub fn install(trigger: Trigger) -> std::io::Result<ReloadRequests> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    let (reload_tx, reload_rx) = mpsc::channel(1);
    tokio::spawn(async move {
        let mut stopping = false;
        loop {
            let name = tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = int.recv() => "SIGINT",
                _ = hup.recv() => {
                    if stopping {
                        continue;
                    }
                    tracing::info!(signal = "SIGHUP", "reloading the configuration");
                    // A full channel means a reload is already waiting: nothing is lost.
                    let _ = reload_tx.try_send(());
                    continue;
                }
            };
            // Handlers stay installed so a second signal does not kill the agent mid-cleanup.
            if stopping {
                tracing::info!(signal = name, "already stopping");
            } else {
                tracing::info!(signal = name, "stopping");
                trigger.trigger();
                stopping = true;
            }
        }
    });
    Ok(reload_rx)
}
