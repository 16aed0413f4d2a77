//! Why an image could not be written, a disk wiped or erased. Every message names the device (or the
//! image's part), what was expected and what was found.

use super::detect::Compression;
use super::qcow2::Qcow2Error;
use std::io;
use std::path::PathBuf;

/// Why an image could not be written, or a disk wiped or erased.
#[derive(Debug, thiserror::Error)]
pub enum ImagingError {
    /// The disk could not be opened, sized, read, written, zeroed or synced.
    #[error("{device}: cannot {action}: {source}")]
    Device {
        /// The device or file.
        device: PathBuf,
        /// What was being done (`write 1048576 bytes at byte 0`).
        action: String,
        /// The system's error.
        #[source]
        source: io::Error,
    },
    /// The target is not a disk that can be written.
    #[error("{device}: {reason}")]
    NotADisk {
        /// The path given.
        device: PathBuf,
        /// What it is instead.
        reason: String,
    },
    /// Reading the image's stream failed (the download broke off, timed out, ...).
    #[error("reading the image failed after {after} bytes: {source}")]
    Read {
        /// The bytes downloaded before the failure.
        after: u64,
        /// The download's error.
        #[source]
        source: io::Error,
    },
    /// The compressed stream is corrupt, or ends before its end.
    #[error("the image's {compression} stream is corrupt or cut short ({after} compressed bytes read): {source}")]
    Decompress {
        /// The compression.
        compression: Compression,
        /// The compressed bytes read when it failed.
        after: u64,
        /// The decoder's error.
        #[source]
        source: io::Error,
    },
    /// The image is in a format that was recognised and is not written.
    #[error("the image is {what}, which Plinth does not write: {remedy}")]
    Unsupported {
        /// What the image is.
        what: String,
        /// What to do instead.
        remedy: String,
    },
    /// The image is in no known format.
    #[error("unknown image format: {found}; Plinth writes raw disk images (starting with an MBR or GPT partition table) and qcow2, either optionally compressed with gzip, xz or zstd")]
    UnknownFormat {
        /// What the image starts with.
        found: String,
    },
    /// Compressed inside compressed.
    #[error("the image is compressed twice ({inner} inside {outer}): one layer of compression is read; serve it decompressed once")]
    NestedCompression {
        /// The outer compression.
        outer: Compression,
        /// The compression found inside it.
        inner: Compression,
    },
    /// The qcow2 image is refused or corrupt.
    #[error("qcow2 image: {0}")]
    Qcow2(#[from] Qcow2Error),
    /// The image is larger than the disk (known before writing).
    #[error("{device}: the image is {image_size} bytes but the disk holds {disk_size} bytes")]
    ImageTooLarge {
        /// The device.
        device: PathBuf,
        /// The image's size.
        image_size: u64,
        /// The disk's size.
        disk_size: u64,
    },
    /// The image's content passed the end of the disk (found while writing).
    #[error("{device}: the image goes on past the end of the disk ({disk_size} bytes): it is larger than the disk")]
    PassesEnd {
        /// The device.
        device: PathBuf,
        /// The disk's size.
        disk_size: u64,
    },
    /// The stream ended before the image did.
    #[error("the image is truncated: {what}")]
    Truncated {
        /// What was expected and what arrived.
        what: String,
    },
    /// The bytes downloaded do not hash to the expected digest.
    #[error("{algorithm} checksum mismatch: expected {expected}, the {downloaded} bytes downloaded hash to {found}")]
    ChecksumMismatch {
        /// The algorithm.
        algorithm: super::HashAlgorithm,
        /// The expected digest.
        expected: String,
        /// The digest of what was downloaded.
        found: String,
        /// How many bytes were downloaded.
        downloaded: u64,
    },
    /// The expected digest itself is malformed.
    #[error("bad image checksum: {0}")]
    BadDigest(String),
    /// The agent is stopping.
    #[error("stopped: the agent is shutting down")]
    Cancelled,
    /// Writing had started when the cause failed it; the disk's signatures were wiped.
    #[error("{device}: {cause}; writing had started, so the disk's signatures were wiped: it cannot boot half an image")]
    Aborted {
        /// The device.
        device: PathBuf,
        /// What failed.
        cause: Box<ImagingError>,
    },
    /// Writing had started when the cause failed it, and wiping failed too.
    #[error("{device}: {cause}; writing had started, and wiping the disk's signatures failed too ({wipe}): the disk may hold half an image")]
    AbortedUnwiped {
        /// The device.
        device: PathBuf,
        /// What failed.
        cause: Box<ImagingError>,
        /// Why the wipe failed.
        wipe: Box<ImagingError>,
    },
}

impl ImagingError {
    /// The failure itself, under an `Aborted` or `AbortedUnwiped` wrapper.
    pub fn cause(&self) -> &ImagingError {
        match self {
            ImagingError::Aborted { cause, .. } | ImagingError::AbortedUnwiped { cause, .. } => {
                cause
            }
            other => other,
        }
    }

    /// True when the disk was written to and then wiped (or the wipe failed): its old content is gone.
    pub fn disk_changed(&self) -> bool {
        matches!(
            self,
            ImagingError::Aborted { .. } | ImagingError::AbortedUnwiped { .. }
        )
    }

    pub(crate) fn device(
        device: &std::path::Path,
        action: impl Into<String>,
        source: io::Error,
    ) -> Self {
        ImagingError::Device {
            device: device.to_path_buf(),
            action: action.into(),
            source,
        }
    }
}
