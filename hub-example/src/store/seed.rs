//! The seeder's writes: a fresh database opened (or, for a PostgreSQL
//! target, an in-memory SQLite database to copy over), and the rows of one
//! seed written in one transaction through `SeedWriter`.

use std::path::Path;

pub(crate) use super::executor::Param;
use super::sqlite::holds_tables;
use super::sqlite::migrations::migrate;
#[cfg(test)]
pub(crate) use super::sqlite::seed::every_row;
pub(crate) use super::sqlite::seed::{SeedTable, SeedWriter};
use crate::store::db::{postgres_url, Db, DbError, OpenMode, PoolOptions};

/// A migrated, empty database to seed.
#[derive(Debug)]
pub(crate) struct SeedTarget {
    conn: Target,
}

#[derive(Debug)]
enum Target {
    /// An SQLite file.
    File(Db),
    /// A PostgreSQL database, through an in-memory SQLite one.
    Postgres {
        staging: rusqlite::Connection,
        url: String,
    },
}

impl SeedTarget {
    /// Opens the database at `location` (an SQLite file, created if
    /// missing, or a `postgres://` URL) and migrates it with `now_ms` as
    /// the time; `None` when it already holds a table (nothing is changed).
    pub(crate) fn open_fresh(location: &Path, now_ms: i64) -> Result<Option<SeedTarget>, DbError> {
        if let Some(url) = postgres_url(location) {
            if crate::store::postgres::holds_tables(url)? {
                return Ok(None);
            }
            let mut staging = rusqlite::Connection::open_in_memory()?;
            migrate(&mut staging, now_ms)?;
            let url = url.to_owned();
            return Ok(Some(SeedTarget {
                conn: Target::Postgres { staging, url },
            }));
        }
        let db = Db::open(location, OpenMode::CreateIfMissing, PoolOptions::default())?;
        let mut conn = db.conn()?;
        // Checked again on the open file: a file created meanwhile is not
        // ours to fill.
        if holds_tables(&conn)? {
            return Ok(None);
        }
        migrate(&mut conn, now_ms)?;
        drop(conn);
        Ok(Some(SeedTarget {
            conn: Target::File(db),
        }))
    }

    /// Writes what `write` writes, in one transaction, then (for a
    /// PostgreSQL target) copies it over with `now_ms` as the time.
    pub fn write<T, E: From<DbError>>(
        self,
        now_ms: i64,
        write: impl FnOnce(&SeedWriter<'_>) -> Result<T, E>,
    ) -> Result<T, E> {
        let in_one_transaction = |conn: &mut rusqlite::Connection| -> Result<T, E> {
            let writer = SeedWriter::new(conn.transaction().map_err(DbError::from)?);
            let written = write(&writer)?;
            writer.commit()?;
            Ok(written)
        };
        match self.conn {
            Target::File(db) => in_one_transaction(&mut *db.conn()?),
            Target::Postgres { mut staging, url } => {
                let written = in_one_transaction(&mut staging)?;
                crate::store::postgres::copy_seeded(&staging, &url, now_ms)?;
                Ok(written)
            }
        }
    }
}
