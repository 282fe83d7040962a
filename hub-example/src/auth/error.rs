//! Why authentication did not accept a request: a refused credential, or a
//! failure of the Hub's own while it was checked. The handlers answer it as
//! their JSON error, with the status each variant names.

use crate::store::db::DbError;

/// Why a credential was not accepted. No message holds the credential.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// A malformed request (400): more than one `Authorization` header.
    #[error("{0}")]
    Malformed(&'static str),
    /// No valid credential (401); the message says which check failed.
    #[error("{0}")]
    Refused(String),
    /// A request a cookie session may not make (403): one that could come
    /// from another site.
    #[error("{0}")]
    Forbidden(&'static str),
    /// The database failed while the credential was read (503 when busy,
    /// else 500).
    #[error(transparent)]
    Db(#[from] DbError),
    /// The Hub failed otherwise (500): no randomness for a session id.
    #[error("internal error")]
    Internal,
}

impl AuthError {
    /// A refused credential (401) with `reason`.
    pub fn refused(reason: impl Into<String>) -> Self {
        AuthError::Refused(reason.into())
    }
}
