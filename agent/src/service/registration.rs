//! Registration: the agent registers at start, and again whenever an endpoint answers 401 (the
//! controller forgot the node). Concurrent 401s from the poll loop, the sender and the heartbeat lead to
//! one registration, not three.

use crate::transport::{Controller, TransportError};
use plinth_common::wire::{Admission, Registration, RegistrationAck, PROTOCOL_VERSION};
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::Mutex;

/// Registers the node and re-registers it on demand.
#[derive(Debug)]
pub struct Registrar {
    controller: Controller,
    registration: std::sync::Mutex<Registration>,
    lock: Mutex<()>,
    epoch: AtomicU64,
}

impl Registrar {
    /// A registrar that sends `registration`.
    pub fn new(controller: Controller, registration: Registration) -> Registrar {
        Registrar {
            controller,
            registration: std::sync::Mutex::new(registration),
            lock: Mutex::new(()),
            epoch: AtomicU64::new(0),
        }
    }

    /// How many registrations succeeded so far; callers note it before a request so that a 401 leads to
    /// one registration however many requests saw it.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// Replaces what registrations send (after a configuration reload); the next registration sends it.
    pub fn replace(&self, registration: Registration) {
        *self.registration.lock().unwrap_or_else(|p| p.into_inner()) = registration;
    }

    /// Registers now.
    pub async fn register(&self) -> Result<RegistrationAck, TransportError> {
        let _guard = self.lock.lock().await;
        self.send().await
    }

    /// Registers again unless a registration succeeded since `seen` was read.
    pub async fn reregister_after(&self, seen: u64) -> Result<(), TransportError> {
        let _guard = self.lock.lock().await;
        if self.epoch() > seen {
            return Ok(());
        }
        tracing::info!("the controller does not know this node; registering again");
        self.send().await.map(|_| ())
    }

    async fn send(&self) -> Result<RegistrationAck, TransportError> {
        let registration = self
            .registration
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let ack = self.controller.register(&registration).await?;
        self.epoch.fetch_add(1, Ordering::SeqCst);
        match ack.admission {
            Admission::Accepted => tracing::info!(
                node_id = ack.node_id,
                node_key = %ack.node_key,
                revision = ack.revision,
                controller_version = %ack.controller_version,
                "registered; admitted"
            ),
            Admission::Discovered => tracing::info!(
                node_id = ack.node_id,
                node_key = %ack.node_key,
                controller_version = %ack.controller_version,
                "registered; discovered, waiting for an operator, token or policy to admit this node"
            ),
        }
        if ack.protocol > PROTOCOL_VERSION {
            tracing::warn!(
                controller_version = %ack.controller_version,
                controller_protocol = ack.protocol,
                agent_protocol = PROTOCOL_VERSION,
                "the controller speaks a newer protocol: upgrade this agent to its version (a controller \
                 serves agents one protocol behind it, not two)"
            );
        }
        Ok(ack)
    }

    /// Runs a request; on 401 registers again (once) and returns the 401 so the caller retries.
    pub async fn call<T, F, Fut>(&self, request: F) -> Result<T, TransportError>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<T, TransportError>>,
    {
        let seen = self.epoch();
        match request().await {
            Err(TransportError::Unauthorized) => {
                if let Err(e) = self.reregister_after(seen).await {
                    tracing::warn!(error = %e, "registration failed");
                }
                Err(TransportError::Unauthorized)
            }
            other => other,
        }
    }
}
