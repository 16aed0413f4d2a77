//! A disk as the kernel sees it: its size and logical sector size (ioctls), its partitions (sysfs), and
//! making the kernel take a changed partition table: `BLKRRPART`, then `partx --update` for what the
//! kernel did not take (a disk whose partitions are in use refuses `BLKRRPART`; some kernels ignore it
//! for loop devices), then a wait for the partitions' device nodes (devtmpfs makes them; udev may come
//! later).

use super::tool;
use super::InstalledError;
use std::fs::File;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

nix::ioctl_read!(blkgetsize64, 0x12, 114, u64);
nix::ioctl_read_bad!(
    blksszget,
    nix::request_code_none!(0x12, 104),
    nix::libc::c_int
);
nix::ioctl_none!(blkrrpart, 0x12, 95);

/// How long the partitions' device nodes may take to appear.
const NODES_WAIT: Duration = Duration::from_secs(10);

/// A partition as the kernel sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KernelPartition {
    /// Its number in the table (1 for the first).
    pub number: u32,
    /// Its device node (`/dev/sda3`, `/dev/nvme0n1p3`, `/dev/loop0p3`).
    pub device: PathBuf,
    /// Its first byte on the disk.
    pub start: u64,
    /// Its size in bytes.
    pub size: u64,
}

/// A partition as the table says it is, to compare with the kernel's view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Expected {
    /// Its number.
    pub number: u32,
    /// Its first byte.
    pub start: u64,
    /// Its size in bytes.
    pub size: u64,
}

/// Opens `disk` for reading (and writing when `write`), naming it in the error.
pub(crate) fn open(disk: &Path, write: bool) -> Result<File, InstalledError> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(write)
        .open(disk)
        .map_err(|e| InstalledError::io(disk, "cannot open it", e))
}

/// Whether `path` is a block device.
pub(crate) fn is_block_device(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device())
}

/// The size of the disk (or disk image file) in bytes.
pub(crate) fn size_of(disk: &Path, file: &File) -> Result<u64, InstalledError> {
    let meta = file
        .metadata()
        .map_err(|e| InstalledError::io(disk, "cannot read its status", e))?;
    if !meta.file_type().is_block_device() {
        return Ok(meta.len());
    }
    let mut size = 0u64;
    // SAFETY: BLKGETSIZE64 writes one u64 through the pointer, which points at `size`.
    unsafe { blkgetsize64(std::os::fd::AsRawFd::as_raw_fd(file), &mut size) }
        .map_err(|e| InstalledError::io(disk, "cannot read its size (BLKGETSIZE64)", e.into()))?;
    Ok(size)
}

/// The disk's logical sector size: what its partition table counts in (512 for a file).
pub(crate) fn sector_size(disk: &Path, file: &File) -> Result<u64, InstalledError> {
    let meta = file
        .metadata()
        .map_err(|e| InstalledError::io(disk, "cannot read its status", e))?;
    if !meta.file_type().is_block_device() {
        return Ok(512);
    }
    let mut size: nix::libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one int through the pointer, which points at `size`.
    unsafe { blksszget(std::os::fd::AsRawFd::as_raw_fd(file), &mut size) }.map_err(|e| {
        InstalledError::io(disk, "cannot read its sector size (BLKSSZGET)", e.into())
    })?;
    u64::try_from(size).map_err(|_| InstalledError::Table {
        disk: disk.to_path_buf(),
        message: format!("the kernel gives a sector size of {size}"),
    })
}

/// The disk's kernel name (`sda`, `nvme0n1`, `loop0`), following a link such as `/dev/disk/by-id/…`.
pub(crate) fn kernel_name(disk: &Path) -> Result<String, InstalledError> {
    let real = std::fs::canonicalize(disk)
        .map_err(|e| InstalledError::io(disk, "cannot resolve it", e))?;
    real.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| InstalledError::Table {
            disk: disk.to_path_buf(),
            message: "not a disk's device node".to_string(),
        })
}

/// Reads one number from a sysfs file.
fn sysfs_number(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The disk's partitions as the kernel has them now, by number (sysfs: `start` and `size` in 512-byte
/// units whatever the sector size).
pub(crate) fn kernel_partitions(disk: &Path) -> Result<Vec<KernelPartition>, InstalledError> {
    let name = kernel_name(disk)?;
    let dir = Path::new("/sys/class/block").join(&name);
    let entries =
        std::fs::read_dir(&dir).map_err(|e| InstalledError::io(&dir, "cannot list it", e))?;
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let p = entry.path();
        let Some(number) = sysfs_number(&p.join("partition")) else {
            continue;
        };
        let (Some(start), Some(size)) = (
            sysfs_number(&p.join("start")),
            sysfs_number(&p.join("size")),
        ) else {
            continue;
        };
        let Ok(number) = u32::try_from(number) else {
            continue;
        };
        out.push(KernelPartition {
            number,
            device: PathBuf::from("/dev").join(entry.file_name()),
            start: start.saturating_mul(512),
            size: size.saturating_mul(512),
        });
    }
    out.sort_by_key(|p| p.number);
    Ok(out)
}

/// Whether the kernel's view matches `expected` exactly (`None`: whatever it is).
fn matches(kernel: &[KernelPartition], expected: &[Expected]) -> bool {
    kernel.len() == expected.len()
        && expected.iter().all(|e| {
            kernel
                .iter()
                .any(|k| k.number == e.number && k.start == e.start && k.size == e.size)
        })
}

/// Makes the kernel take `disk`'s partition table (see the module's text) and waits for the
/// partitions' device nodes. With `expected`, the kernel's view must end up exactly that; without,
/// whatever `partx` reads is taken. Returns the partitions.
pub(crate) fn reread(
    disk: &Path,
    expected: Option<&[Expected]>,
) -> Result<Vec<KernelPartition>, InstalledError> {
    if !is_block_device(disk) {
        return Err(InstalledError::Table {
            disk: disk.to_path_buf(),
            message: "not a block device".to_string(),
        });
    }
    let file = open(disk, false)?;
    // SAFETY: BLKRRPART takes no argument. A refusal (EBUSY while a partition is in use, EINVAL for
    // a loop device without partition scanning) is answered by partx below.
    let _ = unsafe { blkrrpart(std::os::fd::AsRawFd::as_raw_fd(&file)) };
    drop(file);
    let now = kernel_partitions(disk)?;
    if expected.is_none_or(|e| !matches(&now, e)) {
        tool::run(disk, Command::new("partx").arg("--update").arg(disk), &[0])?;
    }
    let parts = kernel_partitions(disk)?;
    if let Some(expected) = expected {
        if !matches(&parts, expected) {
            return Err(InstalledError::Table {
                disk: disk.to_path_buf(),
                message: format!(
                    "the kernel did not take the new partition table: it has {}, the table says {}",
                    describe(parts.iter().map(|p| (p.number, p.start, p.size))),
                    describe(expected.iter().map(|p| (p.number, p.start, p.size)))
                ),
            });
        }
    }
    wait_for_nodes(disk, &parts)?;
    Ok(parts)
}

fn describe(parts: impl Iterator<Item = (u32, u64, u64)>) -> String {
    let all: Vec<String> = parts
        .map(|(n, start, size)| format!("#{n} at byte {start}, {size} bytes"))
        .collect();
    if all.is_empty() {
        "no partitions".to_string()
    } else {
        all.join("; ")
    }
}

/// Waits until every partition's device node is a block device.
fn wait_for_nodes(disk: &Path, parts: &[KernelPartition]) -> Result<(), InstalledError> {
    let started = Instant::now();
    loop {
        let missing: Vec<&KernelPartition> = parts
            .iter()
            .filter(|p| !is_block_device(&p.device))
            .collect();
        let Some(first) = missing.first() else {
            return Ok(());
        };
        if started.elapsed() > NODES_WAIT {
            return Err(InstalledError::Table {
                disk: disk.to_path_buf(),
                message: format!(
                    "{} did not appear within {} s of the kernel reading the table",
                    first.device.display(),
                    NODES_WAIT.as_secs()
                ),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
