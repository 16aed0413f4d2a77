//! Group commit: writes that many agents send at once (results, registrations) go to one committer per
//! kind, which takes every item waiting at that moment and writes them in one transaction: one commit
//! and one fsync for hundreds of agents. An item arriving alone is written at once; under load, the
//! items that arrive while a commit runs make up the next group. Each item carries its own answer
//! channel, and the commit answers every item of its group.

use super::IntakeError;
use crate::workers::Workers;
use std::sync::{Arc, OnceLock, Weak};
use tokio::sync::{mpsc, oneshot};

/// Items waiting for a committer before senders wait to queue theirs.
const QUEUE: usize = 8_192;

/// Writes one group on the blocking pool with what the committer writes with (`C`: the parts of the
/// controller it touches); it answers every item of the group.
pub type Commit<C, T> = fn(&C, Vec<T>);

/// Where a committer sends an item's answer.
pub type Answer<R> = oneshot::Sender<Result<R, IntakeError>>;

/// One committer's queue (its task starts with the first item).
pub struct Groups<C, T> {
    queue: OnceLock<mpsc::Sender<T>>,
    /// The most items written in one transaction.
    max: usize,
    commit: Commit<C, T>,
    /// What `commit` writes with; the committer's task holds it only while it writes a group, so it
    /// stops once this queue is dropped.
    parts: Arc<C>,
    /// The blocking jobs a group is written among.
    workers: Workers,
    /// What the committer writes, for its log lines and errors ("results", "registrations").
    what: &'static str,
}

impl<C: Send + Sync + 'static, T: Send + 'static> Groups<C, T> {
    /// A committer of groups of at most `max` items, each group written by `commit` with `parts`, as
    /// one of `workers`' jobs.
    pub fn new(
        what: &'static str,
        max: usize,
        parts: C,
        workers: Workers,
        commit: Commit<C, T>,
    ) -> Groups<C, T> {
        Groups {
            queue: OnceLock::new(),
            max: max.max(1),
            commit,
            parts: Arc::new(parts),
            workers,
            what,
        }
    }

    /// Queues the item `make` builds around its answer channel, and waits for the committer's answer.
    pub async fn ask<R>(&self, make: impl FnOnce(Answer<R>) -> T) -> Result<R, IntakeError> {
        let queue = self.queue.get_or_init(|| {
            let (tx, rx) = mpsc::channel(QUEUE);
            let (max, commit, what) = (self.max, self.commit, self.what);
            let (parts, workers) = (Arc::downgrade(&self.parts), self.workers.clone());
            tokio::spawn(commit_loop(parts, workers, max, commit, what, rx));
            tx
        });
        let (answer, answered) = oneshot::channel();
        let what = self.what;
        queue
            .send(make(answer))
            .await
            .map_err(|_| IntakeError::Stopped(what))?;
        answered.await.map_err(|_| IntakeError::NoAnswer(what))?
    }
}

async fn commit_loop<C: Send + Sync + 'static, T: Send + 'static>(
    parts: Weak<C>,
    workers: Workers,
    max: usize,
    commit: Commit<C, T>,
    what: &'static str,
    mut queue: mpsc::Receiver<T>,
) {
    while let Some(first) = queue.recv().await {
        let Some(p) = parts.upgrade() else { return };
        let mut group = vec![first];
        while group.len() < max {
            match queue.try_recv() {
                Ok(more) => group.push(more),
                Err(_) => break,
            }
        }
        if let Err(e) = workers.run(move || commit(&p, group)).await {
            tracing::error!(error = %e, what, "a group committer's job failed");
        }
    }
}
