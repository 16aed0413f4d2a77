//! systemd integration: readiness, status lines, reloading, stopping and the watchdog. Every call is harmless when
//! the agent does not run under systemd (no `NOTIFY_SOCKET`).

use crate::shutdown::Shutdown;
use sd_notify::NotifyState;
use std::time::Duration;

/// Tells systemd how the agent is doing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Systemd {
    watchdog: Option<Duration>,
}

impl Systemd {
    /// Reads `WATCHDOG_USEC` (and `WATCHDOG_PID`) from the environment.
    pub fn from_env() -> Systemd {
        let mut usec = 0u64;
        let watchdog = sd_notify::watchdog_enabled(false, &mut usec)
            .then(|| Duration::from_micros(usec))
            .filter(|d| !d.is_zero());
        Systemd { watchdog }
    }

    /// `READY=1` with a status line.
    pub fn ready(&self, status: &str) {
        notify(&[NotifyState::Ready, NotifyState::Status(status)]);
    }

    /// A `STATUS=` line.
    pub fn status(&self, status: &str) {
        notify(&[NotifyState::Status(status)]);
    }

    /// `RELOADING=1` with the monotonic time systemd asks for.
    pub fn reloading(&self) {
        match NotifyState::monotonic_usec_now() {
            Ok(now) => notify(&[
                NotifyState::Reloading,
                now,
                NotifyState::Status("reloading"),
            ]),
            Err(_) => notify(&[NotifyState::Reloading, NotifyState::Status("reloading")]),
        }
    }

    /// `STOPPING=1`.
    pub fn stopping(&self) {
        notify(&[NotifyState::Stopping, NotifyState::Status("stopping")]);
    }

    /// Pings the watchdog at half its interval until stopped (returns at once when there is none).
    pub async fn watchdog(self, shutdown: Shutdown) {
        let Some(interval) = self.watchdog else {
            return;
        };
        loop {
            notify(&[NotifyState::Watchdog]);
            if !shutdown.sleep(interval / 2).await {
                return;
            }
        }
    }
}

fn notify(states: &[NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(false, states) {
        tracing::debug!(error = %e, "cannot notify systemd");
    }
}
