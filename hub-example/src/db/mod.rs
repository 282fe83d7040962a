//! The SQLite database: a pool of connections that counts its waits, and the
//! schema migrations.

mod migrations;
mod pool;

pub use migrations::{migrate, pending_migrations, schema_version, LATEST_VERSION};
pub use pool::{Conn, Db, OpenMode, PoolOptions};

use std::path::PathBuf;

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
}

impl DbError {
    /// Whether the failure is the database being busy or locked (answered 503).
    pub fn is_busy(&self) -> bool {
        match self {
            DbError::PoolTimeout => true,
            DbError::Sql(rusqlite::Error::SqliteFailure(e, _)) => matches!(
                e.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            ),
            _ => false,
        }
    }
}
