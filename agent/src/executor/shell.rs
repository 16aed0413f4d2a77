//! `shell` tasks: `cmd` run with `/bin/sh -c` in its own process group, in `cwd` (relative to the work
//! directory; default the work directory) with `env` added to the agent's environment. At the timeout, or
//! when the agent stops, the whole process group gets SIGTERM and, after the grace, SIGKILL, so nothing the
//! command started outlives it. Standard output and error are captured, keeping the last
//! [`plinth_common::wire::OUTPUT_TAIL_BYTES`] of each (see [`super::process`]).
//!
//! Parameters: `cmd` (string, required), `cwd` (string), `env` (map of scalars), `timeout` (seconds,
//! default 300), `retries` (default 2), `interval` (seconds between attempts, default 2).

use super::process::{self, describe_status, End};
use super::{AttemptContext, BoxFuture, Outcome, ParamError, Prepared, RetryPolicy, TaskExecutor};
use plinth_common::wire::{ResultStatus, TaskSpec};
use std::path::PathBuf;
use std::time::Duration;

/// The policy of a shell task that sets none.
pub const DEFAULTS: RetryPolicy = RetryPolicy {
    attempts: 3,
    interval: Duration::from_secs(2),
    timeout: Duration::from_secs(300),
};

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
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        ctx.set_task_env(&mut command);
        let finished = match process::run(command, ctx, self.timeout).await {
            Ok(f) => f,
            Err(e) => {
                return Outcome::simple(
                    ResultStatus::Failed,
                    format!("cannot start {SHELL} in {}: {e}", cwd.display()),
                )
            }
        };
        let (status, message) = match &finished.end {
            End::Exited(s) if s.success() => (ResultStatus::Succeeded, describe_status(*s)),
            End::Exited(s) => (ResultStatus::Failed, describe_status(*s)),
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
            exit_code: finished.exit_code(),
            stdout_tail: finished.stdout.text(),
            stderr_tail: finished.stderr.text(),
            message,
            details: finished.output_details(),
        }
    }
}

#[cfg(test)]
mod tests;
