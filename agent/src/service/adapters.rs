//! The controller as the runner's gatekeeper, the sender's result sink and the executors' file source,
//! with re-registration on 401.

use super::registration::Registrar;
use crate::executor::services::{FileSourceError, Manifest, Pulled};
use crate::executor::{BoxFuture, FileSource};
use crate::runner::Gatekeeper;
use crate::sender::ResultSink;
use crate::transport::{fresh_nonce, Controller, TransportError};
use crate::verify::Verifier;
use plinth_common::wire::{GateAnswer, ResultAck, ResultsBatch};
use std::sync::Arc;
use std::time::Duration;

/// Asks the controller's gate endpoint, with a fresh nonce each time, and believes only answers signed
/// with the pinned key for this node, this task and that nonce.
pub struct ControllerGate<'a> {
    /// The controller.
    pub controller: Controller,
    /// Re-registers on 401.
    pub registrar: Arc<Registrar>,
    /// How long the controller may hold a gate request.
    pub wait: Duration,
    /// Checks the answers' signatures and bindings.
    pub verifier: &'a Verifier,
}

impl Gatekeeper for ControllerGate<'_> {
    fn ask<'a>(
        &'a self,
        deployment: u64,
        task: &'a str,
    ) -> BoxFuture<'a, Result<GateAnswer, String>> {
        Box::pin(async move {
            let nonce = fresh_nonce().map_err(|e| e.to_string())?;
            let envelope = self
                .registrar
                .call(|| self.controller.gate(deployment, task, &nonce, self.wait))
                .await
                .map_err(|e| e.to_string())?;
            self.verifier
                .verify_gate(&envelope, deployment, task, &nonce)
                .map_err(|e| {
                    tracing::warn!(task, deployment, error = %e, "refused a gate answer; the task does not start on it");
                    format!("refused the gate answer: {e}")
                })
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

/// Pulls the controller's files for `copy_files` and `sync`.
pub struct ControllerFiles {
    /// The controller.
    pub controller: Controller,
    /// Re-registers on 401.
    pub registrar: Arc<Registrar>,
}

impl FileSource for ControllerFiles {
    fn manifest<'a>(&'a self, path: &'a str) -> BoxFuture<'a, Result<Manifest, FileSourceError>> {
        Box::pin(async move {
            self.registrar
                .call(|| self.controller.file_manifest(path))
                .await
                .map_err(|e| file_error(path, e))
        })
    }

    fn pull<'a>(
        &'a self,
        path: &'a str,
        max_size: u64,
        into: &'a mut tokio::fs::File,
    ) -> BoxFuture<'a, Result<Pulled, FileSourceError>> {
        Box::pin(async move {
            // No re-registration retry here: the body may be half written; the task's retry policy
            // starts over with a fresh file.
            self.controller
                .pull_file(path, max_size, into)
                .await
                .map_err(|e| file_error(path, e))
        })
    }
}

fn file_error(path: &str, e: TransportError) -> FileSourceError {
    match e {
        TransportError::Api { status: 404, .. } => FileSourceError::NotFound(path.to_string()),
        TransportError::TooLarge { limit, .. } => FileSourceError::Failed(format!(
            "{path}: the controller sent more than the {limit} bytes the signed manifest says: not installed"
        )),
        other => FileSourceError::Failed(format!("cannot pull {path}: {other}")),
    }
}
