//! The database, SQLite (embedded, the default) or PostgreSQL (a server
//! several Hubs can share), its [`Engine`]: a pool of connections that
//! counts its waits, and the schema migrations of its engine
//! ([`Db::migrate`]).

mod migrations;
mod pool;

pub use migrations::LATEST_VERSION;
pub use pool::{Db, Engine, OpenMode, PoolOptions};

use std::path::{Path, PathBuf};

/// The PostgreSQL URL a `--db` value names, when it is one (`postgres://`
/// or `postgresql://`); anything else is an SQLite file.
pub(crate) fn postgres_url(location: &Path) -> Option<&str> {
    location
        .to_str()
        .filter(|s| s.starts_with("postgres://") || s.starts_with("postgresql://"))
}

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
            DbError::Postgres(e) => crate::store::postgres::is_unavailable(e),
            _ => false,
        }
    }
}
