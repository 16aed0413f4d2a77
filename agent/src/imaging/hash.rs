//! The digest of the bytes as downloaded (before any decompression), and the expected one it is compared
//! with at the end: SHA-256 or SHA-512, the algorithms Ironic's `os_hash_algo` names that are not broken.

use super::error::ImagingError;
use sha2::{Digest as _, Sha256, Sha512};
use std::fmt;

/// A hash algorithm an image's checksum may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashAlgorithm {
    /// SHA-256.
    Sha256,
    /// SHA-512.
    Sha512,
}

impl HashAlgorithm {
    /// Reads an algorithm's name as Ironic's `os_hash_algo` writes it (`sha256`, `sha512`; case and a
    /// dash ignored). MD5 and SHA-1 are refused: they no longer prove an image is the one meant.
    pub fn from_name(name: &str) -> Result<Self, ImagingError> {
        match name.to_ascii_lowercase().replace('-', "").as_str() {
            "sha256" => Ok(HashAlgorithm::Sha256),
            "sha512" => Ok(HashAlgorithm::Sha512),
            other => Err(ImagingError::BadDigest(format!(
                "hash algorithm {other:?} is not accepted: use sha256 or sha512"
            ))),
        }
    }

    /// The length of the digest in hexadecimal digits.
    pub fn hex_len(self) -> usize {
        match self {
            HashAlgorithm::Sha256 => 64,
            HashAlgorithm::Sha512 => 128,
        }
    }
}

impl fmt::Display for HashAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HashAlgorithm::Sha256 => "sha256",
            HashAlgorithm::Sha512 => "sha512",
        })
    }
}

/// The digest an image must have: its algorithm and value in hexadecimal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedDigest {
    /// The algorithm.
    pub algorithm: HashAlgorithm,
    /// The digest, lowercase hexadecimal.
    pub hex: String,
}

impl ExpectedDigest {
    /// An expected digest from an algorithm and its hexadecimal value (checked for length and digits).
    pub fn new(algorithm: HashAlgorithm, hex: &str) -> Result<Self, ImagingError> {
        let hex = hex.trim().to_ascii_lowercase();
        if hex.len() != algorithm.hex_len() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ImagingError::BadDigest(format!(
                "a {algorithm} digest is {} hexadecimal digits, not {hex:?}",
                algorithm.hex_len()
            )));
        }
        Ok(ExpectedDigest { algorithm, hex })
    }

    /// Reads `ALGORITHM:HEX` (`sha256:9f86…`), the form image checksums are often given in.
    pub fn parse(text: &str) -> Result<Self, ImagingError> {
        let Some((algorithm, hex)) = text.split_once(':') else {
            return Err(ImagingError::BadDigest(format!(
                "{text:?} is not ALGORITHM:HEX (sha256:… or sha512:…)"
            )));
        };
        ExpectedDigest::new(HashAlgorithm::from_name(algorithm)?, hex)
    }
}

/// A running hash of one algorithm.
pub(crate) enum Hasher {
    Sha256(Sha256),
    Sha512(Box<Sha512>),
}

impl Hasher {
    pub(crate) fn new(algorithm: HashAlgorithm) -> Self {
        match algorithm {
            HashAlgorithm::Sha256 => Hasher::Sha256(Sha256::new()),
            HashAlgorithm::Sha512 => Hasher::Sha512(Box::new(Sha512::new())),
        }
    }

    pub(crate) fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::Sha256(h) => h.update(bytes),
            Hasher::Sha512(h) => h.update(bytes),
        }
    }

    /// The digest in lowercase hexadecimal.
    pub(crate) fn finish(self) -> String {
        match self {
            Hasher::Sha256(h) => hex::encode(h.finalize()),
            Hasher::Sha512(h) => hex::encode(h.finalize()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_read_as_ironic_names_them_and_weak_ones_refused() {
        let d = ExpectedDigest::parse(
            "SHA256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
        )
        .unwrap();
        assert_eq!(d.algorithm, HashAlgorithm::Sha256);
        assert!(d.hex.starts_with("e3b0c442"));
        let mut h = Hasher::new(HashAlgorithm::Sha256);
        h.update(b"");
        assert_eq!(h.finish(), d.hex);
        assert_eq!(
            HashAlgorithm::from_name("sha-512").unwrap(),
            HashAlgorithm::Sha512
        );
        let e = HashAlgorithm::from_name("md5").unwrap_err().to_string();
        assert!(e.contains("\"md5\" is not accepted"), "{e}");
        let e = ExpectedDigest::parse("sha256:abc").unwrap_err().to_string();
        assert!(e.contains("64 hexadecimal digits"), "{e}");
        assert!(ExpectedDigest::parse("e3b0").is_err());
    }
}
