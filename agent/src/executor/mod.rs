//! Running one attempt of one task. Each task type is one module that turns the task's parameters into a
//! [`TaskExecutor`]; [`prepare`] picks the module by the task's kind. Adding a type means adding its module
//! and its line in [`prepare`].
//!
//! | module | kinds |
//! |---|---|
//! | [`shell`] | `shell` |
//! | [`puppet`] | `puppet` |
//! | [`upload_file`] | `upload_file` |
//! | [`copy_files`] | `copy_files` |
//! | [`sync`] | `sync` |
//! | [`reboot`] | `reboot` |
//! | [`boot_device`] | `boot_device` |
//! | [`move_to_bootstrap`] | `move_to_bootstrap` |
//! | [`provision`] | `provision` |
//! | [`erase_node`] | `erase_node` |
//! | [`check_hardware`] | `check_hardware` |
//! | [`noop`] | `skipped`, `stage`, `group`, and every kind but `puppet` in a no-op deployment |
//!
//! Helpers: [`process`] (a command held by the agent's tracker, with timeout and capture), [`output`]
//! (bounded output tails), [`policy`] (timeout, retries, interval), [`params`] (reading parameters),
//! [`services`] (what the agent lends executors: state directory, file source, journal), [`placement`]
//! (writing files atomically with mode and owner), [`transfer`] (pulling a served file into place).

pub mod boot_device;
pub mod check_hardware;
pub mod copy_files;
pub mod erase_node;
pub mod move_to_bootstrap;
pub mod nofollow;
pub mod noop;
pub mod output;
pub mod params;
pub mod placement;
pub mod policy;
pub mod process;
pub mod provision;
pub mod puppet;
pub mod reboot;
pub mod services;
pub mod shell;
pub mod sync;
pub mod transfer;
pub mod upload_file;

pub use policy::RetryPolicy;
pub use services::{FileSource, RemoteFile, Services};

use crate::shutdown::Shutdown;
use plinth_common::wire::{ResultStatus, TaskKind, TaskSpec};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// A boxed future, as task executors return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A task's parameters cannot be used; the task fails without running.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("task {task}: parameter `{field}`: {message}")]
pub struct ParamError {
    /// The task id.
    pub task: String,
    /// The parameter.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// Everything an attempt needs besides its parameters.
#[derive(Debug, Clone)]
pub struct AttemptContext {
    /// The working directory of tasks (relative `cwd` parameters are under it).
    pub work_dir: PathBuf,
    /// Grace between SIGTERM and SIGKILL when a process group is stopped.
    pub kill_grace: Duration,
    /// The deployment.
    pub deployment_id: u64,
    /// The list's revision.
    pub revision: u64,
    /// The task id.
    pub task_id: String,
    /// The attempt, from 1.
    pub attempt: u32,
    /// The agent's stop signal: an attempt that sees it stops its work and ends `interrupted`.
    pub shutdown: Shutdown,
    /// The list is a no-op deployment: puppet runs with `--noop`, other kinds do not run.
    pub noop: bool,
    /// What the agent lends executors.
    pub services: Arc<Services>,
}

impl AttemptContext {
    /// Which attempt this is, as the process tracker records it.
    pub fn attempt_key(&self) -> crate::tracking::AttemptKey {
        crate::tracking::AttemptKey {
            deployment_id: self.deployment_id,
            revision: self.revision,
            task_id: self.task_id.clone(),
            attempt: self.attempt,
        }
    }

    /// Sets `PLINTH_DEPLOYMENT_ID`, `PLINTH_REVISION`, `PLINTH_TASK_ID` and `PLINTH_ATTEMPT` on a command.
    pub fn set_task_env(&self, command: &mut tokio::process::Command) {
        command
            .env("PLINTH_DEPLOYMENT_ID", self.deployment_id.to_string())
            .env("PLINTH_REVISION", self.revision.to_string())
            .env("PLINTH_TASK_ID", &self.task_id)
            .env("PLINTH_ATTEMPT", self.attempt.to_string());
    }
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// `succeeded`, `failed`, `timed_out`, `interrupted` or `skipped`; `running` means the attempt
    /// goes on across a stop of the agent (a reboot): nothing is recorded and the attempt resumes on the
    /// next start.
    pub status: ResultStatus,
    /// The process exit code, when a process exited.
    pub exit_code: Option<i32>,
    /// The tail of standard output.
    pub stdout_tail: String,
    /// The tail of standard error.
    pub stderr_tail: String,
    /// A human explanation.
    pub message: String,
    /// Structured details.
    pub details: serde_json::Value,
}

impl Outcome {
    /// An outcome with only a status and a message.
    pub fn simple(status: ResultStatus, message: impl Into<String>) -> Outcome {
        Outcome {
            status,
            exit_code: None,
            stdout_tail: String::new(),
            stderr_tail: String::new(),
            message: message.into(),
            details: serde_json::Value::Null,
        }
    }
}

/// One task type's way of running an attempt.
pub trait TaskExecutor: Send + Sync {
    /// Runs one attempt. Must end promptly with `interrupted` when `ctx.shutdown` fires.
    fn run<'a>(&'a self, ctx: &'a AttemptContext) -> BoxFuture<'a, Outcome>;

    /// False for types that do nothing on the node: no `running` record precedes their result.
    fn does_work(&self) -> bool {
        true
    }

    /// Details the attempt's `running` report carries (a `provision` task marks its node as being
    /// provisioned with them).
    fn running_details(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// True when an attempt that was running when the agent stopped goes on after a restart instead of
    /// being reported interrupted (a reboot: the agent stopping is part of the attempt).
    fn resumes_across_restart(&self) -> bool {
        false
    }
}

/// A task ready to run: its executor and its retry policy.
pub struct Prepared {
    /// Attempts, interval and timeout.
    pub policy: RetryPolicy,
    /// The type's executor.
    pub executor: Box<dyn TaskExecutor>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("policy", &self.policy)
            .finish()
    }
}

/// Reads a task's parameters with its type's module. In a no-op deployment (`noop`) puppet runs with
/// `--noop` and every other kind is reported skipped without running (its parameters are still checked).
pub fn prepare(task: &TaskSpec, noop: bool) -> Result<Prepared, ParamError> {
    let prepared = match task.kind {
        TaskKind::Shell => shell::prepare(task)?,
        TaskKind::Puppet => return puppet::prepare(task),
        TaskKind::UploadFile => upload_file::prepare(task)?,
        TaskKind::CopyFiles => copy_files::prepare(task)?,
        TaskKind::Sync => sync::prepare(task)?,
        TaskKind::Reboot => reboot::prepare(task)?,
        TaskKind::BootDevice => boot_device::prepare(task)?,
        TaskKind::MoveToBootstrap => move_to_bootstrap::prepare(task)?,
        TaskKind::Provision => provision::prepare(task)?,
        TaskKind::EraseNode => erase_node::prepare(task)?,
        TaskKind::CheckHardware => check_hardware::prepare(task)?,
        TaskKind::Skipped | TaskKind::Stage | TaskKind::Group => return noop::prepare(task),
    };
    if noop {
        return Ok(noop::dry_run(task));
    }
    Ok(prepared)
}

/// The wire name of a task kind (`upload_file`, ...).
pub fn kind_name(kind: TaskKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{kind:?}"))
}
