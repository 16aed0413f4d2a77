//! Tokens issued through the Keystone-style endpoint (`POST /keystone/v2.0/tokens`): a lifetime of
//! their own (Keystone's default, an hour; `keystone_token_lifetime_secs`), over the operator token
//! they were asked with, whose role and name they carry and whose revocation ends them too.
//!
//! A token is `plinth-ks1.<claims>.<signature>` (both URL-safe base64): the claims name the operator
//! token by its digest and say when the token expires; the controller's signing key signs them, so
//! every controller sharing the database checks them alike and nothing is stored per token.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::{Signature, Signer as _, SigningKey, Verifier as _, VerifyingKey};
use serde::{Deserialize, Serialize};

/// What every Keystone-style token starts with.
pub const PREFIX: &str = "plinth-ks1.";

/// What a token says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The hex SHA-256 of the operator token it was issued over.
    pub token: String,
    /// When it expires, in seconds since the epoch.
    pub expires: i64,
}

/// Why a Keystone-style token is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeystoneTokenError {
    /// Not one this controller (or one sharing its key) issued.
    #[error("not a token this controller issued")]
    Forged,
    /// Past its lifetime.
    #[error("the token expired at {0}; ask for a new one (POST /keystone/v2.0/tokens)")]
    Expired(String),
}

/// Issues a token over the operator token whose digest is `token_hash`, expiring `lifetime_secs`
/// after `now_secs`.
pub fn issue(
    key: &SigningKey,
    token_hash: &str,
    now_secs: i64,
    lifetime_secs: u64,
) -> (String, Claims) {
    let claims = Claims {
        token: token_hash.to_string(),
        expires: now_secs.saturating_add(i64::try_from(lifetime_secs).unwrap_or(i64::MAX)),
    };
    // Serialising two plain fields cannot fail.
    let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap_or_default());
    let signature = key.sign(format!("{PREFIX}{body}").as_bytes());
    (
        format!(
            "{PREFIX}{body}.{}",
            URL_SAFE_NO_PAD.encode(signature.to_bytes())
        ),
        claims,
    )
}

/// Checks a token (with its prefix) at `now_secs`: its claims when the signature holds and it has not
/// expired.
pub fn verify(
    key: &VerifyingKey,
    token: &str,
    now_secs: i64,
) -> Result<Claims, KeystoneTokenError> {
    verify_with(std::slice::from_ref(key), token, now_secs)
}

/// Verifies a token as [`verify`] does, signed by any of `keys` (a token issued before a signing key
/// switch holds until it expires).
pub fn verify_with(
    keys: &[VerifyingKey],
    token: &str,
    now_secs: i64,
) -> Result<Claims, KeystoneTokenError> {
    let rest = token
        .strip_prefix(PREFIX)
        .ok_or(KeystoneTokenError::Forged)?;
    let (body, signature) = rest.split_once('.').ok_or(KeystoneTokenError::Forged)?;
    let signature: [u8; 64] = URL_SAFE_NO_PAD
        .decode(signature)
        .ok()
        .and_then(|s| s.try_into().ok())
        .ok_or(KeystoneTokenError::Forged)?;
    let message = format!("{PREFIX}{body}");
    let signature = Signature::from_bytes(&signature);
    if !keys
        .iter()
        .any(|key| key.verify(message.as_bytes(), &signature).is_ok())
    {
        return Err(KeystoneTokenError::Forged);
    }
    let claims: Claims = URL_SAFE_NO_PAD
        .decode(body)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or(KeystoneTokenError::Forged)?;
    if claims.expires <= now_secs {
        return Err(KeystoneTokenError::Expired(expiry_text(claims.expires)));
    }
    Ok(claims)
}

/// An expiry as Keystone writes it (`2026-11-29T09:00:00Z`).
pub fn expiry_text(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| secs.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    #[test]
    fn a_token_holds_until_its_lifetime_ends() {
        let (token, claims) = issue(&key(1), "abc", 1_000, 3_600);
        assert!(token.starts_with(PREFIX));
        assert_eq!(verify(&key(1).verifying_key(), &token, 4_599), Ok(claims));
        assert_eq!(
            verify(&key(1).verifying_key(), &token, 4_600),
            Err(KeystoneTokenError::Expired("1970-01-01T01:16:40Z".into()))
        );
    }

    #[test]
    fn another_key_or_a_changed_claim_is_refused() {
        let (token, _) = issue(&key(1), "abc", 1_000, 3_600);
        assert_eq!(
            verify(&key(2).verifying_key(), &token, 1_001),
            Err(KeystoneTokenError::Forged)
        );
        let (other, _) = issue(&key(1), "abd", 1_000, 3_600);
        let (body, _) = other[PREFIX.len()..].split_once('.').unwrap();
        let (_, signature) = token[PREFIX.len()..].split_once('.').unwrap();
        let spliced = format!("{PREFIX}{body}.{signature}");
        assert_eq!(
            verify(&key(1).verifying_key(), &spliced, 1_001),
            Err(KeystoneTokenError::Forged)
        );
        for junk in ["plinth-ks1.", "plinth-ks1.a.b", "plinth-ks1..", "x"] {
            assert_eq!(
                verify(&key(1).verifying_key(), junk, 1_001),
                Err(KeystoneTokenError::Forged),
                "{junk}"
            );
        }
    }
}
