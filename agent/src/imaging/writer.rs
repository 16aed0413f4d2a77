//! Writing an image's content to a disk at offsets: data in large writes (adjacent pieces gathered into
//! one), all-zero blocks and ranges the image says are zero never written but zeroed (adjacent ranges
//! gathered into one call), nothing past the image's end touched. The writes themselves happen on a
//! thread of their own, so that reading, decompressing and writing overlap; at most [`POOL`] buffers
//! of [`RUN`] bytes exist.

use super::device::{Disk, DIRECT_ALIGN};
use super::error::ImagingError;
use super::Progress;
use std::io;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::{Scope, ScopedJoinHandle};

/// The largest write the writer makes.
const RUN: usize = 4 << 20;
/// Buffers of data: one being filled, the others queued for or being written.
const POOL: usize = 4;
/// The granularity of zero detection in data: a block of this size (aligned on the disk) that is all
/// zeros is zeroed rather than written.
pub(crate) const ZERO_BLOCK: u64 = 64 * 1024;

/// What the writing thread does.
enum Op {
    Write(u64, Buffer),
    Zero(u64, u64),
}

/// A buffer of up to [`RUN`] bytes starting at an address aligned for direct I/O.
struct Buffer {
    memory: Vec<u8>,
    start: usize,
    len: usize,
}

impl Buffer {
    fn new() -> Buffer {
        let memory = vec![0u8; RUN + DIRECT_ALIGN];
        let start = memory.as_ptr().align_offset(DIRECT_ALIGN).min(DIRECT_ALIGN);
        Buffer {
            memory,
            start,
            len: 0,
        }
    }

    fn bytes(&self) -> &[u8] {
        &self.memory[self.start..self.start + self.len]
    }

    fn push(&mut self, piece: &[u8]) {
        let at = self.start + self.len;
        self.memory[at..at + piece.len()].copy_from_slice(piece);
        self.len += piece.len();
    }
}

/// Gathers writes and zeroed ranges and hands them to the writing thread.
pub(crate) struct DiskWriter<'d> {
    disk: &'d Disk,
    progress: Option<&'d Progress>,
    run: Option<Buffer>,
    run_offset: u64,
    zeros: Option<(u64, u64)>,
    /// True once anything was handed to the writing thread.
    touched: bool,
    written: u64,
    zeroed: u64,
    ops: SyncSender<Op>,
    pool: Receiver<Buffer>,
    allocated: usize,
}

/// Starts the writing thread on `scope`; the writer hands it work, and joining it gives the first
/// error a write met.
pub(crate) fn start<'scope, 'd: 'scope>(
    scope: &'scope Scope<'scope, '_>,
    disk: &'d Disk,
    progress: Option<&'d Progress>,
) -> io::Result<(
    DiskWriter<'d>,
    ScopedJoinHandle<'scope, Result<(), ImagingError>>,
)> {
    let (ops, ops_rx) = mpsc::sync_channel::<Op>(POOL - 1);
    let (pool_tx, pool) = mpsc::sync_channel::<Buffer>(POOL);
    let handle = std::thread::Builder::new()
        .name("image-write".into())
        .spawn_scoped(scope, move || {
            for op in ops_rx {
                match op {
                    Op::Write(offset, mut buf) => {
                        disk.write_data_at(offset, buf.bytes())?;
                        buf.len = 0;
                        let _ = pool_tx.try_send(buf);
                    }
                    Op::Zero(offset, len) => disk.zero(offset, len)?,
                }
            }
            Ok(())
        })?;
    let writer = DiskWriter {
        disk,
        progress,
        run: None,
        run_offset: 0,
        zeros: None,
        touched: false,
        written: 0,
        zeroed: 0,
        ops,
        pool,
        allocated: 0,
    };
    Ok((writer, handle))
}

impl DiskWriter<'_> {
    /// True once anything reached (or was about to reach) the disk.
    pub(crate) fn touched(&self) -> bool {
        self.touched || self.run_len() > 0 || self.zeros.is_some()
    }

    /// Bytes of data written, bytes zeroed.
    pub(crate) fn totals(&self) -> (u64, u64) {
        (self.written, self.zeroed)
    }

    fn check_end(&self, end: u64) -> Result<(), ImagingError> {
        if end > self.disk.size() {
            return Err(ImagingError::PassesEnd {
                device: self.disk.path().to_path_buf(),
                disk_size: self.disk.size(),
            });
        }
        Ok(())
    }

    /// The error when the writing thread stopped (it failed: joining it gives why).
    fn stopped(&self) -> ImagingError {
        ImagingError::device(
            self.disk.path(),
            "write",
            io::Error::other("the writing thread stopped"),
        )
    }

    fn send(&mut self, op: Op) -> Result<(), ImagingError> {
        self.touched = true;
        self.ops.send(op).map_err(|_| self.stopped())
    }

    /// Writes `data` at `offset`; its all-zero blocks are zeroed instead.
    pub(crate) fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), ImagingError> {
        self.check_end(offset + data.len() as u64)?;
        let mut at = 0usize;
        while at < data.len() {
            let here = offset + at as u64;
            let block_end = (here / ZERO_BLOCK + 1) * ZERO_BLOCK;
            let n = ((block_end - here) as usize).min(data.len() - at);
            let piece = &data[at..at + n];
            if is_zero(piece) {
                self.zero(here, n as u64)?;
            } else {
                self.data(here, piece)?;
            }
            at += n;
        }
        Ok(())
    }

    fn run_len(&self) -> usize {
        self.run.as_ref().map_or(0, |r| r.len)
    }

    fn data(&mut self, offset: u64, piece: &[u8]) -> Result<(), ImagingError> {
        let len = self.run_len();
        let follows = self.run_offset + len as u64 == offset;
        if len > 0 && (!follows || len + piece.len() > RUN) {
            self.flush_run()?;
        }
        let run = match self.run.take() {
            Some(run) => run,
            None => self.buffer()?,
        };
        if run.len == 0 {
            self.run_offset = offset;
        }
        let run = self.run.insert(run);
        run.push(piece);
        Ok(())
    }

    /// An empty buffer: one the writing thread gave back, a new one while fewer than [`POOL`] exist.
    fn buffer(&mut self) -> Result<Buffer, ImagingError> {
        if let Ok(buf) = self.pool.try_recv() {
            return Ok(buf);
        }
        if self.allocated < POOL {
            self.allocated += 1;
            return Ok(Buffer::new());
        }
        self.pool.recv().map_err(|_| self.stopped())
    }

    /// Makes `len` bytes at `offset` read as zeros.
    pub(crate) fn zero(&mut self, offset: u64, len: u64) -> Result<(), ImagingError> {
        if len == 0 {
            return Ok(());
        }
        self.check_end(offset + len)?;
        match self.zeros {
            Some((start, end)) if end == offset => self.zeros = Some((start, offset + len)),
            Some(_) => {
                self.flush_zeros()?;
                self.zeros = Some((offset, offset + len));
            }
            None => self.zeros = Some((offset, offset + len)),
        }
        Ok(())
    }

    fn flush_run(&mut self) -> Result<(), ImagingError> {
        let Some(run) = self.run.take_if(|r| r.len > 0) else {
            return Ok(());
        };
        let n = run.len as u64;
        self.send(Op::Write(self.run_offset, run))?;
        self.written += n;
        if let Some(p) = self.progress {
            p.add_written(n);
        }
        Ok(())
    }

    fn flush_zeros(&mut self) -> Result<(), ImagingError> {
        if let Some((start, end)) = self.zeros.take() {
            self.send(Op::Zero(start, end - start))?;
            self.zeroed += end - start;
            if let Some(p) = self.progress {
                p.add_written(end - start);
            }
        }
        Ok(())
    }

    /// Hands everything gathered to the writing thread (without syncing).
    pub(crate) fn flush(&mut self) -> Result<(), ImagingError> {
        self.flush_run()?;
        self.flush_zeros()
    }
}

/// True when every byte is zero (checked 64 bytes at a time, which the compiler vectorises).
pub(crate) fn is_zero(bytes: &[u8]) -> bool {
    let mut chunks = bytes.chunks_exact(64);
    for chunk in &mut chunks {
        if chunk.iter().fold(0u8, |acc, &b| acc | b) != 0 {
            return false;
        }
    }
    chunks.remainder().iter().all(|&b| b == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_detection_sees_a_single_byte_anywhere() {
        let mut v = vec![0u8; 200];
        assert!(is_zero(&v));
        for i in [0, 63, 64, 150, 199] {
            v[i] = 1;
            assert!(!is_zero(&v), "{i}");
            v[i] = 0;
        }
        assert!(is_zero(&[]));
    }
}
