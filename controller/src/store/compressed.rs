//! JSON kept compressed: a deployment's inputs (every node of its cluster, facts and all) are written
//! once at its start and read only to retry or resume it. As text they were the start's largest
//! single allocation after the deployment data (57 MB at 100,000 nodes), held through resolution,
//! and PostgreSQL's client copies a parameter twice more on its way out. Compressed as they are
//! written (gzip, its fastest level), they are about a thirtieth of that and never exist as text.
//! A deployment's orchestration state is kept the same way: it places every node in the strategy (7 to
//! 10 MB of text at 100,000 nodes), and is written at every step that starts a phase, on the hand-over's
//! path. A deployment's cluster part of its task states is kept the same way, keyed by the hash of its text
//! computed as it is written: it lists every node's record, facts and all. (Each node's own part is
//! a kilobyte or a few and stays text: compressing 100,000 of them took longer than storing them.)

use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use plinth_common::json::{Json, Keys};
use serde::de::DeserializeOwned;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::io::{BufReader, BufWriter, Write};

/// A JSON document, gzip-compressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompressedJson(Vec<u8>);

/// Why a compressed document cannot be made or read.
#[derive(Debug, thiserror::Error)]
pub enum CompressedError {
    /// The value does not serialize, or the bytes are not gzip of JSON of the type asked for.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// Compressing failed.
    #[error("compressing: {0}")]
    Io(#[from] std::io::Error),
}

impl CompressedJson {
    /// `value` as JSON, compressed while it is written (its text is never held whole).
    pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<CompressedJson, CompressedError> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
        write_json(value, &mut encoder)?;
        Ok(CompressedJson::finished(encoder.finish()?))
    }

    /// As [`CompressedJson::encode`], with the SHA-256 of the JSON text (hex; as
    /// [`super::blob_hash`] gives), computed as it is written: a state blob's key, without its text.
    pub fn encode_hashed<T: Serialize + ?Sized>(
        value: &T,
    ) -> Result<(String, CompressedJson), CompressedError> {
        let mut hashing = Hashing {
            hasher: Sha256::new(),
            inner: GzEncoder::new(Vec::new(), Compression::fast()),
        };
        write_json(value, &mut hashing)?;
        let hash = hex::encode(hashing.hasher.finalize());
        Ok((hash, CompressedJson::finished(hashing.inner.finish()?)))
    }

    /// Compressed bytes just made, held at their length.
    fn finished(mut bytes: Vec<u8>) -> CompressedJson {
        bytes.shrink_to_fit();
        CompressedJson(bytes)
    }

    /// Compressed bytes as stored (read back with [`CompressedJson::decode`]).
    pub fn from_bytes(bytes: Vec<u8>) -> CompressedJson {
        CompressedJson(bytes)
    }

    /// The compressed bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The document, read while it is decompressed.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, CompressedError> {
        Ok(serde_json::from_reader(BufReader::new(GzDecoder::new(
            self.0.as_slice(),
        )))?)
    }
}

/// Writes `value`'s JSON into `sink` through a buffer: serde_json writes token by token, and each write
/// to a compressor costs a call into it (unbuffered, 8.5 MB of JSON took 690 ms; buffered, 43).
fn write_json<T: Serialize + ?Sized, W: Write>(
    value: &T,
    sink: &mut W,
) -> Result<(), CompressedError> {
    let mut buffered = BufWriter::with_capacity(64 * 1024, sink);
    serde_json::to_writer(&mut buffered, value)?;
    buffered.flush()?;
    Ok(())
}

/// A writer that hashes what it passes on.
struct Hashing<W> {
    hasher: Sha256,
    inner: W,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// `value` compressed for storing (`what`, for errors): a value given as a tree (the store's own
/// callers and tests); the engine compresses its state itself, from its run.
pub(crate) fn packed<T: Serialize + ?Sized>(
    value: &T,
    what: &str,
) -> super::StoreResult<CompressedJson> {
    CompressedJson::encode(value).map_err(|e| super::StoreError::Database(format!("{what}: {e}")))
}

/// A document's two columns as written: its text (empty, or `null` when there is no document) and its
/// compressed bytes.
pub(crate) fn columns(doc: Option<&CompressedJson>) -> (&'static str, Option<&[u8]>) {
    match doc {
        Some(doc) => ("", Some(doc.as_bytes())),
        None => ("null", None),
    }
}

/// A stored document (`what`, for errors): compressed where it has been kept so (rows written since
/// the migration that added its compressed column), else the text of a row written before.
pub(crate) fn stored_json<T: DeserializeOwned>(
    packed: Option<&[u8]>,
    text: &str,
    what: &str,
) -> super::StoreResult<T> {
    let read = match packed {
        Some(bytes) => serde_json::from_reader(BufReader::new(GzDecoder::new(bytes)))
            .map_err(CompressedError::from),
        None => serde_json::from_str(text).map_err(CompressedError::from),
    };
    read.map_err(|e| super::StoreError::Corrupt(format!("{what}: {e}")))
}

/// A stored task state blob, as [`stored_json`] reads it, made straight into the compact tree
/// expressions read, its keys shared through `keys` with the other blobs of the same read (the
/// cluster part lists every node's record: each key would otherwise be a string per node).
pub(crate) fn stored_tree(
    packed: Option<&[u8]>,
    text: &str,
    what: &str,
    keys: &mut Keys,
) -> super::StoreResult<Json> {
    let read = match packed {
        Some(bytes) => Json::read_with(BufReader::new(GzDecoder::new(bytes)), keys),
        None => Json::read_with(text.as_bytes(), keys),
    };
    read.map_err(|e| super::StoreError::Corrupt(format!("{what}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn a_document_reads_back_as_written_and_repetition_costs_little() {
        let nodes: Vec<Value> = (0..2_000)
            .map(|i| json!({"id": i, "name": format!("node-{i}"), "roles": ["compute"], "facts": {"hostname": format!("node-{i}"), "cpu": {"cores": 32}}}))
            .collect();
        let doc = json!({"cluster": {"name": "c"}, "nodes": nodes, "quote": "a \"b\" \\ c\n"});
        let packed = CompressedJson::encode(&doc).expect("encodes");
        let text = serde_json::to_string(&doc).expect("serializes");
        assert!(
            packed.as_bytes().len() * 10 < text.len(),
            "{} bytes for {} of text",
            packed.as_bytes().len(),
            text.len()
        );
        let back: Value = CompressedJson::from_bytes(packed.as_bytes().to_vec())
            .decode()
            .expect("decodes");
        assert_eq!(back, doc);
    }

    #[test]
    fn a_hashed_document_is_keyed_by_the_hash_of_its_text() {
        let doc = json!({"nodes": [{"id": 1, "facts": {"hostname": "one"}}], "b": 0.1});
        let (hash, packed) = CompressedJson::encode_hashed(&doc).expect("encodes");
        assert_eq!(hash, crate::store::blob_hash(&doc));
        assert_eq!(packed.decode::<Value>().expect("decodes"), doc);
    }

    #[test]
    fn bytes_that_are_not_a_compressed_document_are_an_error_not_a_panic() {
        for bytes in [Vec::new(), b"{}".to_vec(), vec![0x1f, 0x8b, 8, 0, 0, 0]] {
            let got: Result<Value, _> = CompressedJson::from_bytes(bytes.clone()).decode();
            assert!(got.is_err(), "{bytes:?}");
        }
        // Whole gzip, but of text that is not JSON.
        let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
        encoder.write_all(b"not json").expect("writes");
        let not_json = CompressedJson::from_bytes(encoder.finish().expect("finishes"));
        assert!(not_json.decode::<Value>().is_err());
    }
}
