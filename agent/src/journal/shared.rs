//! The journal shared between the runner (which appends) and the sender (which sends and records acks):
//! appending wakes the sender. It tells the agent's metrics each task attempt that ended and its backlog.

use super::{Journal, JournalError};
use crate::metrics::AgentMetrics;
use plinth_common::wire::TaskResult;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// A journal behind a lock, with a wake-up for the sender.
#[derive(Debug, Clone)]
pub struct SharedJournal {
    inner: Arc<Mutex<Journal>>,
    wake: Arc<Notify>,
    metrics: AgentMetrics,
}

impl SharedJournal {
    /// Shares a journal.
    pub fn new(journal: Journal) -> SharedJournal {
        SharedJournal::with_metrics(journal, AgentMetrics::new())
    }

    /// Shares a journal that tells `metrics` what it records and its backlog.
    pub fn with_metrics(journal: Journal, metrics: AgentMetrics) -> SharedJournal {
        SharedJournal {
            inner: Arc::new(Mutex::new(journal)),
            wake: Arc::new(Notify::new()),
            metrics,
        }
    }

    /// The metrics this journal tells.
    pub fn metrics(&self) -> &AgentMetrics {
        &self.metrics
    }

    /// Appends a result durably, cut to fit the wire's limit ([`TaskResult::bounded`]), and wakes the
    /// sender.
    pub fn record(&self, result: TaskResult) -> Result<(), JournalError> {
        let result = result.bounded();
        self.metrics.task_ended(&result);
        let backlog = self.with(|j| {
            j.append(result)?;
            Ok::<usize, JournalError>(j.unacked_count())
        })?;
        self.metrics.backlog(backlog);
        self.wake.notify_one();
        Ok(())
    }

    /// Runs `f` with the journal locked.
    pub fn with<R>(&self, f: impl FnOnce(&mut Journal) -> R) -> R {
        let mut guard = match self.inner.lock() {
            Ok(g) => g,
            // A panic while holding the lock cannot leave the journal half-written on disk (each append
            // is one write); carry on with it.
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }

    /// Resolves when a result was recorded since the last call (or is recorded from now on).
    pub async fn recorded(&self) {
        self.wake.notified().await;
    }
}
