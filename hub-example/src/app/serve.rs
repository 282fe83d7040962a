//! Opening a seeded database for serving ([`Db::open_for_serving`]), shared
//! by the `serve` command and by programs that serve Hubs in-process (the
//! bench crate's demo).

use std::path::Path;

use crate::store::db::{postgres_url, Db, DbError, OpenMode, PoolOptions, LATEST_VERSION};

/// What opening a database for serving does with a schema older than the
/// binary's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaUpdate {
    /// Applies the pending migrations (the default).
    Migrate,
    /// Applies none: an outdated schema is [`DbError::SchemaOutdated`], and
    /// nothing is written (the command line's `--no-auto-migrate`).
    Refuse,
}

impl Db {
    /// Opens the database for serving, its schema brought up to date or
    /// checked as `update` says. The file must exist. A `postgres://` URL
    /// in place of the path opens that PostgreSQL database (which must
    /// answer) the same way.
    pub fn open_for_serving(path: &Path, update: SchemaUpdate) -> Result<Db, DbError> {
        let db = match postgres_url(path) {
            Some(url) => Db::open_postgres(url, PoolOptions::default())?,
            None => Db::open(path, OpenMode::MustExist, PoolOptions::default())?,
        };
        // The migrations of the database's engine (PostgreSQL's run off any
        // async worker: programs serving Hubs in-process may call this from
        // one).
        if update == SchemaUpdate::Migrate {
            db.migrate(crate::clock::now_ms())?;
        } else if !db.pending_migrations()?.is_empty() {
            return Err(DbError::SchemaOutdated {
                found: db.schema_version()?,
                expected: LATEST_VERSION,
            });
        }
        Ok(db)
    }
}
