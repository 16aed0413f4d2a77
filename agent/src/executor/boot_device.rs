//! `boot_device` tasks: the controller sets where the node boots next, through its BMC when its
//! enrollment has one and in what its boot listener answers the node's network boot either way (Plinth's
//! step where Fuel's graphs call cobbler's `netboot enable|disable`).
//!
//! Parameters: `device` (`disk` or `pxe`, required), `once` (for the next boot only; default false),
//! `without_enrollment` (`fail`, the default, or `skip`: what to do on a node the controller cannot
//! boot because it is no enrolled server), `timeout`.

use super::params::{error, optional_bool, optional_string, required_string};
use super::services::BootError;
use super::{AttemptContext, BoxFuture, Outcome, ParamError, Prepared, RetryPolicy, TaskExecutor};
use plinth_common::wire::{BootRequest, NextBoot, ResultStatus, TaskSpec};
use std::time::Duration;

/// The policy of a boot_device task that sets none.
pub const DEFAULTS: RetryPolicy = RetryPolicy {
    attempts: 1,
    interval: Duration::from_secs(5),
    timeout: Duration::from_secs(180),
};

/// Reads a boot_device task's parameters.
pub fn prepare(task: &TaskSpec) -> Result<Prepared, ParamError> {
    let device = match required_string(task, "device")?.as_str() {
        "disk" => NextBoot::Disk,
        "pxe" | "network" => NextBoot::Pxe,
        other => {
            return Err(error(
                task,
                "device",
                format!("{other:?} is no boot device (disk or pxe)"),
            ))
        }
    };
    let once = optional_bool(task, "once")?.unwrap_or(false);
    let skip = without_enrollment(task)?;
    Ok(Prepared {
        policy: RetryPolicy::from_task(task, DEFAULTS)?,
        executor: Box::new(BootDevice {
            request: BootRequest { device, once },
            skip_unenrolled: skip,
        }),
    })
}

/// Reads `without_enrollment`: true for `skip`.
pub fn without_enrollment(task: &TaskSpec) -> Result<bool, ParamError> {
    match optional_string(task, "without_enrollment")?.as_deref() {
        None | Some("fail") => Ok(false),
        Some("skip") => Ok(true),
        Some(other) => Err(error(
            task,
            "without_enrollment",
            format!("{other:?} is neither fail nor skip"),
        )),
    }
}

/// A prepared boot_device task.
#[derive(Debug)]
pub struct BootDevice {
    request: BootRequest,
    skip_unenrolled: bool,
}

impl TaskExecutor for BootDevice {
    fn run<'a>(&'a self, ctx: &'a AttemptContext) -> BoxFuture<'a, Outcome> {
        Box::pin(async move { ask(ctx, &self.request, self.skip_unenrolled).await.0 })
    }
}

/// Asks the controller; the outcome, and whether the boot device was set.
pub async fn ask(
    ctx: &AttemptContext,
    request: &BootRequest,
    skip_unenrolled: bool,
) -> (Outcome, bool) {
    match ctx.services.node.boot(request).await {
        Ok(answer) => (
            Outcome::simple(ResultStatus::Succeeded, answer.message),
            true,
        ),
        Err(BootError::NotEnrolled(e)) if skip_unenrolled => (
            Outcome::simple(
                ResultStatus::Skipped,
                format!("{e} (without_enrollment: skip)"),
            ),
            false,
        ),
        Err(e) => (Outcome::simple(ResultStatus::Failed, e.to_string()), false),
    }
}
