//! Writing an operating system image onto a disk as it downloads, and wiping and erasing disks: the
//! engine of the `provision` and `erase_node` tasks.
//!
//! [`write_image`] reads the image once, front to back, from any `Read` (the download), and never
//! holds it whole in memory or anywhere else:
//!
//! ```text
//!  source ──▶ [image-read thread: 1 MiB chunks] ──┬──▶ [image-hash thread: SHA-256/512 of the bytes as downloaded]
//!                                                 └──▶ detect ─▶ gzip/xz/zstd? ─▶ detect ─▶ raw | qcow2 ─▶ DiskWriter ─▶ disk
//! ```
//!
//! | module | owns |
//! |---|---|
//! | `detect` | what the image is, by magic bytes: the compression, then raw or qcow2; refusals by name |
//! | `decompress` | the one layer of compression, undone as it streams |
//! | `qcow2` | qcow2 read in one pass: header checks, the tables ahead, clusters as they come |
//! | `raw` | a raw image, written front to back |
//! | `writer` | gathering writes and zeroed ranges into large calls; all-zero blocks zeroed, not written |
//! | `device` | the disk: size, positioned writes, BLKZEROOUT / fallocate, discard, sync |
//! | `source` | the threads reading and hashing the download |
//! | `hash` | SHA-256 / SHA-512 and the expected digest |
//! | `partitions` | reading a GPT or MBR partition table |
//! | `wipe` | [`wipe_signatures`]: the signatures that make a disk recognised or bootable |
//! | `erase` | [`erase`]: the whole disk, by discard or write-zeroes where the device can, else zeros |
//! | `guard` | [`device_holds_running_system`] |
//!
//! The failure rule: what can be checked before writing is checked before writing (the format, a
//! qcow2 header, the virtual size against the disk's). A failure after writing started (a checksum
//! that does not match at the end, a stream that stops half-way, a corrupt cluster, an image passing
//! the disk's end) wipes the disk's signatures, so that it cannot boot half an image, and the error
//! ([`ImagingError::Aborted`]) says so.

mod decompress;
mod detect;
mod device;
mod erase;
mod error;
mod guard;
mod hash;
mod lookahead;
mod partitions;
pub mod qcow2;
mod raw;
mod source;
mod wipe;
mod writer;

#[cfg(test)]
mod tests;

pub use detect::{Compression, ImageFormat};
pub use erase::{erase, erase_in_use, erase_with, EraseMethod, EraseReport};
pub use error::ImagingError;
pub use guard::{device_holds_running_system, running_system_uses};
pub use hash::{ExpectedDigest, HashAlgorithm};
pub use qcow2::{ClusterCompression, Qcow2Error, Qcow2Summary};
pub use wipe::{wipe_signatures, wipe_signatures_in_use, WipeReport};

use crate::shutdown::Shutdown;
use detect::Detected;
use device::Disk;
use lookahead::Lookahead;
use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use writer::DiskWriter;

/// The default bound on what reading a qcow2 image out of order may hold in memory.
pub const DEFAULT_OUT_OF_ORDER_LIMIT: u64 = 16 << 20;
/// The buffer the format readers look ahead in (grown for qcow2's largest clusters).
const LOOKAHEAD: usize = 4 << 20;

/// Counters another thread may read while an image is written (for progress reports).
#[derive(Debug, Default)]
pub struct Progress {
    downloaded: AtomicU64,
    written: AtomicU64,
}

impl Progress {
    /// Bytes read from the source so far (as downloaded, before decompression).
    pub fn downloaded(&self) -> u64 {
        self.downloaded.load(Ordering::Relaxed)
    }

    /// Bytes of the disk written or zeroed so far.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    pub(crate) fn add_downloaded(&self, n: u64) {
        self.downloaded.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn add_written(&self, n: u64) {
        self.written.fetch_add(n, Ordering::Relaxed);
    }
}

/// How to write an image.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// The digest the bytes as downloaded must have; checked at the end (a mismatch wipes the disk).
    pub expected_digest: Option<ExpectedDigest>,
    /// How many bytes the download must bring (its `Content-Length`), when known: fewer or more is an
    /// error, and an uncompressed raw image longer than the disk is refused before writing.
    pub expected_length: Option<u64>,
    /// The most memory reading a qcow2 image whose data comes before its tables may hold.
    pub out_of_order_limit: u64,
    /// Counters to follow the progress from another thread.
    pub progress: Option<Arc<Progress>>,
    /// Stops the write (and wipes the disk, when writing had started) when triggered.
    pub cancel: Option<Shutdown>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            expected_digest: None,
            expected_length: None,
            out_of_order_limit: DEFAULT_OUT_OF_ORDER_LIMIT,
            progress: None,
            cancel: None,
        }
    }
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteReport {
    /// The compression around the image, if any.
    pub compression: Option<Compression>,
    /// The image's format.
    pub format: ImageFormat,
    /// What the qcow2 image was, for a qcow2 image.
    pub qcow2: Option<Qcow2Summary>,
    /// The image's size on the disk (a raw image's length, a qcow2 image's virtual size).
    pub image_size: u64,
    /// Bytes downloaded.
    pub downloaded: u64,
    /// Bytes of data written.
    pub written: u64,
    /// Bytes zeroed without being written.
    pub zeroed: u64,
    /// The digest of the bytes downloaded, in the expected digest's algorithm (none without one).
    pub digest: Option<String>,
}

/// What streaming found, before the totals are known.
struct Streamed {
    compression: Option<Compression>,
    format: ImageFormat,
    qcow2: Option<Qcow2Summary>,
    image_size: u64,
}

/// Writes the image that `source` reads onto the disk at `device` (a block device, opened exclusively,
/// or a regular file standing in for one, whose length is the disk's size). The image is read once,
/// front to back; the disk holds exactly the image afterwards, the rest of it untouched. On a failure
/// after writing started, the disk's signatures are wiped and the error is [`ImagingError::Aborted`].
pub fn write_image<R: Read + Send>(
    source: R,
    device: &Path,
    options: &WriteOptions,
) -> Result<WriteReport, ImagingError> {
    let disk = Disk::open(device)?;
    let algorithm = options.expected_digest.as_ref().map(|d| d.algorithm);
    std::thread::scope(|scope| {
        let (feed, state, download) = source::start(
            scope,
            source,
            algorithm,
            options.cancel.clone(),
            options.progress.clone(),
        )
        .map_err(|e| ImagingError::Read {
            after: 0,
            source: e,
        })?;
        let (mut writer, writing) = writer::start(scope, &disk, options.progress.as_deref())
            .map_err(|e| ImagingError::device(device, "start the writing thread", e))?;
        let streamed = stream(feed, &state, &disk, &mut writer, options)
            .and_then(|streamed| writer.flush().map(|()| streamed));
        let touched = writer.touched();
        let totals = writer.totals();
        // Closing the writer's channel lets the writing thread finish what it was handed.
        drop(writer);
        let wrote = writing.join().map_err(|_| thread_died("writing"));
        let downloaded = download.reader.join();
        let digest = download.hasher.map(|h| h.join());
        // A write that failed is the cause of anything else failing after it.
        let result = wrote
            .and_then(|wrote| wrote)
            .and(streamed)
            .and_then(|streamed| {
                let downloaded = downloaded.map_err(|_| thread_died("reader"))?;
                let digest = digest.transpose().map_err(|_| thread_died("hasher"))?;
                finish(&disk, options, streamed, downloaded, digest, totals)
            });
        result.map_err(|cause| if touched { abort(&disk, cause) } else { cause })
    })
}

fn thread_died(which: &str) -> ImagingError {
    ImagingError::Read {
        after: 0,
        source: io::Error::other(format!("the image {which} thread failed")),
    }
}

/// The checks at the end: length, digest; then everything synced.
fn finish(
    disk: &Disk,
    options: &WriteOptions,
    streamed: Streamed,
    downloaded: u64,
    digest: Option<String>,
    (written, zeroed): (u64, u64),
) -> Result<WriteReport, ImagingError> {
    if let Some(expected) = options.expected_length {
        if downloaded != expected {
            return Err(ImagingError::Truncated {
                what: format!(
                    "the download was to bring {expected} bytes and brought {downloaded}"
                ),
            });
        }
    }
    if let (Some(expected), Some(found)) = (&options.expected_digest, &digest) {
        if &expected.hex != found {
            return Err(ImagingError::ChecksumMismatch {
                algorithm: expected.algorithm,
                expected: expected.hex.clone(),
                found: found.clone(),
                downloaded,
            });
        }
    }
    disk.sync()?;
    disk.reread_partitions();
    Ok(WriteReport {
        compression: streamed.compression,
        format: streamed.format,
        qcow2: streamed.qcow2,
        image_size: streamed.image_size,
        downloaded,
        written,
        zeroed,
        digest,
    })
}

/// Wipes the disk after a failure that came once writing had started.
fn abort(disk: &Disk, cause: ImagingError) -> ImagingError {
    match wipe::wipe_disk(disk) {
        Ok(_) => ImagingError::Aborted {
            device: disk.path().to_path_buf(),
            cause: Box::new(cause),
        },
        Err(wipe) => ImagingError::AbortedUnwiped {
            device: disk.path().to_path_buf(),
            cause: Box::new(cause),
            wipe: Box::new(wipe),
        },
    }
}

/// Detects, decompresses and writes the image; reads the download to its end.
fn stream(
    feed: source::Feed,
    state: &source::FeedState,
    disk: &Disk,
    writer: &mut DiskWriter<'_>,
    options: &WriteOptions,
) -> Result<Streamed, ImagingError> {
    let cancelled = || options.cancel.as_ref().is_some_and(Shutdown::is_triggered);
    let on_source = |e: io::Error| {
        if cancelled() {
            ImagingError::Cancelled
        } else {
            ImagingError::Read {
                after: state.downloaded(),
                source: e,
            }
        }
    };
    let mut outer = Lookahead::new(feed, LOOKAHEAD);
    let head = outer.fill(detect::PEEK).map_err(on_source)?;
    let streamed = match detect::detect(head)? {
        Detected::Image(format) => {
            if let (ImageFormat::Raw, Some(len)) = (format, options.expected_length) {
                if len > disk.size() {
                    return Err(ImagingError::ImageTooLarge {
                        device: disk.path().to_path_buf(),
                        image_size: len,
                        disk_size: disk.size(),
                    });
                }
            }
            write_format(
                format, None, &mut outer, disk, writer, options, &on_source, &cancelled,
            )?
        }
        Detected::Compressed(compression) => {
            let on_decode = |e: io::Error| {
                if cancelled() {
                    ImagingError::Cancelled
                } else if state.source_failed() {
                    ImagingError::Read {
                        after: state.downloaded(),
                        source: e,
                    }
                } else {
                    ImagingError::Decompress {
                        compression,
                        after: state.consumed(),
                        source: e,
                    }
                }
            };
            let decoder = decompress::decoder(compression, &mut outer).map_err(on_decode)?;
            let mut inner = Lookahead::new(decoder, LOOKAHEAD);
            let head = inner.fill(detect::PEEK).map_err(on_decode)?;
            let format = match detect::detect(head)? {
                Detected::Compressed(inner) => {
                    return Err(ImagingError::NestedCompression {
                        outer: compression,
                        inner,
                    })
                }
                Detected::Image(format) => format,
            };
            let streamed = write_format(
                format,
                Some(compression),
                &mut inner,
                disk,
                writer,
                options,
                &on_decode,
                &cancelled,
            )?;
            drop(inner);
            streamed
        }
    };
    // Whatever follows the image in the download is read too, so that all of it is hashed.
    outer.skip(u64::MAX).map_err(on_source)?;
    Ok(streamed)
}

#[allow(clippy::too_many_arguments)]
fn write_format<R: Read>(
    format: ImageFormat,
    compression: Option<Compression>,
    input: &mut Lookahead<R>,
    disk: &Disk,
    writer: &mut DiskWriter<'_>,
    options: &WriteOptions,
    on_io: &dyn Fn(io::Error) -> ImagingError,
    cancelled: &dyn Fn() -> bool,
) -> Result<Streamed, ImagingError> {
    match format {
        ImageFormat::Raw => {
            let image_size = raw::write(input, writer, on_io, cancelled)?;
            Ok(Streamed {
                compression,
                format,
                qcow2: None,
                image_size,
            })
        }
        ImageFormat::Qcow2 => {
            let on_size = |image_size| ImagingError::ImageTooLarge {
                device: disk.path().to_path_buf(),
                image_size,
                disk_size: disk.size(),
            };
            let summary = qcow2::write(
                input,
                writer,
                disk.size(),
                options.out_of_order_limit,
                on_io,
                &on_size,
                cancelled,
            )?;
            Ok(Streamed {
                compression,
                format,
                qcow2: Some(summary),
                image_size: summary.virtual_size,
            })
        }
    }
}
