//! Which disks may be chosen at all, and which only when hints name them.

use super::matching::gib_text;
use super::operators::GIB;
use plinth_common::wire::Disk;
use std::fmt;

/// The smallest disk the default choice takes, as Ironic's: 4 GiB.
pub const MIN_DEFAULT_SIZE: u64 = 4 * GIB;

/// Why a disk is passed over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unfit {
    /// An optical drive (`sr*`): Ironic's agent lists no such device either.
    Optical,
    /// A floppy drive (`fd*`): Ironic's agent lists no such device either.
    Floppy,
    /// No medium or a size of zero: Ironic's agent lists no such device either.
    Empty,
    /// The kernel refuses writes to it.
    ReadOnly,
    /// The running system has file systems or swap on it (the mount points).
    InUse(Vec<String>),
    /// Removable media: chosen only when hints name it.
    Removable,
    /// Smaller than [`MIN_DEFAULT_SIZE`]: chosen only when hints name it.
    Small(u64),
}

impl fmt::Display for Unfit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unfit::Optical => f.write_str("is an optical drive"),
            Unfit::Floppy => f.write_str("is a floppy drive"),
            Unfit::Empty => f.write_str("has no medium (size 0)"),
            Unfit::ReadOnly => f.write_str("is read-only"),
            Unfit::InUse(points) => write!(f, "holds the running system's {}", points.join(", ")),
            Unfit::Removable => f.write_str("is removable (hints can still choose it)"),
            Unfit::Small(bytes) => write!(
                f,
                "is smaller than 4 GiB ({}; hints can still choose it)",
                gib_text(*bytes)
            ),
        }
    }
}

/// Why `disk` can never be chosen, hints or not; `None` when it can be.
pub fn never(disk: &Disk) -> Option<Unfit> {
    if disk.name.starts_with("sr") {
        Some(Unfit::Optical)
    } else if disk.name.starts_with("fd") {
        Some(Unfit::Floppy)
    } else if disk.size_bytes == 0 {
        Some(Unfit::Empty)
    } else if disk.read_only == Some(true) {
        Some(Unfit::ReadOnly)
    } else if !disk.mounts.is_empty() {
        Some(Unfit::InUse(disk.mounts.clone()))
    } else {
        None
    }
}

/// Why the default choice passes `disk` over; `None` when it may take it.
pub fn not_by_default(disk: &Disk) -> Option<Unfit> {
    never(disk).or_else(|| {
        if disk.removable == Some(true) {
            Some(Unfit::Removable)
        } else if disk.size_bytes < MIN_DEFAULT_SIZE {
            Some(Unfit::Small(disk.size_bytes))
        } else {
            None
        }
    })
}
