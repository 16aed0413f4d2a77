//! `move_to_bootstrap` tasks (Fuel's name): the node boots its discovery image next.
//!
//! 1. A node already running the discovery image (its root file system lives in memory) has nothing
//!    to do: the task succeeds and says so (Fuel's provision graph moves every node to bootstrap first).
//! 2. Otherwise the controller is asked to boot it from the network once: through its BMC when it has
//!    one, and in what its boot listener answers it (the server becomes open to the new key its
//!    discovery image makes, so it comes back as the same node). A node that is no enrolled server,
//!    on UEFI firmware, gets `BootNext` set to its first network boot entry instead (`efibootmgr`).
//! 3. The node reboots when its task list ends, after its results reached the controller, not at
//!    once: the tasks after this one (Fuel's deletion graph erases the disks next) run in the system
//!    that is still up, as Astute's `erase_node` did, and the deployment ends before the node leaves.
//!
//! Parameters: `timeout`; Fuel's `slave_name` and `provisioning_info` are accepted and not used.

use super::services::BootError;
use super::{AttemptContext, BoxFuture, Outcome, ParamError, Prepared, RetryPolicy, TaskExecutor};
use plinth_common::wire::{BootRequest, NextBoot, ResultStatus, TaskSpec};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The policy of a move_to_bootstrap task that sets none (Fuel's: 180 s).
pub const DEFAULTS: RetryPolicy = RetryPolicy {
    attempts: 1,
    interval: Duration::from_secs(5),
    timeout: Duration::from_secs(180),
};

/// The file in the state directory that asks for a reboot when the running list ends.
pub const REBOOT_AFTER_LIST: &str = "reboot-after-list";

/// Reads a move_to_bootstrap task's parameters.
pub fn prepare(task: &TaskSpec) -> Result<Prepared, ParamError> {
    Ok(Prepared {
        policy: RetryPolicy::from_task(task, DEFAULTS)?,
        executor: Box::new(MoveToBootstrap {
            mounts: PathBuf::from("/proc/self/mounts"),
        }),
    })
}

/// A prepared move_to_bootstrap task.
#[derive(Debug)]
pub struct MoveToBootstrap {
    mounts: PathBuf,
}

impl TaskExecutor for MoveToBootstrap {
    fn run<'a>(&'a self, ctx: &'a AttemptContext) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            if root_in_memory(&self.mounts) {
                return Outcome::simple(
                    ResultStatus::Succeeded,
                    "the node runs its discovery image already (its root file system is in memory)",
                );
            }
            let request = BootRequest {
                device: NextBoot::Pxe,
                once: true,
            };
            let how = match ctx.services.node.boot(&request).await {
                Ok(answer) => answer.message,
                Err(BootError::NotEnrolled(why)) => match uefi_network_next().await {
                    Ok(entry) => format!("{why}; UEFI BootNext set to its network entry {entry}"),
                    Err(e) => {
                        return Outcome::simple(
                            ResultStatus::Failed,
                            format!("cannot make the node boot from the network: {why}; {e}"),
                        )
                    }
                },
                Err(BootError::Failed(e)) => return Outcome::simple(ResultStatus::Failed, e),
            };
            let marker = ctx.services.state_dir.join(REBOOT_AFTER_LIST);
            if let Err(e) = crate::fsutil::write_atomic(&marker, ctx.task_id.as_bytes(), 0o600) {
                return Outcome::simple(
                    ResultStatus::Failed,
                    format!("cannot write {}: {e}", marker.display()),
                );
            }
            Outcome::simple(
                ResultStatus::Succeeded,
                format!("{how}; the node reboots into its discovery image when its task list ends"),
            )
        })
    }
}

/// True when `/` is a file system in memory (the discovery image: rootfs, tmpfs or ramfs).
pub fn root_in_memory(mounts: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(mounts) else {
        return false;
    };
    // The last mount on `/` is the one in use.
    text.lines()
        .rev()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let _device = f.next()?;
            let point = f.next()?;
            let kind = f.next()?;
            (point == "/").then_some(kind)
        })
        .next()
        .is_some_and(|kind| matches!(kind, "rootfs" | "tmpfs" | "ramfs"))
}

/// Sets UEFI's `BootNext` to the first network boot entry; its name, or why not.
async fn uefi_network_next() -> Result<String, String> {
    if !Path::new("/sys/firmware/efi").exists() {
        return Err("the firmware is BIOS, which has no next-boot setting to change".into());
    }
    let out = tokio::process::Command::new("efibootmgr")
        .output()
        .await
        .map_err(|e| format!("cannot run efibootmgr: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (number, label) = network_entry(&text)
        .ok_or("the firmware lists no network boot entry (PXE, HTTP or IPv4/IPv6)")?;
    let set = tokio::process::Command::new("efibootmgr")
        .args(["--bootnext", &number])
        .output()
        .await
        .map_err(|e| format!("cannot run efibootmgr: {e}"))?;
    if !set.status.success() {
        return Err(format!(
            "efibootmgr --bootnext {number} failed: {}",
            String::from_utf8_lossy(&set.stderr).trim()
        ));
    }
    Ok(format!("Boot{number} ({label})"))
}

/// The first network entry of `efibootmgr`'s listing: its number and label.
fn network_entry(listing: &str) -> Option<(String, String)> {
    listing.lines().find_map(|line| {
        let rest = line.strip_prefix("Boot")?;
        let (number, label) = rest.split_at_checked(4)?;
        if !number.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        let label = label.trim_start_matches('*').trim();
        let upper = label.to_ascii_uppercase();
        ["PXE", "NETWORK", "HTTP", "IPV4", "IPV6"]
            .iter()
            .any(|w| upper.contains(w))
            .then(|| (number.to_string(), label.to_string()))
    })
}

/// When a `move_to_bootstrap` task of the list that just ended asked for it: removes the request and
/// returns true (the caller reboots once the results are sent).
pub fn take_reboot_request(state_dir: &Path) -> bool {
    let marker = state_dir.join(REBOOT_AFTER_LIST);
    match std::fs::remove_file(&marker) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => {
            tracing::warn!(path = %marker.display(), error = %e, "cannot remove the reboot request; rebooting all the same");
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_discovery_image_is_told_by_its_root_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let mounts = dir.path().join("mounts");
        std::fs::write(&mounts, "rootfs / rootfs rw 0 0\nproc /proc proc rw 0 0\n").unwrap();
        assert!(root_in_memory(&mounts));
        std::fs::write(
            &mounts,
            "/dev/sda2 / ext4 rw 0 0\ntmpfs /run tmpfs rw 0 0\n",
        )
        .unwrap();
        assert!(!root_in_memory(&mounts));
        // An overlay mounted over the first root is the one in use.
        std::fs::write(&mounts, "rootfs / rootfs rw 0 0\n/dev/vda1 / ext4 rw 0 0\n").unwrap();
        assert!(!root_in_memory(&mounts));
        assert!(!root_in_memory(&dir.path().join("absent")));
    }

    #[test]
    fn the_network_entry_is_found_in_efibootmgrs_listing() {
        let listing = "BootCurrent: 0001\nTimeout: 0 seconds\nBootOrder: 0001,0000,0002\n\
                       Boot0000* UiApp\nBoot0001* debian\n\
                       Boot0002* UEFI PXEv4 (MAC:525400123456)\n";
        assert_eq!(
            network_entry(listing),
            Some(("0002".into(), "UEFI PXEv4 (MAC:525400123456)".into()))
        );
        assert_eq!(network_entry("Boot0001* debian\n"), None);
    }
}
