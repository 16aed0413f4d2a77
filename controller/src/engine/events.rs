//! Live deployment events for the SSE stream: every event is stored with the deployment's state and also
//! broadcast here to whoever watches.

use plinth_common::wire::DeploymentEvent;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// The most watchers of one deployment's live events at once.
pub const MAX_WATCHERS_PER_DEPLOYMENT: usize = 256;

/// The most watchers of one deployment one operator token holds at once: each token its share, so
/// that no token (a read-only one, say) can take every place and shut the others out.
pub const MAX_WATCHERS_PER_TOKEN: usize = 32;

/// Why a watcher was not subscribed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscribeError {
    /// The deployment is not running here: its events are all stored.
    NotRunning,
    /// It already has [`MAX_WATCHERS_PER_DEPLOYMENT`] watchers.
    TooManyWatchers,
    /// The token already holds [`MAX_WATCHERS_PER_TOKEN`] of them.
    TooManyForToken,
}

/// Watchers held, by deployment and token.
type Held = Arc<Mutex<HashMap<(u64, String), usize>>>;

/// One watcher of a deployment's live events; its place is given back when it is dropped.
pub struct Watch {
    /// The live events.
    pub rx: broadcast::Receiver<DeploymentEvent>,
    held: Held,
    key: (u64, String),
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = held.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                held.remove(&self.key);
            }
        }
    }
}

/// One broadcast channel per running deployment, opened when it starts (or resumes) and closed when it
/// finishes: asking for a deployment that is not running makes nothing, so watchers cannot grow memory.
#[derive(Default)]
pub struct EventHub {
    channels: Mutex<HashMap<u64, broadcast::Sender<DeploymentEvent>>>,
    held: Held,
}

impl EventHub {
    /// Opens a running deployment's channel.
    pub fn open(&self, deployment_id: u64) {
        let mut map = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(deployment_id)
            .or_insert_with(|| broadcast::channel(1024).0);
    }

    /// Subscribes the operator token `token` to a running deployment's live events, within the
    /// deployment's bound and the token's share of it.
    pub fn subscribe(&self, deployment_id: u64, token: &str) -> Result<Watch, SubscribeError> {
        let map = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        let tx = map.get(&deployment_id).ok_or(SubscribeError::NotRunning)?;
        if tx.receiver_count() >= MAX_WATCHERS_PER_DEPLOYMENT {
            return Err(SubscribeError::TooManyWatchers);
        }
        let key = (deployment_id, token.to_string());
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let n = held.entry(key.clone()).or_default();
        if *n >= MAX_WATCHERS_PER_TOKEN {
            return Err(SubscribeError::TooManyForToken);
        }
        *n += 1;
        Ok(Watch {
            rx: tx.subscribe(),
            held: self.held.clone(),
            key,
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_holds_at_most_its_share_and_another_token_still_watches() {
        let hub = EventHub::default();
        hub.open(1);
        let mut reader: Vec<Watch> = (0..MAX_WATCHERS_PER_TOKEN)
            .map(|_| hub.subscribe(1, "viewer").expect("within the share"))
            .collect();
        assert_eq!(
            hub.subscribe(1, "viewer").err(),
            Some(SubscribeError::TooManyForToken),
            "one more is refused"
        );
        // The admin's stream is not shut out by the viewer's.
        let admin = hub.subscribe(1, "admin").expect("another token watches");
        // A closed stream gives its place back.
        reader.pop();
        reader.push(hub.subscribe(1, "viewer").expect("a place given back"));
        drop(admin);
        // The deployment's own bound still holds across tokens.
        let mut others = Vec::new();
        for i in 0.. {
            match hub.subscribe(1, &format!("token-{i}")) {
                Ok(w) => others.push(w),
                Err(e) => {
                    assert_eq!(e, SubscribeError::TooManyWatchers);
                    break;
                }
            }
        }
        assert_eq!(
            reader.len() + others.len(),
            MAX_WATCHERS_PER_DEPLOYMENT,
            "every place is taken"
        );
        assert_eq!(
            hub.subscribe(2, "admin").err(),
            Some(SubscribeError::NotRunning)
        );
    }
}
