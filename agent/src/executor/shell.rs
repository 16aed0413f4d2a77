//! `shell` tasks: `cmd` run with `/bin/sh -c` in its own process group, in `cwd` (relative to the work
//! directory; default the work directory) with `env` added to the agent's environment. At the timeout, or
//! when the agent stops, the whole process group gets SIGTERM and, after the grace, SIGKILL, so nothing the
//! command started outlives it. Standard output and error are captured, keeping the last
//! [`OUTPUT_TAIL_BYTES`] of each.
//!
//! Parameters: `cmd` (string, required), `cwd` (string), `env` (map of scalars), `timeout` (seconds,
//! default 300), `retries` (default 2), `interval` (seconds between attempts, default 2).

use super::output::{capture_into, Tail};
use super::{AttemptContext, BoxFuture, Outcome, ParamError, Prepared, RetryPolicy, TaskExecutor};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use plinth_common::wire::{ResultStatus, TaskSpec, OUTPUT_TAIL_BYTES};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The policy of a shell task that sets none.
pub const DEFAULTS: RetryPolicy = RetryPolicy {
    attempts: 3,
    interval: Duration::from_secs(2),
    timeout: Duration::from_secs(300),
};

/// How long output is still read after the command ended (a daemon it started may hold the pipes).
pub const OUTPUT_DRAIN: Duration = Duration::from_secs(2);

/// The shell that runs commands.
pub const SHELL: &str = "/bin/sh";

/// Reads a shell task's parameters.
pub fn prepare(task: &TaskSpec) -> Result<Prepared, ParamError> {
    let err = |field: &str, message: &str| ParamError {
        task: task.id.clone(),
        field: field.to_string(),
        message: message.to_string(),
    };
    let cmd = match task.parameters.get("cmd") {
        Some(serde_json::Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(serde_json::Value::String(_)) => return Err(err("cmd", "is empty")),
        Some(_) => return Err(err("cmd", "must be a string")),
        None => return Err(err("cmd", "is required for shell tasks")),
    };
    let cwd = match task.parameters.get("cwd") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) if !s.is_empty() => Some(PathBuf::from(s)),
        Some(_) => return Err(err("cwd", "must be a non-empty string")),
    };
    let mut env = Vec::new();
    match task.parameters.get("env") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::Object(map)) => {
            for (k, v) in map {
                if k.is_empty() || k.contains('=') || k.contains('\0') {
                    return Err(err("env", &format!("{k:?} is not a variable name")));
                }
                let value = match v {
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Number(n) => n.to_string(),
                    serde_json::Value::Bool(b) => b.to_string(),
                    _ => {
                        return Err(err(
                            "env",
                            &format!("value of {k} must be a string, number or boolean"),
                        ))
                    }
                };
                if value.contains('\0') {
                    return Err(err("env", &format!("value of {k} contains a NUL byte")));
                }
                env.push((k.clone(), value));
            }
        }
        Some(_) => return Err(err("env", "must be a map of names to values")),
    }
    if cmd.contains('\0') {
        return Err(err("cmd", "contains a NUL byte"));
    }
    let policy = RetryPolicy::from_task(task, DEFAULTS)?;
    Ok(Prepared {
        policy,
        executor: Box::new(ShellTask {
            cmd,
            cwd,
            env,
            timeout: policy.timeout,
        }),
    })
}

/// A prepared shell task.
#[derive(Debug, Clone)]
pub struct ShellTask {
    cmd: String,
    cwd: Option<PathBuf>,
    env: Vec<(String, String)>,
    timeout: Duration,
}

/// How the wait for the command ended.
enum End {
    Exited(ExitStatus),
    TimedOut,
    Stopped,
    Lost(std::io::Error),
}

impl TaskExecutor for ShellTask {
    fn run<'a>(&'a self, ctx: &'a AttemptContext) -> BoxFuture<'a, Outcome> {
        Box::pin(self.run_attempt(ctx))
    }
}

impl ShellTask {
    async fn run_attempt(&self, ctx: &AttemptContext) -> Outcome {
        if let Err(e) = crate::fsutil::ensure_dir(&ctx.work_dir, 0o755) {
            return Outcome::simple(
                ResultStatus::Failed,
                format!(
                    "cannot create work directory {}: {e}",
                    ctx.work_dir.display()
                ),
            );
        }
        let cwd = match &self.cwd {
            Some(dir) => ctx.work_dir.join(dir),
            None => ctx.work_dir.clone(),
        };
        let mut command = tokio::process::Command::new(SHELL);
        command
            .arg("-c")
            .arg(&self.cmd)
            .current_dir(&cwd)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("PLINTH_DEPLOYMENT_ID", ctx.deployment_id.to_string())
            .env("PLINTH_REVISION", ctx.revision.to_string())
            .env("PLINTH_TASK_ID", &ctx.task_id)
            .env("PLINTH_ATTEMPT", ctx.attempt.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                return Outcome::simple(
                    ResultStatus::Failed,
                    format!("cannot start {SHELL} in {}: {e}", cwd.display()),
                )
            }
        };
        let group = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        let stdout = Arc::new(Mutex::new(Tail::new(OUTPUT_TAIL_BYTES)));
        let stderr = Arc::new(Mutex::new(Tail::new(OUTPUT_TAIL_BYTES)));
        let readers = [
            child
                .stdout
                .take()
                .map(|r| tokio::spawn(capture_into(r, stdout.clone()))),
            child
                .stderr
                .take()
                .map(|r| tokio::spawn(capture_into(r, stderr.clone()))),
        ];

        let end = tokio::select! {
            r = child.wait() => match r {
                Ok(status) => End::Exited(status),
                Err(e) => End::Lost(e),
            },
            _ = tokio::time::sleep(self.timeout) => End::TimedOut,
            _ = ctx.shutdown.wait() => End::Stopped,
        };
        let status = match &end {
            End::Exited(status) => Some(*status),
            End::TimedOut | End::Stopped | End::Lost(_) => match group {
                Some(group) => stop_group(group, &mut child, ctx.kill_grace).await,
                None => child.wait().await.ok(),
            },
        };

        // The command has ended; read what is left of its output, but do not wait on a daemon it left
        // holding the pipes.
        let drain_until = Instant::now() + OUTPUT_DRAIN;
        for reader in readers.into_iter().flatten() {
            let abort = reader.abort_handle();
            if tokio::time::timeout_at(drain_until, reader).await.is_err() {
                abort.abort();
            }
        }
        let (stdout, stderr) = (snapshot(&stdout), snapshot(&stderr));

        let exit_code = status.and_then(|s| s.code());
        let (status, message) = match end {
            End::Exited(s) => describe_exit(s),
            End::TimedOut => (
                ResultStatus::TimedOut,
                format!(
                    "timed out after {}s; its process group was stopped",
                    self.timeout.as_secs_f64()
                ),
            ),
            End::Stopped => (
                ResultStatus::Interrupted,
                "the agent stopped while the command ran; its process group was stopped".into(),
            ),
            End::Lost(e) => (
                ResultStatus::Failed,
                format!("lost track of the command: {e}; its process group was stopped"),
            ),
        };
        Outcome {
            status,
            exit_code,
            stdout_tail: stdout.text(),
            stderr_tail: stderr.text(),
            message,
            details: serde_json::json!({
                "stdout_bytes": stdout.total(),
                "stderr_bytes": stderr.total(),
                "output_truncated": stdout.truncated() || stderr.truncated(),
            }),
        }
    }
}

/// The status and message of a command that ended by itself.
fn describe_exit(status: ExitStatus) -> (ResultStatus, String) {
    match (status.code(), status.signal()) {
        (Some(0), _) => (ResultStatus::Succeeded, "exited with code 0".into()),
        (Some(code), _) => (ResultStatus::Failed, format!("exited with code {code}")),
        (None, Some(sig)) => {
            let name = Signal::try_from(sig)
                .map(|s| s.as_str().to_string())
                .unwrap_or_else(|_| sig.to_string());
            (ResultStatus::Failed, format!("killed by signal {name}"))
        }
        (None, None) => (ResultStatus::Failed, format!("ended with {status}")),
    }
}

/// SIGTERM to the whole group, then SIGKILL once the grace is over (or at once when the group is already
/// gone). Returns the shell's exit status.
async fn stop_group(
    group: Pid,
    child: &mut tokio::process::Child,
    grace: Duration,
) -> Option<ExitStatus> {
    let _ = killpg(group, Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    let mut status = None;
    loop {
        if status.is_none() {
            if let Ok(Some(s)) = child.try_wait() {
                status = Some(s);
            }
        }
        // Signal 0 probes the group: an error means no process is left in it.
        if status.is_some() && killpg(group, None).is_err() {
            return status;
        }
        if Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = killpg(group, Signal::SIGKILL);
    match status {
        Some(s) => Some(s),
        None => child.wait().await.ok(),
    }
}

fn snapshot(tail: &Arc<Mutex<Tail>>) -> Tail {
    match tail.lock() {
        Ok(t) => t.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

#[cfg(test)]
mod tests;
