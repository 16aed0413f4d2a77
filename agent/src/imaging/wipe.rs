//! Wiping a disk's signatures, so that nothing on it is recognised or booted: the first and last MiB
//! of the disk (the MBR, the primary GPT and the backup at the disk's end, a file system or RAID member
//! on the whole disk), both GPT headers wherever the primary says the backup is (an image smaller than
//! the disk has its backup at the image's end), and the first and last MiB of every partition the table
//! lists, where every file system, swap, LVM, LUKS and RAID signature `wipefs` finds lies (ext2/3/4, XFS,
//! btrfs's primary superblock at 64 KiB, FAT and NTFS boot sectors and their backups, ZFS labels, md
//! superblocks at either end, ISO 9660 at 32 KiB). The rest of the data is left as it is: for that,
//! [`super::erase`].

use super::device::Disk;
use super::error::ImagingError;
use super::partitions;
use std::path::Path;

/// What a wipe zeroed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WipeReport {
    /// Partitions found in the table (and wiped at both ends).
    pub partitions: usize,
    /// The byte ranges zeroed, `(start, length)`, in order, merged.
    pub ranges: Vec<(u64, u64)>,
}

/// The span wiped at each end of the disk and of each partition.
const SPAN: u64 = 1 << 20;

/// Wipes the signatures of the disk at `device` (a block device, or a file standing in for one).
pub fn wipe_signatures(device: &Path) -> Result<WipeReport, ImagingError> {
    let disk = Disk::open(device)?;
    wipe_disk(&disk)
}

/// Wipes the signatures of the disk at `device` while the running system uses it (not opened
/// exclusively): the system goes on from memory and boots no more from the disk.
pub fn wipe_signatures_in_use(device: &Path) -> Result<WipeReport, ImagingError> {
    let disk = Disk::open_shared(device)?;
    wipe_disk(&disk)
}

/// Wipes the signatures of an open disk.
pub(crate) fn wipe_disk(disk: &Disk) -> Result<WipeReport, ImagingError> {
    let size = disk.size();
    // The table as it is now (the one just written, after a failed write).
    let table = partitions::read(disk)?;
    let mut ranges = vec![(0, SPAN), (size.saturating_sub(SPAN), SPAN)];
    for header in &table.gpt_headers {
        // A header and the entries before it (a backup's entries precede it).
        let end = header + table.sector;
        ranges.push((end.saturating_sub(SPAN), SPAN));
        ranges.push((*header, table.sector));
    }
    for p in &table.partitions {
        ranges.push((p.start, SPAN.min(p.len)));
        ranges.push((p.start + p.len.saturating_sub(SPAN), SPAN.min(p.len)));
    }
    let ranges = merge(ranges, size);
    for &(start, len) in &ranges {
        disk.write_zeros(start, len)?;
    }
    disk.sync()?;
    disk.reread_partitions();
    Ok(WipeReport {
        partitions: table.partitions.len(),
        ranges,
    })
}

/// Sorts, clips to the disk and merges overlapping or touching ranges.
fn merge(mut ranges: Vec<(u64, u64)>, size: u64) -> Vec<(u64, u64)> {
    ranges.retain(|&(start, len)| len > 0 && start < size);
    ranges.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (start, len) in ranges {
        let end = (start + len).min(size);
        match out.last_mut() {
            Some((s, l)) if start <= *s + *l => *l = (*l).max(end - *s),
            _ => out.push((start, end - start)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_clipped_and_merged() {
        assert_eq!(
            merge(
                vec![(10, 5), (0, 4), (3, 4), (15, 1), (90, 20), (200, 1)],
                100
            ),
            vec![(0, 7), (10, 6), (90, 10)]
        );
    }
}
