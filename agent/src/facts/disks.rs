//! Disks from `/sys/block`: size, model, serial, rotational, WWN, removable, and the stable
//! `/dev/disk/by-path` names that point at each. Virtual devices (loop, ram, zram, device-mapper, nbd) are
//! not disks and are left out.

use super::{sysfs, Sources};
use plinth_common::wire::Disk;
use std::collections::BTreeMap;

/// Prefixes of block devices that are not physical disks.
const VIRTUAL_PREFIXES: &[&str] = &["loop", "ram", "zram", "dm-", "nbd"];

/// Reads every disk.
pub fn read(src: &Sources) -> Vec<Disk> {
    let block = src.path("/sys/block");
    let by_path = by_path_links(src);
    sysfs::list_dir(&block)
        .into_iter()
        .filter(|name| !VIRTUAL_PREFIXES.iter().any(|p| name.starts_with(p)))
        .map(|name| {
            let dir = block.join(&name);
            let device = dir.join("device");
            let first =
                |paths: &[std::path::PathBuf]| paths.iter().find_map(|p| sysfs::read_trimmed(p));
            Disk {
                size_bytes: sysfs::read_u64(&dir.join("size"))
                    .unwrap_or(0)
                    .saturating_mul(512),
                model: first(&[device.join("model")]),
                serial: first(&[dir.join("serial"), device.join("serial")]),
                rotational: sysfs::read_u64(&dir.join("queue/rotational")).map(|v| v == 1),
                wwn: first(&[
                    dir.join("wwid"),
                    device.join("wwid"),
                    dir.join("device/wwn"),
                ]),
                removable: sysfs::read_u64(&dir.join("removable")).map(|v| v == 1),
                by_path: by_path.get(&name).cloned().unwrap_or_default(),
                name,
            }
        })
        .collect()
}

/// `/dev/disk/by-path` link names grouped by the device they point at (whole disks only).
fn by_path_links(src: &Sources) -> BTreeMap<String, Vec<String>> {
    let dir = src.path("/dev/disk/by-path");
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for link in sysfs::list_dir(&dir) {
        if let Some(target) = sysfs::link_name(&dir.join(&link)) {
            out.entry(target).or_default().push(link);
        }
    }
    out
}
