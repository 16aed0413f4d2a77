//! Canonical bytes and ed25519 signatures for task lists, node key fingerprints, and pins of the
//! controller's TLS key.
//!
//! A signed task list travels as an envelope `{"payload": base64, "signature": base64}`. The payload is the
//! task list's JSON exactly as the controller serialised it; the signature covers a fixed domain string
//! followed by those bytes. The agent verifies the signature over exactly the bytes it received and only
//! then parses them, so no part of one list can be swapped for part of another, and a signature made for
//! anything else can never pass as a task list signature.

use crate::wire::{
    FileManifest, GateAnswer, KeyAnnouncement, TaskList, MAX_KEY_ANNOUNCEMENT_BYTES,
    MAX_TASK_LIST_BYTES, TASK_LIST_FORMAT,
};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Prefixed to the payload before signing: separates task list signatures from any other use of the key.
pub const DOMAIN: &[u8] = b"plinth-task-list-v1\n";

/// How far in the future a list's issue time may lie before the agent doubts its own clock, in seconds.
pub const MAX_CLOCK_SKEW_SECS: i64 = 300;

/// Prefixed to a gate answer's payload before signing.
pub const GATE_DOMAIN: &[u8] = b"plinth-gate-answer-v1\n";

/// Prefixed to a key announcement's payload before signing.
pub const KEY_ANNOUNCEMENT_DOMAIN: &[u8] = b"plinth-key-announcement-v1\n";

/// Prefixed to a file manifest's canonical bytes before hashing them into its digest.
pub const MANIFEST_DOMAIN: &[u8] = b"plinth-file-manifest-v1\n";

/// The largest signed gate answer an agent reads.
pub const MAX_GATE_ANSWER_BYTES: usize = 1024 * 1024;

/// A signed payload as it travels: a task list, or a gate answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignedEnvelope {
    /// The payload's JSON bytes, base64.
    pub payload: String,
    /// The ed25519 signature over the payload's domain string followed by the payload bytes, base64.
    pub signature: String,
}

/// A signed task list as it travels: its signature covers [`DOMAIN`] and the payload.
pub type SignedTaskList = SignedEnvelope;

/// Why a gate answer was refused: the task does not start on it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateVerifyError {
    /// The answer is larger than [`MAX_GATE_ANSWER_BYTES`].
    #[error("gate answer is {0} bytes, over the {MAX_GATE_ANSWER_BYTES}-byte limit")]
    TooLarge(usize),
    /// The envelope or its payload cannot be read.
    #[error("gate answer is malformed: {0}")]
    Malformed(String),
    /// The signature does not verify with the pinned controller key.
    #[error("gate answer signature does not verify with the pinned controller key")]
    BadSignature,
    /// The answer is for another node, deployment, task or request.
    #[error(
        "gate answer is for {field} {found:?}, not {expected:?} (replayed or misdirected answer?)"
    )]
    Mismatch {
        /// Which binding differs: `node`, `deployment`, `task` or `nonce`.
        field: &'static str,
        /// What the agent asked about.
        expected: String,
        /// What the answer says.
        found: String,
    },
}

/// What a gate answer must be bound to: the request the agent made.
#[derive(Debug, Clone, Copy)]
pub struct GateRequest<'a> {
    /// This node's key fingerprint.
    pub node_key: &'a str,
    /// The deployment asked about.
    pub deployment: u64,
    /// The task asked about.
    pub task: &'a str,
    /// The request's nonce.
    pub nonce: &'a str,
}

/// Why a task list was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The envelope is larger than [`MAX_TASK_LIST_BYTES`].
    #[error("task list is {0} bytes, over the {MAX_TASK_LIST_BYTES}-byte limit")]
    TooLarge(usize),
    /// The envelope is not the expected JSON.
    #[error("task list envelope is malformed: {0}")]
    Malformed(String),
    /// The signature does not verify with the pinned controller key.
    #[error("task list signature does not verify with the pinned controller key")]
    BadSignature,
    /// The signed payload is not a task list this agent understands.
    #[error("signed task list cannot be read: {0}")]
    BadPayload(String),
    /// The list is for another node.
    #[error("task list is for node key {found}, not this node ({expected})")]
    WrongNode {
        /// This node's key fingerprint.
        expected: String,
        /// The fingerprint in the list.
        found: String,
    },
    /// The list does not echo the nonce of the poll it answers: a recorded answer replayed.
    #[error("task list does not echo this poll's nonce (replayed answer?)")]
    WrongNonce,
    /// The list's revision is not above the last one accepted: a replay or a rollback.
    #[error("task list revision {found} is not above the last accepted revision {last}")]
    StaleRevision {
        /// The last revision accepted.
        last: u64,
        /// The revision in the list.
        found: u64,
    },
    /// The list has expired.
    #[error("task list expired at {expires_at} (now {now})")]
    Expired {
        /// The list's expiry time.
        expires_at: i64,
        /// The agent's clock.
        now: i64,
    },
    /// The list claims to be issued in the future beyond the allowed clock skew.
    #[error("task list is issued at {issued_at}, in the future (now {now})")]
    FromTheFuture {
        /// The list's issue time.
        issued_at: i64,
        /// The agent's clock.
        now: i64,
    },
    /// The list's format version is not this agent's.
    #[error("task list format {0} is not supported (this agent reads format {TASK_LIST_FORMAT})")]
    UnsupportedFormat(u32),
}

/// Errors reading or writing keys.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The PEM text is not an ed25519 PKCS#8 private key.
    #[error("not an ed25519 PKCS#8 private key: {0}")]
    BadPrivateKey(String),
    /// The text is not a 32-byte ed25519 public key in base64 or hex.
    #[error("not an ed25519 public key (32 bytes, base64 or hex): {0}")]
    BadPublicKey(String),
    /// The text is not a TLS key pin, `sha256:` and 64 hex characters.
    #[error("not a TLS key pin (sha256: and 64 hex characters): {0}")]
    BadKeyPin(String),
}

/// What the verifying agent expects of a list.
#[derive(Debug, Clone)]
pub struct Expectations<'a> {
    /// This node's key fingerprint.
    pub node_key: &'a str,
    /// The last revision this agent accepted; the list's must be higher.
    pub last_revision: u64,
    /// The nonce of the poll being answered. `None` when re-reading a list accepted earlier.
    pub nonce: Option<&'a str>,
    /// The agent's clock, seconds since the Unix epoch. `None` skips the time checks (re-reading).
    pub now: Option<i64>,
}

/// The fingerprint that names a node key (or any ed25519 public key): the first 16 bytes of the SHA-256 of
/// the raw key, in hex.
pub fn fingerprint(key: &VerifyingKey) -> String {
    let digest = Sha256::digest(key.as_bytes());
    hex::encode(&digest[..16])
}

/// Signs a task list: serialises it once and signs exactly those bytes.
pub fn sign_task_list(key: &SigningKey, list: &TaskList) -> SignedTaskList {
    // Serialising a struct of strings, numbers and JSON values cannot fail.
    let payload = serde_json::to_vec(list).unwrap_or_default();
    sign_payload(key, &payload)
}

/// Signs already serialised task list bytes.
pub fn sign_payload(key: &SigningKey, payload: &[u8]) -> SignedTaskList {
    sign_in_domain(key, DOMAIN, payload)
}

fn sign_in_domain(key: &SigningKey, domain: &[u8], payload: &[u8]) -> SignedEnvelope {
    let mut message = Vec::with_capacity(domain.len() + payload.len());
    message.extend_from_slice(domain);
    message.extend_from_slice(payload);
    let signature = key.sign(&message);
    SignedEnvelope {
        payload: B64.encode(payload),
        signature: B64.encode(signature.to_bytes()),
    }
}

/// The digest that names a file manifest in a signed list: the SHA-256 (lowercase hex) of
/// [`MANIFEST_DOMAIN`] followed by the JSON of its kind and files (`["directory", [{path, size,
/// sha256, mode}, ...]]`). The requested path is not part of it; the list names the source.
pub fn manifest_digest(manifest: &FileManifest) -> String {
    // Serialising plain data cannot fail.
    let body = serde_json::to_vec(&(manifest.kind, &manifest.files)).unwrap_or_default();
    let mut hasher = Sha256::new();
    hasher.update(MANIFEST_DOMAIN);
    hasher.update(&body);
    hex::encode(hasher.finalize())
}

/// Signs a gate answer (bound to node, deployment, task and nonce by its own fields).
pub fn sign_gate_answer(key: &SigningKey, answer: &GateAnswer) -> SignedEnvelope {
    // Serialising plain data cannot fail.
    let payload = serde_json::to_vec(answer).unwrap_or_default();
    sign_in_domain(key, GATE_DOMAIN, &payload)
}

/// Verifies a signed gate answer as received and returns it. Checks, in order: size, envelope,
/// signature over the payload bytes with the pinned key, then node, deployment, task and nonce.
pub fn verify_gate_answer(
    pinned: &VerifyingKey,
    envelope: &[u8],
    request: &GateRequest<'_>,
) -> Result<GateAnswer, GateVerifyError> {
    verify_gate_answer_with(std::slice::from_ref(pinned), envelope, request)
}

/// Verifies a gate answer as [`verify_gate_answer`] does, signed by any of `keys`.
pub fn verify_gate_answer_with(
    keys: &[VerifyingKey],
    envelope: &[u8],
    request: &GateRequest<'_>,
) -> Result<GateAnswer, GateVerifyError> {
    if envelope.len() > MAX_GATE_ANSWER_BYTES {
        return Err(GateVerifyError::TooLarge(envelope.len()));
    }
    let envelope: SignedEnvelope =
        serde_json::from_slice(envelope).map_err(|e| GateVerifyError::Malformed(e.to_string()))?;
    let (payload, signature) = open_envelope(&envelope).map_err(GateVerifyError::Malformed)?;
    let signature = Signature::from_slice(&signature).map_err(|_| GateVerifyError::BadSignature)?;
    signed_by(keys, GATE_DOMAIN, &payload, &signature).ok_or(GateVerifyError::BadSignature)?;
    let answer: GateAnswer =
        serde_json::from_slice(&payload).map_err(|e| GateVerifyError::Malformed(e.to_string()))?;
    let checks = [
        (
            "node",
            request.node_key.to_string(),
            answer.node_key.clone(),
        ),
        (
            "deployment",
            request.deployment.to_string(),
            answer.deployment.to_string(),
        ),
        ("task", request.task.to_string(), answer.task.clone()),
        ("nonce", request.nonce.to_string(), answer.nonce.clone()),
    ];
    for (field, expected, found) in checks {
        if expected != found {
            return Err(GateVerifyError::Mismatch {
                field,
                expected,
                found,
            });
        }
    }
    Ok(answer)
}

/// Verifies a signed task list envelope as received (its raw bytes) and returns the list. Checks, in order:
/// size, envelope shape, signature over the payload bytes, format, node, nonce, revision, times.
pub fn verify_task_list(
    pinned: &VerifyingKey,
    envelope: &[u8],
    expect: &Expectations<'_>,
) -> Result<TaskList, VerifyError> {
    verify_task_list_with(std::slice::from_ref(pinned), envelope, expect).map(|(list, _)| list)
}

/// Verifies a task list as [`verify_task_list`] does, with any of `keys` (an agent trusts the current
/// and the next key during a rotation), and says which of them signed it (its index in `keys`).
pub fn verify_task_list_with(
    keys: &[VerifyingKey],
    envelope: &[u8],
    expect: &Expectations<'_>,
) -> Result<(TaskList, usize), VerifyError> {
    if envelope.len() > MAX_TASK_LIST_BYTES {
        return Err(VerifyError::TooLarge(envelope.len()));
    }
    let envelope: SignedTaskList =
        serde_json::from_slice(envelope).map_err(|e| VerifyError::Malformed(e.to_string()))?;
    let (payload, signature) = open_envelope(&envelope).map_err(VerifyError::Malformed)?;
    let signature = Signature::from_slice(&signature).map_err(|_| VerifyError::BadSignature)?;
    let signer = signed_by(keys, DOMAIN, &payload, &signature).ok_or(VerifyError::BadSignature)?;
    let list: TaskList =
        serde_json::from_slice(&payload).map_err(|e| VerifyError::BadPayload(e.to_string()))?;
    check_list(&list, expect)?;
    Ok((list, signer))
}

/// An envelope's payload and signature bytes.
fn open_envelope(envelope: &SignedEnvelope) -> Result<(Vec<u8>, Vec<u8>), String> {
    let payload = B64
        .decode(envelope.payload.as_bytes())
        .map_err(|e| format!("payload is not base64: {e}"))?;
    let signature = B64
        .decode(envelope.signature.as_bytes())
        .map_err(|e| format!("signature is not base64: {e}"))?;
    Ok((payload, signature))
}

/// Which of `keys` made `signature` over `domain` followed by `payload`.
fn signed_by(
    keys: &[VerifyingKey],
    domain: &[u8],
    payload: &[u8],
    signature: &Signature,
) -> Option<usize> {
    let mut message = Vec::with_capacity(domain.len() + payload.len());
    message.extend_from_slice(domain);
    message.extend_from_slice(payload);
    keys.iter()
        .position(|key| key.verify_strict(&message, signature).is_ok())
}

/// Why a key announcement was not taken: the agent keeps the keys it has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnnouncementError {
    /// The header is larger than [`MAX_KEY_ANNOUNCEMENT_BYTES`].
    #[error("key announcement is {0} bytes, over the {MAX_KEY_ANNOUNCEMENT_BYTES}-byte limit")]
    TooLarge(usize),
    /// The header, its envelope or its payload cannot be read.
    #[error("key announcement is malformed: {0}")]
    Malformed(String),
    /// No trusted key made its signature.
    #[error("key announcement is not signed by a key this agent trusts")]
    UnknownSigner,
    /// It answers another node or another poll.
    #[error("key announcement is for another node or poll (replayed or misdirected?)")]
    Misdirected,
}

/// Signs a key announcement; the header carries the result's JSON in base64.
pub fn sign_key_announcement(key: &SigningKey, announcement: &KeyAnnouncement) -> String {
    // Serialising plain data cannot fail.
    let payload = serde_json::to_vec(announcement).unwrap_or_default();
    let envelope = sign_in_domain(key, KEY_ANNOUNCEMENT_DOMAIN, &payload);
    B64.encode(serde_json::to_vec(&envelope).unwrap_or_default())
}

/// Verifies a key announcement header with any of `keys`, for this node's poll with `nonce`; returns it
/// and the index of the key that signed it.
pub fn verify_key_announcement(
    keys: &[VerifyingKey],
    header: &str,
    node_key: &str,
    nonce: &str,
) -> Result<(KeyAnnouncement, usize), AnnouncementError> {
    if header.len() > MAX_KEY_ANNOUNCEMENT_BYTES {
        return Err(AnnouncementError::TooLarge(header.len()));
    }
    let malformed = |e: String| AnnouncementError::Malformed(e);
    let json = B64
        .decode(header.trim().as_bytes())
        .map_err(|e| malformed(format!("not base64: {e}")))?;
    let envelope: SignedEnvelope =
        serde_json::from_slice(&json).map_err(|e| malformed(e.to_string()))?;
    let (payload, signature) = open_envelope(&envelope).map_err(malformed)?;
    let signature =
        Signature::from_slice(&signature).map_err(|_| AnnouncementError::UnknownSigner)?;
    let signer = signed_by(keys, KEY_ANNOUNCEMENT_DOMAIN, &payload, &signature)
        .ok_or(AnnouncementError::UnknownSigner)?;
    let announcement: KeyAnnouncement =
        serde_json::from_slice(&payload).map_err(|e| malformed(e.to_string()))?;
    if announcement.node_key != node_key || announcement.nonce != nonce {
        return Err(AnnouncementError::Misdirected);
    }
    Ok((announcement, signer))
}

/// The checks on a list whose signature already verified.
fn check_list(list: &TaskList, expect: &Expectations<'_>) -> Result<(), VerifyError> {
    if list.format != TASK_LIST_FORMAT {
        return Err(VerifyError::UnsupportedFormat(list.format));
    }
    if list.node_key != expect.node_key {
        return Err(VerifyError::WrongNode {
            expected: expect.node_key.to_string(),
            found: list.node_key.clone(),
        });
    }
    if let Some(nonce) = expect.nonce {
        if list.nonce != nonce {
            return Err(VerifyError::WrongNonce);
        }
    }
    if list.revision <= expect.last_revision {
        return Err(VerifyError::StaleRevision {
            last: expect.last_revision,
            found: list.revision,
        });
    }
    if let Some(now) = expect.now {
        if list.expires_at <= now {
            return Err(VerifyError::Expired {
                expires_at: list.expires_at,
                now,
            });
        }
        if list.issued_at > now + MAX_CLOCK_SKEW_SECS {
            return Err(VerifyError::FromTheFuture {
                issued_at: list.issued_at,
                now,
            });
        }
    }
    Ok(())
}

/// Makes a signing key from 32 secret bytes (the caller draws them from the operating system's RNG).
pub fn signing_key_from_seed(seed: [u8; 32]) -> SigningKey {
    SigningKey::from_bytes(&seed)
}

/// Reads an ed25519 private key from PKCS#8 PEM.
pub fn signing_key_from_pem(pem: &str) -> Result<SigningKey, KeyError> {
    SigningKey::from_pkcs8_pem(pem).map_err(|e| KeyError::BadPrivateKey(e.to_string()))
}

/// Writes an ed25519 private key as PKCS#8 PEM.
pub fn signing_key_to_pem(key: &SigningKey) -> Result<String, KeyError> {
    key.to_pkcs8_pem(Default::default())
        .map(|pem| pem.to_string())
        .map_err(|e| KeyError::BadPrivateKey(e.to_string()))
}

/// The PKCS#8 DER encoding of a private key (what TLS libraries take).
pub fn signing_key_to_der(key: &SigningKey) -> Result<Vec<u8>, KeyError> {
    key.to_pkcs8_der()
        .map(|doc| doc.as_bytes().to_vec())
        .map_err(|e| KeyError::BadPrivateKey(e.to_string()))
}

/// Formats a public key the way `plinth-controller key show` prints it and configs carry it: base64.
pub fn public_key_to_text(key: &VerifyingKey) -> String {
    B64.encode(key.as_bytes())
}

/// Reads a public key printed by [`public_key_to_text`] (base64), or as 64 hex characters.
pub fn public_key_from_text(text: &str) -> Result<VerifyingKey, KeyError> {
    let text = text.trim();
    let bytes = if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        hex::decode(text).map_err(|e| KeyError::BadPublicKey(e.to_string()))?
    } else {
        B64.decode(text)
            .map_err(|e| KeyError::BadPublicKey(e.to_string()))?
    };
    let bytes: [u8; 32] = bytes
        .try_into()
        .map_err(|b: Vec<u8>| KeyError::BadPublicKey(format!("{} bytes, want 32", b.len())))?;
    VerifyingKey::from_bytes(&bytes).map_err(|e| KeyError::BadPublicKey(e.to_string()))
}

/// What starts a TLS key pin's text.
pub const TLS_KEY_PIN_PREFIX: &str = "sha256:";

/// The pin of a TLS key as the agent takes it (`plinth.tls=` on the kernel command line) and the
/// controller prints it: `sha256:` and the lowercase hex SHA-256 of the certificate's
/// SubjectPublicKeyInfo, DER, as it stands in the certificate. It names the key, not the certificate: a
/// certificate made again for the same key (new names, new dates) keeps its pin.
pub fn tls_key_pin(spki_der: &[u8]) -> String {
    format!(
        "{TLS_KEY_PIN_PREFIX}{}",
        hex::encode(tls_key_pin_digest(spki_der))
    )
}

/// The SHA-256 a TLS key pin carries, of a SubjectPublicKeyInfo's DER.
pub fn tls_key_pin_digest(spki_der: &[u8]) -> [u8; 32] {
    Sha256::digest(spki_der).into()
}

/// Reads a pin printed by [`tls_key_pin`] back to its digest. The prefix is `sha256:` exactly; the 64
/// hex characters may be in either case.
pub fn tls_key_pin_from_text(text: &str) -> Result<[u8; 32], KeyError> {
    let text = text.trim();
    let hex_part = text.strip_prefix(TLS_KEY_PIN_PREFIX).ok_or_else(|| {
        KeyError::BadKeyPin(format!("{text:?} does not start with {TLS_KEY_PIN_PREFIX}"))
    })?;
    if hex_part.len() != 64 {
        return Err(KeyError::BadKeyPin(format!(
            "{} hex characters after {TLS_KEY_PIN_PREFIX}, want 64",
            hex_part.len()
        )));
    }
    let bytes = hex::decode(hex_part).map_err(|e| KeyError::BadKeyPin(e.to_string()))?;
    bytes
        .try_into()
        .map_err(|b: Vec<u8>| KeyError::BadKeyPin(format!("{} bytes, want 32", b.len())))
}

#[cfg(test)]
mod tests;
