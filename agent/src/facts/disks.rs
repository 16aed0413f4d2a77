//! Disks from `/sys/block`: size, model, vendor, serial, rotational, the WWN and its variants, the SCSI
//! address, removable, read-only, the stable `/dev/disk/by-path` names that point at each, and what the
//! running system has mounted on it. Virtual devices (loop, ram, zram, device-mapper, nbd) are not
//! disks and are left out.
//!
//! The fields root device hints read come from where Ironic's agent reads them: the vendor from
//! `device/vendor`, the SCSI address from the one entry of `device/scsi_device/`, the WWN variants
//! from udev's database (`/run/udev/data/b<major>:<minor>`: `ID_WWN`, `ID_WWN_WITH_EXTENSION`,
//! `ID_WWN_VENDOR_EXTENSION`). Without udev's database the WWN falls back to sysfs's `wwid`, and the
//! serial, read from sysfs first, to udev's `ID_SERIAL_SHORT` when sysfs has none (ATA disks).

use super::mounts::Mounts;
use super::{sysfs, Sources};
use plinth_common::wire::Disk;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Prefixes of block devices that are not physical disks.
const VIRTUAL_PREFIXES: &[&str] = &["loop", "ram", "zram", "dm-", "nbd"];

/// Reads every disk.
pub fn read(src: &Sources) -> Vec<Disk> {
    let by_path = by_path_links(src);
    let mounts = Mounts::read(src);
    sysfs::list_dir(&src.path("/sys/block"))
        .into_iter()
        .filter(|name| !VIRTUAL_PREFIXES.iter().any(|p| name.starts_with(p)))
        .map(|name| read_one(src, &name, &by_path, &mounts))
        .collect()
}

/// Reads the block device `name` (any device in `/sys/block`, virtual ones too).
pub(super) fn read_one(
    src: &Sources,
    name: &str,
    by_path: &BTreeMap<String, Vec<String>>,
    mounts: &Mounts,
) -> Disk {
    let dir = src.path("/sys/block").join(name);
    let device = dir.join("device");
    let first = |paths: &[PathBuf]| paths.iter().find_map(|p| sysfs::read_trimmed(p));
    let udev = sysfs::read_trimmed(&dir.join("dev"))
        .map(|number| udev_properties(src, &number))
        .unwrap_or_default();
    let udev_value = |key: &str| udev.get(key).filter(|v| !v.is_empty()).cloned();
    Disk {
        size_bytes: sysfs::read_u64(&dir.join("size"))
            .unwrap_or(0)
            .saturating_mul(512),
        model: first(&[device.join("model")]),
        serial: first(&[dir.join("serial"), device.join("serial")])
            .or_else(|| udev_value("ID_SERIAL_SHORT")),
        rotational: sysfs::read_u64(&dir.join("queue/rotational")).map(|v| v == 1),
        wwn: udev_value("ID_WWN").or_else(|| {
            first(&[
                dir.join("wwid"),
                device.join("wwid"),
                dir.join("device/wwn"),
            ])
        }),
        removable: sysfs::read_u64(&dir.join("removable")).map(|v| v == 1),
        by_path: by_path.get(name).cloned().unwrap_or_default(),
        vendor: first(&[device.join("vendor")]),
        hctl: sysfs::list_dir(&device.join("scsi_device"))
            .into_iter()
            .next(),
        wwn_with_extension: udev_value("ID_WWN_WITH_EXTENSION"),
        wwn_vendor_extension: udev_value("ID_WWN_VENDOR_EXTENSION"),
        read_only: sysfs::read_u64(&dir.join("ro")).map(|v| v == 1),
        mounts: mounts.of_disk(src, name),
        name: name.to_string(),
    }
}

/// The `E:KEY=VALUE` properties udev keeps for the block device `major:minor`; empty without udev.
fn udev_properties(src: &Sources, number: &str) -> BTreeMap<String, String> {
    let path = src.path("/run/udev/data").join(format!("b{number}"));
    let Ok(bytes) = std::fs::read(path) else {
        return BTreeMap::new();
    };
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|line| line.strip_prefix("E:"))
        .filter_map(|prop| prop.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

/// `/dev/disk/by-path` link names grouped by the device they point at (whole disks only).
pub(super) fn by_path_links(src: &Sources) -> BTreeMap<String, Vec<String>> {
    let dir = src.path("/dev/disk/by-path");
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for link in sysfs::list_dir(&dir) {
        if let Some(target) = sysfs::link_name(&dir.join(&link)) {
            out.entry(target).or_default().push(link);
        }
    }
    out
}
