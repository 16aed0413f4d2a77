//! The controller as the runner's gatekeeper and the sender's result sink, with re-registration on 401.

use super::registration::Registrar;
use crate::executor::BoxFuture;
use crate::runner::Gatekeeper;
use crate::sender::ResultSink;
use crate::transport::{Controller, TransportError};
use plinth_common::wire::{GateAnswer, ResultAck, ResultsBatch};
use std::sync::Arc;
use std::time::Duration;

/// Asks the controller's gate endpoint.
pub struct ControllerGate {
    /// The controller.
    pub controller: Controller,
    /// Re-registers on 401.
    pub registrar: Arc<Registrar>,
    /// How long the controller may hold a gate request.
    pub wait: Duration,
}

impl Gatekeeper for ControllerGate {
    fn ask<'a>(
        &'a self,
        deployment: u64,
        task: &'a str,
    ) -> BoxFuture<'a, Result<GateAnswer, String>> {
        Box::pin(async move {
            self.registrar
                .call(|| self.controller.gate(deployment, task, self.wait))
                .await
                .map_err(|e| e.to_string())
        })
    }
}

/// Sends results to the controller.
pub struct ControllerSink {
    /// The controller.
    pub controller: Controller,
    /// Re-registers on 401.
    pub registrar: Arc<Registrar>,
}

impl ResultSink for ControllerSink {
    fn send<'a>(
        &'a self,
        batch: &'a ResultsBatch,
    ) -> BoxFuture<'a, Result<ResultAck, TransportError>> {
        Box::pin(async move {
            self.registrar
                .call(|| self.controller.send_results(batch))
                .await
        })
    }
}
