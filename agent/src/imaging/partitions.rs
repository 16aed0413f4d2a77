//! Reading a disk's partition table, for the wipe: GPT (primary header, or the backup at the disk's end
//! when the primary is gone) or MBR with its logical partitions. Entries are taken as listed, without
//! their checksums: a wipe errs towards wiping.

use super::device::Disk;
use super::error::ImagingError;

/// A partition's place on the disk, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Partition {
    pub(crate) start: u64,
    pub(crate) len: u64,
}

/// What the disk's partition table says.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Table {
    pub(crate) partitions: Vec<Partition>,
    /// The byte offsets of GPT headers found (primary, and the backup the primary names).
    pub(crate) gpt_headers: Vec<u64>,
    /// The sector size the GPT was found with.
    pub(crate) sector: u64,
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn le64(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(v)
}

/// Reads the table; an empty one when there is none.
pub(crate) fn read(disk: &Disk) -> Result<Table, ImagingError> {
    let size = disk.size();
    let mut sectors = vec![disk.sector()];
    for s in [512, 4096] {
        if !sectors.contains(&s) {
            sectors.push(s);
        }
    }
    for sector in sectors {
        if size < 2 * sector {
            continue;
        }
        let last = size / sector - 1;
        for lba in [1, last] {
            let mut header = vec![0u8; sector as usize];
            disk.read_at(lba * sector, &mut header)?;
            if &header[..8] == b"EFI PART" {
                return gpt(disk, sector, lba, &header);
            }
        }
    }
    if size >= 512 {
        let mut mbr = [0u8; 512];
        disk.read_at(0, &mut mbr)?;
        if mbr[510..] == [0x55, 0xaa] {
            return mbr_table(disk, &mbr);
        }
    }
    Ok(Table::default())
}

fn gpt(disk: &Disk, sector: u64, lba: u64, header: &[u8]) -> Result<Table, ImagingError> {
    let size = disk.size();
    let mut table = Table {
        sector,
        ..Table::default()
    };
    table.gpt_headers.push(lba * sector);
    let alternate = le64(header, 32);
    if alternate != lba && alternate.checked_mul(sector).is_some_and(|b| b < size) {
        table.gpt_headers.push(alternate * sector);
    }
    let entries_lba = le64(header, 72);
    let count = u64::from(le32(header, 80)).min(1024);
    let entry_size = u64::from(le32(header, 84));
    if !(128..=4096).contains(&entry_size) {
        return Ok(table);
    }
    let Some(start) = entries_lba.checked_mul(sector) else {
        return Ok(table);
    };
    let len = count * entry_size;
    if start.checked_add(len).is_none_or(|end| end > size) {
        return Ok(table);
    }
    let mut entries = vec![0u8; len as usize];
    disk.read_at(start, &mut entries)?;
    for entry in entries.chunks_exact(entry_size as usize) {
        if entry[..16].iter().all(|&b| b == 0) {
            continue;
        }
        let first = le64(entry, 32);
        let last = le64(entry, 40);
        push(
            &mut table,
            size,
            first.saturating_mul(sector),
            (last.saturating_sub(first) + 1).saturating_mul(sector),
        );
    }
    Ok(table)
}

fn push(table: &mut Table, disk_size: u64, start: u64, len: u64) {
    if len > 0 && start < disk_size {
        table.partitions.push(Partition {
            start,
            len: len.min(disk_size - start),
        });
    }
}

fn mbr_table(disk: &Disk, mbr: &[u8]) -> Result<Table, ImagingError> {
    let size = disk.size();
    let mut table = Table {
        sector: 512,
        ..Table::default()
    };
    for i in 0..4 {
        let e = &mbr[446 + 16 * i..446 + 16 * (i + 1)];
        let kind = e[4];
        let start = u64::from(le32(e, 8)) * 512;
        let len = u64::from(le32(e, 12)) * 512;
        if kind == 0 {
            continue;
        }
        if matches!(kind, 0x05 | 0x0f | 0x85) {
            logical(disk, &mut table, start)?;
        } else {
            push(&mut table, size, start, len);
        }
    }
    Ok(table)
}

/// Follows the chain of extended boot records from `extended` (bounded: a loop in a corrupt chain ends).
fn logical(disk: &Disk, table: &mut Table, extended: u64) -> Result<(), ImagingError> {
    let size = disk.size();
    let mut ebr_at = extended;
    for _ in 0..128 {
        if ebr_at + 512 > size {
            break;
        }
        let mut ebr = [0u8; 512];
        disk.read_at(ebr_at, &mut ebr)?;
        if ebr[510..] != [0x55, 0xaa] {
            break;
        }
        let e = &ebr[446..462];
        if e[4] != 0 {
            push(
                table,
                size,
                ebr_at + u64::from(le32(e, 8)) * 512,
                u64::from(le32(e, 12)) * 512,
            );
        }
        let next = &ebr[462..478];
        if next[4] == 0 {
            break;
        }
        ebr_at = extended + u64::from(le32(next, 8)) * 512;
    }
    Ok(())
}
