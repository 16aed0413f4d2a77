//! Rotating the controller's keys without touching the nodes: during a rotation every answer to a poll
//! carries a [`KeyAnnouncement`], signed by the key that signs lists, in the [`KEY_ANNOUNCEMENT_HEADER`]
//! header, and every answer names the key that signs its lists in [`SIGNING_KEY_HEADER`]. An agent that
//! verifies an announcement with a key it trusts learns the next signing key (and the pins of the next TLS
//! keys) and keeps them across restarts; see `docs/SECURITY.md`.

use serde::{Deserialize, Serialize};

/// The header of a poll's answer that carries a signed [`KeyAnnouncement`] (the envelope's JSON,
/// base64), while a rotation is announced.
pub const KEY_ANNOUNCEMENT_HEADER: &str = "x-plinth-key-announcement";

/// The header of a poll's answer that names the key signing the controller's lists (its
/// [`crate::signing::fingerprint`]), so that an agent which does not trust it can say which key it
/// lacks.
pub const SIGNING_KEY_HEADER: &str = "x-plinth-signing-key";

/// The largest announcement header an agent reads, in bytes.
pub const MAX_KEY_ANNOUNCEMENT_BYTES: usize = 4096;

/// What the controller announces to one node during a rotation, signed by the key that signs lists.
/// Bound to the node and to the poll it answers (its nonce), so it cannot be replayed to another node
/// or later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyAnnouncement {
    /// The fingerprint of the node key it is for.
    pub node_key: String,
    /// The nonce of the poll it answers.
    pub nonce: String,
    /// The next list signing key (base64 of the raw ed25519 public key), trusted beside the current
    /// one until the controller switches to it.
    pub next_key: String,
    /// When the controller switches to the next key (seconds since the Unix epoch); once past, the
    /// agent trusts the next key alone.
    pub switch_at: i64,
    /// Pins of TLS keys the agent also trusts from now on (`sha256:` and hex; the key of the
    /// controller's next certificate), in addition to its configured trust.
    #[serde(default)]
    pub tls_pins: Vec<String>,
}
