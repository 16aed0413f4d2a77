//! The controller as the runner's gatekeeper, the sender's result sink and the executors' file source,
//! with re-registration on 401.

use super::registration::Registrar;
use crate::executor::services::{FileSourceError, Manifest, Pulled};
use crate::executor::{BoxFuture, FileSource};
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
        into: &'a mut tokio::fs::File,
    ) -> BoxFuture<'a, Result<Pulled, FileSourceError>> {
        Box::pin(async move {
            // No re-registration retry here: the body may be half written; the task's retry policy
            // starts over with a fresh file.
            self.controller
                .pull_file(path, into)
                .await
                .map_err(|e| file_error(path, e))
        })
    }
}

fn file_error(path: &str, e: TransportError) -> FileSourceError {
    match e {
        TransportError::Api { status: 404, .. } => FileSourceError::NotFound(path.to_string()),
        other => FileSourceError::Failed(format!("cannot pull {path}: {other}")),
    }
}
