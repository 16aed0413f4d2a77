//! A backup's encryption when the operator gives a passphrase: the key is Argon2id of the passphrase
//! and a random salt; the archive is sealed with XChaCha20-Poly1305 in 64 KiB chunks (the STREAM
//! construction: each chunk authenticated, their order and the last one bound), so a changed, cut or
//! reordered backup is refused, and a wrong passphrase is told at the first chunk.
//!
//! Layout: [`MAGIC`], the salt (16 bytes), the stream nonce (19 bytes), then the chunks.

use argon2::Argon2;
use chacha20poly1305::aead::stream::{DecryptorBE32, EncryptorBE32};
use chacha20poly1305::{KeyInit, XChaCha20Poly1305};
use std::io::{self, Read, Write};

/// What an encrypted backup starts with.
pub const MAGIC: &[u8] = b"PLINTH-BACKUP-XCHACHA20POLY1305-ARGON2ID-1\n";
/// Plain bytes per chunk.
const CHUNK: usize = 64 * 1024;
/// A sealed chunk's tag.
const TAG: usize = 16;

fn cipher(passphrase: &str, salt: &[u8]) -> io::Result<XChaCha20Poly1305> {
    let mut key = [0u8; 32];
    Argon2::default()
        .hash_password_into(passphrase.as_bytes(), salt, &mut key)
        .map_err(|e| io::Error::other(format!("cannot derive the key: {e}")))?;
    Ok(XChaCha20Poly1305::new(&key.into()))
}

/// Writes what it is given, sealed; [`Sealer::finish`] seals the last chunk.
pub struct Sealer<W: Write> {
    out: W,
    stream: Option<EncryptorBE32<XChaCha20Poly1305>>,
    buf: Vec<u8>,
}

impl<W: Write> Sealer<W> {
    /// Starts a sealed stream on `out` under `passphrase`, with fresh `salt` and `nonce`.
    pub fn new(mut out: W, passphrase: &str, salt: [u8; 16], nonce: [u8; 19]) -> io::Result<Self> {
        out.write_all(MAGIC)?;
        out.write_all(&salt)?;
        out.write_all(&nonce)?;
        let stream = EncryptorBE32::from_aead(cipher(passphrase, &salt)?, (&nonce).into());
        Ok(Sealer {
            out,
            stream: Some(stream),
            buf: Vec::with_capacity(CHUNK),
        })
    }

    /// Seals the last chunk and returns the writer.
    pub fn finish(mut self) -> io::Result<W> {
        let stream = self
            .stream
            .take()
            .ok_or_else(|| io::Error::other("already finished"))?;
        let sealed = stream
            .encrypt_last(self.buf.as_slice())
            .map_err(|_| io::Error::other("cannot seal"))?;
        self.out.write_all(&sealed)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write> Write for Sealer<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let room = CHUNK - self.buf.len();
        let take = room.min(data.len());
        self.buf.extend_from_slice(&data[..take]);
        if self.buf.len() == CHUNK {
            // The chunk is sealed only once more follows: the last one is sealed by `finish`.
            let stream = self
                .stream
                .as_mut()
                .ok_or_else(|| io::Error::other("already finished"))?;
            let sealed = stream
                .encrypt_next(self.buf.as_slice())
                .map_err(|_| io::Error::other("cannot seal"))?;
            self.out.write_all(&sealed)?;
            self.buf.clear();
        }
        Ok(take)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Reads a sealed stream's plain bytes; fails on a wrong passphrase or any change.
pub struct Opener<R: Read> {
    input: R,
    stream: Option<DecryptorBE32<XChaCha20Poly1305>>,
    /// The next sealed chunk, read ahead to know whether it is the last.
    ahead: Vec<u8>,
    plain: Vec<u8>,
    at: usize,
}

/// Reads up to `n` bytes (fewer only at the end).
fn read_up_to(input: &mut impl Read, n: usize) -> io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(n);
    input.take(n as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

impl<R: Read> Opener<R> {
    /// Opens a stream whose [`MAGIC`] has been read already.
    pub fn new(mut input: R, passphrase: &str) -> io::Result<Self> {
        let mut salt = [0u8; 16];
        let mut nonce = [0u8; 19];
        input.read_exact(&mut salt)?;
        input.read_exact(&mut nonce)?;
        let stream = DecryptorBE32::from_aead(cipher(passphrase, &salt)?, (&nonce).into());
        let ahead = read_up_to(&mut input, CHUNK + TAG)?;
        Ok(Opener {
            input,
            stream: Some(stream),
            ahead,
            plain: Vec::new(),
            at: 0,
        })
    }

    fn refill(&mut self) -> io::Result<()> {
        let Some(stream) = self.stream.as_mut() else {
            return Ok(());
        };
        let current = std::mem::take(&mut self.ahead);
        let next = read_up_to(&mut self.input, CHUNK + TAG)?;
        let wrong = || {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "the passphrase is wrong, or the backup was changed or cut",
            )
        };
        if next.is_empty() {
            let stream = self.stream.take().ok_or_else(wrong)?;
            self.plain = stream
                .decrypt_last(current.as_slice())
                .map_err(|_| wrong())?;
        } else {
            self.plain = stream
                .decrypt_next(current.as_slice())
                .map_err(|_| wrong())?;
            self.ahead = next;
        }
        self.at = 0;
        Ok(())
    }
}

impl<R: Read> Read for Opener<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.at == self.plain.len() {
            if self.stream.is_none() {
                return Ok(0);
            }
            self.refill()?;
        }
        let n = out.len().min(self.plain.len() - self.at);
        out[..n].copy_from_slice(&self.plain[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seal(data: &[u8], passphrase: &str) -> Vec<u8> {
        let mut s = Sealer::new(Vec::new(), passphrase, [1; 16], [2; 19]).unwrap();
        s.write_all(data).unwrap();
        s.finish().unwrap()
    }

    fn open(sealed: &[u8], passphrase: &str) -> io::Result<Vec<u8>> {
        let body = sealed.strip_prefix(MAGIC).expect("the magic");
        let mut out = Vec::new();
        Opener::new(body, passphrase)?.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn what_is_sealed_opens_whole_at_every_size() {
        for size in [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 7] {
            let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            assert_eq!(open(&seal(&data, "pass"), "pass").unwrap(), data, "{size}");
        }
    }

    #[test]
    fn a_wrong_passphrase_a_changed_byte_or_a_cut_is_refused() {
        let data = vec![7u8; 2 * CHUNK + 5];
        let sealed = seal(&data, "right");
        assert!(open(&sealed, "wrong").is_err());
        let mut changed = sealed.clone();
        let last = changed.len() - 1;
        changed[last] ^= 1;
        assert!(open(&changed, "right").is_err());
        let cut = &sealed[..MAGIC.len() + 35 + CHUNK + TAG];
        assert!(open(cut, "right").is_err(), "a backup cut at a chunk's end");
    }
}
