//! A reader that can look ahead: the format readers peek at what comes (a header, a table, a cluster)
//! before deciding what to do with it, and count where they are in the stream.

use std::io::{self, BufRead, Read};

/// A buffered reader whose buffer can be asked to hold at least `n` bytes ahead.
pub(crate) struct Lookahead<R> {
    inner: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// The stream offset of `buf[start]`.
    pos: u64,
    eof: bool,
}

impl<R: Read> Lookahead<R> {
    /// Wraps `inner` with a buffer of `capacity` bytes (grown when a peek asks for more).
    pub(crate) fn new(inner: R, capacity: usize) -> Self {
        Lookahead {
            inner,
            buf: vec![0; capacity.max(4096)],
            start: 0,
            end: 0,
            pos: 0,
            eof: false,
        }
    }

    /// The stream offset of the next byte not consumed.
    pub(crate) fn pos(&self) -> u64 {
        self.pos
    }

    /// Makes at least `n` bytes available ahead (fewer only at the end of the stream) and returns all
    /// that is buffered.
    pub(crate) fn fill(&mut self, n: usize) -> io::Result<&[u8]> {
        if self.end - self.start < n && !self.eof {
            if self.buf.len() - self.start < n {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
                if self.buf.len() < n {
                    self.buf.resize(n, 0);
                }
            }
            while self.end - self.start < n {
                match self.inner.read(&mut self.buf[self.end..]) {
                    Ok(0) => {
                        self.eof = true;
                        break;
                    }
                    Ok(read) => self.end += read,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(&self.buf[self.start..self.end])
    }

    /// Some bytes ahead (up to the buffer's size), empty only at the end of the stream.
    pub(crate) fn fill_some(&mut self) -> io::Result<&[u8]> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            let len = self.buf.len();
            self.fill(len)
        } else {
            Ok(&self.buf[self.start..self.end])
        }
    }

    /// Drops `n` buffered bytes (at most what is buffered).
    pub(crate) fn consume(&mut self, n: usize) {
        let n = n.min(self.end - self.start);
        self.start += n;
        self.pos += n as u64;
    }

    /// Reads and drops `n` bytes; returns how many there were (fewer only at the end of the stream).
    pub(crate) fn skip(&mut self, mut n: u64) -> io::Result<u64> {
        let wanted = n;
        while n > 0 {
            let ahead = self.fill_some()?;
            if ahead.is_empty() {
                break;
            }
            let take = usize::try_from(n).unwrap_or(usize::MAX).min(ahead.len());
            self.consume(take);
            n -= take as u64;
        }
        Ok(wanted - n)
    }
}

impl<R: Read> Read for Lookahead<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.start == self.end {
            if out.len() >= self.buf.len() {
                // A large read goes straight through.
                let n = self.inner.read(out)?;
                self.pos += n as u64;
                return Ok(n);
            }
            self.fill_some()?;
        }
        let ahead = &self.buf[self.start..self.end];
        let n = ahead.len().min(out.len());
        out[..n].copy_from_slice(&ahead[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Lookahead<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.fill_some()
    }

    fn consume(&mut self, amt: usize) {
        Lookahead::consume(self, amt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most 3 bytes a call, as a network stream may.
    struct Trickle(Vec<u8>, usize);

    impl Read for Trickle {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = out.len().min(3).min(self.0.len() - self.1);
            out[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
            self.1 += n;
            Ok(n)
        }
    }

    #[test]
    fn peeks_past_short_reads_and_counts_what_it_consumes() {
        let data: Vec<u8> = (0..100u8).collect();
        let mut ahead = Lookahead::new(Trickle(data.clone(), 0), 16);
        assert_eq!(&ahead.fill(10).unwrap()[..10], &data[..10]);
        ahead.consume(4);
        // A peek larger than the buffer grows it.
        assert_eq!(&ahead.fill(40).unwrap()[..40], &data[4..44]);
        assert_eq!(ahead.skip(50).unwrap(), 50);
        assert_eq!(ahead.pos(), 54);
        let mut rest = Vec::new();
        ahead.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, &data[54..]);
        assert_eq!(ahead.pos(), 100);
        assert_eq!(ahead.skip(5).unwrap(), 0);
        assert!(ahead.fill(1).unwrap().is_empty());
    }
}
