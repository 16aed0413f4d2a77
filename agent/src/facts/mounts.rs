//! What the running system uses of each disk: the mount points of file systems on it, on its partitions,
//! or on devices built on them (device-mapper, software RAID), and swap in use there. Read from
//! `/proc/self/mountinfo` and `/proc/swaps`, and the disk's family from sysfs (`/sys/block/NAME`: its
//! partitions, each one's `holders/`, theirs in turn).

use super::{sysfs, Sources};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// How deep holders are followed (a partition, a crypt device, a volume group's volume, ... is 4).
const MAX_DEPTH: usize = 8;

/// The mount points and swap of the running system, by device.
#[derive(Debug, Default)]
pub struct Mounts {
    /// `major:minor` to mount points.
    by_number: BTreeMap<String, Vec<String>>,
    /// Kernel device name (from a `/dev/...` source) to mount points.
    by_name: BTreeMap<String, Vec<String>>,
}

impl Mounts {
    /// Reads the mount table and the swap list under `src`'s root; missing files read as nothing
    /// mounted.
    pub fn read(src: &Sources) -> Mounts {
        let mut mounts = Mounts::default();
        if let Ok(text) = std::fs::read_to_string(src.path("/proc/self/mountinfo")) {
            for line in text.lines() {
                mounts.add_mountinfo_line(src, line);
            }
        }
        if let Ok(text) = std::fs::read_to_string(src.path("/proc/swaps")) {
            for line in text.lines().skip(1) {
                if let Some(path) = line.split_whitespace().next() {
                    if let Some(name) = device_name(src, &unescape(path)) {
                        mounts
                            .by_name
                            .entry(name)
                            .or_default()
                            .push("[SWAP]".into());
                    }
                }
            }
        }
        mounts
    }

    /// One line of `mountinfo`: `ID PARENT MAJOR:MINOR ROOT MOUNT_POINT OPTIONS [TAGS...] - TYPE SOURCE ...`.
    fn add_mountinfo_line(&mut self, src: &Sources, line: &str) {
        let fields: Vec<&str> = line.split(' ').collect();
        let (Some(number), Some(point)) = (fields.get(2), fields.get(4)) else {
            return;
        };
        let point = unescape(point);
        // A file system on a block device has its number; btrfs and a few others show an anonymous
        // one (major 0), and then the source names the device.
        if !number.starts_with("0:") {
            self.by_number
                .entry((*number).to_string())
                .or_default()
                .push(point.clone());
        }
        let source = fields
            .iter()
            .position(|f| *f == "-")
            .and_then(|dash| fields.get(dash + 2));
        if let Some(name) = source.and_then(|s| device_name(src, &unescape(s))) {
            self.by_name.entry(name).or_default().push(point);
        }
    }

    /// The mount points (and `[SWAP]`) on the disk `name`, its partitions and what is built on them,
    /// each once, sorted.
    pub fn of_disk(&self, src: &Sources, name: &str) -> Vec<String> {
        let block = src.path("/sys/block");
        let mut family = BTreeSet::new();
        let disk_dir = block.join(name);
        collect_family(src, &disk_dir, name, 0, &mut family);
        for part in sysfs::list_dir(&disk_dir) {
            if disk_dir.join(&part).join("partition").exists() {
                collect_family(src, &disk_dir.join(&part), &part, 0, &mut family);
            }
        }
        let mut points = BTreeSet::new();
        for (member_name, number) in &family {
            points.extend(self.by_name.get(member_name).into_iter().flatten().cloned());
            if let Some(number) = number {
                points.extend(self.by_number.get(number).into_iter().flatten().cloned());
            }
        }
        points.into_iter().collect()
    }
}

/// Adds the device in `dir` (named `name`) and, through `holders/`, every device built on it.
fn collect_family(
    src: &Sources,
    dir: &Path,
    name: &str,
    depth: usize,
    family: &mut BTreeSet<(String, Option<String>)>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let number = sysfs::read_trimmed(&dir.join("dev"));
    if !family.insert((name.to_string(), number)) {
        return;
    }
    for holder in sysfs::list_dir(&dir.join("holders")) {
        let holder_dir = src.path("/sys/block").join(&holder);
        collect_family(src, &holder_dir, &holder, depth + 1, family);
    }
}

/// The kernel name of the device a `/dev/...` path names (`/dev/sda1` → `sda1`,
/// `/dev/mapper/vg-root` → `dm-0` through its link); `None` for other sources.
fn device_name(src: &Sources, path: &str) -> Option<String> {
    let rel = path.strip_prefix("/dev/")?;
    let here = src.path("/dev").join(rel);
    let name = match std::fs::read_link(&here) {
        Ok(target) => target.file_name()?.to_string_lossy().into_owned(),
        Err(_) => Path::new(rel).file_name()?.to_string_lossy().into_owned(),
    };
    (!name.is_empty()).then_some(name)
}

/// Undoes the kernel's octal escapes in mount table fields (`\040` is a space).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .map(|d| d.iter().fold(0u32, |n, c| n * 8 + u32::from(c - b'0')));
        match octal.and_then(|n| u8::try_from(n).ok()) {
            Some(byte) => {
                out.push(byte);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::unescape;

    #[test]
    fn escaped_mount_points_read_as_written() {
        assert_eq!(unescape("/mnt/my\\040disk"), "/mnt/my disk");
        assert_eq!(unescape("/a\\134b"), "/a\\b");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape("/odd\\04"), "/odd\\04");
        assert_eq!(unescape("/big\\777"), "/big\\777");
    }
}
