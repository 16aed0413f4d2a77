//! Writing an image's content to a disk at offsets: data in large writes (adjacent pieces gathered into
//! one), all-zero blocks and ranges the image says are zero never written but zeroed (adjacent ranges
//! gathered into one call), nothing past the image's end touched.

use super::device::Disk;
use super::error::ImagingError;
use super::Progress;

/// The largest write the writer makes.
const RUN: usize = 4 << 20;
/// The granularity of zero detection in data: a block of this size (aligned on the disk) that is all
/// zeros is zeroed rather than written.
pub(crate) const ZERO_BLOCK: u64 = 64 * 1024;

/// Gathers writes and zeroed ranges and sends them to the disk.
pub(crate) struct DiskWriter<'d> {
    disk: &'d Disk,
    progress: Option<&'d Progress>,
    run: Vec<u8>,
    run_offset: u64,
    zeros: Option<(u64, u64)>,
    /// True once anything was sent to the disk.
    touched: bool,
    written: u64,
    zeroed: u64,
}

impl<'d> DiskWriter<'d> {
    pub(crate) fn new(disk: &'d Disk, progress: Option<&'d Progress>) -> Self {
        DiskWriter {
            disk,
            progress,
            run: Vec::new(),
            run_offset: 0,
            zeros: None,
            touched: false,
            written: 0,
            zeroed: 0,
        }
    }

    /// True once anything reached (or was about to reach) the disk.
    pub(crate) fn touched(&self) -> bool {
        self.touched || !self.run.is_empty() || self.zeros.is_some()
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

    /// Writes `data` at `offset`; its all-zero blocks are zeroed instead.
    pub(crate) fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), ImagingError> {
        self.check_end(offset + data.len() as u64)?;
        // Runs of blocks with data go out whole; each all-zero block between them is zeroed.
        let mut at = 0usize;
        let mut span = 0usize;
        while at < data.len() {
            let here = offset + at as u64;
            let block_end = (here / ZERO_BLOCK + 1) * ZERO_BLOCK;
            let n = ((block_end - here) as usize).min(data.len() - at);
            if is_zero(&data[at..at + n]) {
                self.data(offset + span as u64, &data[span..at])?;
                self.zero(here, n as u64)?;
                span = at + n;
            }
            at += n;
        }
        self.data(offset + span as u64, &data[span..])
    }

    fn data(&mut self, offset: u64, span: &[u8]) -> Result<(), ImagingError> {
        if span.is_empty() {
            return Ok(());
        }
        let follows = self.run_offset + self.run.len() as u64 == offset;
        if !self.run.is_empty() && follows && self.run.len() + span.len() <= RUN {
            self.run.extend_from_slice(span);
            return Ok(());
        }
        self.flush_run()?;
        if span.len() >= RUN / 2 {
            // Large enough to go out as it is, without a copy.
            self.touched = true;
            self.disk.write_at(offset, span)?;
            self.count_written(span.len() as u64);
            return Ok(());
        }
        if self.run.capacity() == 0 {
            self.run.reserve_exact(RUN);
        }
        self.run_offset = offset;
        self.run.extend_from_slice(span);
        Ok(())
    }

    fn count_written(&mut self, n: u64) {
        self.written += n;
        if let Some(p) = self.progress {
            p.add_written(n);
        }
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
        if self.run.is_empty() {
            return Ok(());
        }
        self.touched = true;
        self.disk.write_at(self.run_offset, &self.run)?;
        self.count_written(self.run.len() as u64);
        self.run.clear();
        Ok(())
    }

    fn flush_zeros(&mut self) -> Result<(), ImagingError> {
        if let Some((start, end)) = self.zeros.take() {
            self.touched = true;
            self.disk.zero(start, end - start)?;
            self.zeroed += end - start;
            if let Some(p) = self.progress {
                p.add_written(end - start);
            }
        }
        Ok(())
    }

    /// Sends everything gathered to the disk (without syncing).
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
