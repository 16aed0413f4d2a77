//! Erasing a whole disk: discard (trim) where the device supports it, and where the device does not
//! promise that discarded blocks read as zeros (sysfs `queue/discard_zeroes_data`, which current kernels
//! always report 0), zeroing with BLKZEROOUT, which the kernel turns into the device's write-zeroes
//! command when it has one (`queue/write_zeroes_max_bytes`) and into written zeros when not; zeros
//! written by the agent when the device refuses both. A regular file standing in for a disk has its
//! blocks deallocated (a hole reads as zeros).

use super::device::{Disk, Kind, Queue};
use super::error::ImagingError;
use crate::shutdown::Shutdown;
use std::path::Path;

/// How a disk was erased.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EraseMethod {
    /// Discarded, and the device promises discarded blocks read as zeros.
    Discard,
    /// Zeroed by the device's write-zeroes command (after a discard where the device has one).
    WriteZeroes,
    /// Zeros written over every block (by the kernel for BLKZEROOUT, or by the agent).
    Zeros,
    /// A regular file: its blocks deallocated.
    Hole,
}

/// What an erase did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EraseReport {
    /// How the data was made zeros.
    pub method: EraseMethod,
    /// Whether the device was also discarded (trimmed).
    pub discarded: bool,
    /// The bytes erased (the whole disk).
    pub bytes: u64,
}

/// The piece zeroed at once, so that a stop is heard between pieces.
const PIECE: u64 = 1 << 30;

/// Erases the whole disk at `device`.
pub fn erase(device: &Path) -> Result<EraseReport, ImagingError> {
    erase_with(device, None)
}

/// Erases the whole disk at `device`, stopping between pieces when `cancel` is triggered.
pub fn erase_with(device: &Path, cancel: Option<&Shutdown>) -> Result<EraseReport, ImagingError> {
    erase_disk(&Disk::open(device)?, cancel)
}

/// Erases the whole disk at `device` while the running system uses it (not opened exclusively).
pub fn erase_in_use(device: &Path, cancel: Option<&Shutdown>) -> Result<EraseReport, ImagingError> {
    erase_disk(&Disk::open_shared(device)?, cancel)
}

fn erase_disk(disk: &Disk, cancel: Option<&Shutdown>) -> Result<EraseReport, ImagingError> {
    let size = disk.size();
    let check = || match cancel {
        Some(c) if c.is_triggered() => Err(ImagingError::Cancelled),
        _ => Ok(()),
    };
    let report = |method, discarded| EraseReport {
        method,
        discarded,
        bytes: size,
    };
    if disk.kind() == Kind::File {
        if disk.zero_out(0, size)? {
            disk.sync()?;
            return Ok(report(EraseMethod::Hole, false));
        }
        zeros(disk, 0, &check)?;
        disk.sync()?;
        return Ok(report(EraseMethod::Zeros, false));
    }
    let queue = Queue::of(disk.path());
    let mut discarded = false;
    if queue.discard_max_bytes > 0 {
        discarded = true;
        let mut at = 0;
        while at < size && discarded {
            check()?;
            let n = PIECE.min(size - at);
            discarded = disk.discard(at, n)?;
            at += n;
        }
        if discarded && queue.discard_zeroes_data {
            disk.sync()?;
            return Ok(report(EraseMethod::Discard, true));
        }
    }
    let mut at = 0;
    while at < size {
        check()?;
        let n = PIECE.min(size - at);
        if !disk.zero_out(at, n)? {
            zeros(disk, at, &check)?;
            disk.sync()?;
            return Ok(report(EraseMethod::Zeros, discarded));
        }
        at += n;
    }
    disk.sync()?;
    let method = if queue.write_zeroes_max_bytes > 0 {
        EraseMethod::WriteZeroes
    } else {
        EraseMethod::Zeros
    };
    Ok(report(method, discarded))
}

/// Writes zeros from `from` to the disk's end.
fn zeros(
    disk: &Disk,
    mut from: u64,
    check: &dyn Fn() -> Result<(), ImagingError>,
) -> Result<(), ImagingError> {
    let size = disk.size();
    while from < size {
        check()?;
        let n = (64 << 20).min(size - from);
        disk.write_zeros(from, n)?;
        from += n;
    }
    Ok(())
}
