//! The controller keys this agent trusts, and how they change through a key rotation without anyone
//! touching the node.
//!
//! The agent starts from the key it is configured with (`controller_public_key`, or `plinth.key=` on
//! the kernel command line). While the controller announces a rotation, each poll's answer carries a
//! [`KeyAnnouncement`] signed by the key that signs lists; one the agent verifies with a key it trusts
//! gives it the next key (trusted beside the current one until the switch) and the pins of the
//! controller's next TLS keys. A list or an announcement signed by the next key, or the agent's clock
//! passing the switch time, makes the next key the only one: lists signed by the old key are refused
//! from then on. What the agent learned is kept in [`KEYS_FILE`] in its state directory, so a restart
//! keeps it.
//!
//! The configured key still decides when it is neither a key the agent learned nor one it retired:
//! that is an operator pinning the controller's key again (how an agent that missed a whole rotation
//! is recovered, see `docs/SECURITY.md`), and it replaces what the agent had learned.

use crate::fsutil;
use crate::verify::StateError;
use ed25519_dalek::VerifyingKey;
use plinth_common::signing::{self, AnnouncementError, MAX_CLOCK_SKEW_SECS};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

/// The file in the state directory holding the keys the agent learned.
pub const KEYS_FILE: &str = "controller-keys.json";

/// The pins of TLS keys the agent learned from announcements, which its TLS client trusts beside its
/// configured trust. Shared with the TLS client; new connections read it.
pub type LearnedTlsPins = Arc<RwLock<Vec<[u8; 32]>>>;

/// The keys as the state file holds them (public keys as base64 text).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
struct Stored {
    current: String,
    #[serde(default)]
    next: Option<StoredNext>,
    #[serde(default)]
    retired: Vec<String>,
    #[serde(default)]
    tls_pins: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
struct StoredNext {
    key: String,
    switch_at: i64,
}

/// The keys in use.
#[derive(Debug, Clone)]
struct Keys {
    current: VerifyingKey,
    next: Option<(VerifyingKey, i64)>,
    retired: Vec<VerifyingKey>,
    tls_pins: Vec<String>,
}

/// The most retired keys kept (to read back lists accepted before a switch, and to tell a stale
/// configuration from a new pin).
const RETIRED_KEPT: usize = 4;

/// The controller keys this agent trusts, shared by everything that verifies what the controller
/// signs.
#[derive(Debug)]
pub struct Keyring {
    path: PathBuf,
    keys: Mutex<Keys>,
    tls: LearnedTlsPins,
    /// The fingerprint of the last untrusted signing key the agent said it lacks (said once per key).
    told: Mutex<Option<String>>,
}

impl Keyring {
    /// Opens the keys kept in `state_dir`, starting from `configured` (see the module's comment for
    /// which wins).
    pub fn open(state_dir: &Path, configured: VerifyingKey) -> Result<Keyring, StateError> {
        let path = state_dir.join(KEYS_FILE);
        fsutil::ensure_dir(state_dir, 0o700).map_err(|source| StateError::Io {
            path: state_dir.to_path_buf(),
            source,
        })?;
        let stored = fsutil::read_optional(&path)
            .map_err(|source| StateError::Io {
                path: path.clone(),
                source,
            })?
            .map(|bytes| read_stored(&path, &bytes))
            .transpose()?;
        let fresh = Keys {
            current: configured,
            next: None,
            retired: Vec::new(),
            tls_pins: Vec::new(),
        };
        let keys = match stored {
            None => fresh,
            Some(kept) => {
                let known = kept.current == configured
                    || kept.next.map(|(k, _)| k) == Some(configured)
                    || kept.retired.contains(&configured);
                if known {
                    if kept.retired.contains(&configured) {
                        tracing::info!(
                            configured = %signing::fingerprint(&configured),
                            trusted = %signing::fingerprint(&kept.current),
                            "the configured controller key was retired by a key rotation; the agent trusts the key it learned"
                        );
                    }
                    kept
                } else {
                    tracing::warn!(
                        configured = %signing::fingerprint(&configured),
                        learned = %signing::fingerprint(&kept.current),
                        "the configured controller key is new to this agent: it replaces the keys learned from rotations"
                    );
                    fresh
                }
            }
        };
        let ring = Keyring {
            path,
            tls: Arc::new(RwLock::new(pin_digests(&keys.tls_pins))),
            keys: Mutex::new(keys),
            told: Mutex::new(None),
        };
        ring.save(&ring.lock().clone())?;
        Ok(ring)
    }

    /// The learned TLS key pins, for the TLS client.
    pub fn tls_pins(&self) -> LearnedTlsPins {
        self.tls.clone()
    }

    /// The keys a fresh list or announcement may be signed by at `now`: the current key and, during
    /// an announced rotation, the next one. Past the switch time (and the clock skew allowed), the
    /// next key becomes the only one.
    pub fn trusted(&self, now: i64) -> Result<Vec<VerifyingKey>, StateError> {
        let mut keys = self.lock();
        if let Some((next, switch_at)) = keys.next {
            if now > switch_at + MAX_CLOCK_SKEW_SECS {
                let updated = promoted(&keys, next);
                self.save(&updated)?;
                tracing::info!(
                    key = %signing::fingerprint(&next),
                    "the controller's key rotation passed its switch time: only the new key is trusted now"
                );
                *keys = updated;
            }
        }
        Ok(std::iter::once(keys.current)
            .chain(keys.next.map(|(k, _)| k))
            .collect())
    }

    /// The current key and, during an announced rotation, the next one (without looking at the
    /// clock).
    pub fn current_and_next(&self) -> Vec<VerifyingKey> {
        let keys = self.lock();
        std::iter::once(keys.current)
            .chain(keys.next.map(|(k, _)| k))
            .collect()
    }

    /// Every key the agent knows, retired ones too: for reading back a list it accepted earlier.
    pub fn known(&self) -> Vec<VerifyingKey> {
        let keys = self.lock();
        std::iter::once(keys.current)
            .chain(keys.next.map(|(k, _)| k))
            .chain(keys.retired.iter().copied())
            .collect()
    }

    /// Records that `key` signed something the agent verified: when it is the next key, the
    /// controller has switched, and the old key is retired (lists signed by it are refused from now
    /// on).
    pub fn signed_by(&self, key: &VerifyingKey) -> Result<(), StateError> {
        let mut keys = self.lock();
        if keys.next.map(|(k, _)| k) != Some(*key) {
            return Ok(());
        }
        let updated = promoted(&keys, *key);
        self.save(&updated)?;
        tracing::info!(
            key = %signing::fingerprint(key),
            retired = %signing::fingerprint(&keys.current),
            "the controller signs with its new key: the old key is retired"
        );
        *keys = updated;
        Ok(())
    }

    /// Takes what a poll's answer said about keys: the announcement header (when the controller
    /// announces a rotation) and the fingerprint of the key signing its lists. An announcement from a
    /// trusted key is learned; one from no trusted key is left, and when the controller names a
    /// signing key the agent does not trust, the agent says once, in one line, what to do.
    pub fn consider(
        &self,
        announcement: Option<&str>,
        signer: Option<&str>,
        node_key: &str,
        nonce: &str,
        now: i64,
    ) -> Result<(), StateError> {
        let trusted = self.trusted(now)?;
        if let Some(signer) = signer {
            if !trusted.iter().any(|k| signing::fingerprint(k) == signer) {
                self.tell_untrusted(signer, &trusted);
                return Ok(());
            }
        }
        let Some(header) = announcement else {
            return Ok(());
        };
        let (said, by) = match signing::verify_key_announcement(&trusted, header, node_key, nonce) {
            Ok(verified) => verified,
            Err(AnnouncementError::UnknownSigner) => {
                tracing::warn!(
                    "a key announcement is not signed by a key this agent trusts; ignored"
                );
                return Ok(());
            }
            Err(e) => {
                tracing::warn!(error = %e, "key announcement ignored");
                return Ok(());
            }
        };
        self.signed_by(&trusted[by])?;
        let next = match signing::public_key_from_text(&said.next_key) {
            Ok(next) => next,
            Err(e) => {
                tracing::warn!(error = %e, "key announcement names no usable next key; ignored");
                return Ok(());
            }
        };
        let mut keys = self.lock();
        let mut updated = keys.clone();
        if next != updated.current && updated.next.map(|(k, _)| k) != Some(next) {
            updated.next = Some((next, said.switch_at));
            tracing::info!(
                next = %signing::fingerprint(&next),
                switch_at = said.switch_at,
                "learned the controller's next signing key; both are trusted until the switch"
            );
        } else if let Some((k, _)) = updated.next.filter(|(k, _)| *k == next) {
            updated.next = Some((k, said.switch_at));
        }
        for pin in &said.tls_pins {
            if signing::tls_key_pin_from_text(pin).is_ok() && !updated.tls_pins.contains(pin) {
                tracing::info!(pin = %pin, "learned the pin of the controller's next TLS key");
                updated.tls_pins.push(pin.clone());
            }
        }
        let changed = updated.next != keys.next || updated.tls_pins != keys.tls_pins;
        if changed {
            self.save(&updated)?;
            if let Ok(mut tls) = self.tls.write() {
                *tls = pin_digests(&updated.tls_pins);
            }
            *keys = updated;
        }
        Ok(())
    }

    /// Says once per key, in one line, that the controller signs with a key this agent does not trust
    /// and what to do about it.
    fn tell_untrusted(&self, signer: &str, trusted: &[VerifyingKey]) {
        let mut told = self.told.lock().unwrap_or_else(|e| e.into_inner());
        if told.as_deref() == Some(signer) {
            return;
        }
        *told = Some(signer.to_string());
        let ours: Vec<String> = trusted.iter().map(signing::fingerprint).collect();
        tracing::error!(
            "the controller signs with key {signer}, which this agent does not trust (it trusts {}): the \
             controller's key was rotated while this agent was away, so nothing it sends will run; pin \
             the controller's current key (`plinth-controller key show` on the controller) as \
             controller_public_key in the agent's configuration, or plinth.key= on the kernel command \
             line, and restart the agent (docs/SECURITY.md, \"An agent that missed a key rotation\")",
            ours.join(", ")
        );
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Keys> {
        self.keys.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn save(&self, keys: &Keys) -> Result<(), StateError> {
        let stored = Stored {
            current: signing::public_key_to_text(&keys.current),
            next: keys.next.map(|(key, switch_at)| StoredNext {
                key: signing::public_key_to_text(&key),
                switch_at,
            }),
            retired: keys
                .retired
                .iter()
                .map(signing::public_key_to_text)
                .collect(),
            tls_pins: keys.tls_pins.clone(),
        };
        // Serialising strings and numbers cannot fail.
        let bytes = serde_json::to_vec_pretty(&stored).unwrap_or_default();
        fsutil::write_atomic(&self.path, &bytes, 0o600).map_err(|source| StateError::Io {
            path: self.path.clone(),
            source,
        })
    }
}

/// The keys once `next` replaced the current key, which is retired.
fn promoted(keys: &Keys, next: VerifyingKey) -> Keys {
    let mut retired = vec![keys.current];
    retired.extend(keys.retired.iter().copied().filter(|k| *k != next));
    retired.truncate(RETIRED_KEPT);
    Keys {
        current: next,
        next: None,
        retired,
        tls_pins: keys.tls_pins.clone(),
    }
}

fn read_stored(path: &Path, bytes: &[u8]) -> Result<Keys, StateError> {
    let corrupt = |message: String| StateError::BadKeys {
        path: path.to_path_buf(),
        message,
    };
    let stored: Stored =
        serde_json::from_slice(bytes).map_err(|e| corrupt(format!("not the keys file: {e}")))?;
    let key = |text: &str| {
        signing::public_key_from_text(text).map_err(|e| corrupt(format!("{text:?}: {e}")))
    };
    Ok(Keys {
        current: key(&stored.current)?,
        next: stored
            .next
            .map(|n| key(&n.key).map(|k| (k, n.switch_at)))
            .transpose()?,
        retired: stored
            .retired
            .iter()
            .map(|t| key(t))
            .collect::<Result<_, _>>()?,
        tls_pins: stored.tls_pins,
    })
}

fn pin_digests(pins: &[String]) -> Vec<[u8; 32]> {
    pins.iter()
        .filter_map(|p| signing::tls_key_pin_from_text(p).ok())
        .collect()
}

#[cfg(test)]
mod tests;
