//! The controller as the runner's gatekeeper, the sender's result sink and the executors' file source,
//! with re-registration on 401. The gate and the sink are retried by their callers (the runner's and the
//! sender's backoff); file downloads have no caller that retries, so [`ControllerFiles`] itself tries the
//! other controllers (after a backoff pause each) when the current one fails.

use super::registration::Registrar;
use crate::executor::services::{FileSourceError, Manifest, Pulled};
use crate::executor::{BoxFuture, FileSource};
use crate::runner::Gatekeeper;
use crate::sender::ResultSink;
use crate::transport::failover::fails_over;
use crate::transport::{fresh_nonce, Backoff, Controller, TransportError};
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
    /// Pacing between tries on the next controller (a fresh copy for each file).
    pub backoff: Backoff,
}

impl ControllerFiles {
    /// Whether a request that ended with `result` after `tries` tries should be tried again: it failed
    /// for the controller's sake and not every controller was tried yet. Waits the backoff first.
    async fn again<T>(
        &self,
        result: &Result<T, TransportError>,
        tries: usize,
        backoff: &mut Backoff,
    ) -> bool {
        match result {
            Err(e) if fails_over(e) && tries < self.controller.controllers() => {
                let delay = backoff.next_delay();
                tracing::warn!(error = %e, retry_in_ms = delay.as_millis() as u64, next = %self.controller.current(), "file request failed; trying the next controller");
                tokio::time::sleep(delay).await;
                true
            }
            _ => false,
        }
    }
}

impl FileSource for ControllerFiles {
    fn stream<'a>(
        &'a self,
        path: &'a str,
        max_size: u64,
        into: &'a mut (dyn tokio::io::AsyncWrite + Unpin + Send),
    ) -> BoxFuture<'a, Result<Pulled, FileSourceError>> {
        Box::pin(self.stream_file(path, max_size, into))
    }

    fn manifest<'a>(&'a self, path: &'a str) -> BoxFuture<'a, Result<Manifest, FileSourceError>> {
        Box::pin(async move {
            let mut backoff = self.backoff.clone();
            let mut tries = 0;
            loop {
                tries += 1;
                let result = self
                    .registrar
                    .call(|| self.controller.file_manifest(path))
                    .await;
                if !self.again(&result, tries, &mut backoff).await {
                    return result.map_err(|e| file_error(path, e));
                }
            }
        })
    }

    fn pull<'a>(
        &'a self,
        path: &'a str,
        max_size: u64,
        into: &'a mut tokio::fs::File,
    ) -> BoxFuture<'a, Result<Pulled, FileSourceError>> {
        Box::pin(async move {
            // No re-registration retry here: the task's retry policy starts over with a fresh file. A
            // controller that fails is left for the next, which sends the file from its start.
            let mut backoff = self.backoff.clone();
            let mut tries = 0;
            loop {
                tries += 1;
                let result = self.controller.pull_file(path, max_size, into).await;
                if !self.again(&result, tries, &mut backoff).await {
                    return result.map_err(|e| file_error(path, e));
                }
                if let Err(e) = rewind(into).await {
                    return Err(FileSourceError::Failed(format!(
                        "cannot pull {path}: cannot start the local file over: {e}"
                    )));
                }
            }
        })
    }
}

/// The first wait before asking the controller again for a boot device it could not be asked for.
const BOOT_RETRY_FIRST: std::time::Duration = std::time::Duration::from_millis(500);
/// The longest wait between two such questions.
const BOOT_RETRY_MAX: std::time::Duration = std::time::Duration::from_secs(10);

impl crate::executor::services::NodeActions for ControllerFiles {
    fn boot<'a>(
        &'a self,
        request: &'a plinth_common::wire::BootRequest,
    ) -> BoxFuture<'a, Result<plinth_common::wire::BootAnswer, crate::executor::services::BootError>>
    {
        use crate::executor::services::BootError;
        Box::pin(async move {
            let mut tries = 0;
            let mut wait = BOOT_RETRY_FIRST;
            loop {
                tries += 1;
                let result = self.controller.boot(request).await;
                if let Err(TransportError::Unauthorized) = &result {
                    if tries < 2 && self.registrar.register().await.is_ok() {
                        continue;
                    }
                }
                // A controller out of reach for now (a system that just booted may not have its
                // address yet; a controller restarting answers 502-504): asked again, until the
                // task's own timeout ends it.
                if let Err(
                    e @ (TransportError::Network(_)
                    | TransportError::Api {
                        status: 502..=504, ..
                    }),
                ) = &result
                {
                    tracing::warn!(error = %e, retry_in = ?wait, "cannot ask the controller for the boot device yet; asking again");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(BOOT_RETRY_MAX);
                    continue;
                }
                return result.map_err(|e| match e {
                    TransportError::Api {
                        status: 404,
                        message,
                        ..
                    } => BootError::NotEnrolled(message),
                    other => BootError::Failed(format!(
                        "the controller did not set the boot device: {other}"
                    )),
                });
            }
        })
    }
}

impl ControllerFiles {
    /// See [`FileSource::stream`].
    async fn stream_file(
        &self,
        path: &str,
        max_size: u64,
        into: &mut (dyn tokio::io::AsyncWrite + Unpin + Send),
    ) -> Result<Pulled, FileSourceError> {
        self.controller
            .pull_file(path, max_size, into)
            .await
            .map_err(|e| file_error(path, e))
    }
}

/// Empties a partly written download so the next controller's bytes start at its beginning.
async fn rewind(file: &mut tokio::fs::File) -> std::io::Result<()> {
    use tokio::io::AsyncSeekExt;
    file.set_len(0).await?;
    file.seek(std::io::SeekFrom::Start(0)).await?;
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::NodeIdentity;
    use crate::transport::tls;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn a_file_request_tries_each_controller_once_then_fails() {
        // The first controller refuses connections (nothing on port 9); the second accepts them and
        // closes them at once (its TLS handshake fails), counting them.
        let broken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = broken.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = accepted.clone();
        std::thread::spawn(move || {
            for stream in broken.incoming() {
                counter.fetch_add(1, Ordering::SeqCst);
                drop(stream);
            }
        });
        let dir = tempfile::tempdir().unwrap();
        let server = rcgen::generate_simple_self_signed(vec!["c".to_string()]).unwrap();
        let pem = dir.path().join("c.pem");
        std::fs::write(&pem, server.cert.pem()).unwrap();
        let id = NodeIdentity::from_key(plinth_common::signing::signing_key_from_seed([2; 32]));
        let config = tls::client_config(
            &id,
            &crate::config::ServerTrust::Pinned(pem),
            &Default::default(),
        )
        .unwrap();
        let bases = vec![
            reqwest::Url::parse("https://127.0.0.1:9").unwrap(),
            reqwest::Url::parse(&format!("https://127.0.0.1:{port}")).unwrap(),
        ];
        let controller = Controller::with_tls(bases, config).unwrap();
        let registration = plinth_common::wire::Registration {
            agent_version: "test".into(),
            name: None,
            facts: Default::default(),
            tags: vec![],
            labels: Default::default(),
            rack: None,
            enrollment_token: None,
            protocol: plinth_common::wire::PROTOCOL_VERSION,
        };
        let files = ControllerFiles {
            controller: controller.clone(),
            registrar: Arc::new(Registrar::new(controller.clone(), registration)),
            backoff: Backoff::new(Duration::from_millis(1), Duration::from_millis(10)),
        };
        let err = files.manifest("modules").await.unwrap_err().to_string();
        assert!(err.contains("cannot pull modules"), "{err}");
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            1,
            "the second was tried once"
        );
        // Both failed: round robin brought the first back, and the next request starts there.
        assert_eq!(controller.current().as_str(), "https://127.0.0.1:9/");
    }
}
