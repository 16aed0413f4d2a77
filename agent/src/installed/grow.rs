//! [`grow_last_partition`]: an image written to a larger disk uses its first part only; its last
//! partition (the root file system, as `make-image --format disk` lays it out) is grown to the disk's
//! end, as `growpart` does, and then its file system.

use super::blockdev;
use super::filesystem::{self, FsGrowth};
use super::table::{self, Relocation};
use super::InstalledError;
use std::path::{Path, PathBuf};

/// What [`grow_last_partition`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrowReport {
    /// The grown partition's device node.
    pub partition: PathBuf,
    /// Its number.
    pub number: u32,
    /// Its size before, in bytes.
    pub old_size: u64,
    /// Its size now, in bytes (the same when it already reached the disk's end).
    pub new_size: u64,
    /// What was done to the GPT's backup header first.
    pub relocation: Relocation,
    /// What was done to its file system.
    pub filesystem: FsGrowth,
}

/// Grows `disk`'s last partition to the end of the disk, and then its file system (ext2/3/4, checked
/// with `e2fsck -f -p` and grown with `resize2fs`, offline; another file system is left as it is and
/// the report says so). The GPT's backup is moved to the disk's end first ([`super::relocate_backup_gpt`]),
/// and the kernel is made to read the new table. The partition must not be mounted. A disk without a
/// GPT is refused.
pub fn grow_last_partition(disk: &Path) -> Result<GrowReport, InstalledError> {
    let relocation = table::relocate_backup_gpt(disk)?;
    if relocation == Relocation::NotGpt {
        return Err(InstalledError::Table {
            disk: disk.to_path_buf(),
            message: "no GPT (an MBR table, or none): only GPT disks are grown".to_string(),
        });
    }
    let before = table::read(disk)?.ok_or_else(|| InstalledError::Table {
        disk: disk.to_path_buf(),
        message: "its GPT is gone after moving the backup header".to_string(),
    })?;
    let last = before
        .last()
        .cloned()
        .ok_or_else(|| InstalledError::Table {
            disk: disk.to_path_buf(),
            message: "its GPT has no partitions".to_string(),
        })?;
    let old_size = (last.last_lba + 1 - last.first_lba) * before.sector;
    if last.last_lba > before.last_usable {
        return Err(InstalledError::Table {
            disk: disk.to_path_buf(),
            message: format!(
                "partition {} ends in sector {}, past the last usable sector {}",
                last.number, last.last_lba, before.last_usable
            ),
        });
    }
    let new_last = if last.last_lba < before.last_usable {
        table::extend_to_end(disk, last.number)?
    } else {
        last.last_lba
    };
    let after = table::read(disk)?.ok_or_else(|| InstalledError::Table {
        disk: disk.to_path_buf(),
        message: "its GPT is gone after growing the partition".to_string(),
    })?;
    let parts = blockdev::reread(disk, Some(&after.expected()))?;
    let partition = parts
        .iter()
        .find(|p| p.number == last.number)
        .map(|p| p.device.clone())
        .ok_or_else(|| InstalledError::Table {
            disk: disk.to_path_buf(),
            message: format!("the kernel has no partition {}", last.number),
        })?;
    let filesystem = filesystem::grow(&partition)?;
    Ok(GrowReport {
        partition,
        number: last.number,
        old_size,
        new_size: (new_last + 1 - last.first_lba) * before.sector,
        relocation,
        filesystem,
    })
}
