//! Browser sessions: rows of `web_sessions`, keyed by the SHA-256 of the
//! session id (the id itself is never stored), and the sign-in's lookup
//! of a user by email.

use super::either::Store;
use super::executor::{Executor, Param, SqlRow};
pub(crate) use super::rows::LiveSession;
use crate::store::db::{Db, DbError};

/// A new session: its hash, its user, when it starts and ends (Unix ms).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NewSession<'a> {
    /// The SHA-256 of the session id.
    pub session_hash: &'a [u8; 32],
    /// The signed-in user.
    pub user_id: &'a str,
    /// When it starts.
    pub now_ms: i64,
    /// When it expires.
    pub(crate) expires_at: i64,
}

/// Stores `session` and, in the same transaction, ends the user's oldest
/// sessions beyond `max_live` (the new one counted), deleting with them the
/// user's expired and revoked rows. Returns how many rows were deleted.
/// One user's sign-ins are serialized, so concurrent ones never leave more
/// than `max_live`.
pub(crate) fn insert_session(
    db: &Db,
    session: NewSession<'_>,
    max_live: usize,
) -> Result<u64, DbError> {
    let store = Store::open(db);
    let statements = store.statements();
    let keep_others = i64::try_from(max_live.max(1) - 1).unwrap_or(i64::MAX);
    let hash = Param::Bytes(session.session_hash);
    let user = Param::Text(session.user_id);
    let lock = [user];
    let insert = [
        hash,
        user,
        Param::Int(session.now_ms),
        Param::Int(session.expires_at),
    ];
    let cap = [
        user,
        hash,
        Param::Int(session.now_ms),
        Param::Int(keep_others),
    ];
    let changed = store.execute_steps(&[
        (statements.lock_user_sessions, &lock),
        (statements.insert_session, &insert),
        (statements.cap_user_sessions, &cap),
    ])?;
    Ok(changed[2])
}

/// Deletes every session expired or revoked by `now_ms`; how many.
pub fn prune_sessions(db: &Db, now_ms: i64) -> Result<u64, DbError> {
    let store = Store::open(db);
    store.execute(store.statements().prune_sessions, &[Param::Int(now_ms)])
}

/// The session with this hash, unless it is unknown, revoked or expired.
pub(crate) fn live_session(
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
pub(crate) fn revoke_session(
    db: &Db,
    session_hash: &[u8; 32],
    now_ms: i64,
) -> Result<bool, DbError> {
    let store = Store::open(db);
    let params = [Param::Bytes(session_hash), Param::Int(now_ms)];
    Ok(store.execute(store.statements().revoke_session, &params)? == 1)
}

/// The id of the user with `email`, if there is one.
pub(crate) fn user_id_by_email(db: &Db, email: &str) -> Result<Option<String>, DbError> {
    let store = Store::open(db);
    let sql = store.statements().user_id_by_email;
    store.query_opt(sql, &[Param::Text(email)], |r| Ok(r.text(0)?.to_owned()))
}
