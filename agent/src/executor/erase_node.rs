//! `erase_node` tasks (Fuel's name): the node's disks lose what made them bootable and recognisable,
//! on the way out of a cluster.
//!
//! Each disk's signatures are wiped ([`crate::imaging::wipe_signatures`]: both GPT headers, the first
//! and last MiB, the file system signatures at both ends of each partition); with `whole: true` the
//! whole disk is erased ([`crate::imaging::erase`]: discard where the device supports it, else zeros).
//! A disk the running system lives on is refused unless `allow_running_system: true`: the system keeps
//! running from memory for what is left of its list, and boots no more from that disk (Fuel's graphs
//! erase the running system's disks before the node reboots into its discovery image, and their
//! mapping says so).
//!
//! Parameters: `disks` (device names or paths; default every fixed disk: not removable, optical or
//! read-only), `whole` (default false), `allow_running_system` (default false), `timeout`.

use super::params::{error, optional_bool};
use super::{AttemptContext, BoxFuture, Outcome, ParamError, Prepared, RetryPolicy, TaskExecutor};
use crate::imaging;
use plinth_common::wire::{ResultStatus, TaskSpec};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

/// The policy of an erase_node task that sets none (Fuel's: 180 s).
pub const DEFAULTS: RetryPolicy = RetryPolicy {
    attempts: 1,
    interval: Duration::from_secs(5),
    timeout: Duration::from_secs(180),
};

/// Reads an erase_node task's parameters.
pub fn prepare(task: &TaskSpec) -> Result<Prepared, ParamError> {
    let disks = match task.parameters.get("disks") {
        None | Some(Value::Null) => None,
        Some(Value::Array(list)) => Some(
            list.iter()
                .map(|d| {
                    d.as_str()
                        .map(|s| {
                            if s.starts_with('/') {
                                PathBuf::from(s)
                            } else {
                                PathBuf::from("/dev").join(s)
                            }
                        })
                        .ok_or_else(|| error(task, "disks", "is a list of device names or paths"))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(_) => return Err(error(task, "disks", "is a list of device names or paths")),
    };
    Ok(Prepared {
        policy: RetryPolicy::from_task(task, DEFAULTS)?,
        executor: Box::new(EraseNode {
            disks,
            whole: optional_bool(task, "whole")?.unwrap_or(false),
            allow_running_system: optional_bool(task, "allow_running_system")?.unwrap_or(false),
        }),
    })
}

/// A prepared erase_node task.
#[derive(Debug)]
pub struct EraseNode {
    disks: Option<Vec<PathBuf>>,
    whole: bool,
    allow_running_system: bool,
}

impl TaskExecutor for EraseNode {
    fn run<'a>(&'a self, ctx: &'a AttemptContext) -> BoxFuture<'a, Outcome> {
        let disks = self.disks.clone();
        let (whole, allow) = (self.whole, self.allow_running_system);
        let cancel = ctx.shutdown.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || erase_all(disks, whole, allow, &cancel))
                .await
                .unwrap_or_else(|e| {
                    Outcome::simple(
                        ResultStatus::Failed,
                        format!("the erasing thread failed: {e}"),
                    )
                })
        })
    }
}

/// The node's fixed disks: not removable, optical, floppy, empty or read-only.
fn fixed_disks() -> Vec<PathBuf> {
    let facts = crate::facts::collect(&crate::facts::Sources::live(
        crate::cmdline::KernelCmdline::default(),
    ));
    facts
        .disks
        .iter()
        .filter(|d| {
            d.removable != Some(true)
                && d.read_only != Some(true)
                && d.size_bytes > 0
                && !d.name.starts_with("sr")
                && !d.name.starts_with("fd")
        })
        .map(|d| PathBuf::from(crate::root_device::device_path(d)))
        .collect()
}

fn erase_all(
    disks: Option<Vec<PathBuf>>,
    whole: bool,
    allow_running_system: bool,
    cancel: &crate::shutdown::Shutdown,
) -> Outcome {
    let disks = disks.unwrap_or_else(fixed_disks);
    if disks.is_empty() {
        return Outcome::simple(ResultStatus::Failed, "the node has no disk to erase");
    }
    // Every disk is checked before any is touched.
    for disk in &disks {
        let uses = match imaging::running_system_uses(disk) {
            Ok(u) => u,
            Err(e) => {
                return Outcome::simple(
                    ResultStatus::Failed,
                    format!("{}: {e}; nothing was erased", disk.display()),
                )
            }
        };
        if !uses.is_empty() && !allow_running_system {
            return Outcome::simple(
                ResultStatus::Failed,
                format!(
                    "{} holds the running system ({}); nothing was erased (allow_running_system: \
                     true erases it all the same)",
                    disk.display(),
                    uses.join(", ")
                ),
            );
        }
    }
    let mut done = Vec::new();
    for disk in &disks {
        // A disk the running system uses cannot be opened exclusively; it is opened shared only when
        // the task allows it (checked above).
        let in_use = imaging::device_holds_running_system(disk);
        let result = if whole {
            let erased = if in_use {
                imaging::erase_in_use(disk, Some(cancel))
            } else {
                imaging::erase_with(disk, Some(cancel))
            };
            erased.map(|r| {
                json!({"disk": disk.display().to_string(), "erased": format!("{:?}", r.method), "bytes": r.bytes, "discarded": r.discarded})
            })
        } else {
            let wiped = if in_use {
                imaging::wipe_signatures_in_use(disk)
            } else {
                imaging::wipe_signatures(disk)
            };
            wiped.map(|r| {
                json!({"disk": disk.display().to_string(), "wiped_ranges": r.ranges.len(), "partitions": r.partitions})
            })
        };
        match result {
            Ok(d) => done.push(d),
            Err(e) => {
                let mut outcome = Outcome::simple(
                    ResultStatus::Failed,
                    format!("{e}; {} disk(s) were erased before it", done.len()),
                );
                outcome.details = json!({ "disks": done });
                return outcome;
            }
        }
    }
    let what = if whole {
        "erased whole"
    } else {
        "had their signatures wiped"
    };
    let names: Vec<String> = disks.iter().map(|d| d.display().to_string()).collect();
    let mut outcome = Outcome::simple(
        ResultStatus::Succeeded,
        format!("{} {what}", names.join(", ")),
    );
    outcome.details = json!({ "disks": done });
    outcome
}
