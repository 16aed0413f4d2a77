//! Live deployment events for the SSE stream: every event is stored with the deployment's state and also
//! broadcast here to whoever watches.

use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::broadcast;

/// One broadcast channel per running deployment.
#[derive(Default)]
pub struct EventHub {
    channels: Mutex<HashMap<u64, broadcast::Sender<Value>>>,
}

impl EventHub {
    /// Subscribes to a deployment's live events.
    pub fn subscribe(&self, deployment_id: u64) -> broadcast::Receiver<Value> {
        let mut map = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(deployment_id)
            .or_insert_with(|| broadcast::channel(1024).0)
            .subscribe()
    }

    /// Sends events to the deployment's watchers, if any.
    pub fn send(&self, deployment_id: u64, events: &[Value]) {
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
