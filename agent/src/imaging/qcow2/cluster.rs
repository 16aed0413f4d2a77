//! Compressed clusters: raw deflate (qcow2's default) or zstd, each decompressing to exactly one cluster.
//! The decoders are made once and reset for every cluster.

use super::header::ClusterCompression;
use flate2::{Decompress, FlushDecompress, Status};
use zstd::stream::raw::{InBuffer, Operation, OutBuffer};

/// Decompresses clusters of one image.
pub(crate) struct ClusterDecoder {
    compression: ClusterCompression,
    deflate: Decompress,
    zstd: Option<zstd::stream::raw::Decoder<'static>>,
}

impl ClusterDecoder {
    pub(crate) fn new(compression: ClusterCompression) -> Self {
        ClusterDecoder {
            compression,
            deflate: Decompress::new(false),
            zstd: None,
        }
    }

    /// Decompresses `input` (the cluster's compressed bytes, possibly followed by others: the stored
    /// length is rounded up to sectors) into `out`, which it must fill exactly; returns how many bytes
    /// of `input` the compressed data took.
    pub(crate) fn decode(&mut self, input: &[u8], out: &mut [u8]) -> Result<usize, String> {
        match self.compression {
            ClusterCompression::Deflate => {
                self.deflate.reset(false);
                match self.deflate.decompress(input, out, FlushDecompress::Finish) {
                    Ok(Status::StreamEnd | Status::Ok | Status::BufError)
                        if self.deflate.total_out() == out.len() as u64 =>
                    {
                        Ok(self.deflate.total_in() as usize)
                    }
                    Ok(_) => Err(format!(
                        "its deflate data gives {} bytes, not the cluster's {}",
                        self.deflate.total_out(),
                        out.len()
                    )),
                    Err(e) => Err(format!("its deflate data is corrupt: {e}")),
                }
            }
            ClusterCompression::Zstd => {
                let decoder = match &mut self.zstd {
                    Some(d) => {
                        d.reinit().map_err(|e| format!("zstd: {e}"))?;
                        d
                    }
                    None => self.zstd.insert(
                        zstd::stream::raw::Decoder::new().map_err(|e| format!("zstd: {e}"))?,
                    ),
                };
                let mut inb = InBuffer::around(input);
                let mut outb = OutBuffer::around(out);
                while outb.pos() < outb.capacity() {
                    let (before_in, before_out) = (inb.pos(), outb.pos());
                    decoder
                        .run(&mut inb, &mut outb)
                        .map_err(|e| format!("its zstd data is corrupt: {e}"))?;
                    if inb.pos() == before_in && outb.pos() == before_out {
                        break;
                    }
                }
                let got = outb.pos();
                if got != outb.capacity() {
                    return Err(format!(
                        "its zstd data gives {got} bytes, not the cluster's {}",
                        outb.capacity()
                    ));
                }
                Ok(inb.pos())
            }
        }
    }
}
