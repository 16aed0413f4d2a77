//! A bound on blocking work (database writes, orchestration) running at once. Without it, every request
//! waiting for the database held an operating-system thread of tokio's blocking pool: a fleet sending
//! results together grew the pool to its 512 threads, each with its stack and allocator arena, all
//! queued on the one database writer (over 1 GiB of resident memory with 5,000 agents). Requests now wait
//! for a place as cheap futures; only [`BLOCKING_WORKERS`] threads work at once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::Semaphore;

/// How many blocking jobs run at once. The database takes one writer at a time; a few more let reads and
/// signing overlap it.
pub const BLOCKING_WORKERS: usize = 8;

/// Blocking jobs, at most a fixed number at once.
#[derive(Debug, Clone)]
pub struct Workers {
    slots: Arc<Semaphore>,
    running: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
}

impl Default for Workers {
    fn default() -> Self {
        Workers::new(BLOCKING_WORKERS)
    }
}

impl Workers {
    /// At most `places` jobs at once (at least one).
    pub fn new(places: usize) -> Self {
        Workers {
            slots: Arc::new(Semaphore::new(places.max(1))),
            running: Arc::default(),
            peak: Arc::default(),
        }
    }

    /// Runs `f` on the blocking pool once a place is free. The place is held by the job itself, so a
    /// caller that stops waiting (its client went away) does not free it before the job ends.
    pub async fn run<T, F>(&self, f: F) -> Result<T, tokio::task::JoinError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let permit = self.slots.clone().acquire_owned().await;
        let (running, peak) = (self.running.clone(), self.peak.clone());
        tokio::task::spawn_blocking(move || {
            // The semaphore is never closed, so the permit is always granted; holding the result keeps
            // the place until the job ends.
            let _permit = permit;
            let now = running.fetch_add(1, Ordering::AcqRel) + 1;
            peak.fetch_max(now, Ordering::AcqRel);
            let out = f();
            running.fetch_sub(1, Ordering::AcqRel);
            out
        })
        .await
    }

    /// The most jobs that ever ran at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_more_jobs_run_at_once_than_there_are_places() {
        let workers = Arc::new(Workers::new(3));
        let mut jobs = tokio::task::JoinSet::new();
        for i in 0..40u64 {
            let w = workers.clone();
            jobs.spawn(async move {
                w.run(move || {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                    i
                })
                .await
            });
        }
        let mut sum = 0;
        while let Some(r) = jobs.join_next().await {
            sum += r.expect("task").expect("job");
        }
        assert_eq!(sum, (0..40).sum::<u64>(), "every job ran once");
        assert!(workers.peak() <= 3, "peak {}", workers.peak());
        assert!(workers.peak() >= 1);
    }
}
