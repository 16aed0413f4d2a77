//! The controller's signing keys in force: the key that signs lists, gate answers, Keystone-style
//! tokens and requests to other controllers; during a rotation the next key, announced to every agent;
//! after a switch the retired key, still accepted where something signed before the switch may come
//! back (tokens, other controllers' requests, BMC passwords not yet sealed again).
//!
//! [`rotation`] keeps them in the data directory and switches from one to the next.

pub mod rotation;

use ed25519_dalek::{SigningKey, VerifyingKey};
use plinth_common::signing;
use plinth_common::wire::KeyAnnouncement;
use std::sync::{Arc, RwLock};

/// The next key of an announced rotation.
#[derive(Debug, Clone)]
pub struct Next {
    /// The key lists will be signed with after the switch.
    pub key: SigningKey,
    /// When the controller switches to it (seconds since the Unix epoch).
    pub switch_at: i64,
    /// Pins of the TLS keys agents are told to trust from now on (the next certificate's).
    pub tls_pins: Vec<String>,
}

/// The keys at one moment.
#[derive(Debug, Clone)]
pub struct Keys {
    /// The key that signs now.
    pub signer: SigningKey,
    /// The announced next key, during a rotation.
    pub next: Option<Next>,
    /// The key the last switch retired.
    pub retired: Option<SigningKey>,
}

impl Keys {
    /// Only `signer`, no rotation.
    pub fn single(signer: SigningKey) -> Keys {
        Keys {
            signer,
            next: None,
            retired: None,
        }
    }

    /// The public keys whose signatures the controller accepts on what it signed itself: the
    /// current, the next and the retired key.
    pub fn verifiers(&self) -> Vec<VerifyingKey> {
        std::iter::once(self.signer.verifying_key())
            .chain(self.next.as_ref().map(|n| n.key.verifying_key()))
            .chain(self.retired.as_ref().map(SigningKey::verifying_key))
            .collect()
    }

    /// The announcement for one node's poll during a rotation (the header's value), signed by the
    /// current key; `None` when no rotation is announced.
    pub fn announcement(&self, node_key: &str, nonce: &str) -> Option<String> {
        let next = self.next.as_ref()?;
        Some(signing::sign_key_announcement(
            &self.signer,
            &KeyAnnouncement {
                node_key: node_key.to_string(),
                nonce: nonce.to_string(),
                next_key: signing::public_key_to_text(&next.key.verifying_key()),
                switch_at: next.switch_at,
                tls_pins: next.tls_pins.clone(),
            },
        ))
    }

    /// The fingerprint of the signing key, as agents name keys.
    pub fn signer_fingerprint(&self) -> String {
        signing::fingerprint(&self.signer.verifying_key())
    }
}

/// The keys in force, replaced whole when a rotation starts or switches. Cheap to read.
#[derive(Debug)]
pub struct KeyRing {
    keys: RwLock<Arc<Keys>>,
}

impl KeyRing {
    /// A ring holding `keys`.
    pub fn new(keys: Keys) -> KeyRing {
        KeyRing {
            keys: RwLock::new(Arc::new(keys)),
        }
    }

    /// The keys now.
    pub fn now(&self) -> Arc<Keys> {
        self.keys.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The key that signs now.
    pub fn signer(&self) -> SigningKey {
        self.now().signer.clone()
    }

    /// The sealer of BMC passwords under the keys now (it opens what the retired key sealed).
    pub fn sealer(&self) -> crate::enrollment::secrets::Sealer {
        let keys = self.now();
        crate::enrollment::secrets::Sealer::with_retired(&keys.signer, keys.retired.as_ref())
    }

    /// Puts `keys` in force.
    pub fn replace(&self, keys: Keys) {
        *self.keys.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(keys);
    }
}
