//! The node's identity: an ed25519 key pair made on first boot from the operating system's randomness and
//! kept in the state directory as PKCS#8 PEM (mode 0600). The node is named by the key's fingerprint.

use crate::fsutil;
use ed25519_dalek::{SigningKey, VerifyingKey};
use plinth_common::signing;
use std::path::{Path, PathBuf};

/// The key file's name inside the state directory.
pub const NODE_KEY_FILE: &str = "node.key";

/// Why the node key cannot be loaded or made.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// The state directory or key file cannot be read or written.
    #[error("node key {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The key file exists but does not hold an ed25519 PKCS#8 key.
    #[error("node key {path}: {source}")]
    Key {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: signing::KeyError,
    },
    /// The operating system gave no randomness.
    #[error("cannot draw randomness for a node key: {0}")]
    Random(String),
}

/// The node's key pair and the names derived from it.
#[derive(Clone)]
pub struct NodeIdentity {
    key: SigningKey,
    fingerprint: String,
}

impl std::fmt::Debug for NodeIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the private key.
        f.debug_struct("NodeIdentity")
            .field("fingerprint", &self.fingerprint)
            .finish()
    }
}

impl NodeIdentity {
    /// Wraps a signing key.
    pub fn from_key(key: SigningKey) -> NodeIdentity {
        let fingerprint = signing::fingerprint(&key.verifying_key());
        NodeIdentity { key, fingerprint }
    }

    /// Loads the key from `state_dir`, making it (and the directory, mode 0700) on first boot.
    pub fn load_or_create(state_dir: &Path) -> Result<NodeIdentity, IdentityError> {
        let path = state_dir.join(NODE_KEY_FILE);
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |source| IdentityError::Io { path: p, source }
        };
        if let Some(bytes) = fsutil::read_optional(&path).map_err(io(&path))? {
            let pem = String::from_utf8_lossy(&bytes);
            let key = signing::signing_key_from_pem(&pem).map_err(|source| IdentityError::Key {
                path: path.clone(),
                source,
            })?;
            return Ok(NodeIdentity::from_key(key));
        }
        fsutil::ensure_dir(state_dir, 0o700).map_err(io(state_dir))?;
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| IdentityError::Random(e.to_string()))?;
        let key = signing::signing_key_from_seed(seed);
        let pem = signing::signing_key_to_pem(&key).map_err(|source| IdentityError::Key {
            path: path.clone(),
            source,
        })?;
        fsutil::write_atomic(&path, pem.as_bytes(), 0o600).map_err(io(&path))?;
        Ok(NodeIdentity::from_key(key))
    }

    /// The fingerprint that names this node (see [`signing::fingerprint`]).
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The public key.
    pub fn public_key(&self) -> VerifyingKey {
        self.key.verifying_key()
    }

    /// The public key as configs and the controller print it (base64).
    pub fn public_key_text(&self) -> String {
        signing::public_key_to_text(&self.key.verifying_key())
    }

    /// The private key as PKCS#8 DER, for the TLS client certificate.
    pub fn pkcs8_der(&self) -> Result<Vec<u8>, signing::KeyError> {
        signing::signing_key_to_der(&self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn key_is_made_once_with_mode_0600_and_reloaded() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let a = NodeIdentity::load_or_create(&state).unwrap();
        let mode = std::fs::metadata(state.join(NODE_KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let b = NodeIdentity::load_or_create(&state).unwrap();
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert_eq!(a.fingerprint().len(), 32);
        assert_eq!(a.public_key_text(), b.public_key_text());
        // Two nodes get two keys.
        let other = NodeIdentity::load_or_create(&dir.path().join("other")).unwrap();
        assert_ne!(a.fingerprint(), other.fingerprint());
    }

    #[test]
    fn a_corrupt_key_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(NODE_KEY_FILE), "garbage").unwrap();
        let err = NodeIdentity::load_or_create(dir.path()).unwrap_err();
        assert!(err.to_string().contains(NODE_KEY_FILE), "{err}");
    }
}
