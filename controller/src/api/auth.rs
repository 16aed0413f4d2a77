//! Who is asking: operators by bearer token, agents by the node key of their TLS client certificate.

use super::error::ApiError;
use crate::intake::connections::PeerKey;
use crate::intake::registry::NodeEntry;
use crate::limits::ConnectionTicket;
use crate::state::AppState;
use crate::store::TokenRole;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::Method;
use ed25519_dalek::VerifyingKey;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// The SHA-256 of a token.
pub fn token_hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Compares two secrets in constant time (through their digests, so lengths do not leak either).
pub fn secrets_equal(a: &str, b: &str) -> bool {
    bool::from(token_hash(a).ct_eq(&token_hash(b)))
}

/// The operator token a request presents: `Authorization: Bearer <token>`, or Keystone's
/// `X-Auth-Token: <token>` (what Fuel's clients send).
pub fn request_token(parts: &Parts) -> Result<String, ApiError> {
    if let Some(header) = parts.headers.get(axum::http::header::AUTHORIZATION) {
        return header
            .to_str()
            .ok()
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .ok_or_else(|| {
                ApiError::unauthorized("the Authorization header must be `Bearer <token>`")
            });
    }
    match parts.headers.get("x-auth-token") {
        Some(header) => header
            .to_str()
            .ok()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .ok_or_else(|| ApiError::unauthorized("the X-Auth-Token header is empty")),
        None => Err(ApiError::unauthorized(
            "missing `Authorization: Bearer <token>` (or `X-Auth-Token`) header",
        )),
    }
}

/// The digest of the operator token a presented token stands for: its own, or for a Keystone-style
/// token ([`super::keystone_token`]) the one it was issued over, once its signature and lifetime hold.
pub fn operator_token_hash(state: &AppState, token: &str) -> Result<String, ApiError> {
    if !token.starts_with(super::keystone_token::PREFIX) {
        return Ok(hex::encode(token_hash(token)));
    }
    let now = crate::clock::now_ms() / 1000;
    super::keystone_token::verify_with(&state.keys.now().verifiers(), token, now)
        .map(|claims| claims.token)
        .map_err(|e| ApiError::unauthorized(e.to_string()))
}

/// An authenticated operator. Read-only tokens may only use safe methods.
#[derive(Debug, Clone)]
pub struct Operator {
    /// What the token may do.
    pub role: TokenRole,
    /// The token's name (who is acting, for reports and audit lines).
    pub name: String,
}

impl FromRequestParts<Arc<AppState>> for Operator {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        let token = request_token(parts)?;
        // Looked up on every request (one indexed read), so a revoked token stops working at once, in
        // every controller process; only the token's digest is stored or compared. A Keystone-style
        // token stands for the operator token it was issued over, until it expires.
        let hash = operator_token_hash(state, &token)?;
        let s = state.clone();
        let found = tokio::task::spawn_blocking(move || s.store.token_by_hash(&hash))
            .await
            .map_err(|e| ApiError::internal(format!("worker failed: {e}")))??;
        let (role, name) = match found {
            Some(t) if t.revoked_at_ms.is_none() => (t.role, t.name),
            Some(t) => {
                tracing::warn!(target: "audit", token = %t.name, "refused a revoked token");
                return Err(ApiError::unauthorized("unknown or revoked token"));
            }
            None => return Err(ApiError::unauthorized("unknown or revoked token")),
        };
        // The connection proved who it is: it no longer counts as untrusted.
        if let Some(ticket) = parts.extensions.get::<Arc<ConnectionTicket>>() {
            ticket.trust();
        }
        let safe = matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS);
        if role == TokenRole::ReadOnly && !safe {
            return Err(ApiError::forbidden("this token is read-only"));
        }
        Ok(Operator { role, name })
    }
}

/// `GET /api/v1/whoami`: what the presented token may do (`{"role": "admin"}` or `"read_only"`), so a
/// client can offer only the actions that will be allowed.
#[utoipa::path(
    get,
    path = "/whoami/",
    tag = "auth",
    security(("bearer" = []), ("xAuthToken" = [])),
    responses(
        (status = 200, description = "success"),
        (status = "4XX", description = "refused: the error names the field or record", body = plinth_api::errors::ErrorBody)
    )
)]
pub async fn whoami(op: Operator) -> super::error::Json<serde_json::Value> {
    super::error::Json(serde_json::json!({ "role": op.role }))
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
        let node =
            state.agents.registry.get(&p.0).ok_or_else(|| {
                ApiError::unauthorized(format!("node key {} is not registered", p.0))
            })?;
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
    fn secrets_compare_by_digest() {
        assert_ne!(token_hash("plt_a"), token_hash("plt_b"));
        assert!(secrets_equal("x", "x") && !secrets_equal("x", "y"));
    }
}
