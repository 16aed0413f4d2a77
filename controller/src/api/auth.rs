//! Who is asking: operators by bearer token, agents by the node key of their TLS client certificate.

use super::error::ApiError;
use crate::registry::NodeEntry;
use crate::state::AppState;
use crate::store::TokenRole;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::Method;
use ed25519_dalek::VerifyingKey;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use subtle::ConstantTimeEq;

/// The node key a connection authenticated with, set by the server for every request on it.
#[derive(Debug, Clone)]
pub struct PeerKey(pub Option<Arc<(String, VerifyingKey)>>);

/// Operator tokens by SHA-256, in memory.
#[derive(Debug, Default)]
pub struct Tokens {
    by_hash: RwLock<HashMap<[u8; 32], TokenRole>>,
}

/// The SHA-256 of a token.
pub fn token_hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Tokens {
    /// Adds a token's hash.
    pub fn insert(&self, hash: [u8; 32], role: TokenRole) {
        self.by_hash
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(hash, role);
    }

    /// The role of a presented token. Compares digests in constant time, so timing tells nothing about
    /// how much of a guess was right.
    pub fn role_of(&self, token: &str) -> Option<TokenRole> {
        let presented = token_hash(token);
        let map = self.by_hash.read().unwrap_or_else(|p| p.into_inner());
        let mut found = None;
        for (hash, role) in map.iter() {
            if bool::from(hash.ct_eq(&presented)) {
                found = Some(*role);
            }
        }
        found
    }
}

/// Compares two secrets in constant time (through their digests, so lengths do not leak either).
pub fn secrets_equal(a: &str, b: &str) -> bool {
    bool::from(token_hash(a).ct_eq(&token_hash(b)))
}

/// An authenticated operator. Read-only tokens may only use safe methods.
#[derive(Debug, Clone, Copy)]
pub struct Operator {
    /// What the token may do.
    pub role: TokenRole,
}

impl FromRequestParts<Arc<AppState>> for Operator {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        let header = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .ok_or_else(|| {
                ApiError::unauthorized("missing `Authorization: Bearer <token>` header")
            })?;
        let token = header
            .to_str()
            .ok()
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                ApiError::unauthorized("the Authorization header must be `Bearer <token>`")
            })?;
        let role = match state.tokens.role_of(token) {
            Some(role) => role,
            // Tokens made by `plinth-controller token create` while this process runs are in the database only.
            None => {
                let s = state.clone();
                let token = token.to_string();
                tokio::task::spawn_blocking(move || {
                    s.reload_tokens();
                    s.tokens.role_of(&token)
                })
                .await
                .ok()
                .flatten()
                .ok_or_else(|| ApiError::unauthorized("unknown or revoked token"))?
            }
        };
        let safe = matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS);
        if role == TokenRole::ReadOnly && !safe {
            return Err(ApiError::forbidden("this token is read-only"));
        }
        Ok(Operator { role })
    }
}

/// A request from a registered agent, identified by its connection's node key.
#[derive(Debug, Clone)]
pub struct Agent {
    /// The node.
    pub node: Arc<NodeEntry>,
    /// Its key fingerprint.
    pub node_key: String,
}

/// A request that presented a node key, registered or not (for registration).
#[derive(Debug, Clone)]
pub struct AgentKey {
    /// Fingerprint.
    pub fingerprint: String,
    /// The key.
    pub key: VerifyingKey,
}

fn peer(parts: &Parts) -> Result<Arc<(String, VerifyingKey)>, ApiError> {
    parts
        .extensions
        .get::<PeerKey>()
        .and_then(|p| p.0.clone())
        .ok_or_else(|| {
            ApiError::unauthorized(
                "agent requests need a TLS client certificate holding the node key",
            )
        })
}

impl FromRequestParts<Arc<AppState>> for AgentKey {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        _state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        let p = peer(parts)?;
        Ok(AgentKey {
            fingerprint: p.0.clone(),
            key: p.1,
        })
    }
}

impl FromRequestParts<Arc<AppState>> for Agent {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        let p = peer(parts)?;
        let node = state
            .nodes
            .get(&p.0)
            .ok_or_else(|| ApiError::unauthorized(format!("node key {} is not registered", p.0)))?;
        node.seen(crate::clock::now_ms());
        Ok(Agent {
            node,
            node_key: p.0.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_found_by_digest() {
        let t = Tokens::default();
        t.insert(token_hash("plt_a"), TokenRole::Admin);
        t.insert(token_hash("plt_b"), TokenRole::ReadOnly);
        assert_eq!(t.role_of("plt_a"), Some(TokenRole::Admin));
        assert_eq!(t.role_of("plt_b"), Some(TokenRole::ReadOnly));
        assert_eq!(t.role_of("plt_c"), None);
        assert!(secrets_equal("x", "x") && !secrets_equal("x", "y"));
    }
}
