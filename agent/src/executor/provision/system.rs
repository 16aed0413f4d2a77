//! The machine's side of provisioning: which disk, the installed system's preparation, and the
//! node's state carried into it.

use super::super::AttemptContext;
use super::ProvisionParams;
use crate::config::{ServerTrust, DEFAULT_STATE_DIR};
use crate::executor::services::{BootError, InstallSource};
use crate::image::{write_agent, InjectOptions};
use crate::installed::{self, MountedRoot};
use crate::root_device::{self, Hints};
use plinth_common::wire::{BootRequest, NextBoot};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The disk chosen.
#[derive(Debug, Clone)]
pub struct Chosen {
    /// Its device node.
    pub path: PathBuf,
    /// Its serial number, when it reports one.
    pub serial: Option<String>,
}

/// Chooses the disk from this machine's disks by `hints` (the default disk without them).
pub fn choose_disk(hints: Option<&Hints>) -> Result<Chosen, String> {
    let facts = crate::facts::collect(&crate::facts::Sources::live(
        crate::cmdline::KernelCmdline::default(),
    ));
    let disk = root_device::choose(&facts.disks, hints).map_err(|e| e.to_string())?;
    let path = PathBuf::from(root_device::device_path(disk));
    if crate::imaging::device_holds_running_system(&path) {
        return Err(format!(
            "{} holds the running system: a node is provisioned from its discovery image",
            path.display()
        ));
    }
    Ok(Chosen {
        path,
        serial: disk.serial.clone(),
    })
}

/// The installed system, prepared and still mounted (the node's state goes in last).
pub struct PreparedSystem {
    /// Its root file system.
    pub root: MountedRoot,
    /// What was done, for the task's report.
    pub report: Value,
}

/// Prepares the system on `disk` (see the parent module's text, step 3 and 4).
pub async fn prepare(
    ctx: &AttemptContext,
    params: &ProvisionParams,
    disk: &Path,
) -> Result<PreparedSystem, String> {
    let install = ctx
        .services
        .install
        .clone()
        .ok_or("this agent has no controller settings to give the installed system")?;
    let params = params.clone();
    let disk_path = disk.to_path_buf();
    let mut prepared = tokio::task::spawn_blocking(move || on_disk(&params, &disk_path, &install))
        .await
        .map_err(|e| format!("the preparing thread failed: {e}"))??;
    let request = BootRequest {
        device: NextBoot::Disk,
        once: false,
    };
    let controller = match ctx.services.node.boot(&request).await {
        Ok(answer) => answer.message,
        Err(BootError::NotEnrolled(why)) => format!("not set by the controller: {why}"),
        Err(BootError::Failed(e)) => return Err(e),
    };
    if let Some(report) = prepared.report.as_object_mut() {
        report.insert("boot_device".into(), json!(controller));
    }
    Ok(prepared)
}

fn on_disk(
    params: &ProvisionParams,
    disk: &Path,
    install: &InstallSource,
) -> Result<PreparedSystem, String> {
    let e = |e: installed::InstalledError| e.to_string();
    let relocation = installed::relocate_backup_gpt(disk).map_err(e)?;
    let grown = if params.grow_last_partition {
        Some(installed::grow_last_partition(disk).map_err(e)?)
    } else {
        None
    };
    let selector = params.root_partition.clone().unwrap_or_default();
    let partition = installed::find_root_partition(disk, &selector).map_err(e)?;
    let root = installed::mount_root(&partition.device).map_err(e)?;
    let (cert, tls_key) = match &install.trust {
        ServerTrust::Pinned(path) => (Some(path.clone()), None),
        ServerTrust::KeyPin(digest) => (None, Some(format!("sha256:{}", hex::encode(digest)))),
        ServerTrust::Ca(path) => {
            return Err(format!(
                "this agent trusts its controller through the CA file {}, which a provisioned \
                 system cannot be given yet: pin the controller (plinth.tls= or controller_cert)",
                path.display()
            ))
        }
    };
    let agent = write_agent(&InjectOptions {
        root: root.path().to_path_buf(),
        binary: install.binary.clone(),
        controllers: install.controllers.clone(),
        public_key: Some(install.public_key.clone()),
        cert,
        tags: Vec::new(),
        enrollment_token: None,
        tls_key,
    })
    .map_err(|e| e.to_string())?;
    if let Some(name) = &params.hostname {
        installed::write_hostname(root.path(), name).map_err(e)?;
    }
    let network = match &params.network {
        Some(config) => Some(format!(
            "{:?}",
            installed::write_network(root.path(), config).map_err(e)?
        )),
        None => None,
    };
    if !params.ssh_authorized_keys.is_empty() {
        installed::write_authorized_keys(root.path(), &params.ssh_authorized_keys).map_err(e)?;
    }
    let boot = installed::set_boot_target(disk).map_err(e)?;
    let report = json!({
        "root_partition": partition.device.display().to_string(),
        "gpt_backup": format!("{relocation:?}"),
        "grown": grown.map(|g| format!("partition {} from {} to {} bytes, {:?}", g.number, g.old_size, g.new_size, g.filesystem)),
        "agent_files": agent,
        "hostname": params.hostname,
        "network": network,
        "ssh_keys": params.ssh_authorized_keys.len(),
        "boot_target": format!("{boot:?}"),
    });
    Ok(PreparedSystem { root, report })
}

/// Copies the agent's state (its key, journal, accepted revision and the reboot marker) into the
/// installed system's state directory, then unmounts it. Called just before the reboot, so that the
/// installed system's agent resumes this very attempt.
pub fn carry_state(state_dir: &Path, root: MountedRoot) -> Result<(), String> {
    let target = root.path().join(DEFAULT_STATE_DIR.trim_start_matches('/'));
    copy_tree(state_dir, &target).map_err(|e| {
        format!(
            "cannot copy the agent's state {} into the installed system: {e}",
            state_dir.display()
        )
    })?;
    root.unmount().map_err(|e| e.to_string())
}

/// Copies the regular files and directories under `from` (not the tasks' working directory) to `to`,
/// keeping their modes, each file synced.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    crate::fsutil::ensure_dir(to, 0o700)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let name = entry.file_name();
        if name == "work" {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else if kind.is_file() {
            let mode = entry.metadata()?.permissions().mode() & 0o7777;
            let bytes = std::fs::read(&src)?;
            crate::fsutil::write_atomic(&dst, &bytes, mode)?;
            std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(mode))?;
        }
    }
    Ok(())
}
