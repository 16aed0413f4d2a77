//! BMC passwords at rest: sealed with XChaCha20-Poly1305 under a key derived from the controller's
//! signing key, so that the database (or a backup of it) alone does not give them away, and every
//! controller sharing the signing key opens them.
//!
//! The sealed form is `v1:` followed by base64 of a random 24-byte nonce and the ciphertext with its
//! tag. The associated data binds a password to the enrollment's name, so a sealed password copied to
//! another row does not open there.

use base64::Engine as _;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use ed25519_dalek::SigningKey;
use sha2::{Digest, Sha256};

/// Why a sealed password could not be opened (or a password sealed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// The stored text is not a sealed password of a version this controller reads.
    #[error("the stored BMC password is not in a form this controller reads")]
    Malformed,
    /// It was sealed under another key (another signing key) or for another enrollment.
    #[error(
        "the stored BMC password was sealed under another signing key; enroll the server again"
    )]
    WrongKey,
    /// No randomness for a nonce.
    #[error("no randomness for a nonce: {0}")]
    Random(String),
}

const VERSION: &str = "v1:";
const NONCE_LEN: usize = 24;

/// Seals and opens BMC passwords.
pub struct Sealer {
    cipher: XChaCha20Poly1305,
    /// The cipher of the signing key a rotation retired: opens what was sealed before the switch
    /// until it is sealed again.
    retired: Option<XChaCha20Poly1305>,
}

/// The cipher derived from a signing key.
fn cipher(signing: &SigningKey) -> XChaCha20Poly1305 {
    let mut hash = Sha256::new();
    hash.update(b"plinth bmc credentials v1\0");
    hash.update(signing.to_bytes());
    XChaCha20Poly1305::new(&hash.finalize())
}

impl Sealer {
    /// The sealer of a controller with this signing key.
    pub fn new(signing: &SigningKey) -> Sealer {
        Sealer {
            cipher: cipher(signing),
            retired: None,
        }
    }

    /// The sealer of a controller with this signing key that also opens what was sealed under the
    /// key a rotation retired.
    pub fn with_retired(signing: &SigningKey, retired: Option<&SigningKey>) -> Sealer {
        Sealer {
            cipher: cipher(signing),
            retired: retired.map(cipher),
        }
    }

    /// The password sealed again under the current key, when it was sealed under the retired one
    /// (`None` when it needs nothing, or cannot be opened: it is left as it is).
    pub fn reseal(&self, name: &str, sealed: &str) -> Option<String> {
        if self.open_with(&self.cipher, name, sealed).is_ok() {
            return None;
        }
        let password = self.open_with(self.retired.as_ref()?, name, sealed).ok()?;
        self.seal(name, &password).ok()
    }

    /// Seals `password` for the enrollment named `name`.
    pub fn seal(&self, name: &str, password: &str) -> Result<String, SecretError> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|e| SecretError::Random(e.to_string()))?;
        let sealed = self
            .cipher
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: password.as_bytes(),
                    aad: name.as_bytes(),
                },
            )
            .map_err(|_| SecretError::Malformed)?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        Ok(format!(
            "{VERSION}{}",
            base64::engine::general_purpose::STANDARD.encode(out)
        ))
    }

    /// Opens a password sealed for the enrollment named `name` (under the current key, or the
    /// retired one).
    pub fn open(&self, name: &str, sealed: &str) -> Result<String, SecretError> {
        match (self.open_with(&self.cipher, name, sealed), &self.retired) {
            (Err(SecretError::WrongKey), Some(retired)) => self.open_with(retired, name, sealed),
            (opened, _) => opened,
        }
    }

    fn open_with(
        &self,
        cipher: &XChaCha20Poly1305,
        name: &str,
        sealed: &str,
    ) -> Result<String, SecretError> {
        let body = sealed.strip_prefix(VERSION).ok_or(SecretError::Malformed)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(body)
            .map_err(|_| SecretError::Malformed)?;
        if bytes.len() < NONCE_LEN {
            return Err(SecretError::Malformed);
        }
        let (nonce, ciphertext) = bytes.split_at(NONCE_LEN);
        let plain = cipher
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: name.as_bytes(),
                },
            )
            .map_err(|_| SecretError::WrongKey)?;
        String::from_utf8(plain).map_err(|_| SecretError::Malformed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    #[test]
    fn after_a_key_switch_old_passwords_open_and_are_sealed_again_under_the_new_key() {
        let old = Sealer::new(&key(1)).seal("rack1-n01", "hunter2").unwrap();
        let after = Sealer::with_retired(&key(2), Some(&key(1)));
        assert_eq!(after.open("rack1-n01", &old).unwrap(), "hunter2");
        let resealed = after.reseal("rack1-n01", &old).expect("sealed again");
        assert_eq!(
            Sealer::new(&key(2)).open("rack1-n01", &resealed).unwrap(),
            "hunter2"
        );
        assert_eq!(after.reseal("rack1-n01", &resealed), None);
        assert_eq!(Sealer::new(&key(2)).reseal("rack1-n01", &old), None);
    }

    #[test]
    fn a_sealed_password_opens_for_its_enrollment_under_its_key_only() {
        let sealer = Sealer::new(&key(1));
        let sealed = sealer.seal("rack1-n01", "hunter2").unwrap();
        assert!(!sealed.contains("hunter2"));
        assert_ne!(
            sealed,
            sealer.seal("rack1-n01", "hunter2").unwrap(),
            "fresh nonce"
        );
        assert_eq!(sealer.open("rack1-n01", &sealed).unwrap(), "hunter2");
        assert_eq!(
            sealer.open("rack1-n02", &sealed),
            Err(SecretError::WrongKey)
        );
        assert_eq!(
            Sealer::new(&key(2)).open("rack1-n01", &sealed),
            Err(SecretError::WrongKey)
        );
        for bad in ["", "v1:", "v1:!!", "v2:AAAA", "hunter2"] {
            assert_eq!(
                sealer.open("rack1-n01", bad),
                Err(SecretError::Malformed),
                "{bad}"
            );
        }
    }
}
