//! `check_hardware` tasks: the node's hardware compared with an expected profile, in a strategy's
//! prepare phase (Airship's *prepare nodes*), so that a node that is not what its group expects fails
//! there, with every difference named, before anything is deployed on it.
//!
//! Parameters (each optional, at least one of the profile's; see docs/AIRSHIP.md, "Checking the
//! hardware"): `cpus` (logical CPUs), `memory_mb` (MiB the kernel reports), `disks` (a list of
//! `{size_gb, rotational}`, each matched to a distinct disk), `nics` (a list of `{speed_mbps, link_up}`,
//! each matched to a distinct physical NIC), `arch` (`uname -m`), and the policy's `timeout`,
//! `retries`, `interval`. Numbers are compared as `">= 4"`, `"< 64"`, `4`, ... ([`bound`]).
//!
//! | module | owns |
//! |---|---|
//! | [`bound`] | a comparison of whole numbers (`>= 4`) |
//! | [`profile`] | [`Profile::parse`]: the parameters, strictly ([`ProfileError`]) |
//! | [`assign`] | a maximum matching of expected items to distinct ones of the node |
//! | [`items`] | disks and NICs: what each lacks for an expectation, the matches and their messages |
//! | [`compare`] | [`compare()`]: the profile against the facts, every difference named ([`Verdict`]) |

pub mod assign;
pub mod bound;
pub mod compare;
pub mod items;
pub mod profile;

#[cfg(test)]
mod tests;

pub use compare::{compare, Verdict};
pub use profile::{Profile, ProfileError};

use super::{AttemptContext, BoxFuture, Outcome, ParamError, Prepared, RetryPolicy, TaskExecutor};
use plinth_common::wire::{ResultStatus, TaskSpec};
use std::time::Duration;

/// The policy of a check_hardware task that sets none: one attempt (the hardware does not change
/// between attempts), a minute to read the facts.
pub const DEFAULTS: RetryPolicy = RetryPolicy {
    attempts: 1,
    interval: Duration::from_secs(5),
    timeout: Duration::from_secs(60),
};

/// Reads a check_hardware task's parameters.
pub fn prepare(task: &TaskSpec) -> Result<Prepared, ParamError> {
    let profile = Profile::parse(&task.parameters).map_err(|e| ParamError {
        task: task.id.clone(),
        field: e.field,
        message: e.message,
    })?;
    Ok(Prepared {
        policy: RetryPolicy::from_task(task, DEFAULTS)?,
        executor: Box::new(CheckHardware { profile }),
    })
}

/// A prepared check_hardware task.
#[derive(Debug)]
pub struct CheckHardware {
    profile: Profile,
}

impl TaskExecutor for CheckHardware {
    fn run<'a>(&'a self, _ctx: &'a AttemptContext) -> BoxFuture<'a, Outcome> {
        let profile = self.profile.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || check(&profile))
                .await
                .unwrap_or_else(|e| {
                    Outcome::simple(
                        ResultStatus::Failed,
                        format!("the thread reading the hardware failed: {e}"),
                    )
                })
        })
    }
}

/// Reads this machine's facts and architecture and compares them with `profile`.
fn check(profile: &Profile) -> Outcome {
    let facts = crate::facts::collect(&crate::facts::Sources::live(
        crate::cmdline::KernelCmdline::default(),
    ));
    let verdict = compare(profile, &facts, machine_arch().as_deref());
    let status = if verdict.passed() {
        ResultStatus::Succeeded
    } else {
        ResultStatus::Failed
    };
    Outcome {
        details: verdict.details(),
        ..Outcome::simple(status, verdict.message())
    }
}

/// The machine's architecture as `uname -m` prints it; `None` when the kernel does not say.
pub fn machine_arch() -> Option<String> {
    nix::sys::utsname::uname()
        .ok()
        .map(|u| u.machine().to_string_lossy().into_owned())
        .filter(|m| !m.is_empty())
}
