//! Capturing a process's output with a bounded memory: only the last bytes are kept, and the total is
//! counted.

use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncReadExt};

/// The last `cap` bytes written to it, and how many were written in all.
#[derive(Debug, Clone)]
pub struct Tail {
    cap: usize,
    buf: Vec<u8>,
    total: u64,
}

impl Tail {
    /// Keeps at most `cap` bytes.
    pub fn new(cap: usize) -> Tail {
        Tail {
            cap,
            buf: Vec::new(),
            total: 0,
        }
    }

    /// Appends bytes, dropping the oldest beyond the cap (memory stays under twice the cap).
    pub fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if bytes.len() >= self.cap {
            self.buf.clear();
            self.buf.extend_from_slice(&bytes[bytes.len() - self.cap..]);
            return;
        }
        self.buf.extend_from_slice(bytes);
        if self.buf.len() > 2 * self.cap {
            let excess = self.buf.len() - self.cap;
            self.buf.drain(..excess);
        }
    }

    /// Bytes written in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// True when bytes were dropped.
    pub fn truncated(&self) -> bool {
        self.total > self.cap as u64
    }

    /// The kept tail as text: at most `cap` bytes, starting at a character boundary, invalid UTF-8
    /// replaced.
    pub fn text(&self) -> String {
        let start = self.buf.len().saturating_sub(self.cap);
        let mut tail = &self.buf[start..];
        if self.total > tail.len() as u64 {
            // Do not start in the middle of a multi-byte character.
            let skip = tail
                .iter()
                .take(3)
                .take_while(|b| (**b & 0b1100_0000) == 0b1000_0000)
                .count();
            tail = &tail[skip..];
        }
        String::from_utf8_lossy(tail).into_owned()
    }
}

/// Reads a stream to its end into a shared tail, so what was read is there even if reading is abandoned.
pub async fn capture_into<R: AsyncRead + Unpin>(mut reader: R, tail: Arc<Mutex<Tail>>) {
    let mut chunk = vec![0u8; 8192];
    loop {
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => match tail.lock() {
                Ok(mut t) => t.push(&chunk[..n]),
                Err(poisoned) => poisoned.into_inner().push(&chunk[..n]),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_the_tail() {
        let mut t = Tail::new(10);
        for i in 0..100u8 {
            t.push(&[b'a' + (i % 26)]);
        }
        assert_eq!(t.total(), 100);
        assert!(t.truncated());
        let text = t.text();
        assert_eq!(text.len(), 10);
        assert_eq!(text, "mnopqrstuv");
        t.push(&[b'z'; 25]);
        assert_eq!(t.text(), "zzzzzzzzzz");
    }

    #[test]
    fn does_not_start_inside_a_character() {
        let mut t = Tail::new(5);
        t.push("ééé".as_bytes()); // 6 bytes: the first byte of the kept 5 is a continuation byte
        assert_eq!(t.text(), "éé");
        assert!(!Tail::new(5).truncated());
    }
}
