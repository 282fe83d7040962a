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
    pub fn migrate(&self, now_ms: i64) -> Result<Vec<u32>, DbError> {
        match self.engine() {
            Engine::Sqlite => sqlite::migrate(&mut *self.conn()?, now_ms),
            // Blocks on the driver's runtime: never on an async worker.
            Engine::Postgres => off_runtime(|| postgres::migrate(&mut *self.pg_conn()?, now_ms)),
        }
    }

    /// The versions not yet applied; [`DbError::SchemaTooNew`] when the
    /// database is newer than this build. Nothing is written.
    pub fn pending_migrations(&self) -> Result<Vec<u32>, DbError> {
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
