//! Browser sessions: rows of `web_sessions`, keyed by the SHA-256 of the
//! session id (the id itself is never stored), and the sign-in's lookup
//! of a user by email.

use super::dialect::Store;
use super::engine::{Engine, Param, SqlRow};
pub use super::rows::LiveSession;
use crate::store::db::{Db, DbError};

/// Stores a session of `user_id`, live until `expires_at` (Unix ms).
pub fn insert_session(
    db: &Db,
    session_hash: &[u8; 32],
    user_id: &str,
    now_ms: i64,
    expires_at: i64,
) -> Result<(), DbError> {
    let store = Store::open(db);
    let params = [
        Param::Bytes(session_hash),
        Param::Text(user_id),
        Param::Int(now_ms),
        Param::Int(expires_at),
    ];
    store.execute(store.statements().insert_session, &params)?;
    Ok(())
}

/// The session with this hash, unless it is unknown, revoked or expired.
pub fn live_session(
    db: &Db,
    session_hash: &[u8; 32],
    now_ms: i64,
) -> Result<Option<LiveSession>, DbError> {
    let store = Store::open(db);
    let params = [Param::Bytes(session_hash), Param::Int(now_ms)];
    store.query_opt(store.statements().live_session, &params, |r| {
        Ok(LiveSession {
            user_id: r.text(0)?.to_owned(),
            expires_at: r.int(1)?,
        })
    })
}

/// Ends a session; `false` when it was not live.
pub fn revoke_session(db: &Db, session_hash: &[u8; 32], now_ms: i64) -> Result<bool, DbError> {
    let store = Store::open(db);
    let params = [Param::Bytes(session_hash), Param::Int(now_ms)];
    Ok(store.execute(store.statements().revoke_session, &params)? == 1)
}

/// The id of the user with `email`, if there is one.
pub fn user_id_by_email(db: &Db, email: &str) -> Result<Option<String>, DbError> {
    let store = Store::open(db);
    let sql = store.statements().user_id_by_email;
    store.query_opt(sql, &[Param::Text(email)], |r| Ok(r.text(0)?.to_owned()))
}
