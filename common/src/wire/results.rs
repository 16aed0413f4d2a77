//! Task results an agent reports, and the controller's acknowledgements.

use serde::{Deserialize, Serialize};

/// How much of a task's stdout and stderr an agent keeps and reports: the last bytes.
pub const OUTPUT_TAIL_BYTES: usize = 16 * 1024;

/// How one attempt of a task ended (or that it started).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultStatus {
    /// The attempt began (reported before long or risky work such as a reboot).
    Running,
    /// The attempt succeeded.
    Succeeded,
    /// The attempt failed; another attempt may follow if retries remain.
    Failed,
    /// The attempt ran past its timeout and its processes were killed.
    TimedOut,
    /// The agent stopped or died while the attempt ran.
    Interrupted,
    /// The task did not run: skipped on purpose, or not reached because an earlier task failed.
    Skipped,
}

impl ResultStatus {
    /// True when this status ends the attempt.
    pub fn is_terminal(self) -> bool {
        !matches!(self, ResultStatus::Running)
    }
}

/// The identity of a result, which makes storing it idempotent.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ResultKey {
    /// The deployment.
    pub deployment_id: u64,
    /// The task list revision the task came from.
    pub revision: u64,
    /// The task id.
    pub task_id: String,
    /// The attempt, from 1.
    pub attempt: u32,
    /// The status this report carries (a `running` and a final report of one attempt are both kept).
    pub status: ResultStatus,
}

/// One attempt's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskResult {
    /// The deployment.
    pub deployment_id: u64,
    /// The task list revision.
    pub revision: u64,
    /// The task id.
    pub task_id: String,
    /// The attempt, from 1.
    pub attempt: u32,
    /// How it ended.
    pub status: ResultStatus,
    /// True when this is the task's last word: no further attempt will follow.
    pub last: bool,
    /// The process exit code, when a process exited.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// When the attempt started, in milliseconds since the Unix epoch.
    pub started_at_ms: i64,
    /// How long it took, in milliseconds.
    #[serde(default)]
    pub duration_ms: u64,
    /// The tail of standard output.
    #[serde(default)]
    pub stdout_tail: String,
    /// The tail of standard error.
    #[serde(default)]
    pub stderr_tail: String,
    /// A human explanation (why it failed, was skipped or interrupted).
    #[serde(default)]
    pub message: String,
    /// Structured details a task type adds (for example puppet's run summary).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub details: serde_json::Value,
}

impl TaskResult {
    /// The key under which the controller stores this result.
    pub fn key(&self) -> ResultKey {
        ResultKey {
            deployment_id: self.deployment_id,
            revision: self.revision,
            task_id: self.task_id.clone(),
            attempt: self.attempt,
            status: self.status,
        }
    }
}

/// A batch of results: `POST /agent/v1/results`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultsBatch {
    /// The results, oldest first.
    pub results: Vec<TaskResult>,
}

/// The controller's acknowledgement: these keys are stored durably and need not be sent again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultAck {
    /// Stored (now or before).
    pub acked: Vec<ResultKey>,
}

/// A task list the agent refused, reported so operators see it: `POST /agent/v1/refusals`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Refusal {
    /// Why the list was refused.
    pub reason: String,
    /// The revision the list claimed, when it could be read at all.
    #[serde(default)]
    pub claimed_revision: Option<u64>,
}
