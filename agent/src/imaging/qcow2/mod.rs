//! qcow2, read as a stream, front to back, once.
//!
//! qcow2 is not a streaming format: its tables may sit anywhere in the file. What `qemu-img convert -O
//! qcow2` writes (with or without `-c`) is in streaming order, though: the header, the refcount table and
//! its first block, the L1 table, then each L2 table just before the data clusters it maps (a table is
//! allocated when the first cluster it maps is), refcount blocks in between as the file grows. So the
//! reader keeps a map of what lies ahead (the *targets*: tables and data clusters by their offset in the
//! file, learnt from the tables read so far) and handles each as the stream reaches it: a table adds
//! targets, a data cluster is written at its disk offset, a compressed one decompressed first. Clusters
//! the tables say are unallocated or zero are zeroed on the disk as soon as the table says so.
//!
//! Bytes reached before any table said what they are (data ahead of its L2 table, as after an image was
//! resized or snapshotted in place) are kept in memory until the tables are all read, and so are the
//! targets not reached yet. Both together are bounded ([`super::WriteOptions::out_of_order_limit`]):
//! past the bound the image is refused, naming the remedy (`qemu-img convert -O qcow2`, which lays it
//! out in order).

mod cluster;
pub(crate) mod header;
mod stash;

use super::error::ImagingError;
use super::lookahead::Lookahead;
use super::writer::DiskWriter;
use cluster::ClusterDecoder;
pub use header::ClusterCompression;
use header::{be64, Header};
use stash::Stash;
use std::collections::BTreeMap;
use std::io::{self, Read};

/// Why a qcow2 image is refused or could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Qcow2Error {
    /// It has a backing file.
    #[error("it has a backing file ({name}): Plinth writes self-contained images; flatten it with `qemu-img convert -O qcow2 IMAGE NEW`")]
    BackingFile {
        /// The backing file's name as the header gives it.
        name: String,
    },
    /// It is encrypted.
    #[error(
        "it is encrypted ({0}): serve it decrypted (`qemu-img convert -O qcow2` with its secret)"
    )]
    Encrypted(&'static str),
    /// Its data lives in an external data file.
    #[error("its data is in an external data file ({name}): convert it into one file with `qemu-img convert -O qcow2`")]
    ExternalDataFile {
        /// The file named in the header.
        name: String,
    },
    /// Not version 2 or 3.
    #[error("version {0} (Plinth reads versions 2 and 3)")]
    Version(u32),
    /// qemu marked it corrupt.
    #[error("qemu marked it corrupt (inconsistent metadata): repair it with `qemu-img check -r all` and serve it again")]
    MarkedCorrupt,
    /// Incompatible features this reader does not know.
    #[error("it uses incompatible features this reader does not know (bits {0:#x})")]
    IncompatibleFeatures(u64),
    /// An unknown compression type for its clusters.
    #[error("unknown cluster compression type {0} (known: 0 deflate, 1 zstd)")]
    CompressionType(u8),
    /// A cluster size outside qcow2's range.
    #[error("cluster size 2^{0} bytes, outside qcow2's 512 bytes to 2 MiB")]
    ClusterBits(u32),
    /// The header says something impossible.
    #[error("bad header: {0}")]
    Header(String),
    /// The tables say something impossible.
    #[error("corrupt: {0}")]
    Corrupt(String),
    /// A compressed cluster does not decompress.
    #[error("the compressed cluster at byte {host} of the image (disk offset {guest}) is corrupt: {reason}")]
    Cluster {
        /// Its offset in the image.
        host: u64,
        /// Its offset on the disk.
        guest: u64,
        /// What the decoder said.
        reason: String,
    },
    /// More than the bound would have to be held to read it in one pass.
    #[error("it is not laid out for streaming: reading it in one pass would hold more than {limit} bytes in memory ({what}); rewrite it with `qemu-img convert -O qcow2 IMAGE NEW` (which writes each table before the data it maps), or serve it raw")]
    OutOfOrder {
        /// The bound.
        limit: u64,
        /// What was being held.
        what: String,
    },
    /// The stream ended before something its tables map.
    #[error("the stream ends at byte {end}, before {what} at byte {host}")]
    Truncated {
        /// Where the stream ended.
        end: u64,
        /// Where the missing part starts.
        host: u64,
        /// What is missing.
        what: String,
    },
}

/// What was read: the image's shape, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Qcow2Summary {
    /// 2 or 3.
    pub version: u32,
    /// The cluster size in bytes.
    pub cluster_size: u64,
    /// The virtual disk's size.
    pub virtual_size: u64,
    /// How compressed clusters are compressed.
    pub compression: ClusterCompression,
    /// Data clusters written as they are.
    pub data_clusters: u64,
    /// Compressed clusters decompressed and written.
    pub compressed_clusters: u64,
}

/// Memory one pending target is counted as.
const TARGET_COST: u64 = 64;
/// The largest piece of a table handled at once.
const TABLE_PIECE: usize = 1 << 20;

/// What lies at an offset of the image.
#[derive(Debug, Clone, Copy)]
enum Target {
    RefcountTable,
    RefcountBlock,
    L1,
    L2 { index: u64 },
    Data { guest: u64, allocated: u32 },
    Compressed { guest: u64, len: u64 },
}

/// Reads the qcow2 image in `input` (at its start) and writes it through `writer`. `disk_size` is checked
/// against the virtual size before anything is written.
pub(crate) fn write<R: Read>(
    input: &mut Lookahead<R>,
    writer: &mut DiskWriter<'_>,
    disk_size: u64,
    limit: u64,
    on_io: &dyn Fn(io::Error) -> ImagingError,
    on_size: &dyn Fn(u64) -> ImagingError,
    cancelled: &dyn Fn() -> bool,
) -> Result<Qcow2Summary, ImagingError> {
    let head = input.fill(24).map_err(on_io)?;
    let cluster_size = header::cluster_size_of(head).unwrap_or(512);
    let first = input.fill(cluster_size as usize).map_err(on_io)?;
    let first = &first[..first.len().min(cluster_size as usize)];
    let header = header::parse(first)?;
    if header.size > disk_size {
        return Err(on_size(header.size));
    }
    input.consume(cluster_size as usize);
    let mut reader = Reader {
        stash: Stash::default(),
        targets: BTreeMap::new(),
        seq: 0,
        l1_done: false,
        l2_pending: 0,
        limit,
        decoder: ClusterDecoder::new(header.compression),
        scratch: vec![0; cluster_size as usize],
        summary: Qcow2Summary {
            version: header.version,
            cluster_size,
            virtual_size: header.size,
            compression: header.compression,
            data_clusters: 0,
            compressed_clusters: 0,
        },
        header,
    };
    reader.run(input, writer, on_io, cancelled)?;
    Ok(reader.summary)
}

struct Reader {
    header: Header,
    targets: BTreeMap<(u64, u64), Target>,
    seq: u64,
    stash: Stash,
    l1_done: bool,
    /// L2 tables named by the L1 table and not read yet.
    l2_pending: u64,
    limit: u64,
    decoder: ClusterDecoder,
    scratch: Vec<u8>,
    summary: Qcow2Summary,
}

impl Reader {
    fn cs(&self) -> u64 {
        self.header.cluster_size()
    }

    /// True while bytes of unknown purpose may still turn out to be data.
    fn keeping(&self) -> bool {
        !self.l1_done || self.l2_pending > 0
    }

    fn len_of(&self, target: Target) -> u64 {
        match target {
            Target::RefcountTable => self.header.refcount_table_clusters * self.cs(),
            Target::L1 => self.header.l1_size * 8,
            Target::RefcountBlock | Target::L2 { .. } | Target::Data { .. } => self.cs(),
            Target::Compressed { len, .. } => len,
        }
    }

    fn run<R: Read>(
        &mut self,
        input: &mut Lookahead<R>,
        writer: &mut DiskWriter<'_>,
        on_io: &dyn Fn(io::Error) -> ImagingError,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<(), ImagingError> {
        if self.header.refcount_table_clusters > 0 {
            self.add(
                self.header.refcount_table_offset,
                Target::RefcountTable,
                input.pos(),
                writer,
            )?;
        }
        if self.header.l1_size > 0 {
            self.add(self.header.l1_offset, Target::L1, input.pos(), writer)?;
        } else {
            self.l1_done = true;
        }
        while let Some((&(host, seq), &target)) = self.targets.first_key_value() {
            if cancelled() {
                return Err(ImagingError::Cancelled);
            }
            let pos = input.pos();
            if host < pos {
                return Err(Qcow2Error::Corrupt(format!(
                    "{} at byte {host} overlaps what was read before it (up to byte {pos})",
                    describe(target)
                ))
                .into());
            }
            if host > pos {
                self.pass(input, host - pos, host, target, on_io)?;
            }
            let pos = host;
            self.targets.remove(&(host, seq));
            match target {
                Target::RefcountTable | Target::L1 => {
                    self.table(input, host, target, writer, on_io)?
                }
                _ => {
                    let len = self.len_of(target);
                    let bytes = input.fill(len as usize).map_err(on_io)?;
                    let available = bytes.len().min(len as usize);
                    let short = matches!(target, Target::Compressed { .. }) && available > 0;
                    if available < len as usize && !short {
                        return Err(Qcow2Error::Truncated {
                            end: pos + available as u64,
                            host,
                            what: describe(target),
                        }
                        .into());
                    }
                    let bytes = &bytes[..available];
                    // Compressed clusters share sectors: only the bytes this one took are consumed
                    // with it, the next may start right after.
                    let used = match self.handle(host, target, bytes, pos, writer) {
                        Err(ImagingError::Qcow2(Qcow2Error::Cluster { .. }))
                            if available < len as usize =>
                        {
                            return Err(Qcow2Error::Truncated {
                                end: pos + available as u64,
                                host,
                                what: describe(target),
                            }
                            .into());
                        }
                        other => other?,
                    };
                    let next = self.targets.first_key_value().map(|(k, _)| k.0);
                    let keep = next.map_or(used as u64, |n| (n - host).min(used as u64));
                    input.consume(keep as usize);
                }
            }
        }
        // Everything mapped was read: the rest of the stream (free space, snapshots' tables) is passed
        // over, but still read, so that the whole download is hashed.
        input.skip(u64::MAX).map_err(on_io)?;
        Ok(())
    }

    /// Reads `n` bytes nothing mapped yet, keeping them while they may turn out to be data.
    fn pass<R: Read>(
        &mut self,
        input: &mut Lookahead<R>,
        mut n: u64,
        next_host: u64,
        next: Target,
        on_io: &dyn Fn(io::Error) -> ImagingError,
    ) -> Result<(), ImagingError> {
        while n > 0 {
            let pos = input.pos();
            let bytes = input.fill_some().map_err(on_io)?;
            if bytes.is_empty() {
                return Err(Qcow2Error::Truncated {
                    end: pos,
                    host: next_host,
                    what: describe(next),
                }
                .into());
            }
            let take = bytes.len().min(usize::try_from(n).unwrap_or(usize::MAX));
            if self.keeping() {
                self.stash.put(pos, &bytes[..take]);
                self.check_held("bytes that no table read so far maps")?;
            }
            input.consume(take);
            n -= take as u64;
        }
        Ok(())
    }

    fn check_held(&self, what: &str) -> Result<(), ImagingError> {
        let held = self.stash.held() + self.targets.len() as u64 * TARGET_COST;
        if held > self.limit {
            return Err(Qcow2Error::OutOfOrder {
                limit: self.limit,
                what: format!(
                    "{what}: {} bytes of the image kept, {} clusters mapped ahead",
                    self.stash.held(),
                    self.targets.len()
                ),
            }
            .into());
        }
        Ok(())
    }

    /// Notes what lies at `host`; what was read already (`host` before `pos`) is taken from the stash.
    fn add(
        &mut self,
        host: u64,
        target: Target,
        pos: u64,
        writer: &mut DiskWriter<'_>,
    ) -> Result<(), ImagingError> {
        if let Target::L2 { .. } = target {
            self.l2_pending += 1;
        }
        if host >= pos {
            self.seq += 1;
            self.targets.insert((host, self.seq), target);
            return self.check_held("tables and clusters mapped ahead of the stream");
        }
        match target {
            Target::RefcountBlock => Ok(()),
            Target::RefcountTable | Target::L1 => Err(Qcow2Error::Corrupt(format!(
                "{} at byte {host} overlaps the header",
                describe(target)
            ))
            .into()),
            _ => {
                let len = self.len_of(target);
                let Some(bytes) = self.stash.get(host, len) else {
                    return Err(Qcow2Error::Corrupt(format!(
                        "{} at byte {host} lies where the image held something else",
                        describe(target)
                    ))
                    .into());
                };
                if (bytes.len() as u64) < len && !matches!(target, Target::Compressed { .. }) {
                    return Err(Qcow2Error::Corrupt(format!(
                        "{} at byte {host} overlaps other metadata",
                        describe(target)
                    ))
                    .into());
                }
                self.handle(host, target, &bytes, pos, writer).map(|_| ())
            }
        }
    }

    /// Reads the L1 or refcount table at `host` in pieces.
    fn table<R: Read>(
        &mut self,
        input: &mut Lookahead<R>,
        host: u64,
        target: Target,
        writer: &mut DiskWriter<'_>,
        on_io: &dyn Fn(io::Error) -> ImagingError,
    ) -> Result<(), ImagingError> {
        let len = self.len_of(target);
        let mut index = 0u64;
        let mut done = 0u64;
        while done < len {
            let pos = input.pos();
            let piece = (len - done).min(TABLE_PIECE as u64) as usize;
            let bytes = input.fill(piece).map_err(on_io)?;
            if bytes.len() < piece {
                return Err(Qcow2Error::Truncated {
                    end: pos + bytes.len() as u64,
                    host,
                    what: describe(target),
                }
                .into());
            }
            // The entries are copied out: handling them may need the stash and the writer.
            let entries: Vec<u64> = bytes[..piece].chunks_exact(8).map(|e| be64(e, 0)).collect();
            input.consume(piece);
            for entry in entries {
                match target {
                    Target::L1 => self.l1_entry(index, entry, input.pos(), writer)?,
                    _ => {
                        let block = entry & !(self.cs() - 1);
                        if block != 0 {
                            self.add(block, Target::RefcountBlock, input.pos(), writer)?;
                        }
                    }
                }
                index += 1;
            }
            done += piece as u64;
        }
        if let Target::L1 = target {
            self.l1_done = true;
            self.stash_check();
        }
        Ok(())
    }

    fn stash_check(&mut self) {
        if !self.keeping() {
            self.stash.clear();
        }
    }

    fn l1_entry(
        &mut self,
        index: u64,
        entry: u64,
        pos: u64,
        writer: &mut DiskWriter<'_>,
    ) -> Result<(), ImagingError> {
        let coverage = self.header.l2_coverage();
        let guest = index * coverage;
        if guest >= self.header.size {
            return Ok(());
        }
        let l2 = entry & 0x00ff_ffff_ffff_fe00;
        if l2 == 0 {
            return writer.zero(guest, coverage.min(self.header.size - guest));
        }
        if l2 % self.cs() != 0 {
            return Err(Qcow2Error::Corrupt(format!(
                "L1 entry {index} points at byte {l2}, not a cluster boundary"
            ))
            .into());
        }
        self.add(l2, Target::L2 { index }, pos, writer)
    }

    /// Handles a fixed-size target whose bytes are all here; returns how many of them it took.
    fn handle(
        &mut self,
        host: u64,
        target: Target,
        bytes: &[u8],
        pos: u64,
        writer: &mut DiskWriter<'_>,
    ) -> Result<usize, ImagingError> {
        let size = self.header.size;
        match target {
            Target::RefcountTable | Target::L1 | Target::RefcountBlock => Ok(bytes.len()),
            Target::L2 { index } => {
                self.l2(index, bytes, pos, writer)?;
                self.l2_pending -= 1;
                self.stash_check();
                Ok(bytes.len())
            }
            Target::Data { guest, allocated } => {
                let len = self.cs().min(size - guest) as usize;
                self.summary.data_clusters += 1;
                if allocated == u32::MAX {
                    writer.write(guest, &bytes[..len])?;
                    return Ok(bytes.len());
                }
                // Extended L2: 32 subclusters, each allocated (written) or not (zero).
                let sub = (self.cs() / 32) as usize;
                for i in 0..32 {
                    let from = i * sub;
                    if from >= len {
                        break;
                    }
                    let to = (from + sub).min(len);
                    if allocated & (1 << i) != 0 {
                        writer.write(guest + from as u64, &bytes[from..to])?;
                    } else {
                        writer.zero(guest + from as u64, (to - from) as u64)?;
                    }
                }
                Ok(bytes.len())
            }
            Target::Compressed { guest, .. } => {
                let used = self
                    .decoder
                    .decode(bytes, &mut self.scratch)
                    .map_err(|reason| Qcow2Error::Cluster {
                        host,
                        guest,
                        reason,
                    })?;
                self.summary.compressed_clusters += 1;
                let len = self.cs().min(size - guest) as usize;
                writer.write(guest, &self.scratch[..len])?;
                Ok(used)
            }
        }
    }

    /// One L2 table's entries: data and compressed clusters become targets, the rest is zeroed.
    fn l2(
        &mut self,
        index: u64,
        table: &[u8],
        pos: u64,
        writer: &mut DiskWriter<'_>,
    ) -> Result<(), ImagingError> {
        let cs = self.cs();
        let size = self.header.size;
        let extended = self.header.extended_l2;
        let width = if extended { 16 } else { 8 };
        let csize_shift = 62 - (self.header.cluster_bits - 8);
        let csize_mask = (1u64 << (self.header.cluster_bits - 8)) - 1;
        let coffset_mask = (1u64 << csize_shift) - 1;
        for (i, entry) in table.chunks_exact(width).enumerate() {
            let guest = index * self.header.l2_coverage() + i as u64 * cs;
            if guest >= size {
                break;
            }
            let len = cs.min(size - guest);
            let word = be64(entry, 0);
            let bitmap = if extended { be64(entry, 8) } else { 0 };
            if word & (1 << 62) != 0 {
                let offset = word & coffset_mask;
                let sectors = ((word >> csize_shift) & csize_mask) + 1;
                let clen = sectors * 512 - (offset & 511);
                if extended && bitmap != 0 {
                    return Err(self.corrupt_entry(
                        index,
                        i,
                        "a compressed cluster with subcluster bits",
                    ));
                }
                self.add(offset, Target::Compressed { guest, len: clen }, pos, writer)?;
                continue;
            }
            let offset = word & 0x00ff_ffff_ffff_fe00;
            let (allocated, zero) = if extended {
                (bitmap as u32, (bitmap >> 32) as u32)
            } else if self.header.version >= 3 && word & 1 != 0 {
                (0, u32::MAX)
            } else {
                (if offset != 0 { u32::MAX } else { 0 }, 0)
            };
            if allocated & zero != 0 {
                return Err(self.corrupt_entry(index, i, "subclusters both allocated and zero"));
            }
            if allocated == 0 {
                writer.zero(guest, len)?;
                continue;
            }
            if offset == 0 || offset % cs != 0 {
                return Err(self.corrupt_entry(
                    index,
                    i,
                    "an allocated cluster at no cluster boundary",
                ));
            }
            self.add(offset, Target::Data { guest, allocated }, pos, writer)?;
        }
        Ok(())
    }

    fn corrupt_entry(&self, index: u64, i: usize, what: &str) -> ImagingError {
        Qcow2Error::Corrupt(format!("L2 table {index}, entry {i}: {what}")).into()
    }
}

fn describe(target: Target) -> String {
    match target {
        Target::RefcountTable => "the refcount table".into(),
        Target::RefcountBlock => "a refcount block".into(),
        Target::L1 => "the L1 table".into(),
        Target::L2 { index } => format!("L2 table {index}"),
        Target::Data { guest, .. } => format!("the data cluster for disk offset {guest}"),
        Target::Compressed { guest, .. } => {
            format!("the compressed cluster for disk offset {guest}")
        }
    }
}
