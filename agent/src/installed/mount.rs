//! [`MountedRoot`]: the installed system's root file system mounted on a private temporary directory
//! (mode 0700, made for it), with its disk's EFI system partition at `/boot/efi` when the disk has
//! one, until the guard is dropped or [`MountedRoot::unmount`] is called, on every path, failures
//! included. Mounts are `nosuid,nodev`: nothing of the installed system runs from here.
//!
//! A mount point is removed only once empty (`rmdir`, never a recursive removal), so a file system
//! still mounted can never be emptied by the clean-up.

use super::blockdev;
use super::filesystem;
use super::table::{self, ESP_TYPE};
use super::InstalledError;
use crate::executor::nofollow::Dir;
use nix::mount::{MntFlags, MsFlags};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A file system mounted on a directory this module made; unmounted and its directory removed on drop.
#[derive(Debug)]
pub(crate) struct Mount {
    target: PathBuf,
    /// Whether the directory was made for this mount (and so is removed after it).
    made: bool,
    mounted: bool,
}

impl Mount {
    /// Mounts `device` (its type read by `blkid`) on `target`, which exists; read-only when `read_only`.
    pub fn new(
        device: &Path,
        target: &Path,
        read_only: bool,
        made: bool,
    ) -> Result<Mount, InstalledError> {
        let fs = filesystem::probe(device)?.ok_or_else(|| InstalledError::Tool {
            device: device.to_path_buf(),
            tool: "blkid".to_string(),
            message: "finds no file system on it".to_string(),
        })?;
        let mut flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
        if read_only {
            flags |= MsFlags::MS_RDONLY;
        }
        nix::mount::mount(Some(device), target, Some(fs.as_str()), flags, None::<&str>).map_err(
            |e| {
                InstalledError::io(
                    device,
                    format!("cannot mount it ({fs}) on {}", target.display()),
                    e.into(),
                )
            },
        )?;
        Ok(Mount {
            target: target.to_path_buf(),
            made,
            mounted: true,
        })
    }

    /// The directory it is mounted on.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Unmounts it (waiting a little while it is busy, then detaching it) and removes its directory
    /// when this module made it and it is empty.
    pub fn unmount(&mut self) -> Result<(), InstalledError> {
        if self.mounted {
            let mut last = None;
            for _ in 0..20 {
                match nix::mount::umount2(&self.target, MntFlags::empty()) {
                    Ok(()) | Err(nix::errno::Errno::EINVAL) => {
                        last = None;
                        break;
                    }
                    Err(e) => last = Some(e),
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            if let Some(e) = last {
                // Busy still: detached now, gone once its last user is.
                nix::mount::umount2(&self.target, MntFlags::MNT_DETACH)
                    .map_err(|_| InstalledError::io(&self.target, "cannot unmount it", e.into()))?;
            }
            self.mounted = false;
        }
        if self.made {
            // rmdir, never a recursive removal: a directory still holding files stays.
            let _ = std::fs::remove_dir(&self.target);
            self.made = false;
        }
        Ok(())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Err(e) = self.unmount() {
            tracing::warn!(error = %e, "leaving a mount behind");
        }
    }
}

/// The installed system's root file system, mounted until dropped (see the module's text).
#[derive(Debug)]
pub struct MountedRoot {
    partition: PathBuf,
    /// The ESP's mount, then the root's: unmounted in that order.
    esp: Option<(PathBuf, Mount)>,
    esp_problem: Option<String>,
    root: Option<Mount>,
    /// The private directory holding the mount point.
    home: PathBuf,
}

impl MountedRoot {
    /// Where the root file system is mounted: the installed system's `/`.
    pub fn path(&self) -> &Path {
        self.root
            .as_ref()
            .map_or(Path::new("/nonexistent"), Mount::target)
    }

    /// The partition mounted there.
    pub fn partition(&self) -> &Path {
        &self.partition
    }

    /// The EFI system partition mounted at `/boot/efi`, when the disk has one and it could be mounted.
    pub fn esp(&self) -> Option<&Path> {
        self.esp.as_ref().map(|(p, _)| p.as_path())
    }

    /// Why the disk's EFI system partition is not mounted at `/boot/efi` though the disk has one (the
    /// kernel cannot mount FAT, the installed system's `/boot/efi` is a link, ...).
    pub fn esp_problem(&self) -> Option<&str> {
        self.esp_problem.as_deref()
    }

    /// Unmounts everything and removes the private directory, saying what failed.
    pub fn unmount(mut self) -> Result<(), InstalledError> {
        self.release()
    }

    fn release(&mut self) -> Result<(), InstalledError> {
        let mut first = None;
        if let Some((_, mut m)) = self.esp.take() {
            first = m.unmount().err();
        }
        if let Some(mut m) = self.root.take() {
            if let Err(e) = m.unmount() {
                first.get_or_insert(e);
            }
        }
        // rmdir only: the mount point (left when mounting failed), then the private directory.
        let _ = std::fs::remove_dir(self.home.join("root"));
        let _ = std::fs::remove_dir(&self.home);
        first.map_or(Ok(()), Err)
    }
}

impl Drop for MountedRoot {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            tracing::warn!(error = %e, "leaving a mount behind");
        }
    }
}

/// A new private directory (mode 0700) under the system's temporary directory, kept: it is removed
/// with `rmdir` only.
pub(crate) fn private_dir(what: &str) -> Result<PathBuf, InstalledError> {
    let dir = tempfile::Builder::new()
        .prefix(&format!("plinth-{what}-"))
        .tempdir()
        .map_err(|e| {
            InstalledError::io(std::env::temp_dir(), "cannot make a private directory", e)
        })?;
    let dir = dir.keep();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| InstalledError::io(&dir, "cannot make it private (mode 0700)", e))?;
    Ok(dir)
}

/// Mounts the installed system's root file system on `partition` (read-write) on a private temporary
/// directory, and its disk's EFI system partition (the first partition of that GPT type) at
/// `/boot/efi` in it. An ESP that cannot be mounted is not an error: [`MountedRoot::esp_problem`]
/// says why.
pub fn mount_root(partition: &Path) -> Result<MountedRoot, InstalledError> {
    let home = private_dir("root")?;
    let target = home.join("root");
    std::fs::create_dir(&target).map_err(|e| InstalledError::io(&target, "cannot make it", e))?;
    let mut mounted = MountedRoot {
        partition: partition.to_path_buf(),
        esp: None,
        esp_problem: None,
        root: None,
        home,
    };
    // On failure, `mounted` is dropped: the directories go.
    mounted.root = Some(Mount::new(partition, &target, false, true)?);
    if let Some(esp) = esp_of(partition)? {
        match mount_esp(&esp, &target) {
            Ok(m) => mounted.esp = Some((esp, m)),
            Err(e) => mounted.esp_problem = Some(e.to_string()),
        }
    }
    Ok(mounted)
}

/// The EFI system partition on the same disk as `partition`, if its disk has a GPT with one.
fn esp_of(partition: &Path) -> Result<Option<PathBuf>, InstalledError> {
    let name = blockdev::kernel_name(partition)?;
    let sys = Path::new("/sys/class/block").join(&name);
    if !sys.join("partition").exists() {
        return Ok(None);
    }
    let parent = std::fs::canonicalize(sys.join(".."))
        .map_err(|e| InstalledError::io(&sys, "cannot find its disk", e))?;
    let Some(disk_name) = parent.file_name() else {
        return Ok(None);
    };
    let disk = Path::new("/dev").join(disk_name);
    let Some(gpt) = table::read(&disk)? else {
        return Ok(None);
    };
    let Some(number) = table::of_type(&gpt, ESP_TYPE).first().copied() else {
        return Ok(None);
    };
    Ok(blockdev::kernel_partitions(&disk)?
        .into_iter()
        .find(|p| p.number == number)
        .map(|p| p.device))
}

/// Mounts `esp` at `root`'s `/boot/efi`, made when missing; a link on the way is refused.
fn mount_esp(esp: &Path, root: &Path) -> Result<Mount, InstalledError> {
    let top = Dir::open(root, None)
        .map_err(|e| InstalledError::io(root, "cannot open it", e))?
        .ok_or_else(|| {
            InstalledError::io(root, "cannot open it", std::io::ErrorKind::NotFound.into())
        })?;
    top.walk(Path::new("boot/efi"), Some(0o755), false)
        .map_err(|e| InstalledError::Refused {
            path: PathBuf::from("/boot/efi"),
            why: e.to_string(),
        })?;
    Mount::new(esp, &root.join("boot/efi"), false, false)
}
