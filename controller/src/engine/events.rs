//! Live deployment events for the SSE stream: every event is stored with the deployment's state and also
//! broadcast here to whoever watches.

use plinth_common::wire::DeploymentEvent;
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::broadcast;

/// The most watchers of one deployment's live events at once.
pub const MAX_WATCHERS_PER_DEPLOYMENT: usize = 256;

/// Why a watcher was not subscribed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscribeError {
    /// The deployment is not running here: its events are all stored.
    NotRunning,
    /// It already has [`MAX_WATCHERS_PER_DEPLOYMENT`] watchers.
    TooManyWatchers,
}

/// One broadcast channel per running deployment, opened when it starts (or resumes) and closed when it
/// finishes: asking for a deployment that is not running makes nothing, so watchers cannot grow memory.
#[derive(Default)]
pub struct EventHub {
    channels: Mutex<HashMap<u64, broadcast::Sender<DeploymentEvent>>>,
}

impl EventHub {
    /// Opens a running deployment's channel.
    pub fn open(&self, deployment_id: u64) {
        let mut map = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(deployment_id)
            .or_insert_with(|| broadcast::channel(1024).0);
    }

    /// Subscribes to a running deployment's live events.
    pub fn subscribe(
        &self,
        deployment_id: u64,
    ) -> Result<broadcast::Receiver<DeploymentEvent>, SubscribeError> {
        let map = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        let tx = map.get(&deployment_id).ok_or(SubscribeError::NotRunning)?;
        if tx.receiver_count() >= MAX_WATCHERS_PER_DEPLOYMENT {
            return Err(SubscribeError::TooManyWatchers);
        }
        Ok(tx.subscribe())
    }

    /// How many channels are open (one per running deployment).
    pub fn open_channels(&self) -> usize {
        self.channels
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }

    /// Sends events to the deployment's watchers, if any.
    pub fn send(&self, deployment_id: u64, events: &[DeploymentEvent]) {
        let map = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = map.get(&deployment_id) {
            for e in events {
                let _ = tx.send(e.clone());
            }
        }
    }

    /// Drops a finished deployment's channel (its watchers see the stream end).
    pub fn close(&self, deployment_id: u64) {
        self.channels
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&deployment_id);
    }
}
