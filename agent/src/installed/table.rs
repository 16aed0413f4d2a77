//! A disk's GUID partition table, read and written with the `gpt` crate (headers, entries and their
//! CRCs), and [`relocate_backup_gpt`]: an image written to a larger disk keeps its backup header and
//! entries where the image ended, in the middle of the disk; they belong in its last sectors, and the
//! space between becomes usable (what `sgdisk -e` does).
//!
//! The protective MBR's partition is made to cover the disk too (its boot code, GRUB's on a BIOS
//! machine, is kept). The table is refused rather than rewritten when the `gpt` crate would change it
//! beyond the move: entries other than 128 bytes, or partition numbers with gaps (it writes used
//! entries one after another, which would renumber the partitions after a gap).

use super::blockdev::{self, Expected};
use super::InstalledError;
use gpt::disk::LogicalBlockSize;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// The GPT type of an EFI system partition.
pub(crate) const ESP_TYPE: &str = "C12A7328-F81F-11D2-BA4B-00A0C93EC93B";
/// The GPT type "Linux root (x86-64)" of the Discoverable Partitions Specification.
pub(crate) const ROOT_X86_64_TYPE: &str = "4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709";

/// The most entries a table may have for the agent to read it (the usual is 128).
const MAX_ENTRIES: u32 = 4096;

/// One used entry of a GPT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Its number (1 for the first entry).
    pub number: u32,
    /// Its type GUID, upper case.
    pub type_guid: String,
    /// Its own GUID (PARTUUID), lower case.
    pub guid: String,
    /// Its name (PARTLABEL).
    pub name: String,
    /// Its first and last sector.
    pub first_lba: u64,
    /// Its last sector (inclusive).
    pub last_lba: u64,
}

/// A disk's GPT as read.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    /// The logical sector size it counts in.
    pub sector: u64,
    /// The disk's size in sectors.
    pub sectors: u64,
    /// Where the primary header says the backup header is.
    pub backup_lba: u64,
    /// The last sector a partition may use, as the primary header says.
    pub last_usable: u64,
    /// Whether a valid backup header is at the disk's last sector.
    pub backup_at_end: bool,
    /// The used entries, by number.
    pub entries: Vec<Entry>,
}

impl Table {
    /// The partitions as the kernel should see them.
    pub fn expected(&self) -> Vec<Expected> {
        self.entries
            .iter()
            .map(|e| Expected {
                number: e.number,
                start: e.first_lba * self.sector,
                size: (e.last_lba + 1 - e.first_lba) * self.sector,
            })
            .collect()
    }

    /// The entry that ends last on the disk.
    pub fn last(&self) -> Option<&Entry> {
        self.entries.iter().max_by_key(|e| e.last_lba)
    }
}

/// What [`relocate_backup_gpt`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Relocation {
    /// The backup header and entries were moved to the disk's end.
    Moved {
        /// The sector the backup header was in.
        from_lba: u64,
        /// The sector it is in now (the disk's last).
        to_lba: u64,
    },
    /// The backup header already was at the disk's end: nothing was written.
    AlreadyAtEnd,
    /// The disk has no GPT (an MBR table, or none): nothing was written.
    NotGpt,
}

fn table_error(disk: &Path, message: impl Into<String>) -> InstalledError {
    InstalledError::Table {
        disk: disk.to_path_buf(),
        message: message.into(),
    }
}

fn block_size(disk: &Path, sector: u64) -> Result<LogicalBlockSize, InstalledError> {
    match sector {
        512 => Ok(LogicalBlockSize::Lb512),
        4096 => Ok(LogicalBlockSize::Lb4096),
        other => Err(table_error(
            disk,
            format!("a logical sector size of {other} bytes (GPT disks have 512 or 4096)"),
        )),
    }
}

/// Reads the disk's GPT; `None` when it has none (an MBR table, or nothing).
pub(crate) fn read(disk: &Path) -> Result<Option<Table>, InstalledError> {
    let mut file = blockdev::open(disk, false)?;
    read_from(disk, &mut file)
}

fn read_from(disk: &Path, file: &mut File) -> Result<Option<Table>, InstalledError> {
    let sector = blockdev::sector_size(disk, file)?;
    let size = blockdev::size_of(disk, file)?;
    let lb = block_size(disk, sector)?;
    let header = match gpt::header::read_header_from_arbitrary_device(file, lb) {
        Ok(h) => h,
        Err(_) => {
            return if has_protective_mbr(disk, file)? {
                Err(table_error(
                    disk,
                    "a protective MBR but no valid primary GPT header in sector 1",
                ))
            } else {
                Ok(None)
            };
        }
    };
    // The crate reads 128-byte entries only (and would stop the agent on others).
    if header.part_size != 128 || header.num_parts == 0 || header.num_parts > MAX_ENTRIES {
        return Err(table_error(
            disk,
            format!(
                "a GPT of {} entries of {} bytes: only tables of 1 to {MAX_ENTRIES} entries of 128 bytes are handled",
                header.num_parts, header.part_size
            ),
        ));
    }
    let gdisk = gpt::GptConfig::new()
        .writable(false)
        .logical_block_size(lb)
        .open_from_device(&mut *file)
        .map_err(|e| table_error(disk, format!("cannot read its GPT: {e}")))?;
    let sectors = size / sector;
    let backup_at_end = gdisk
        .backup_header()
        .is_ok_and(|b| b.current_lba + 1 == sectors && b.backup_lba == 1);
    let entries = gdisk
        .partitions()
        .iter()
        .filter(|(_, p)| p.is_used())
        .map(|(n, p)| Entry {
            number: *n,
            type_guid: p.part_type_guid.guid.to_string().to_uppercase(),
            guid: p.part_guid.to_string(),
            name: p.name.clone(),
            first_lba: p.first_lba,
            last_lba: p.last_lba,
        })
        .collect::<Vec<_>>();
    for e in &entries {
        if e.last_lba < e.first_lba || e.last_lba >= sectors {
            return Err(table_error(
                disk,
                format!(
                    "partition {} spans sectors {} to {}, outside the disk's {sectors} sectors",
                    e.number, e.first_lba, e.last_lba
                ),
            ));
        }
    }
    Ok(Some(Table {
        sector,
        sectors,
        backup_lba: header.backup_lba,
        last_usable: header.last_usable,
        backup_at_end,
        entries,
    }))
}

/// Whether sector 0 holds an MBR with a protective (0xEE) partition.
fn has_protective_mbr(disk: &Path, file: &mut File) -> Result<bool, InstalledError> {
    let mbr = read_mbr(disk, file)?;
    Ok(mbr[510..512] == [0x55, 0xAA] && (0..4).any(|i| mbr[446 + 16 * i + 4] == 0xEE))
}

fn read_mbr(disk: &Path, file: &mut File) -> Result<[u8; 512], InstalledError> {
    let mut mbr = [0u8; 512];
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_exact(&mut mbr))
        .map_err(|e| InstalledError::io(disk, "cannot read its first sector", e))?;
    Ok(mbr)
}

/// Moves the disk's GPT backup header and entries to its last sectors, so that the whole disk can be
/// used (as `sgdisk -e`), and makes the protective MBR cover the disk. A disk without a GPT is left as
/// it is. The kernel is then made to read the table (see [`super::grow_last_partition`]).
pub fn relocate_backup_gpt(disk: &Path) -> Result<Relocation, InstalledError> {
    let mut file = blockdev::open(disk, true)?;
    let Some(table) = read_from(disk, &mut file)? else {
        return Ok(Relocation::NotGpt);
    };
    let last = table.sectors.saturating_sub(1);
    if table.backup_lba == last && table.backup_at_end {
        return Ok(Relocation::AlreadyAtEnd);
    }
    if table.backup_lba > last {
        return Err(table_error(
            disk,
            format!(
                "the GPT says its backup header is in sector {}, past the disk's end ({} sectors): the image is larger than the disk",
                table.backup_lba, table.sectors
            ),
        ));
    }
    rewrite(disk, &mut file, &table, |_| {})?;
    // The old backup header, now inside the disk, must not be taken for a table.
    if table.backup_lba != last && table.backup_lba > 1 {
        let zero = vec![0u8; usize::try_from(table.sector).unwrap_or(512)];
        file.seek(SeekFrom::Start(table.backup_lba * table.sector))
            .and_then(|_| file.write_all(&zero))
            .map_err(|e| InstalledError::io(disk, "cannot clear the old backup GPT header", e))?;
    }
    cover_disk(disk, &mut file, table.sectors)?;
    file.sync_all()
        .map_err(|e| InstalledError::io(disk, "cannot flush the new GPT", e))?;
    Ok(Relocation::Moved {
        from_lba: table.backup_lba,
        to_lba: last,
    })
}

/// Makes the protective MBR's 0xEE partition end at the disk's end (at most 2^32 - 1 sectors, as the
/// specification says), keeping the boot code and everything else in sector 0.
fn cover_disk(disk: &Path, file: &mut File, sectors: u64) -> Result<(), InstalledError> {
    let mut mbr = read_mbr(disk, file)?;
    if mbr[510..512] != [0x55, 0xAA] {
        return Ok(());
    }
    let Some(i) = (0..4).find(|i| mbr[446 + 16 * i + 4] == 0xEE) else {
        return Ok(());
    };
    let entry = 446 + 16 * i;
    let start = u64::from(u32::from_le_bytes([
        mbr[entry + 8],
        mbr[entry + 9],
        mbr[entry + 10],
        mbr[entry + 11],
    ]));
    let count = u32::try_from(sectors.saturating_sub(start)).unwrap_or(u32::MAX);
    mbr[entry + 12..entry + 16].copy_from_slice(&count.to_le_bytes());
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.write_all(&mbr))
        .map_err(|e| InstalledError::io(disk, "cannot write the protective MBR", e))
}

/// Writes the GPT again after `edit` changed its entries: both headers recomputed for the disk's size
/// (the backup in the last sector, its entries before it, the last usable sector before them), both
/// entry arrays, their CRCs. A table whose partition numbers have gaps is refused: the crate writes
/// used entries one after another, which would renumber the partitions after a gap.
fn rewrite(
    disk: &Path,
    file: &mut File,
    table: &Table,
    edit: impl FnOnce(&mut BTreeMap<u32, gpt::partition::Partition>),
) -> Result<(), InstalledError> {
    for (i, e) in table.entries.iter().enumerate() {
        if usize::try_from(e.number).ok() != Some(i + 1) {
            return Err(table_error(
                disk,
                format!(
                    "partition numbers with gaps ({}): rewriting the GPT would renumber them",
                    table
                        .entries
                        .iter()
                        .map(|e| e.number.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    let lb = block_size(disk, table.sector)?;
    let mut gdisk = gpt::GptConfig::new()
        .writable(true)
        .logical_block_size(lb)
        .open_from_device(&mut *file)
        .map_err(|e| table_error(disk, format!("cannot read its GPT: {e}")))?;
    let mut parts = gdisk.take_partitions();
    edit(&mut parts);
    gdisk
        .update_partitions(parts)
        .and_then(|()| gdisk.write_inplace())
        .map_err(|e| table_error(disk, format!("cannot write the GPT: {e}")))
}

/// Moves the end of partition `number` to the last usable sector (after [`relocate_backup_gpt`] has
/// put the backup at the disk's end). Returns the new last sector.
pub(crate) fn extend_to_end(disk: &Path, number: u32) -> Result<u64, InstalledError> {
    let mut file = blockdev::open(disk, true)?;
    let table = read_from(disk, &mut file)?
        .ok_or_else(|| table_error(disk, "no GPT: only GPT disks are grown"))?;
    if !table.entries.iter().any(|e| e.number == number) {
        return Err(table_error(
            disk,
            format!("no partition {number} in its GPT"),
        ));
    }
    let end = table.last_usable;
    rewrite(disk, &mut file, &table, |parts| {
        if let Some(p) = parts.get_mut(&number) {
            p.last_lba = end;
        }
    })?;
    file.sync_all()
        .map_err(|e| InstalledError::io(disk, "cannot flush the new GPT", e))?;
    Ok(end)
}

/// The numbers of the table's partitions of GPT type `type_guid`.
pub(crate) fn of_type(table: &Table, type_guid: &str) -> Vec<u32> {
    table
        .entries
        .iter()
        .filter(|e| e.type_guid.eq_ignore_ascii_case(type_guid))
        .map(|e| e.number)
        .collect()
}
