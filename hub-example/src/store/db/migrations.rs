//! The schema migrations of a [`Db`], chosen by its engine: SQLite's list
//! (`sqlite/migrations.rs`, the versions' reference text) or its port to
//! PostgreSQL (`postgres/migrations.rs`), with the same versions and names.

use super::{Db, DbError, Engine};
use crate::store::postgres::migrations as postgres;
use crate::store::postgres::runtime::off_runtime;
use crate::store::sqlite::migrations as sqlite;

/// The schema version this build needs, the same on both engines (SQLite's
/// list is the versions' reference; PostgreSQL's port has each of them).
pub const LATEST_VERSION: u32 = sqlite::LATEST_VERSION;

impl Db {
    /// Applies every pending migration of the database's engine, each in
    /// its own transaction, with `now_ms` as their `applied_at`; the versions
    /// applied, oldest first. On PostgreSQL, replicas starting together take
    /// an advisory lock, so each migration is applied once.
    pub(crate) fn migrate(&self, now_ms: i64) -> Result<Vec<u32>, DbError> {
        match self.engine() {
            Engine::Sqlite => sqlite::migrate(&mut *self.conn()?, now_ms),
            // Blocks on the driver's runtime: never on an async worker.
            Engine::Postgres => off_runtime(|| postgres::migrate(&mut *self.pg_conn()?, now_ms)),
        }
    }

    /// The versions not yet applied; [`DbError::SchemaTooNew`] when the
    /// database is newer than this build. Nothing is written.
    pub(crate) fn pending_migrations(&self) -> Result<Vec<u32>, DbError> {
        match self.engine() {
            Engine::Sqlite => sqlite::pending_migrations(&*self.conn()?),
            Engine::Postgres => off_runtime(|| postgres::pending_migrations(&mut *self.pg_conn()?)),
        }
    }

    /// The schema version the database records (0 when never migrated).
    pub fn schema_version(&self) -> Result<u32, DbError> {
        match self.engine() {
            Engine::Sqlite => sqlite::schema_version(&*self.conn()?),
            Engine::Postgres => off_runtime(|| postgres::schema_version(&mut *self.pg_conn()?)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db::temp_db;

    #[test]
    fn an_sqlite_database_takes_sqlites_migrations_once_and_refuses_a_newer_schema() {
        let (_dir, db) = temp_db();
        assert_eq!(db.engine(), Engine::Sqlite);
        assert_eq!(db.schema_version().unwrap(), 0);
        let every: Vec<u32> = (1..=LATEST_VERSION).collect();
        assert_eq!(db.pending_migrations().unwrap(), every);

        assert_eq!(db.migrate(7).unwrap(), every);
        assert_eq!(db.schema_version().unwrap(), LATEST_VERSION);
        assert!(db.pending_migrations().unwrap().is_empty());
        assert!(db.migrate(8).unwrap().is_empty());
        let applied_at: i64 = db
            .conn()
            .unwrap()
            .query_row("SELECT MAX(applied_at) FROM schema_migrations", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(applied_at, 7);

        db.conn()
            .unwrap()
            .execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?1, 'later', 9)",
                [LATEST_VERSION + 1],
            )
            .unwrap();
        let err = db.pending_migrations().unwrap_err();
        assert!(
            matches!(err, DbError::SchemaTooNew { found, expected }
                if found == LATEST_VERSION + 1 && expected == LATEST_VERSION),
            "{err}"
        );
        assert!(matches!(db.migrate(10), Err(DbError::SchemaTooNew { .. })));
    }
}
