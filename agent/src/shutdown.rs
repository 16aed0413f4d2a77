//! The stop signal: one trigger (pulled on SIGTERM or SIGINT) and any number of listeners (the poll loop,
//! the running task, the sender, the heartbeat).

use tokio::sync::watch;

/// Pulls the stop signal.
#[derive(Debug)]
pub struct Trigger {
    tx: watch::Sender<bool>,
}

/// Listens for the stop signal. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Shutdown {
    rx: watch::Receiver<bool>,
}

/// Makes a trigger and its listener.
pub fn channel() -> (Trigger, Shutdown) {
    let (tx, rx) = watch::channel(false);
    (Trigger { tx }, Shutdown { rx })
}

impl Trigger {
    /// Tells every listener to stop.
    pub fn trigger(&self) {
        self.tx.send_replace(true);
    }
}

impl Shutdown {
    /// True once stopping.
    pub fn is_triggered(&self) -> bool {
        *self.rx.borrow()
    }

    /// Resolves when stopping (never, if the trigger is dropped without being pulled).
    pub async fn wait(&self) {
        let mut rx = self.rx.clone();
        if rx.wait_for(|stop| *stop).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Sleeps for `duration`; returns false when woken by the stop signal instead.
    pub async fn sleep(&self, duration: std::time::Duration) -> bool {
        tokio::select! {
            _ = tokio::time::sleep(duration) => true,
            _ = self.wait() => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn trigger_wakes_sleepers() {
        let (trigger, shutdown) = channel();
        assert!(!shutdown.is_triggered());
        let s = shutdown.clone();
        let sleeper = tokio::spawn(async move { s.sleep(Duration::from_secs(60)).await });
        trigger.trigger();
        assert!(!sleeper.await.unwrap());
        assert!(shutdown.is_triggered());
        assert!(!shutdown.sleep(Duration::from_secs(60)).await);
    }
}
