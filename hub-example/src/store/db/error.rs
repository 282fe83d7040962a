//! The database's failures ([`DbError`]) and which of them mean "busy or
//! unavailable for now", for either engine. It sits below both the pool and
//! the engines' bindings, so neither has to ask the other.

use std::path::PathBuf;

use super::Engine;

/// A database failure.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The database file does not exist.
    #[error("database file {0} does not exist")]
    Missing(PathBuf),
    /// The database file can only be read.
    #[error("database file {0} is read-only")]
    ReadOnly(PathBuf),
    /// The database file could not be opened.
    #[error("cannot open database {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        source: rusqlite::Error,
    },
    /// No connection became free within the pool's timeout.
    #[error("database busy: no connection became available in time")]
    PoolTimeout,
    /// The schema is older than this build and migrations were not applied.
    #[error("database schema is at version {found}, this build needs {expected}; run serve without --no-auto-migrate")]
    SchemaOutdated {
        /// The version in the file.
        found: u32,
        /// The version this build needs.
        expected: u32,
    },
    /// The schema is newer than this build.
    #[error("database schema is at version {found}, newer than this build ({expected})")]
    SchemaTooNew {
        /// The version in the file.
        found: u32,
        /// The newest version this build knows.
        expected: u32,
    },
    /// A stored value could not be decoded.
    #[error("corrupt stored value: {0}")]
    Corrupt(String),
    /// A statement failed.
    #[error("database error: {0}")]
    Sql(#[from] rusqlite::Error),
    /// A PostgreSQL statement or connection failed.
    #[error("database error: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    /// The PostgreSQL URL could not be read (the URL itself is not repeated:
    /// it may hold a password).
    #[error("invalid PostgreSQL URL: {0}")]
    BadUrl(String),
    /// The PostgreSQL server did not answer or refused the connection.
    #[error("cannot connect to PostgreSQL at {url}: {reason}")]
    Connect {
        /// The URL, without its password.
        url: String,
        /// Why.
        reason: String,
    },
    /// A connection of one engine was asked of a database of the other.
    #[error("the database is {0:?}, not the dialect this code path needs")]
    WrongEngine(Engine),
}

impl DbError {
    /// Whether the failure is the database being busy, locked or (PostgreSQL)
    /// unreachable for now: answered 503, and worth a retry.
    pub(crate) fn is_busy(&self) -> bool {
        match self {
            DbError::PoolTimeout => true,
            DbError::Sql(rusqlite::Error::SqliteFailure(e, _)) => matches!(
                e.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            ),
            DbError::Postgres(e) => is_unavailable(e),
            _ => false,
        }
    }
}

/// Whether a PostgreSQL failure means the server is unavailable for now
/// (down, restarting, the connection terminated, out of connections, a lock
/// not granted in time) rather than a fault of the statement.
fn is_unavailable(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    if let Some(code) = e.code() {
        let code = code.code();
        return code.starts_with("08")
            || matches!(code, "57P01" | "57P02" | "57P03" | "53300" | "55P03");
    }
    // A failure below the protocol (a refused or reset socket).
    std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>())
}
