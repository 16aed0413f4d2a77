//! The qcow2 header (versions 2 and 3) and its extensions, read from the image's first cluster, with
//! every refusal decided before anything is written: backing files, encryption, external data files,
//! images qemu marked corrupt, features this reader does not know.

use super::Qcow2Error;

/// How a qcow2 image's compressed clusters are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterCompression {
    /// Raw deflate (zlib without its header), qcow2's default.
    Deflate,
    /// zstd (`compression_type=zstd`, version 3 with incompatible feature bit 3).
    Zstd,
}

/// What the reader needs of the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) version: u32,
    pub(crate) cluster_bits: u32,
    /// The virtual disk's size in bytes.
    pub(crate) size: u64,
    pub(crate) l1_size: u64,
    pub(crate) l1_offset: u64,
    pub(crate) refcount_table_offset: u64,
    pub(crate) refcount_table_clusters: u64,
    pub(crate) compression: ClusterCompression,
    /// Extended L2 entries: 16 bytes each, with 32 subclusters a cluster.
    pub(crate) extended_l2: bool,
}

impl Header {
    pub(crate) fn cluster_size(&self) -> u64 {
        1 << self.cluster_bits
    }

    /// The entries of one L2 table.
    pub(crate) fn l2_entries(&self) -> u64 {
        self.cluster_size() / if self.extended_l2 { 16 } else { 8 }
    }

    /// The bytes of virtual disk one L2 table maps.
    pub(crate) fn l2_coverage(&self) -> u64 {
        self.l2_entries() * self.cluster_size()
    }
}

// Header fields' offsets.
const V2_LEN: usize = 72;
const V3_LEN: usize = 104;
/// qemu's largest L1 table (32 MiB of entries).
const MAX_L1_ENTRIES: u64 = 32 * 1024 * 1024 / 8;

// Incompatible feature bits (version 3).
const DIRTY: u64 = 1 << 0;
const CORRUPT: u64 = 1 << 1;
const EXTERNAL_DATA: u64 = 1 << 2;
const COMPRESSION_TYPE: u64 = 1 << 3;
const EXTENDED_L2: u64 = 1 << 4;

// Header extension types.
const EXT_END: u32 = 0;
const EXT_EXTERNAL_DATA_FILE: u32 = 0x4441_5441;

fn be32(b: &[u8], at: usize) -> u32 {
    let mut v = [0u8; 4];
    v.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(v)
}

pub(crate) fn be64(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(v)
}

/// The first cluster's size, read from the start of the header (at least 24 bytes); `None` when the
/// bytes are too few.
pub(crate) fn cluster_size_of(head: &[u8]) -> Option<u64> {
    if head.len() < 24 {
        return None;
    }
    let bits = be32(head, 20);
    (9..=21).contains(&bits).then(|| 1u64 << bits)
}

/// Reads and checks the header in `first` (the image's first cluster, or all of it when it is shorter).
pub(crate) fn parse(first: &[u8]) -> Result<Header, Qcow2Error> {
    if first.len() < V2_LEN {
        return Err(Qcow2Error::Header(format!(
            "the header is {V2_LEN} bytes at least, the image has {}",
            first.len()
        )));
    }
    let version = be32(first, 4);
    if !(2..=3).contains(&version) {
        return Err(Qcow2Error::Version(version));
    }
    let cluster_bits = be32(first, 20);
    if !(9..=21).contains(&cluster_bits) {
        return Err(Qcow2Error::ClusterBits(cluster_bits));
    }
    let cluster_size = 1u64 << cluster_bits;
    if (first.len() as u64) < cluster_size {
        return Err(Qcow2Error::Truncated {
            end: first.len() as u64,
            host: 0,
            what: format!("its header cluster of {cluster_size} bytes"),
        });
    }
    let backing_offset = be64(first, 8);
    let backing_len = be32(first, 16) as usize;
    if backing_offset != 0 {
        let name = usize::try_from(backing_offset)
            .ok()
            .and_then(|at| first.get(at..at.checked_add(backing_len)?))
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_else(|| "its name lies outside the header cluster".into());
        return Err(Qcow2Error::BackingFile { name });
    }
    match be32(first, 32) {
        0 => {}
        1 => return Err(Qcow2Error::Encrypted("AES")),
        2 => return Err(Qcow2Error::Encrypted("LUKS")),
        _ => return Err(Qcow2Error::Encrypted("an unknown method")),
    }
    let mut header = Header {
        version,
        cluster_bits,
        size: be64(first, 24),
        l1_size: u64::from(be32(first, 36)),
        l1_offset: be64(first, 40),
        refcount_table_offset: be64(first, 48),
        refcount_table_clusters: u64::from(be32(first, 56)),
        compression: ClusterCompression::Deflate,
        extended_l2: false,
    };
    let mut extensions_at = V2_LEN;
    if version == 3 {
        if first.len() < V3_LEN {
            return Err(Qcow2Error::Header(
                "a version 3 header is 104 bytes at least".into(),
            ));
        }
        let incompatible = be64(first, 72);
        let header_len = be32(first, 100) as usize;
        if header_len < V3_LEN || header_len > first.len() {
            return Err(Qcow2Error::Header(format!("header length {header_len}")));
        }
        if incompatible & CORRUPT != 0 {
            return Err(Qcow2Error::MarkedCorrupt);
        }
        if incompatible & EXTERNAL_DATA != 0 {
            let name = external_data_file(first, header_len, cluster_size as usize)
                .unwrap_or_else(|| "not named in the header".into());
            return Err(Qcow2Error::ExternalDataFile { name });
        }
        let unknown = incompatible & !(DIRTY | COMPRESSION_TYPE | EXTENDED_L2);
        if unknown != 0 {
            return Err(Qcow2Error::IncompatibleFeatures(unknown));
        }
        let compression_type = if header_len > V3_LEN { first[104] } else { 0 };
        header.compression = match compression_type {
            0 => ClusterCompression::Deflate,
            1 if incompatible & COMPRESSION_TYPE != 0 => ClusterCompression::Zstd,
            other => return Err(Qcow2Error::CompressionType(other)),
        };
        header.extended_l2 = incompatible & EXTENDED_L2 != 0;
        if header.extended_l2 && cluster_bits < 14 {
            return Err(Qcow2Error::Header(
                "extended L2 entries with clusters under 16 KiB".into(),
            ));
        }
        extensions_at = header_len.next_multiple_of(8);
    }
    // An external data file named in an extension without the feature bit is refused all the same.
    if let Some(name) = external_data_file(first, extensions_at, cluster_size as usize) {
        return Err(Qcow2Error::ExternalDataFile { name });
    }
    check_layout(&header)?;
    Ok(header)
}

/// The external data file's name, when a header extension names one.
fn external_data_file(first: &[u8], mut at: usize, end: usize) -> Option<String> {
    let end = end.min(first.len());
    while at + 8 <= end {
        let kind = be32(first, at);
        let len = be32(first, at + 4) as usize;
        if kind == EXT_END {
            return None;
        }
        let data = first.get(at + 8..(at + 8).checked_add(len)?)?;
        if kind == EXT_EXTERNAL_DATA_FILE {
            return Some(String::from_utf8_lossy(data).into_owned());
        }
        at = (at + 8 + len).next_multiple_of(8);
    }
    None
}

/// The tables' places and sizes make sense.
fn check_layout(h: &Header) -> Result<(), Qcow2Error> {
    let cs = h.cluster_size();
    let needed = h.size.div_ceil(h.l2_coverage());
    if h.l1_size < needed {
        return Err(Qcow2Error::Header(format!(
            "its L1 table has {} entries, a disk of {} bytes needs {needed}",
            h.l1_size, h.size
        )));
    }
    if h.l1_size > MAX_L1_ENTRIES {
        return Err(Qcow2Error::Header(format!(
            "its L1 table has {} entries, more than qemu's limit of {MAX_L1_ENTRIES}",
            h.l1_size
        )));
    }
    if h.l1_size > 0 && (h.l1_offset < cs || h.l1_offset % cs != 0) {
        return Err(Qcow2Error::Header(format!(
            "its L1 table is at byte {}, not a cluster boundary after the header",
            h.l1_offset
        )));
    }
    if h.refcount_table_clusters > 0
        && (h.refcount_table_offset < cs || h.refcount_table_offset % cs != 0)
    {
        return Err(Qcow2Error::Header(format!(
            "its refcount table is at byte {}, not a cluster boundary after the header",
            h.refcount_table_offset
        )));
    }
    if h.refcount_table_clusters > (1 << 23) {
        return Err(Qcow2Error::Header(format!(
            "its refcount table is {} clusters",
            h.refcount_table_clusters
        )));
    }
    Ok(())
}
