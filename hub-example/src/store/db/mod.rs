//! The database, SQLite (embedded, the default) or PostgreSQL (a server
//! several Hubs can share), its [`Engine`]: a pool of connections that
//! counts its waits, and the schema migrations of its engine
//! (`Db::migrate`).

mod error;
mod migrations;
mod pool;

pub use error::DbError;
pub use migrations::LATEST_VERSION;
pub use pool::{Db, Engine, OpenMode, PoolOptions};

use std::path::Path;

/// The PostgreSQL URL a `--db` value names, when it is one (`postgres://`
/// or `postgresql://`); anything else is an SQLite file.
pub(crate) fn postgres_url(location: &Path) -> Option<&str> {
    location
        .to_str()
        .filter(|s| s.starts_with("postgres://") || s.starts_with("postgresql://"))
}

/// A path named `name` in a fresh temporary folder, which lasts as long as
/// the returned guard: the unit tests' database files.
#[cfg(test)]
pub(crate) fn temp_path(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    (dir, path)
}

/// A new SQLite database in a fresh temporary folder, which lasts as long
/// as the returned guard.
#[cfg(test)]
pub(crate) fn temp_db() -> (tempfile::TempDir, Db) {
    let (dir, path) = temp_path("hub.db");
    let db = Db::open(&path, OpenMode::CreateIfMissing, PoolOptions::default()).unwrap();
    (dir, db)
}
