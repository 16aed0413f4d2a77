//! Operator tokens, kept by their SHA-256 (never the token).

use super::access::{args, Row, Tx};
use crate::store::{StoreError, StoreResult, TokenRecord, TokenRole};

/// A token's columns as [`token_from_row`] reads them.
const TOKEN_COLUMNS: &str = "id, name, hash, role, revoked_at";

fn token_from_row(r: &dyn Row) -> StoreResult<TokenRecord> {
    let role = match r.text(3)? {
        "admin" => TokenRole::Admin,
        "read_only" => TokenRole::ReadOnly,
        other => return Err(StoreError::Corrupt(format!("token role {other:?}"))),
    };
    Ok(TokenRecord {
        id: r.id(0)?,
        name: r.string(1)?,
        hash: r.string(2)?,
        role,
        revoked_at_ms: r.opt_int(4)?,
    })
}

/// A role as stored.
fn role_text(role: TokenRole) -> &'static str {
    match role {
        TokenRole::Admin => "admin",
        TokenRole::ReadOnly => "read_only",
    }
}

/// Stores a token; a conflict when a token not revoked has the name.
pub(crate) fn create_token(
    t: &dyn Tx,
    name: &str,
    hash: &str,
    role: TokenRole,
) -> StoreResult<TokenRecord> {
    if t.exists(
        "SELECT 1 FROM tokens WHERE name = $1 AND revoked_at IS NULL",
        args![name],
    )? {
        return Err(StoreError::Conflict(format!(
            "a token named {name:?} exists: revoke it first, or choose another name"
        )));
    }
    let token_id = t.int(
        "INSERT INTO tokens (name, hash, role) VALUES ($1, $2, $3) RETURNING id",
        args![name, hash, role_text(role)],
    )?;
    Ok(TokenRecord {
        id: super::access::id(token_id),
        name: name.into(),
        hash: hash.into(),
        role,
        revoked_at_ms: None,
    })
}

/// All tokens, revoked ones included, by id.
pub(crate) fn list_tokens(t: &dyn Tx) -> StoreResult<Vec<TokenRecord>> {
    t.rows(
        &format!("SELECT {TOKEN_COLUMNS} FROM tokens ORDER BY id"),
        args![],
        token_from_row,
    )
}

/// The token with this hash, revoked or not.
pub(crate) fn token_by_hash(t: &dyn Tx, hash: &str) -> StoreResult<Option<TokenRecord>> {
    t.opt(
        &format!("SELECT {TOKEN_COLUMNS} FROM tokens WHERE hash = $1"),
        args![hash],
        token_from_row,
    )
}

/// Revokes the tokens named `name` not revoked yet; not found when there are none.
pub(crate) fn revoke_token(t: &dyn Tx, name: &str, now_ms: i64) -> StoreResult<usize> {
    let n = t.exec(
        "UPDATE tokens SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL",
        args![name, now_ms],
    )?;
    if n == 0 {
        return Err(StoreError::NotFound {
            kind: "token",
            id: format!("{name:?} (not revoked)"),
        });
    }
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}
