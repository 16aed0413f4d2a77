//! `provision` tasks: write an operating system image to the node's disk, prepare the installed
//! system so that it comes up as this node, and reboot into it (`docs/PROVISIONING.md`).
//!
//! 1. The disk is chosen from this machine's disks by the task's root device hints
//!    ([`crate::root_device`]); the disk the running system lives on is never written.
//! 2. The image streams from the controller (a served file, its SHA-256 sealed into the signed list)
//!    or an `https://` URL (with the task's checksum) straight onto the disk ([`crate::imaging`]):
//!    read once, hashed as it arrives, never held whole. A failure after writing started wipes the
//!    disk's signatures, so it cannot boot half an image.
//! 3. The installed system is prepared ([`crate::installed`]): the GPT's backup header moved to the
//!    disk's end, the last partition grown when asked; on its root file system the agent (binary,
//!    enabled unit, configuration naming the same controllers, key and TLS pin), the host name, the
//!    network and SSH keys; the node's key and state are copied last, just before the reboot.
//! 4. The boot target: a UEFI boot entry first in the order, or on BIOS the disk itself; and the
//!    controller is asked to boot the node from its disk from now on (its BMC when it has one, and its
//!    boot listener's answer).
//! 5. The reboot, as `reboot` tasks do it: the result waits for the agent of the installed system,
//!    which resumes this very attempt from the state it was given, with the same key.

mod params;
mod source;
mod system;

pub use params::{ImageSource, ProvisionParams};

use super::reboot::Reboot;
use super::{AttemptContext, BoxFuture, Outcome, ParamError, Prepared, RetryPolicy, TaskExecutor};
use plinth_common::wire::{ResultStatus, TaskSpec};
use serde_json::json;
use std::time::Duration;

/// The policy of a provision task that sets none (Fuel's `system_provision`: an hour).
pub const DEFAULTS: RetryPolicy = RetryPolicy {
    attempts: 1,
    interval: Duration::from_secs(10),
    timeout: Duration::from_secs(3600),
};

/// The key of the details a provision task's results carry (the controller reads where the node is in
/// its life from them).
pub use plinth_common::wire::PROVISION_DETAILS_KEY as DETAILS_KEY;

/// Reads a provision task's parameters.
pub fn prepare(task: &TaskSpec) -> Result<Prepared, ParamError> {
    let params = params::read(task)?;
    let policy = RetryPolicy::from_task(task, DEFAULTS)?;
    Ok(Prepared {
        policy,
        executor: Box::new(Provision {
            params,
            manifests: task.manifests.clone(),
            timeout: policy.timeout,
        }),
    })
}

/// A prepared provision task.
#[derive(Debug)]
pub struct Provision {
    params: ProvisionParams,
    /// The manifest digests the signed list sealed (the served image's).
    manifests: std::collections::BTreeMap<String, String>,
    timeout: Duration,
}

impl TaskExecutor for Provision {
    fn run<'a>(&'a self, ctx: &'a AttemptContext) -> BoxFuture<'a, Outcome> {
        Box::pin(self.attempt(ctx))
    }

    fn running_details(&self) -> serde_json::Value {
        json!({ DETAILS_KEY: { "image": self.params.image.name() } })
    }

    fn resumes_across_restart(&self) -> bool {
        true
    }
}

impl Provision {
    async fn attempt(&self, ctx: &AttemptContext) -> Outcome {
        let reboot = Reboot::new(self.timeout);
        if let Some(resumed) = reboot.resume_if_marked(ctx).await {
            return resumed;
        }
        let started = std::time::Instant::now();
        let disk = match system::choose_disk(self.params.hints.as_ref()) {
            Ok(d) => d,
            Err(message) => return Outcome::simple(ResultStatus::Failed, message),
        };
        tracing::warn!(task = %ctx.task_id, disk = %disk.path.display(), image = %self.params.image.name(), "writing an operating system image");
        let written =
            match source::write(ctx, &self.params.image, &self.manifests, &disk.path).await {
                Ok(w) => w,
                Err(message) => return Outcome::simple(ResultStatus::Failed, message),
            };
        let write_secs = started.elapsed().as_secs_f64();
        let prepared = match system::prepare(ctx, &self.params, &disk.path).await {
            Ok(p) => p,
            Err(message) => {
                return Outcome::simple(
                    ResultStatus::Failed,
                    format!(
                    "the image is on {} but the installed system could not be prepared: {message}",
                    disk.path.display()
                ),
                )
            }
        };
        let details = json!({
            DETAILS_KEY: {
                "image": self.params.image.name(),
                "sha256": written.sha256,
                "format": written.format,
                "disk": disk.path.display().to_string(),
                "disk_serial": disk.serial,
                "bytes_written": written.written,
                "bytes_zeroed": written.zeroed,
                "write_seconds": write_secs,
                "prepare": prepared.report,
            }
        });
        let mut mounted = Some(prepared.root);
        let state_dir = ctx.services.state_dir.clone();
        let before: super::reboot::BeforeReboot<'_> = Box::new(move |_marker| {
            let root = mounted
                .take()
                .ok_or("the installed system is not mounted")?;
            system::carry_state(&state_dir, root)
        });
        reboot.reboot(ctx, details, Some(before)).await
    }
}
