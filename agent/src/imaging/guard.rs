//! Whether a disk holds the running system: the disk, one of its partitions, or a device stacked on
//! either (device-mapper: LVM, LUKS, multipath; md RAID), mounted anywhere (`/` among them) or used as
//! swap. Writing or erasing such a disk would pull the system from under itself, so the tasks refuse
//! it unless told otherwise.

use crate::tracking::cgroup::unescape;
use std::collections::BTreeSet;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// True when the disk at `device` (or a partition of it, or a device stacked on them) is mounted or
/// used as swap; also true when that cannot be found out (the safe answer).
pub fn device_holds_running_system(device: &Path) -> bool {
    running_system_uses(device).map_or(true, |uses| !uses.is_empty())
}

/// How the running system uses the disk at `device`, one line per use (`/dev/sda2 (8:2) mounted at
/// /`, `swap on /dev/sda3`); empty when it does not.
pub fn running_system_uses(device: &Path) -> io::Result<Vec<String>> {
    let meta = std::fs::metadata(device)?;
    if !meta.file_type().is_block_device() {
        return Ok(Vec::new());
    }
    let rdev = meta.rdev();
    let related = related_devices(libc::major(rdev), libc::minor(rdev));
    let mut uses = Vec::new();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")?;
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let (Some(numbers), Some(mount_point)) = (fields.get(2), fields.get(4)) else {
            continue;
        };
        let source = line
            .split(" - ")
            .nth(1)
            .and_then(|rest| rest.split(' ').nth(1))
            .unwrap_or("");
        let by_number = parse_numbers(numbers).and_then(|n| related.iter().find(|(d, _)| *d == n));
        let by_source =
            device_numbers(Path::new(source)).and_then(|n| related.iter().find(|(d, _)| *d == n));
        if let Some((_, name)) = by_number.or(by_source) {
            uses.push(format!("{name} mounted at {}", unescape(mount_point)));
        }
    }
    if let Ok(swaps) = std::fs::read_to_string("/proc/swaps") {
        for line in swaps.lines().skip(1) {
            let Some(path) = line.split_whitespace().next() else {
                continue;
            };
            if let Some((_, name)) =
                device_numbers(Path::new(path)).and_then(|n| related.iter().find(|(d, _)| *d == n))
            {
                uses.push(format!("swap on {name}"));
            }
        }
    }
    Ok(uses)
}

type Numbers = (u32, u32);

fn parse_numbers(text: &str) -> Option<Numbers> {
    let (major, minor) = text.trim().split_once(':')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

fn device_numbers(path: &Path) -> Option<Numbers> {
    if !path.is_absolute() {
        return None;
    }
    let meta = std::fs::metadata(path).ok()?;
    meta.file_type()
        .is_block_device()
        .then(|| (libc::major(meta.rdev()), libc::minor(meta.rdev())))
}

/// The device, its partitions, and every device stacked on any of them (holders, recursively), with
/// their names as `/dev/NAME (MAJOR:MINOR)`.
fn related_devices(major: u32, minor: u32) -> Vec<(Numbers, String)> {
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    let mut out = Vec::new();
    let start = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let mut queue: Vec<PathBuf> = std::fs::canonicalize(&start).into_iter().collect();
    while let Some(dir) = queue.pop() {
        if !seen.insert(dir.clone()) {
            continue;
        }
        let Some(numbers) = std::fs::read_to_string(dir.join("dev"))
            .ok()
            .and_then(|t| parse_numbers(&t))
        else {
            continue;
        };
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.push((
            numbers,
            format!("/dev/{name} ({}:{})", numbers.0, numbers.1),
        ));
        // Partitions are subdirectories with a `partition` file.
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.join("partition").is_file() {
                queue.push(path);
            }
        }
        for entry in std::fs::read_dir(dir.join("holders"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(path) = std::fs::canonicalize(entry.path()) {
                queue.push(path);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_disk_holding_the_root_holds_the_running_system_and_a_missing_one_is_refused_safely() {
        // The root file system's device, whichever this machine has.
        let root = std::fs::metadata("/").unwrap().dev();
        let numbers = (libc::major(root), libc::minor(root));
        let dev = std::fs::read_dir("/dev")
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| device_numbers(p) == Some(numbers));
        if let Some(dev) = dev {
            let uses = running_system_uses(&dev).unwrap();
            assert!(uses.iter().any(|u| u.ends_with("mounted at /")), "{uses:?}");
            assert!(device_holds_running_system(&dev));
        }
        assert!(device_holds_running_system(Path::new("/dev/no-such-disk")));
    }
}
