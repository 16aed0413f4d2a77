//! `puppet` tasks: `puppet apply` of a manifest with Fuel's parameters, judged by its detailed exit code
//! and by the run summary this run wrote.
//!
//! Parameters: `puppet_manifest` (path, required; relative paths are under `cwd`), `puppet_modules`
//! (the module path, `:`-separated), `cwd` (relative to the work directory; default the work
//! directory), `puppet_debug` (bool), `timeout` (seconds, default 5400), `retries` (default 2),
//! `interval` (default 2).
//!
//! The command is `puppet apply --detailed-exitcodes --no-report --color=false --logdest console
//! --logdest <log> --lastrunfile <summary> [--modulepath M] [--noop] [--debug] <manifest>`, in its own
//! process group (see [`super::process`]). The log and the summary go to `<state_dir>/puppet/<task>.log`
//! and `<task>.summary.yaml`, both removed before each attempt. Exit codes 0 (no changes) and 2
//! (changes) succeed; 1 (the run failed), 4 (failures) and 6 (changes and failures) fail, like any other.
//! A run succeeds only when its exit code says so **and** the summary exists, was written by this run
//! (its `time.last_run` is not before the attempt started) and counts no failed resource and no failed
//! restart. The summary is reported in the result's `details.summary`.

mod summary;

pub use summary::RunSummary;

use super::params;
use super::process::{self, describe_status, End, Finished};
use super::{AttemptContext, BoxFuture, Outcome, ParamError, Prepared, RetryPolicy, TaskExecutor};
use plinth_common::wire::{ResultStatus, TaskSpec};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The policy of a puppet task that sets none (Fuel's: 90 minutes, 2 retries).
pub const DEFAULTS: RetryPolicy = RetryPolicy {
    attempts: 3,
    interval: Duration::from_secs(2),
    timeout: Duration::from_secs(5400),
};

/// The directory under the state directory that holds puppet logs and summaries.
pub const PUPPET_DIR: &str = "puppet";

/// Reads a puppet task's parameters.
pub fn prepare(task: &TaskSpec) -> Result<Prepared, ParamError> {
    let manifest = PathBuf::from(params::required_string(task, "puppet_manifest")?);
    let modules = params::optional_string(task, "puppet_modules")?;
    let cwd = params::optional_string(task, "cwd")?.map(PathBuf::from);
    let debug = params::optional_bool(task, "puppet_debug")?.unwrap_or(false);
    let policy = RetryPolicy::from_task(task, DEFAULTS)?;
    Ok(Prepared {
        policy,
        executor: Box::new(PuppetTask {
            manifest,
            modules,
            cwd,
            debug,
            timeout: policy.timeout,
        }),
    })
}

/// A prepared puppet task.
#[derive(Debug, Clone)]
pub struct PuppetTask {
    manifest: PathBuf,
    modules: Option<String>,
    cwd: Option<PathBuf>,
    debug: bool,
    timeout: Duration,
}

impl TaskExecutor for PuppetTask {
    fn run<'a>(&'a self, ctx: &'a AttemptContext) -> BoxFuture<'a, Outcome> {
        Box::pin(self.run_attempt(ctx))
    }
}

/// A task id made safe as a file name.
pub fn file_stem(task_id: &str) -> String {
    let stem: String = task_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match stem.trim_start_matches('.') {
        "" => "task".to_string(),
        s => s.to_string(),
    }
}

impl PuppetTask {
    /// The command line, without the program.
    fn arguments(&self, log: &Path, summary: &Path, noop: bool) -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> = [
            "apply",
            "--detailed-exitcodes",
            "--no-report",
            "--color=false",
            "--logdest",
            "console",
            "--logdest",
        ]
        .iter()
        .map(Into::into)
        .collect();
        args.push(log.into());
        args.push("--lastrunfile".into());
        args.push(summary.into());
        if let Some(m) = &self.modules {
            args.push("--modulepath".into());
            args.push(m.into());
        }
        if noop {
            args.push("--noop".into());
        }
        if self.debug {
            args.push("--debug".into());
        }
        args.push(self.manifest.as_os_str().into());
        args
    }

    async fn run_attempt(&self, ctx: &AttemptContext) -> Outcome {
        let failed = |message: String| Outcome::simple(ResultStatus::Failed, message);
        if let Err(e) = crate::fsutil::ensure_dir(&ctx.work_dir, 0o755) {
            return failed(format!(
                "cannot create work directory {}: {e}",
                ctx.work_dir.display()
            ));
        }
        let cwd = match &self.cwd {
            Some(dir) => ctx.work_dir.join(dir),
            None => ctx.work_dir.clone(),
        };
        let dir = ctx.services.state_dir.join(PUPPET_DIR);
        if let Err(e) = crate::fsutil::ensure_dir(&dir, 0o700) {
            return failed(format!("cannot create {}: {e}", dir.display()));
        }
        let stem = file_stem(&ctx.task_id);
        let log = dir.join(format!("{stem}.log"));
        let summary_path = dir.join(format!("{stem}.summary.yaml"));
        for old in [&log, &summary_path] {
            if let Err(e) = std::fs::remove_file(old) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    return failed(format!("cannot remove the old {}: {e}", old.display()));
                }
            }
        }

        let mut command = tokio::process::Command::new(&ctx.services.puppet);
        command
            .args(self.arguments(&log, &summary_path, ctx.noop))
            .current_dir(&cwd);
        if std::env::var_os("HOME").is_none() {
            // Under systemd a root service has no HOME; puppet and facter want one.
            command.env("HOME", "/root");
        }
        ctx.set_task_env(&mut command);
        let started_secs = now_secs();
        let finished = match process::run(command, ctx, self.timeout).await {
            Ok(f) => f,
            Err(e) => {
                return failed(format!(
                    "cannot start {} in {}: {e}",
                    ctx.services.puppet.display(),
                    cwd.display()
                ))
            }
        };
        let summary = match std::fs::read_to_string(&summary_path) {
            Ok(text) => Some(RunSummary::parse(&text).map_err(|e| {
                format!(
                    "the run summary {} cannot be read: {e}",
                    summary_path.display()
                )
            })),
            Err(_) => None,
        };
        self.judge(ctx, finished, summary, started_secs, &log)
    }

    /// The outcome from the exit and the summary.
    fn judge(
        &self,
        ctx: &AttemptContext,
        finished: Finished,
        summary: Option<Result<RunSummary, String>>,
        started_secs: i64,
        log: &Path,
    ) -> Outcome {
        let fresh = match &summary {
            Some(Ok(s)) => s.written_since(started_secs),
            _ => false,
        };
        let mut details = finished.output_details();
        details["noop"] = ctx.noop.into();
        details["log_file"] = log.display().to_string().into();
        details["summary_written_by_this_run"] = fresh.into();
        if let Some(Ok(s)) = &summary {
            details["summary"] = s.to_json();
        }
        let last_error = last_error_line(&finished.stderr.text(), &finished.stdout.text());
        let (status, message) = match &finished.end {
            End::TimedOut => (
                ResultStatus::TimedOut,
                format!(
                    "puppet apply timed out after {}s; its process group was stopped",
                    self.timeout.as_secs_f64()
                ),
            ),
            End::Stopped => (
                ResultStatus::Interrupted,
                "the agent stopped while puppet ran; its process group was stopped".into(),
            ),
            End::Lost(e) => (
                ResultStatus::Failed,
                format!("lost track of puppet: {e}; its process group was stopped"),
            ),
            End::Exited(status) => match (status.code(), &summary) {
                (Some(code @ (0 | 2)), Some(Ok(s))) if fresh && s.failures() == 0 => {
                    (ResultStatus::Succeeded, success_message(code, s, ctx.noop))
                }
                (Some(code @ (0 | 2)), Some(Ok(s))) if fresh => (
                    ResultStatus::Failed,
                    format!(
                        "puppet apply exited with code {code} but its summary counts {} failed \
                         resource(s) and {} failed restart(s)",
                        s.failed, s.failed_to_restart
                    ),
                ),
                (Some(code @ (0 | 2)), Some(Err(e))) => (
                    ResultStatus::Failed,
                    format!("puppet apply exited with code {code} but {e}"),
                ),
                (Some(code @ (0 | 2)), _) => (
                    ResultStatus::Failed,
                    format!(
                        "puppet apply exited with code {code} but this run wrote no run summary"
                    ),
                ),
                (Some(code), _) => {
                    let mut m = format!("puppet apply exited with code {code} ({})", meaning(code));
                    if let Some(Ok(s)) = &summary {
                        if fresh {
                            m.push_str(&format!(
                                ": {} changed, {} failed, {} failed to restart",
                                s.changed, s.failed, s.failed_to_restart
                            ));
                        }
                    }
                    if let Some(line) = &last_error {
                        m.push_str(&format!("; last error: {line}"));
                    }
                    (ResultStatus::Failed, m)
                }
                (None, _) => (
                    ResultStatus::Failed,
                    format!("puppet apply {}", describe_status(*status)),
                ),
            },
        };
        Outcome {
            status,
            exit_code: finished.exit_code(),
            stdout_tail: finished.stdout.text(),
            stderr_tail: finished.stderr.text(),
            message,
            details,
        }
    }
}

/// What a detailed exit code means.
fn meaning(code: i32) -> &'static str {
    match code {
        1 => "the run failed",
        4 => "some resources failed",
        6 => "changes, and some resources failed",
        _ => "not a detailed exit code puppet documents",
    }
}

fn success_message(code: i32, s: &RunSummary, noop: bool) -> String {
    let time = s
        .time_total
        .map(|t| format!(" in {t:.2}s"))
        .unwrap_or_default();
    if noop {
        format!(
            "no-op run: {} resource(s) out of sync would change, of {}{time}",
            s.out_of_sync, s.total
        )
    } else if code == 2 || s.changed > 0 {
        format!(
            "puppet applied the manifest: {} resource(s) changed, of {}{time}",
            s.changed, s.total
        )
    } else {
        format!(
            "puppet applied the manifest: nothing to change, {} resource(s) in sync{time}",
            s.total
        )
    }
}

/// The last `Error:` line of puppet's output (standard error first), without facter's noise.
fn last_error_line(stderr: &str, stdout: &str) -> Option<String> {
    let last = |text: &str| {
        text.lines()
            .rev()
            .find(|l| l.starts_with("Error:") && !l.starts_with("Error: Facter"))
            .map(|l| l.chars().take(500).collect::<String>())
    };
    last(stderr).or_else(|| last(stdout))
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
