//! User access tokens: stored (only as their SHA-256) and revoked. They are
//! read by the authorization store (`get_user_access_token`).

use sha2::{Digest, Sha256};

use super::either::Store;
use super::executor::{Executor, Param};
pub use super::rows::NewAccessToken;
use crate::store::db::{Db, DbError};

/// The SHA-256 of a token or session id: all the database ever holds of it.
pub fn token_hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Stores a user access token, keeping only its SHA-256 hash.
pub fn insert_user_access_token(
    db: &Db,
    token: &NewAccessToken<'_>,
    now_ms: i64,
) -> Result<(), DbError> {
    let store = Store::open(db);
    let hash = token_hash(token.token);
    store.execute(
        store.statements().insert_access_token,
        &[
            Param::Text(token.id),
            Param::Text(token.user_id),
            Param::Text(token.project_id),
            Param::Text(token.name),
            Param::Bytes(&hash),
            Param::Int(now_ms),
            Param::Int(token.expires_at_ms),
        ],
    )?;
    Ok(())
}

/// Revokes a user access token; `false` when it was not live.
pub fn revoke_user_access_token(db: &Db, token_id: &str, now_ms: i64) -> Result<bool, DbError> {
    let store = Store::open(db);
    let sql = store.statements().revoke_access_token;
    let changed = store.execute(sql, &[Param::Text(token_id), Param::Int(now_ms)])?;
    Ok(changed == 1)
}
