//! `reboot` tasks: the agent reboots the node through systemd and reports the task done when it is up
//! again within the timeout.
//!
//! 1. The runner has journaled the attempt's `running` report; the agent waits (a few seconds at most)
//!    for the controller to acknowledge it, so the report is sent before the reboot. It is durable in
//!    the journal either way, and is sent after the reboot if it could not be before.
//! 2. A marker (`<state_dir>/reboot.json`: the attempt, the current boot id, when) is written with fsync.
//! 3. The reboot command runs (default `systemctl reboot`; agent setting `reboot_command`). A command
//!    that fails fails the attempt and removes the marker.
//! 4. systemd stops the agent (SIGTERM): the attempt is not reported interrupted; it stays open.
//! 5. On the next start the runner resumes the open attempt. A boot id that differs from the marker's
//!    means the node rebooted: the task succeeds (or is `timed_out` when the node came back after the
//!    timeout). The same boot id means the reboot has not happened (yet): the agent waits for it until
//!    the timeout. A reboot that never comes is `timed_out` at the timeout.
//!
//! Parameters: `timeout` (seconds, default 900), `retries` (default 0), `interval` (default 2).

use super::process::{self, describe_status, End};
use super::{AttemptContext, BoxFuture, Outcome, ParamError, Prepared, RetryPolicy, TaskExecutor};
use plinth_common::wire::{ResultStatus, TaskSpec};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The policy of a reboot task that sets none (Fuel's: 900 s).
pub const DEFAULTS: RetryPolicy = RetryPolicy {
    attempts: 1,
    interval: Duration::from_secs(2),
    timeout: Duration::from_secs(900),
};

/// The marker's file name in the state directory.
pub const MARKER_FILE: &str = "reboot.json";

/// The longest the reboot command itself may run.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// Reads a reboot task's parameters.
pub fn prepare(task: &TaskSpec) -> Result<Prepared, ParamError> {
    let policy = RetryPolicy::from_task(task, DEFAULTS)?;
    Ok(Prepared {
        policy,
        executor: Box::new(Reboot {
            timeout: policy.timeout,
        }),
    })
}

/// What the agent remembers across the reboot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    /// The deployment.
    pub deployment_id: u64,
    /// The list's revision.
    pub revision: u64,
    /// The task.
    pub task_id: String,
    /// The attempt.
    pub attempt: u32,
    /// The boot id before the reboot.
    pub boot_id: String,
    /// When the reboot was asked for, milliseconds since the Unix epoch.
    pub requested_at_ms: i64,
    /// Details the task's result carries once the node is back (a `provision` task's image and disk).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub details: serde_json::Value,
}

impl Marker {
    fn is_for(&self, ctx: &AttemptContext) -> bool {
        self.deployment_id == ctx.deployment_id
            && self.revision == ctx.revision
            && self.task_id == ctx.task_id
            && self.attempt == ctx.attempt
    }
}

/// Called with the written marker's path just before the reboot command runs (a `provision` task
/// copies the agent's state, marker included, into the system the node boots next); an error fails the
/// attempt.
pub type BeforeReboot<'a> = Box<dyn FnOnce(&Path) -> Result<(), String> + Send + 'a>;

/// A prepared reboot task; other types that end with a reboot (`provision`) use it too.
#[derive(Debug, Clone)]
pub struct Reboot {
    timeout: Duration,
}

impl TaskExecutor for Reboot {
    fn run<'a>(&'a self, ctx: &'a AttemptContext) -> BoxFuture<'a, Outcome> {
        Box::pin(self.run_attempt(ctx))
    }

    fn resumes_across_restart(&self) -> bool {
        true
    }
}

/// Reads the current boot id.
pub fn boot_id(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("cannot read the boot id from {}: {e}", path.display()))
}

/// Where an attempt's reboot marker is.
pub fn marker_path(ctx: &AttemptContext) -> PathBuf {
    ctx.services.state_dir.join(MARKER_FILE)
}

fn read_marker(path: &Path) -> Option<Marker> {
    let bytes = std::fs::read(path).ok()?;
    match serde_json::from_slice(&bytes) {
        Ok(m) => Some(m),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "unreadable reboot marker; ignored");
            None
        }
    }
}

fn remove_marker(path: &Path) {
    if let Err(e) = std::fs::remove_file(path) {
        if e.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!(path = %path.display(), error = %e, "cannot remove the reboot marker");
        }
    }
}

impl Reboot {
    /// A reboot that must be over within `timeout`.
    pub fn new(timeout: Duration) -> Reboot {
        Reboot { timeout }
    }

    async fn run_attempt(&self, ctx: &AttemptContext) -> Outcome {
        if let Some(resumed) = self.resume_if_marked(ctx).await {
            return resumed;
        }
        self.reboot(ctx, serde_json::Value::Null, None).await
    }

    /// When this attempt asked for a reboot before the agent stopped: its outcome (succeeded when the
    /// node rebooted since, with the marker's details; or the wait goes on). `None` when it did not.
    pub async fn resume_if_marked(&self, ctx: &AttemptContext) -> Option<Outcome> {
        let path = marker_path(ctx);
        let now_boot = match boot_id(&ctx.services.reboot.boot_id_path) {
            Ok(id) => id,
            Err(e) => return Some(Outcome::simple(ResultStatus::Failed, e)),
        };
        match read_marker(&path) {
            Some(m) if m.is_for(ctx) => Some(self.resume(ctx, &path, &m, &now_boot).await),
            Some(_) => {
                remove_marker(&path);
                None
            }
            None => None,
        }
    }

    /// Reboots the node now: waits for the `running` report's acknowledgement, writes the marker (with
    /// `details` for the result after the reboot), calls `before` with the marker's path, and runs the
    /// reboot command.
    pub async fn reboot(
        &self,
        ctx: &AttemptContext,
        details: serde_json::Value,
        before: Option<BeforeReboot<'_>>,
    ) -> Outcome {
        let path = marker_path(ctx);
        let now_boot = match boot_id(&ctx.services.reboot.boot_id_path) {
            Ok(id) => id,
            Err(e) => return Outcome::simple(ResultStatus::Failed, e),
        };
        self.wait_for_acknowledgement(ctx).await;
        if ctx.shutdown.is_triggered() {
            return Outcome::simple(
                ResultStatus::Interrupted,
                "the agent stopped before the reboot was asked for",
            );
        }
        let marker = Marker {
            deployment_id: ctx.deployment_id,
            revision: ctx.revision,
            task_id: ctx.task_id.clone(),
            attempt: ctx.attempt,
            boot_id: now_boot,
            requested_at_ms: crate::runner::now_ms(),
            details,
        };
        let bytes = match serde_json::to_vec(&marker) {
            Ok(b) => b,
            Err(e) => return Outcome::simple(ResultStatus::Failed, e.to_string()),
        };
        if let Err(e) = crate::fsutil::ensure_dir(&ctx.services.state_dir, 0o700)
            .and_then(|()| crate::fsutil::write_atomic(&path, &bytes, 0o600))
        {
            return Outcome::simple(
                ResultStatus::Failed,
                format!("cannot write the reboot marker {}: {e}", path.display()),
            );
        }
        if let Some(before) = before {
            if let Err(e) = before(&path) {
                remove_marker(&path);
                return Outcome::simple(ResultStatus::Failed, e);
            }
        }
        let command_line = &ctx.services.reboot.command;
        let Some((program, args)) = command_line.split_first() else {
            remove_marker(&path);
            return Outcome::simple(ResultStatus::Failed, "no reboot command is configured");
        };
        tracing::warn!(task = %ctx.task_id, command = ?command_line, "rebooting the node");
        let mut command = tokio::process::Command::new(program);
        command.args(args);
        ctx.set_task_env(&mut command);
        let started = Instant::now();
        let finished = match process::run(command, ctx, COMMAND_TIMEOUT).await {
            Ok(f) => f,
            Err(e) => {
                remove_marker(&path);
                return Outcome::simple(
                    ResultStatus::Failed,
                    format!("cannot start the reboot command {program}: {e}"),
                );
            }
        };
        let failure = match &finished.end {
            End::Exited(s) if s.success() => None,
            End::Exited(s) => Some(format!("the reboot command {}", describe_status(*s))),
            End::TimedOut => Some(format!(
                "the reboot command ran longer than {}s",
                COMMAND_TIMEOUT.as_secs()
            )),
            End::Lost(e) => Some(format!("lost track of the reboot command: {e}")),
            // systemd stops the agent while the command runs: the reboot is under way.
            End::Stopped => return rebooting(),
        };
        if let Some(message) = failure {
            remove_marker(&path);
            return Outcome {
                status: ResultStatus::Failed,
                exit_code: finished.exit_code(),
                stdout_tail: finished.stdout.text(),
                stderr_tail: finished.stderr.text(),
                message,
                details: finished.output_details(),
            };
        }
        let remaining = self.timeout.saturating_sub(started.elapsed());
        self.wait_for_reboot(ctx, &path, remaining).await
    }

    /// The attempt was open when the agent started: did the node reboot?
    async fn resume(
        &self,
        ctx: &AttemptContext,
        path: &Path,
        marker: &Marker,
        now_boot: &str,
    ) -> Outcome {
        let elapsed_ms = crate::runner::now_ms().saturating_sub(marker.requested_at_ms);
        let elapsed = Duration::from_millis(u64::try_from(elapsed_ms).unwrap_or(0));
        if now_boot != marker.boot_id {
            remove_marker(path);
            let mut outcome = if elapsed <= self.timeout {
                Outcome::simple(
                    ResultStatus::Succeeded,
                    format!(
                        "the node rebooted; the agent was back {:.0}s after the reboot was asked for",
                        elapsed.as_secs_f64()
                    ),
                )
            } else {
                Outcome::simple(
                    ResultStatus::TimedOut,
                    format!(
                        "the node rebooted but the agent was back only {:.0}s after the reboot was \
                         asked for, past the {}s timeout",
                        elapsed.as_secs_f64(),
                        self.timeout.as_secs_f64()
                    ),
                )
            };
            let mut details = serde_json::json!({
                "boot_id_before": marker.boot_id,
                "boot_id_after": now_boot,
                "seconds": elapsed.as_secs_f64(),
            });
            if let (Some(all), Some(more)) = (details.as_object_mut(), marker.details.as_object()) {
                all.extend(more.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            outcome.details = details;
            return outcome;
        }
        tracing::info!(task = %ctx.task_id, "the reboot has not happened yet; waiting for it");
        self.wait_for_reboot(ctx, path, self.timeout.saturating_sub(elapsed))
            .await
    }

    /// Waits for the agent to be stopped by the reboot, until `remaining` is over.
    async fn wait_for_reboot(
        &self,
        ctx: &AttemptContext,
        path: &Path,
        remaining: Duration,
    ) -> Outcome {
        if ctx.shutdown.sleep(remaining).await {
            remove_marker(path);
            Outcome::simple(
                ResultStatus::TimedOut,
                format!(
                    "the node did not reboot within {}s",
                    self.timeout.as_secs_f64()
                ),
            )
        } else {
            rebooting()
        }
    }

    /// Waits until the journal has nothing unacknowledged (the `running` report reached the
    /// controller), for at most the configured time.
    async fn wait_for_acknowledgement(&self, ctx: &AttemptContext) {
        let Some(journal) = &ctx.services.journal else {
            return;
        };
        let deadline = Instant::now() + ctx.services.reboot.report_wait;
        while journal.with(|j| j.unacked_count()) > 0 {
            if Instant::now() >= deadline {
                tracing::warn!(task = %ctx.task_id, "the controller has not acknowledged the reboot's report yet; it stays journaled and is sent after the reboot");
                return;
            }
            if !ctx.shutdown.sleep(Duration::from_millis(100)).await {
                return;
            }
        }
    }
}

/// The attempt goes on across the agent's stop.
fn rebooting() -> Outcome {
    Outcome::simple(
        ResultStatus::Running,
        "the node is rebooting; the task finishes when the agent is back",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::Services;
    use crate::shutdown;
    use std::sync::Arc;

    struct Fixture {
        dir: tempfile::TempDir,
        services: Arc<Services>,
    }

    impl Fixture {
        /// A node whose reboot command is `command` (run by `sh -c`).
        fn new(command: &str) -> Fixture {
            let dir = tempfile::tempdir().unwrap();
            let boot = dir.path().join("boot_id");
            std::fs::write(&boot, "boot-1\n").unwrap();
            let mut s = Services::local(dir.path().join("state"));
            s.reboot.boot_id_path = boot;
            s.reboot.command = vec!["/bin/sh".into(), "-c".into(), command.into()];
            Fixture {
                dir,
                services: Arc::new(s),
            }
        }

        fn ctx(&self, sd: shutdown::Shutdown) -> AttemptContext {
            AttemptContext {
                work_dir: self.dir.path().to_path_buf(),
                kill_grace: Duration::from_millis(200),
                deployment_id: 5,
                revision: 9,
                task_id: "reboot".into(),
                attempt: 1,
                shutdown: sd,
                noop: false,
                services: self.services.clone(),
            }
        }

        fn marker(&self) -> PathBuf {
            self.dir.path().join("state").join(MARKER_FILE)
        }
    }

    fn reboot(timeout: Duration) -> Reboot {
        Reboot { timeout }
    }

    #[tokio::test]
    async fn a_reboot_spans_the_agent_stop_and_succeeds_on_the_new_boot() {
        let f = Fixture::new("true");
        let r = reboot(Duration::from_secs(30));
        let (trigger, sd) = shutdown::channel();
        let ctx = f.ctx(sd);
        let marker = f.marker();
        let (o, _) = tokio::join!(r.run(&ctx), async {
            // systemd stops the agent once the reboot is under way.
            while !marker.exists() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            trigger.trigger();
        });
        assert_eq!(o.status, ResultStatus::Running, "{o:?}");
        let m: Marker = serde_json::from_slice(&std::fs::read(&marker).unwrap()).unwrap();
        assert_eq!(
            (m.revision, m.attempt, m.boot_id.as_str()),
            (9, 1, "boot-1")
        );

        // The node comes back with a new boot id; the agent resumes the attempt.
        std::fs::write(&f.services.reboot.boot_id_path, "boot-2\n").unwrap();
        let (_t, sd) = shutdown::channel();
        let o = r.run(&f.ctx(sd)).await;
        assert_eq!(o.status, ResultStatus::Succeeded, "{o:?}");
        assert!(o.message.contains("rebooted"), "{}", o.message);
        assert_eq!(o.details["boot_id_after"], "boot-2");
        assert!(!marker.exists());
    }

    #[tokio::test]
    async fn a_failing_reboot_command_fails_and_leaves_no_marker() {
        let f = Fixture::new("echo 'Failed to reboot: access denied' >&2; exit 1");
        let (_t, sd) = shutdown::channel();
        let o = reboot(Duration::from_secs(30)).run(&f.ctx(sd)).await;
        assert_eq!(o.status, ResultStatus::Failed, "{o:?}");
        assert_eq!(o.exit_code, Some(1));
        assert!(o.stderr_tail.contains("access denied"));
        assert!(!f.marker().exists());
    }

    #[tokio::test]
    async fn a_reboot_that_never_comes_times_out() {
        let f = Fixture::new("true");
        let (_t, sd) = shutdown::channel();
        let o = reboot(Duration::from_millis(500)).run(&f.ctx(sd)).await;
        assert_eq!(o.status, ResultStatus::TimedOut, "{o:?}");
        assert!(o.message.contains("did not reboot"), "{}", o.message);
        assert!(!f.marker().exists());
    }

    #[tokio::test]
    async fn a_restart_without_a_reboot_waits_out_the_rest_of_the_timeout() {
        let f = Fixture::new("true");
        let (_t, sd) = shutdown::channel();
        let ctx = f.ctx(sd);
        std::fs::create_dir_all(f.marker().parent().unwrap()).unwrap();
        let marker = Marker {
            deployment_id: 5,
            revision: 9,
            task_id: "reboot".into(),
            attempt: 1,
            boot_id: "boot-1".into(),
            requested_at_ms: crate::runner::now_ms() - 10_000,
            details: serde_json::Value::Null,
        };
        std::fs::write(f.marker(), serde_json::to_vec(&marker).unwrap()).unwrap();
        let started = Instant::now();
        let o = reboot(Duration::from_secs(11)).run(&ctx).await;
        assert_eq!(o.status, ResultStatus::TimedOut, "{o:?}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );

        // A marker of another task is stale: it is replaced by this attempt's.
        let other = Marker {
            task_id: "other".into(),
            ..marker
        };
        std::fs::write(f.marker(), serde_json::to_vec(&other).unwrap()).unwrap();
        let o = reboot(Duration::from_millis(300)).run(&ctx).await;
        assert_eq!(o.status, ResultStatus::TimedOut, "{o:?}");
        assert!(!f.marker().exists());
    }

    #[test]
    fn defaults() {
        let p = prepare(&crate::testutil::task(
            "r",
            plinth_common::wire::TaskKind::Reboot,
            serde_json::json!({}),
        ))
        .unwrap();
        assert_eq!(p.policy, DEFAULTS);
        assert!(p.executor.resumes_across_restart());
    }
}
