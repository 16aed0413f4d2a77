//! Task results an agent reports, and the controller's acknowledgements.

use serde::{Deserialize, Serialize};

/// How much of a task's stdout and stderr an agent keeps and reports: the last bytes.
pub const OUTPUT_TAIL_BYTES: usize = 16 * 1024;

/// The largest one result may be, as JSON. An agent bounds every result to it before journaling it
/// ([`TaskResult::bounded`]); the controller refuses a larger one (that result alone).
pub const MAX_RESULT_BYTES: usize = 64 * 1024;

/// The longest a result's `message` may be, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024;

/// The most JSON bytes a result's `details` may hold.
pub const MAX_DETAILS_BYTES: usize = 24 * 1024;

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

    /// True when this status fails its task (failed, timed out or interrupted).
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            ResultStatus::Failed | ResultStatus::TimedOut | ResultStatus::Interrupted
        )
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

/// The key of `TaskResult::details` under which a `provision` task reports what it installed (the
/// image, its digest and format, the disk); the controller reads a node's place in its life from it.
pub const PROVISION_DETAILS_KEY: &str = "provision";

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
    /// This result cut to fit [`MAX_RESULT_BYTES`]: the message to [`MAX_MESSAGE_BYTES`], `details`
    /// to [`MAX_DETAILS_BYTES`] (long lists keep their first items, long strings their start, and
    /// `details.truncated` maps each cut place to its original length, so counts survive), and the output
    /// tails shortened from their start when escaping made them large. A result that fits is unchanged.
    pub fn bounded(mut self) -> TaskResult {
        if self.message.len() > MAX_MESSAGE_BYTES {
            self.message = format!(
                "{}… ({} bytes in all)",
                head(&self.message, MAX_MESSAGE_BYTES - 64),
                self.message.len()
            );
        }
        if json_len(&self.details) > MAX_DETAILS_BYTES {
            self.details = super::bounded::bound_details(std::mem::take(&mut self.details));
        }
        while json_len(&self) > MAX_RESULT_BYTES
            && !(self.stdout_tail.is_empty() && self.stderr_tail.is_empty())
        {
            // Escaping can make output several times its byte length: keep halving the tails' starts.
            self.stdout_tail = tail(&self.stdout_tail, self.stdout_tail.len() / 2).to_string();
            self.stderr_tail = tail(&self.stderr_tail, self.stderr_tail.len() / 2).to_string();
        }
        self
    }

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

/// The JSON length of a value (0 if it cannot be written, which the wire types never are).
pub fn json_len<T: Serialize + ?Sized>(value: &T) -> usize {
    serde_json::to_vec(value).map(|v| v.len()).unwrap_or(0)
}

/// The longest start of `s` of at most `max` bytes that ends on a character boundary.
fn head(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The longest end of `s` of at most `max` bytes that starts on a character boundary.
fn tail(s: &str, max: usize) -> &str {
    let mut start = s.len().saturating_sub(max);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// A batch of results: `POST /agent/v1/results`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultsBatch {
    /// The results, oldest first.
    pub results: Vec<TaskResult>,
}

/// What the controller did with one result of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Stored durably now.
    Accepted,
    /// Stored durably before (a resend).
    Duplicate,
    /// Never to be stored (the reason says why): the agent must not send it again.
    Refused,
}

impl Verdict {
    /// True when the result is stored on the controller.
    pub fn stored(self) -> bool {
        matches!(self, Verdict::Accepted | Verdict::Duplicate)
    }
}

/// The controller's word on one result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultVerdict {
    /// Which result.
    pub key: ResultKey,
    /// What became of it.
    pub verdict: Verdict,
    /// Why it was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The controller's acknowledgement of a batch: one verdict per result, in the batch's order. A result
/// missing from it (the controller could not decide, for example while its database is unavailable) is
/// sent again later.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultAck {
    /// The verdicts.
    pub verdicts: Vec<ResultVerdict>,
}

impl ResultAck {
    /// The keys stored durably (now or before).
    pub fn stored(&self) -> impl Iterator<Item = &ResultKey> {
        self.verdicts
            .iter()
            .filter(|v| v.verdict.stored())
            .map(|v| &v.key)
    }

    /// The refused keys with their reasons.
    pub fn refused(&self) -> impl Iterator<Item = (&ResultKey, &str)> {
        self.verdicts
            .iter()
            .filter(|v| v.verdict == Verdict::Refused)
            .map(|v| (&v.key, v.reason.as_deref().unwrap_or("refused")))
    }
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
