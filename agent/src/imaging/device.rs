//! A disk: a block device, or a regular file standing in for one (tests, benchmarks). Its size, and the
//! primitives the writer, the wipe and the erase use: positioned writes, zeroing a range without writing
//! it (BLKZEROOUT on a block device, fallocate on a file), discard, sync.

use super::error::ImagingError;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

// Block device ioctls (linux/fs.h): _IOR(0x12, 114, size_t), _IO(0x12, 127), _IO(0x12, 119),
// _IO(0x12, 104), _IO(0x12, 95).
const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
const BLKZEROOUT: libc::c_ulong = 0x127f;
const BLKDISCARD: libc::c_ulong = 0x1277;
const BLKSSZGET: libc::c_ulong = 0x1268;
const BLKRRPART: libc::c_ulong = 0x125f;

/// The memory alignment direct I/O asks of a buffer (a page covers every device's).
pub(crate) const DIRECT_ALIGN: usize = 4096;

/// A zero buffer for writing zeros where nothing cheaper works.
static ZEROS: [u8; 1 << 20] = [0; 1 << 20];

/// What kind of disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Block,
    File,
}

/// An open disk.
#[derive(Debug)]
pub(crate) struct Disk {
    file: File,
    /// The same block device opened with O_DIRECT, for aligned writes of data: they go to the device
    /// without filling the page cache (which a loop device, for one, drains slowly).
    direct: Option<File>,
    path: PathBuf,
    kind: Kind,
    size: u64,
    sector: u64,
}

impl Disk {
    /// Opens a block device (exclusively: the kernel refuses while a partition of it is mounted) or a
    /// regular file, for reading and writing.
    pub(crate) fn open(path: &Path) -> Result<Disk, ImagingError> {
        Disk::open_with(path, true)
    }

    /// Opens a block device even while a partition of it is mounted: for erasing the disk the running
    /// system lives on, when the task says so.
    pub(crate) fn open_shared(path: &Path) -> Result<Disk, ImagingError> {
        Disk::open_with(path, false)
    }

    fn open_with(path: &Path, exclusive: bool) -> Result<Disk, ImagingError> {
        let meta = std::fs::metadata(path)
            .map_err(|e| ImagingError::device(path, "read what it is", e))?;
        let kind = if meta.file_type().is_block_device() {
            Kind::Block
        } else if meta.is_file() {
            Kind::File
        } else {
            return Err(ImagingError::NotADisk {
                device: path.to_path_buf(),
                reason: "is neither a block device nor a regular file".into(),
            });
        };
        let mut options = OpenOptions::new();
        options.read(true).write(true);
        if kind == Kind::Block && exclusive {
            options.custom_flags(libc::O_EXCL);
        }
        let file = options.open(path).map_err(|e| {
            let action = if kind == Kind::Block && e.raw_os_error() == Some(libc::EBUSY) {
                "open it exclusively (a partition of it is mounted or in use)"
            } else {
                "open it for writing"
            };
            ImagingError::device(path, action, e)
        })?;
        let (size, sector) = match kind {
            Kind::File => (meta.len(), 512),
            Kind::Block => {
                let mut size: u64 = 0;
                // SAFETY: BLKGETSIZE64 writes one u64 through the pointer, which points at `size`.
                let r =
                    unsafe { libc::ioctl(file.as_raw_fd(), BLKGETSIZE64, &mut size as *mut u64) };
                if r != 0 {
                    return Err(ImagingError::device(
                        path,
                        "read its size",
                        io::Error::last_os_error(),
                    ));
                }
                let mut sector: libc::c_int = 0;
                // SAFETY: BLKSSZGET writes one int through the pointer, which points at `sector`.
                let r = unsafe {
                    libc::ioctl(file.as_raw_fd(), BLKSSZGET, &mut sector as *mut libc::c_int)
                };
                let sector = if r == 0 && sector > 0 {
                    sector as u64
                } else {
                    512
                };
                (size, sector)
            }
        };
        let direct = match kind {
            Kind::Block => OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_DIRECT)
                .open(path)
                .ok(),
            Kind::File => None,
        };
        Ok(Disk {
            file,
            direct,
            path: path.to_path_buf(),
            kind,
            size,
            sector,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    /// The size in bytes.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// The logical sector size (512 for a file).
    pub(crate) fn sector(&self) -> u64 {
        self.sector
    }

    /// Writes all of `data` at `offset`.
    pub(crate) fn write_at(&self, offset: u64, data: &[u8]) -> Result<(), ImagingError> {
        self.file.write_all_at(data, offset).map_err(|e| {
            ImagingError::device(
                &self.path,
                format!("write {} bytes at byte {offset}", data.len()),
                e,
            )
        })
    }

    /// Writes all of `data` at `offset`, with direct I/O when the disk has it and the write is aligned
    /// (the offset and length on the sector size, the memory on [`DIRECT_ALIGN`]).
    pub(crate) fn write_data_at(&self, offset: u64, data: &[u8]) -> Result<(), ImagingError> {
        let aligned = offset % self.sector == 0
            && data.len() as u64 % self.sector == 0
            && (data.as_ptr() as usize) % DIRECT_ALIGN == 0;
        match &self.direct {
            Some(direct) if aligned => direct.write_all_at(data, offset).map_err(|e| {
                ImagingError::device(
                    &self.path,
                    format!("write {} bytes at byte {offset} (direct I/O)", data.len()),
                    e,
                )
            }),
            _ => self.write_at(offset, data),
        }
    }

    /// Reads exactly `out.len()` bytes at `offset`.
    pub(crate) fn read_at(&self, offset: u64, out: &mut [u8]) -> Result<(), ImagingError> {
        self.file.read_exact_at(out, offset).map_err(|e| {
            ImagingError::device(
                &self.path,
                format!("read {} bytes at byte {offset}", out.len()),
                e,
            )
        })
    }

    /// Makes `len` bytes at `offset` read as zeros, as cheaply as the disk allows: on a block device a
    /// punched hole where the device guarantees zeros after it, else BLKZEROOUT (the device's
    /// write-zeroes command, or the kernel writing zeros); a punched hole in a file; writing zeros
    /// where nothing else works, and at unaligned edges.
    pub(crate) fn zero(&self, offset: u64, len: u64) -> Result<(), ImagingError> {
        if len == 0 {
            return Ok(());
        }
        let end = offset + len;
        let (start_a, end_a) = match self.kind {
            Kind::Block => (
                offset.next_multiple_of(self.sector),
                end / self.sector * self.sector,
            ),
            Kind::File => (offset, end),
        };
        if start_a >= end_a {
            return self.write_zeros(offset, len);
        }
        self.write_zeros(offset, start_a - offset)?;
        // On a block device, a punched hole first: the kernel zeroes the range by the device's
        // write-zeroes command with unmapping allowed (thin storage gets the space back), and only
        // where the device guarantees the range then reads as zeros; BLKZEROOUT where it cannot.
        let done = (self.kind == Kind::Block && self.fallocate_hole(start_a, end_a - start_a))
            || self.zero_out(start_a, end_a - start_a)?;
        if !done {
            self.write_zeros(start_a, end_a - start_a)?;
        }
        self.write_zeros(end_a, end - end_a)
    }

    /// Punches a hole, keeping the size (on a block device: zeroes by unmapping, where the device
    /// guarantees zeros after it).
    fn fallocate_hole(&self, offset: u64, len: u64) -> bool {
        let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        // SAFETY: fallocate takes plain integers.
        unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                mode,
                offset as libc::off_t,
                len as libc::off_t,
            ) == 0
        }
    }

    /// Punches a hole (the file keeps its size), or failing that zeroes the range in place.
    fn fallocate_zero(&self, offset: u64, len: u64) -> bool {
        let fd = self.file.as_raw_fd();
        for mode in [
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            libc::FALLOC_FL_ZERO_RANGE | libc::FALLOC_FL_KEEP_SIZE,
        ] {
            // SAFETY: fallocate takes plain integers.
            if unsafe { libc::fallocate(fd, mode, offset as libc::off_t, len as libc::off_t) } == 0
            {
                return true;
            }
        }
        false
    }

    /// Writes zeros over the range.
    pub(crate) fn write_zeros(&self, mut offset: u64, len: u64) -> Result<(), ImagingError> {
        let end = offset + len;
        while offset < end {
            let n = (end - offset).min(ZEROS.len() as u64) as usize;
            self.write_at(offset, &ZEROS[..n])?;
            offset += n as u64;
        }
        Ok(())
    }

    /// Discards (trims) the range on a block device; `Ok(false)` when the device does not support it.
    pub(crate) fn discard(&self, offset: u64, len: u64) -> Result<bool, ImagingError> {
        if self.kind != Kind::Block {
            return Ok(false);
        }
        self.range_ioctl(BLKDISCARD, "discard", offset, len)
    }

    /// Zeroes the range with BLKZEROOUT alone (a hole in a file); `Ok(false)` when the device refuses.
    pub(crate) fn zero_out(&self, offset: u64, len: u64) -> Result<bool, ImagingError> {
        if self.kind != Kind::Block {
            return Ok(self.fallocate_zero(offset, len));
        }
        self.range_ioctl(BLKZEROOUT, "zero", offset, len)
    }

    /// An ioctl taking a byte range (BLKDISCARD, BLKZEROOUT); `Ok(false)` when the device does not
    /// support it.
    fn range_ioctl(
        &self,
        request: libc::c_ulong,
        what: &str,
        offset: u64,
        len: u64,
    ) -> Result<bool, ImagingError> {
        let range: [u64; 2] = [offset, len];
        // SAFETY: both ioctls read two u64 (start, length) through the pointer, which points at `range`.
        let r = unsafe { libc::ioctl(self.file.as_raw_fd(), request, range.as_ptr()) };
        if r == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EOPNOTSUPP) | Some(libc::ENOTTY) => Ok(false),
            _ => Err(ImagingError::device(
                &self.path,
                format!("{what} {len} bytes at byte {offset}"),
                e,
            )),
        }
    }

    /// Flushes everything written to stable storage.
    pub(crate) fn sync(&self) -> Result<(), ImagingError> {
        self.file
            .sync_all()
            .map_err(|e| ImagingError::device(&self.path, "flush what was written (fsync)", e))
    }

    /// Asks the kernel to read the partition table again (best effort: a loop device without partition
    /// scanning, or a disk with a partition in use, says no, and that is not an error).
    pub(crate) fn reread_partitions(&self) {
        if self.kind == Kind::Block {
            // SAFETY: BLKRRPART takes no argument.
            let _ = unsafe { libc::ioctl(self.file.as_raw_fd(), BLKRRPART, 0) };
        }
    }
}

/// The device's queue attributes in sysfs (`/sys/class/block/NAME/queue/`, the parent disk's for a
/// partition).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Queue {
    pub(crate) discard_max_bytes: u64,
    pub(crate) discard_zeroes_data: bool,
    pub(crate) write_zeroes_max_bytes: u64,
}

impl Queue {
    /// Reads the attributes of the block device at `path`; all zero when they cannot be read.
    pub(crate) fn of(path: &Path) -> Queue {
        let Some(dir) = sysfs_dir(path) else {
            return Queue::default();
        };
        let queue = if dir.join("queue").is_dir() {
            dir.join("queue")
        } else {
            dir.join("../queue")
        };
        let read = |name: &str| -> u64 {
            std::fs::read_to_string(queue.join(name))
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0)
        };
        Queue {
            discard_max_bytes: read("discard_max_bytes"),
            discard_zeroes_data: read("discard_zeroes_data") == 1,
            write_zeroes_max_bytes: read("write_zeroes_max_bytes"),
        }
    }
}

/// The sysfs directory of a block device (`/sys/dev/block/MAJOR:MINOR`, resolved).
pub(crate) fn sysfs_dir(path: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    if !meta.file_type().is_block_device() {
        return None;
    }
    let rdev = meta.rdev();
    let dir = PathBuf::from(format!(
        "/sys/dev/block/{}:{}",
        libc::major(rdev),
        libc::minor(rdev)
    ));
    std::fs::canonicalize(dir).ok()
}
