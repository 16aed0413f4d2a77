//! The one layer of compression around an image, undone as it streams: gzip (several members, as
//! `pigz` writes, are read on), xz (several streams), zstd (several frames). Each decoder's memory is
//! bounded: zstd windows up to 128 MiB (`zstd --long` up to 27, levels up to 22), xz dictionaries up to
//! [`MEMORY_LIMIT`] (`xz -9` needs 65 MiB).

use super::detect::Compression;
use std::io::{self, BufRead, Read};

/// The most memory a decoder may take.
pub(crate) const MEMORY_LIMIT: u64 = 128 << 20;
/// zstd's window, as a power of two (2^27 = 128 MiB).
const ZSTD_WINDOW_LOG_MAX: u32 = 27;

/// A reader of `input` decompressed.
pub(crate) fn decoder<'a, R: BufRead + 'a>(
    compression: Compression,
    input: R,
) -> io::Result<Box<dyn Read + 'a>> {
    Ok(match compression {
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(input)),
        Compression::Xz => {
            let stream = liblzma::stream::Stream::new_stream_decoder(
                MEMORY_LIMIT,
                liblzma::stream::CONCATENATED,
            )
            .map_err(io::Error::other)?;
            Box::new(liblzma::bufread::XzDecoder::new_stream(input, stream))
        }
        Compression::Zstd => {
            let mut decoder = zstd::stream::read::Decoder::with_buffer(input)?;
            decoder.window_log_max(ZSTD_WINDOW_LOG_MAX)?;
            Box::new(decoder)
        }
    })
}
