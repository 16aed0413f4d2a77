//! Uploading journaled results: batches of unacknowledged results are sent until the controller
//! acknowledges them; acknowledgements are recorded durably; failures back off with full jitter. Results
//! left unacknowledged by a previous run of the agent are sent first, on start. When everything is
//! acknowledged the journal is compacted.

use crate::executor::BoxFuture;
use crate::journal::SharedJournal;
use crate::shutdown::Shutdown;
use crate::transport::{Backoff, TransportError};
use plinth_common::wire::{ResultAck, ResultKey, ResultsBatch};
use std::sync::Arc;
use std::time::Duration;

/// The most results in one request.
pub const MAX_BATCH_RESULTS: usize = 200;
/// The most JSON bytes in one request (well under the controller's request limit).
pub const MAX_BATCH_BYTES: usize = 1024 * 1024;

/// Where results go (the controller, or a test double).
pub trait ResultSink: Send + Sync {
    /// Sends a batch; returns what the controller acknowledged.
    fn send<'a>(
        &'a self,
        batch: &'a ResultsBatch,
    ) -> BoxFuture<'a, Result<ResultAck, TransportError>>;
}

/// The sending loop.
pub struct Sender {
    journal: SharedJournal,
    sink: Arc<dyn ResultSink>,
    backoff: Backoff,
}

/// What one sending round did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Round {
    /// Nothing was waiting.
    Idle,
    /// A batch was sent and `acked` results were acknowledged.
    Sent {
        /// Newly acknowledged results.
        acked: usize,
    },
}

impl Sender {
    /// A sender for `journal` into `sink`.
    pub fn new(
        journal: SharedJournal,
        sink: Arc<dyn ResultSink>,
        backoff_min: Duration,
        backoff_max: Duration,
    ) -> Sender {
        Sender {
            journal,
            sink,
            backoff: Backoff::new(backoff_min, backoff_max),
        }
    }

    /// Sends one batch of unacknowledged results, if any, and records the acknowledgement.
    pub async fn round(&mut self) -> Result<Round, TransportError> {
        let results = self
            .journal
            .with(|j| j.unacked(MAX_BATCH_RESULTS, MAX_BATCH_BYTES));
        if results.is_empty() {
            return Ok(Round::Idle);
        }
        let batch = ResultsBatch { results };
        let ack = self.sink.send(&batch).await?;
        let stored: Vec<ResultKey> = ack.stored().cloned().collect();
        let refused: Vec<(ResultKey, String)> = ack
            .refused()
            .map(|(key, reason)| (key.clone(), reason.to_string()))
            .collect();
        for (key, reason) in &refused {
            tracing::warn!(
                deployment = key.deployment_id,
                revision = key.revision,
                task = %key.task_id,
                attempt = key.attempt,
                reason = %reason.escape_debug(),
                "the controller refused a result for good; it is kept in the journal's quarantine"
            );
        }
        let journal_result = self.journal.with(|j| {
            let acked = j.record_acks(&stored)?;
            let quarantined = j.quarantine(&refused)?;
            let n = acked + quarantined;
            let backlog = j.unacked_count();
            if backlog == 0 {
                j.compact()?;
            }
            Ok::<_, crate::journal::JournalError>((n, quarantined, backlog))
        });
        let journal_result = journal_result.map(|(n, quarantined, backlog)| {
            let metrics = self.journal.metrics();
            metrics.results_refused(quarantined);
            metrics.backlog(backlog);
            n
        });
        match journal_result {
            Ok(acked) => Ok(Round::Sent { acked }),
            Err(e) => {
                // The ack is not durable; the results will be sent again, which the controller tolerates.
                tracing::error!(error = %e, "cannot record acknowledgements");
                Ok(Round::Sent { acked: 0 })
            }
        }
    }

    /// Sends until stopped: immediately while results wait, on every new result, and after a backoff
    /// when the controller cannot take them.
    pub async fn run(mut self, shutdown: Shutdown) {
        loop {
            if shutdown.is_triggered() {
                return;
            }
            match self.round().await {
                Ok(Round::Idle) => {
                    self.backoff.reset();
                    tokio::select! {
                        _ = self.journal.recorded() => {}
                        _ = shutdown.wait() => return,
                    }
                }
                Ok(Round::Sent { acked }) if acked > 0 => self.backoff.reset(),
                Ok(Round::Sent { .. }) => {
                    // Sent but nothing new acknowledged: the controller did not store them. Wait.
                    let delay = self.backoff.next_delay();
                    tracing::warn!(
                        retry_in_ms = delay.as_millis() as u64,
                        "controller acknowledged none of the results sent"
                    );
                    if !shutdown.sleep(delay).await {
                        return;
                    }
                }
                Err(e) => {
                    let delay = self.backoff.next_delay();
                    tracing::warn!(error = %e, retry_in_ms = delay.as_millis() as u64, "cannot send results");
                    if !shutdown.sleep(delay).await {
                        return;
                    }
                }
            }
        }
    }

    /// Tries to send everything still waiting, for at most `limit` (used when stopping).
    pub async fn flush(mut self, limit: Duration) -> usize {
        let work = async {
            loop {
                match self.round().await {
                    Ok(Round::Sent { acked }) if acked > 0 => {}
                    _ => break,
                }
            }
        };
        let _ = tokio::time::timeout(limit, work).await;
        self.journal.with(|j| j.unacked_count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::Journal;
    use plinth_common::wire::{ResultStatus, ResultVerdict, TaskResult, Verdict};
    use std::sync::Mutex;

    /// A controller double: fails the first `failures` requests, then acknowledges everything.
    struct FlakySink {
        failures: Mutex<u32>,
        received: Mutex<Vec<usize>>,
    }

    impl ResultSink for FlakySink {
        fn send<'a>(
            &'a self,
            batch: &'a ResultsBatch,
        ) -> BoxFuture<'a, Result<ResultAck, TransportError>> {
            Box::pin(async move {
                let mut failures = self.failures.lock().unwrap();
                if *failures > 0 {
                    *failures -= 1;
                    return Err(TransportError::Api {
                        status: 503,
                        code: String::new(),
                        message: "busy".into(),
                    });
                }
                self.received.lock().unwrap().push(batch.results.len());
                Ok(ResultAck {
                    verdicts: batch
                        .results
                        .iter()
                        .map(|r| ResultVerdict {
                            key: r.key(),
                            verdict: if r.task_id.starts_with("refused") {
                                Verdict::Refused
                            } else {
                                Verdict::Accepted
                            },
                            reason: r.task_id.starts_with("refused").then(|| "not yours".into()),
                        })
                        .collect(),
                })
            })
        }
    }

    fn result(i: u32) -> TaskResult {
        TaskResult {
            deployment_id: 1,
            revision: 1,
            task_id: format!("t{i}"),
            attempt: 1,
            status: ResultStatus::Succeeded,
            last: true,
            exit_code: Some(0),
            started_at_ms: 1,
            duration_ms: 1,
            stdout_tail: String::new(),
            stderr_tail: String::new(),
            message: String::new(),
            details: serde_json::Value::Null,
        }
    }

    #[tokio::test]
    async fn resends_until_acknowledged_then_compacts() {
        let dir = tempfile::tempdir().unwrap();
        let journal = SharedJournal::new(Journal::open(dir.path()).unwrap());
        for i in 0..250 {
            journal.record(result(i)).unwrap();
        }
        let sink = Arc::new(FlakySink {
            failures: Mutex::new(3),
            received: Mutex::new(vec![]),
        });
        let (trigger, shutdown) = crate::shutdown::channel();
        let sender = Sender::new(
            journal.clone(),
            sink.clone(),
            Duration::from_millis(5),
            Duration::from_millis(20),
        );
        let task = tokio::spawn(sender.run(shutdown));
        for _ in 0..200 {
            if journal.with(|j| j.unacked_count()) == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(journal.with(|j| j.unacked_count()), 0);
        assert_eq!(*sink.received.lock().unwrap(), vec![200, 50], "batched");
        assert_eq!(journal.with(|j| j.records().len()), 0, "compacted");

        // A new result wakes the sender.
        journal.record(result(999)).unwrap();
        for _ in 0..200 {
            if journal.with(|j| j.unacked_count()) == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(sink.received.lock().unwrap().last(), Some(&1));
        trigger.trigger();
        task.await.unwrap();
    }

    #[tokio::test]
    async fn a_refused_result_is_quarantined_and_the_ones_after_it_go_through() {
        let dir = tempfile::tempdir().unwrap();
        let journal = SharedJournal::new(Journal::open(dir.path()).unwrap());
        let mut bad = result(0);
        bad.task_id = "refused-one".into();
        journal.record(bad).unwrap();
        journal.record(result(1)).unwrap();
        let sink = Arc::new(FlakySink {
            failures: Mutex::new(0),
            received: Mutex::new(vec![]),
        });
        let mut s = Sender::new(
            journal.clone(),
            sink,
            Duration::from_millis(1),
            Duration::from_millis(1),
        );
        assert_eq!(s.round().await.unwrap(), Round::Sent { acked: 2 });
        assert_eq!(journal.with(|j| j.unacked_count()), 0);
        assert_eq!(s.round().await.unwrap(), Round::Idle);
        let quarantined =
            std::fs::read_to_string(dir.path().join(crate::journal::REFUSED_FILE)).unwrap();
        assert!(quarantined.contains("refused-one") && quarantined.contains("not yours"));
    }

    #[tokio::test]
    async fn unacknowledged_results_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        {
            let journal = SharedJournal::new(Journal::open(dir.path()).unwrap());
            journal.record(result(1)).unwrap();
            journal.record(result(2)).unwrap();
            let down = Arc::new(FlakySink {
                failures: Mutex::new(u32::MAX),
                received: Mutex::new(vec![]),
            });
            let mut s = Sender::new(
                journal,
                down,
                Duration::from_millis(1),
                Duration::from_millis(1),
            );
            assert!(s.round().await.is_err());
        }
        let journal = SharedJournal::new(Journal::open(dir.path()).unwrap());
        let up = Arc::new(FlakySink {
            failures: Mutex::new(0),
            received: Mutex::new(vec![]),
        });
        let s = Sender::new(
            journal.clone(),
            up.clone(),
            Duration::from_millis(1),
            Duration::from_millis(1),
        );
        assert_eq!(s.flush(Duration::from_secs(5)).await, 0);
        assert_eq!(*up.received.lock().unwrap(), vec![2]);
    }
}
