//! The store of either engine, chosen once, when it is opened: the
//! authorization store's executors (`SqliteStore`, `PostgresStore`) are
//! types of their own, so the per-request reads are monomorphized over
//! them; [`Store`] is either, for the facades called with a `Db`
//! (sessions, writes, the lists' rows): one `match` per statement, never a
//! `dyn` call.

use super::executor::{impl_sql_row, Executor, Param};
use super::postgres::PostgresStore;
use super::sqlite::SqliteStore;
use super::statements::Statements;
use crate::store::db::{Db, DbError, Engine};

/// The store of one database, its engine chosen once, when it is opened.
#[derive(Debug, Clone)]
pub enum Store {
    /// On SQLite.
    Sqlite(SqliteStore),
    /// On PostgreSQL.
    Postgres(PostgresStore),
}

impl Store {
    /// The store over `db`, of its engine.
    pub fn open(db: &Db) -> Store {
        match db.engine() {
            Engine::Sqlite => Store::Sqlite(SqliteStore::new(db.clone())),
            Engine::Postgres => Store::Postgres(PostgresStore::new(db.clone())),
        }
    }
}

/// A row of either engine.
pub(crate) enum AnyRow<'r> {
    /// An SQLite row.
    Sqlite(&'r rusqlite::Row<'r>),
    /// A PostgreSQL row.
    Postgres(&'r tokio_postgres::Row),
}

/// `$body` with `$row` bound to the row of either engine.
macro_rules! either_row {
    ($any:expr, $row:ident => $body:expr) => {
        match $any {
            AnyRow::Sqlite($row) => $body,
            AnyRow::Postgres($row) => $body,
        }
    };
}

impl_sql_row!(AnyRow<'_>, |self, idx| {
    text: either_row!(self, r => r.text(idx)),
    opt_text: either_row!(self, r => r.opt_text(idx)),
    int: either_row!(self, r => r.int(idx)),
    opt_int: either_row!(self, r => r.opt_int(idx)),
    flag: either_row!(self, r => r.flag(idx)),
    bytes: either_row!(self, r => r.bytes(idx)),
});

/// `$body` with `$store` bound to the store of either engine.
macro_rules! either_store {
    ($any:expr, $store:ident => $body:expr) => {
        match $any {
            Store::Sqlite($store) => $body,
            Store::Postgres($store) => $body,
        }
    };
}

impl Executor for Store {
    type Row<'r> = AnyRow<'r>;

    fn statements(&self) -> &'static Statements {
        either_store!(self, s => s.statements())
    }

    fn query<T>(
        &self,
        sql: &str,
        params: &[Param<'_>],
        mut read: impl FnMut(&AnyRow<'_>) -> Result<T, DbError>,
    ) -> Result<Vec<T>, DbError> {
        match self {
            Store::Sqlite(s) => s.query(sql, params, |r| read(&AnyRow::Sqlite(r))),
            Store::Postgres(s) => s.query(sql, params, |r| read(&AnyRow::Postgres(r))),
        }
    }

    fn execute(&self, sql: &str, params: &[Param<'_>]) -> Result<u64, DbError> {
        either_store!(self, s => s.execute(sql, params))
    }

    fn execute_each(&self, sql: &str, each: &[Vec<Param<'_>>]) -> Result<(), DbError> {
        either_store!(self, s => s.execute_each(sql, each))
    }

    fn execute_steps(&self, steps: &[(&str, &[Param<'_>])]) -> Result<Vec<u64>, DbError> {
        either_store!(self, s => s.execute_steps(steps))
    }
}
