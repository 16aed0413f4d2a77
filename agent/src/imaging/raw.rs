//! A raw image: the stream is the disk's content, written front to back.

use super::error::ImagingError;
use super::lookahead::Lookahead;
use super::writer::DiskWriter;
use std::io::{self, Read};

/// Writes the raw image in `input` from disk offset 0; returns its length.
pub(crate) fn write<R: Read>(
    input: &mut Lookahead<R>,
    writer: &mut DiskWriter<'_>,
    on_io: &dyn Fn(io::Error) -> ImagingError,
    cancelled: &dyn Fn() -> bool,
) -> Result<u64, ImagingError> {
    loop {
        if cancelled() {
            return Err(ImagingError::Cancelled);
        }
        let pos = input.pos();
        let bytes = input.fill_some().map_err(on_io)?;
        if bytes.is_empty() {
            return Ok(pos);
        }
        let n = bytes.len();
        writer.write(pos, bytes)?;
        input.consume(n);
    }
}
