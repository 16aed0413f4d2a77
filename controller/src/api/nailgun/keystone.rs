//! What Fuel's clients ask before anything else: `GET /api/v1/version` (unauthenticated, it says a
//! token is required) and Keystone v2's `POST /keystone/v2.0/tokens`. Plinth has no users: the
//! password is a Plinth operator token and the user name is that token's name; the answer's token
//! stands for that Plinth token for Keystone's lifetime (an hour unless `keystone_token_lifetime_secs`
//! says otherwise; see `api/keystone_token.rs`), and the client sends it as `X-Auth-Token`.

use crate::api::auth::operator_token_hash;
use crate::api::error::ApiError;
use crate::api::error::Json;
use crate::api::keystone_token;
use crate::state::AppState;
use crate::store::{TokenRecord, TokenRole};
use axum::extract::State;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// `GET /api/v1/version`: Nailgun's version record, readable without a token.
pub async fn version() -> Json<Value> {
    Json(json!({
        "auth_required": true,
        "release": env!("CARGO_PKG_VERSION"),
        "api": "1",
        "feature_groups": [],
        "openstack_version": null,
        "product": "plinth",
    }))
}

/// Keystone v2's token request.
#[derive(Debug, Deserialize)]
pub struct TokenRequest {
    auth: AuthBody,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuthBody {
    #[serde(default)]
    password_credentials: Option<PasswordCredentials>,
    #[serde(default)]
    token: Option<TokenRef>,
    #[serde(default)]
    tenant_name: Option<String>,
}

#[derive(Debug, Deserialize)]
struct PasswordCredentials {
    #[serde(default)]
    username: Option<String>,
    password: String,
}

#[derive(Debug, Deserialize)]
struct TokenRef {
    id: String,
}

fn lookup(s: &AppState, token: &str) -> Result<TokenRecord, ApiError> {
    match s.store.token_by_hash(&operator_token_hash(s, token)?)? {
        Some(t) if t.revoked_at_ms.is_none() => Ok(t),
        Some(t) => {
            tracing::warn!(target: "audit", token = %t.name, "refused a revoked token (keystone)");
            Err(ApiError::unauthorized("unknown or revoked token"))
        }
        None => Err(ApiError::unauthorized(
            "the password must be a Plinth operator token (plinth-controller token create)",
        )),
    }
}

/// `POST /keystone/v2.0/tokens`: a password (a Plinth token, the user name its name) or a token body.
pub async fn tokens(
    State(state): State<Arc<AppState>>,
    crate::api::body::Doc(req): crate::api::body::Doc<TokenRequest>,
) -> Result<Json<Value>, ApiError> {
    let (secret, username) = match (req.auth.password_credentials, req.auth.token) {
        (Some(p), _) => (p.password, p.username),
        (None, Some(t)) => (t.id, None),
        (None, None) => {
            return Err(ApiError::bad_request(
                "`auth` needs `passwordCredentials` or `token`",
            ))
        }
    };
    let tenant = req.auth.tenant_name.unwrap_or_else(|| "admin".into());
    let lookup_secret = secret.clone();
    let record = state.blocking(move |s| lookup(s, &lookup_secret)).await?;
    // A token of its own, with Keystone's lifetime, over the operator token; one asked for with a
    // Keystone-style token expires no later than that token.
    let now = crate::clock::now_ms() / 1000;
    let lifetime = state.config().keystone_token_lifetime.as_secs();
    let parent = operator_token_hash(&state, &secret)?;
    let mut lifetime_left = lifetime;
    if secret.starts_with(keystone_token::PREFIX) {
        if let Ok(claims) = keystone_token::verify_with(&state.keys.now().verifiers(), &secret, now)
        {
            lifetime_left = lifetime.min(u64::try_from(claims.expires - now).unwrap_or(0));
        }
    }
    let (token, claims) = keystone_token::issue(&state.keys.signer(), &parent, now, lifetime_left);
    if let Some(name) = username.filter(|u| !u.is_empty()) {
        if name != record.name {
            return Err(ApiError::unauthorized(format!(
                "user {name:?} does not hold this token (its name is the user name)"
            )));
        }
    }
    let role = match record.role {
        TokenRole::Admin => "admin",
        TokenRole::ReadOnly => "read_only",
    };
    tracing::info!(target: "audit", token = %record.name, "keystone token issued");
    Ok(Json(json!({
        "access": {
            "token": {
                "id": token,
                "issued_at": keystone_token::expiry_text(now),
                "expires": keystone_token::expiry_text(claims.expires),
                "tenant": {"id": tenant, "name": tenant, "enabled": true},
            },
            "serviceCatalog": [],
            "user": {
                "id": record.name,
                "name": record.name,
                "username": record.name,
                "roles": [{"name": role}],
                "roles_links": [],
            },
            "metadata": {"is_admin": u8::from(role == "admin"), "roles": [role]},
        }
    })))
}
