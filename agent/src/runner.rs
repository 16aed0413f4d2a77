//! Running a verified task list: tasks in list order, each through its gate (when the controller gates
//! it), its attempts and retries; every result journaled (and so sent) as it happens. Before each attempt
//! a `running` result is recorded; when a task fails its last attempt the remaining tasks are reported
//! skipped and the list ends. A list interrupted by a stop or a crash is resumed from the journal: the
//! attempt that was running is reported interrupted (with what the start-up sweep of
//! [`crate::tracking`] ended of its processes), and the task goes on by its retry policy.

use crate::executor::{self, AttemptContext, BoxFuture, Outcome, Services};
use crate::journal::{task_state, JournalError, SharedJournal, TaskState};
use crate::shutdown::Shutdown;
use crate::tracking::AttemptKey;
use crate::transport::Backoff;
use plinth_common::wire::{GateAnswer, ResultStatus, TaskList, TaskResult, TaskSpec};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The controller's gate, as the runner sees it.
pub trait Gatekeeper: Send + Sync {
    /// Asks whether `task` of `deployment` may start (held open by the controller for a while).
    fn ask<'a>(
        &'a self,
        deployment: u64,
        task: &'a str,
    ) -> BoxFuture<'a, Result<GateAnswer, String>>;
}

/// What the runner needs besides the list.
#[derive(Debug, Clone)]
pub struct RunnerSettings {
    /// Working directory of tasks.
    pub work_dir: PathBuf,
    /// Grace between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// Backoff window of gate requests that fail.
    pub backoff_min: Duration,
    /// Largest backoff window.
    pub backoff_max: Duration,
    /// What executors borrow from the agent.
    pub services: Arc<Services>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// Every task has its last word; `failed_task` names the task that stopped the list, if any.
    Completed {
        /// The task whose failure ended the list.
        failed_task: Option<String>,
    },
    /// The agent is stopping; the list resumes on the next start.
    Stopped,
}

/// How one task ended.
enum TaskEnd {
    Succeeded,
    Failed,
    Stopped,
}

/// The result of waiting at a gate.
enum GateEnd {
    Ready,
    Blocked(String),
    Stopped,
}

/// Runs lists.
pub struct Runner<'a> {
    journal: SharedJournal,
    gate: &'a dyn Gatekeeper,
    settings: RunnerSettings,
    shutdown: Shutdown,
}

impl<'a> Runner<'a> {
    /// A runner that records into `journal` and asks `gate`.
    pub fn new(
        journal: SharedJournal,
        gate: &'a dyn Gatekeeper,
        settings: RunnerSettings,
        shutdown: Shutdown,
    ) -> Runner<'a> {
        Runner {
            journal,
            gate,
            settings,
            shutdown,
        }
    }

    /// Runs (or resumes) a list. Fails only when the journal cannot be written, in which case nothing more
    /// is run.
    pub async fn run(&self, list: &TaskList) -> Result<RunEnd, JournalError> {
        self.journal
            .with(|j| j.set_active_revision(Some(list.revision)));
        let records: Vec<TaskResult> = self.journal.with(|j| {
            j.records_of(list.deployment_id, list.revision)
                .into_iter()
                .cloned()
                .collect()
        });
        let records: Vec<&TaskResult> = records.iter().collect();
        let mut failed: Option<String> = None;
        for task in &list.tasks {
            let state = task_state(&records, &task.id);
            if let Some(failed_id) = &failed {
                if !matches!(state, TaskState::Done { .. }) {
                    let message = format!("not run: task {failed_id} failed");
                    self.record(
                        list,
                        task,
                        1,
                        Outcome::simple(ResultStatus::Skipped, message),
                        true,
                        now_ms(),
                        0,
                    )?;
                }
                continue;
            }
            if let TaskState::Done { .. } = state {
                if state.failed() {
                    failed = Some(task.id.clone());
                }
                continue;
            }
            if self.shutdown.is_triggered() {
                return Ok(RunEnd::Stopped);
            }
            match self.run_task(list, task, state).await? {
                TaskEnd::Succeeded => {}
                TaskEnd::Failed => failed = Some(task.id.clone()),
                TaskEnd::Stopped => return Ok(RunEnd::Stopped),
            }
        }
        Ok(RunEnd::Completed {
            failed_task: failed,
        })
    }

    async fn run_task(
        &self,
        list: &TaskList,
        task: &TaskSpec,
        state: TaskState,
    ) -> Result<TaskEnd, JournalError> {
        if let Some(reason) = &task.skip_reason {
            let outcome = Outcome::simple(ResultStatus::Skipped, reason.clone());
            self.record(list, task, 1, outcome, true, now_ms(), 0)?;
            return Ok(TaskEnd::Succeeded);
        }
        let prepared = match executor::prepare(task, list.noop) {
            Ok(p) => p,
            Err(e) => {
                let outcome = Outcome::simple(ResultStatus::Failed, e.to_string());
                self.record(list, task, 1, outcome, true, now_ms(), 0)?;
                return Ok(TaskEnd::Failed);
            }
        };
        let mut attempts = prepared.policy.attempts;
        // An attempt that goes on across a restart (a reboot) is resumed, not reported interrupted.
        let mut resumed: Option<u32> = None;
        let mut attempt = match state {
            TaskState::NotStarted => 1,
            TaskState::Interrupted { attempt } if prepared.executor.resumes_across_restart() => {
                resumed = Some(attempt);
                attempt
            }
            TaskState::Interrupted { attempt } => {
                let last = attempt >= attempts;
                let outcome = self.interrupted(list, task, attempt);
                self.record(list, task, attempt, outcome, last, now_ms(), 0)?;
                if last {
                    return Ok(TaskEnd::Failed);
                }
                attempt + 1
            }
            TaskState::Between { attempt } => {
                // An attempt that ended without being last always leaves another one.
                attempts = attempts.max(attempt + 1);
                attempt + 1
            }
            TaskState::Done { .. } => return Ok(TaskEnd::Succeeded),
        };

        if task.gated && resumed.is_none() {
            match self.wait_at_gate(list, task).await {
                GateEnd::Ready => {}
                GateEnd::Blocked(why) => {
                    let outcome = Outcome::simple(
                        ResultStatus::Failed,
                        format!("blocked: a task it depends on failed ({why})"),
                    );
                    self.record(list, task, attempt, outcome, true, now_ms(), 0)?;
                    return Ok(TaskEnd::Failed);
                }
                GateEnd::Stopped => return Ok(TaskEnd::Stopped),
            }
        }

        let first = attempt;
        loop {
            let pause = attempt > first || (state != TaskState::NotStarted && resumed.is_none());
            if pause && !self.shutdown.sleep(prepared.policy.interval).await {
                return Ok(TaskEnd::Stopped);
            }
            let ctx = AttemptContext {
                work_dir: self.settings.work_dir.clone(),
                kill_grace: self.settings.kill_grace,
                deployment_id: list.deployment_id,
                revision: list.revision,
                task_id: task.id.clone(),
                attempt,
                shutdown: self.shutdown.clone(),
                noop: list.noop,
                services: self.settings.services.clone(),
            };
            let started_ms = now_ms();
            let started = Instant::now();
            if resumed.take().is_some() {
                tracing::info!(task = %task.id, attempt, "resuming the attempt that was running when the agent stopped");
            } else if prepared.executor.does_work() {
                let mut running = Outcome::simple(ResultStatus::Running, "");
                running.details = prepared.executor.running_details();
                self.record(list, task, attempt, running, false, started_ms, 0)?;
            }
            tracing::info!(task = %task.id, attempt, of = attempts, "task attempt starts");
            let outcome = prepared.executor.run(&ctx).await;
            if outcome.status == ResultStatus::Running {
                // The attempt goes on across the agent's stop (a reboot); it resumes on the next start.
                tracing::info!(task = %task.id, attempt, message = %outcome.message, "the attempt continues after the agent restarts");
                return Ok(TaskEnd::Stopped);
            }
            let duration = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            let status = outcome.status;
            let succeeded = matches!(status, ResultStatus::Succeeded | ResultStatus::Skipped);
            let last = succeeded || attempt >= attempts;
            tracing::info!(task = %task.id, attempt, status = ?status, last, message = %outcome.message, "task attempt ended");
            self.record(list, task, attempt, outcome, last, started_ms, duration)?;
            if status == ResultStatus::Interrupted {
                return Ok(TaskEnd::Stopped);
            }
            if succeeded {
                return Ok(TaskEnd::Succeeded);
            }
            if last {
                return Ok(TaskEnd::Failed);
            }
            attempt += 1;
        }
    }

    /// The result of an attempt that was running when the agent stopped, with what the start-up sweep
    /// ended of it.
    fn interrupted(&self, list: &TaskList, task: &TaskSpec, attempt: u32) -> Outcome {
        let key = AttemptKey {
            deployment_id: list.deployment_id,
            revision: list.revision,
            task_id: task.id.clone(),
            attempt,
        };
        let mut outcome = Outcome::simple(
            ResultStatus::Interrupted,
            "the agent stopped while this attempt ran",
        );
        if let Some(swept) = self.settings.services.tracker.swept(&key) {
            outcome.message = match (swept.ended, swept.remaining) {
                (0, _) => format!(
                    "{}; none of its processes was left running",
                    outcome.message
                ),
                (n, 0) => format!(
                    "{}; {n} of its processes were still running and were ended before the next attempt",
                    outcome.message
                ),
                (n, left) => format!(
                    "{}; {n} of its processes were still running: SIGKILL was sent, {left} had not gone yet",
                    outcome.message
                ),
            };
            outcome.details = serde_json::json!({
                "containment": swept.containment.name(),
                "processes_ended": swept.ended,
                "processes_remaining": swept.remaining,
            });
        }
        outcome
    }

    async fn wait_at_gate(&self, list: &TaskList, task: &TaskSpec) -> GateEnd {
        let mut backoff = Backoff::new(self.settings.backoff_min, self.settings.backoff_max);
        loop {
            let asked = Instant::now();
            let answer = tokio::select! {
                a = self.gate.ask(list.deployment_id, &task.id) => a,
                _ = self.shutdown.wait() => return GateEnd::Stopped,
            };
            let pause = match answer {
                Ok(a) if a.blocked => return GateEnd::Blocked(a.waiting_for.join(", ")),
                Ok(a) if a.ready => return GateEnd::Ready,
                Ok(a) => {
                    backoff.reset();
                    tracing::info!(task = %task.id, waiting_for = ?a.waiting_for, "task waits for its dependencies");
                    // A controller that answers at once instead of holding the request is not hammered.
                    Duration::from_secs(1).saturating_sub(asked.elapsed())
                }
                Err(e) => {
                    let delay = backoff.next_delay();
                    tracing::warn!(task = %task.id, error = %e, retry_in_ms = delay.as_millis() as u64, "gate check failed");
                    delay
                }
            };
            if !self.shutdown.sleep(pause).await {
                return GateEnd::Stopped;
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        list: &TaskList,
        task: &TaskSpec,
        attempt: u32,
        outcome: Outcome,
        last: bool,
        started_at_ms: i64,
        duration_ms: u64,
    ) -> Result<(), JournalError> {
        self.journal.record(TaskResult {
            deployment_id: list.deployment_id,
            revision: list.revision,
            task_id: task.id.clone(),
            attempt,
            status: outcome.status,
            last,
            exit_code: outcome.exit_code,
            started_at_ms,
            duration_ms,
            stdout_tail: outcome.stdout_tail,
            stderr_tail: outcome.stderr_tail,
            message: outcome.message,
            details: outcome.details,
        })
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
