//! The download side: one thread reads the source (the download's `Read`) in chunks of 1 MiB, another
//! hashes them, and the writer reads the same chunks through [`Feed`]. At most [`POOL`] chunks exist at
//! once, so memory stays bounded however fast the source is.

use super::hash::{HashAlgorithm, Hasher};
use super::Progress;
use crate::shutdown::Shutdown;
use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::{Scope, ScopedJoinHandle};

/// The size of one chunk read from the source.
const CHUNK: usize = 1 << 20;
/// How many chunks may exist at once (read ahead, being hashed, being written).
const POOL: usize = 8;

/// A chunk of the source; its buffer goes back to the pool when the last holder drops it.
struct Chunk {
    buf: Vec<u8>,
    len: usize,
    pool: SyncSender<Vec<u8>>,
}

impl Chunk {
    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        let _ = self.pool.try_send(std::mem::take(&mut self.buf));
    }
}

/// What the feed and the writer share: whether the source failed, and how much was consumed.
#[derive(Debug, Default)]
pub(crate) struct FeedState {
    source_failed: AtomicBool,
    consumed: AtomicU64,
    downloaded: AtomicU64,
}

impl FeedState {
    /// True when an error came from the source itself (the download), not from decoding.
    pub(crate) fn source_failed(&self) -> bool {
        self.source_failed.load(Ordering::Relaxed)
    }

    /// The bytes read from the source so far.
    pub(crate) fn downloaded(&self) -> u64 {
        self.downloaded.load(Ordering::Relaxed)
    }

    /// The bytes of the source read so far by the writer's side.
    pub(crate) fn consumed(&self) -> u64 {
        self.consumed.load(Ordering::Relaxed)
    }
}

/// The source's bytes, as the writer's side reads them.
pub(crate) struct Feed {
    rx: Receiver<io::Result<Arc<Chunk>>>,
    current: Option<Arc<Chunk>>,
    at: usize,
    state: Arc<FeedState>,
}

impl Read for Feed {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            if let Some(chunk) = &self.current {
                let bytes = chunk.bytes();
                if self.at < bytes.len() {
                    let n = out.len().min(bytes.len() - self.at);
                    out[..n].copy_from_slice(&bytes[self.at..self.at + n]);
                    self.at += n;
                    self.state.consumed.fetch_add(n as u64, Ordering::Relaxed);
                    return Ok(n);
                }
                self.current = None;
            }
            match self.rx.recv() {
                Ok(Ok(chunk)) => {
                    self.current = Some(chunk);
                    self.at = 0;
                }
                Ok(Err(e)) => {
                    self.state.source_failed.store(true, Ordering::Relaxed);
                    return Err(e);
                }
                Err(_) => return Ok(0),
            }
        }
    }
}

/// The threads reading and hashing the source.
pub(crate) struct Download<'scope> {
    /// Joins to the count of bytes read from the source.
    pub(crate) reader: ScopedJoinHandle<'scope, u64>,
    /// Joins to the digest of those bytes.
    pub(crate) hasher: Option<ScopedJoinHandle<'scope, String>>,
}

/// Starts reading `source` on threads of `scope`; the writer's side reads it through the returned feed.
pub(crate) fn start<'scope, R: Read + Send + 'scope>(
    scope: &'scope Scope<'scope, '_>,
    mut source: R,
    algorithm: Option<HashAlgorithm>,
    cancel: Option<Shutdown>,
    progress: Option<Arc<Progress>>,
) -> io::Result<(Feed, Arc<FeedState>, Download<'scope>)> {
    let (tx, rx) = mpsc::sync_channel::<io::Result<Arc<Chunk>>>(POOL);
    let state = Arc::new(FeedState::default());
    let reader_state = state.clone();
    let (hash_tx, hasher) = match algorithm {
        Some(algorithm) => {
            let (hash_tx, hash_rx) = mpsc::sync_channel::<Arc<Chunk>>(POOL);
            let handle = std::thread::Builder::new()
                .name("image-hash".into())
                .spawn_scoped(scope, move || {
                    let mut hasher = Hasher::new(algorithm);
                    for chunk in hash_rx {
                        hasher.update(chunk.bytes());
                    }
                    hasher.finish()
                })?;
            (Some(hash_tx), Some(handle))
        }
        None => (None, None),
    };
    let reader = std::thread::Builder::new()
        .name("image-read".into())
        .spawn_scoped(scope, move || {
            let (pool_tx, pool_rx) = mpsc::sync_channel::<Vec<u8>>(POOL);
            let mut allocated = 0;
            let mut total = 0u64;
            loop {
                if cancel.as_ref().is_some_and(Shutdown::is_triggered) {
                    let _ = tx.send(Err(io::Error::other("stopped")));
                    break;
                }
                let mut buf = match pool_rx.try_recv() {
                    Ok(buf) => buf,
                    Err(_) if allocated < POOL => {
                        allocated += 1;
                        vec![0; CHUNK]
                    }
                    Err(_) => match pool_rx.recv() {
                        Ok(buf) => buf,
                        Err(_) => break,
                    },
                };
                buf.resize(CHUNK, 0);
                let mut len = 0;
                let mut eof = false;
                while len < CHUNK {
                    match source.read(&mut buf[len..]) {
                        Ok(0) => {
                            eof = true;
                            break;
                        }
                        Ok(n) => {
                            len += n;
                            reader_state
                                .downloaded
                                .fetch_add(n as u64, Ordering::Relaxed);
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            return total + len as u64;
                        }
                    }
                }
                total += len as u64;
                if let Some(p) = &progress {
                    p.add_downloaded(len as u64);
                }
                if len > 0 {
                    let chunk = Arc::new(Chunk {
                        buf,
                        len,
                        pool: pool_tx.clone(),
                    });
                    if let Some(hash_tx) = &hash_tx {
                        if hash_tx.send(chunk.clone()).is_err() {
                            break;
                        }
                    }
                    if tx.send(Ok(chunk)).is_err() {
                        break;
                    }
                }
                if eof {
                    break;
                }
            }
            total
        })?;
    let feed = Feed {
        rx,
        current: None,
        at: 0,
        state: state.clone(),
    };
    Ok((feed, state, Download { reader, hasher }))
}
