//! PostgreSQL (a server several Hubs can share): the store's binding and
//! statements ([`PostgresStore`]), the async driver (`tokio-postgres`) in a
//! `bb8` pool, seen by the synchronous store through blocking facades; how
//! a failure is told (which ones mean "unavailable for now" is
//! `db::DbError::is_busy`'s call); the migrations' port and the seeder's
//! copy.
//!
//! The store's methods are synchronous and run inside one `spawn_blocking`
//! per request, exactly as on SQLite, so both engines make the same calls
//! in the same places. A `PgClient`'s calls block on the runtime that
//! drives its connection (see `runtime` for which one and where blocking
//! is allowed); each connection keeps its prepared statements, as
//! rusqlite's statement cache does for SQLite.
//!
//! The store: statements prepared once per connection (cached by the
//! client), parameters bound as PostgreSQL takes them (an id list as one
//! text array, so a statement's text never depends on how many ids there
//! are).

pub(crate) mod client;
mod copy;
mod failures;
pub(crate) mod manager;
pub(crate) mod migrations;
pub(crate) mod runtime;
mod statements;

pub(crate) use client::PgClient;
pub(crate) use client::PgTransaction;
pub(crate) use copy::{copy_seeded, holds_tables};
pub use failures::redacted;
#[cfg(test)]
pub(crate) use failures::test_server;
pub(crate) use manager::PgManager;

use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use self::statements::STATEMENTS;
use crate::store::db::{Db, DbError};
use crate::store::executor::{impl_sql_row, Executor, Param};
use crate::store::statements::Statements;

/// The Hub's store on PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    db: Db,
}

impl PostgresStore {
    /// A store reading through `db`'s pool (a PostgreSQL one).
    pub fn new(db: Db) -> Self {
        PostgresStore { db }
    }

    /// The database the store reads.
    pub fn db(&self) -> &Db {
        &self.db
    }
}

/// A parameter as PostgreSQL takes it: a list becomes a text array, and
/// principals two of them (their kinds, their ids).
#[derive(Debug)]
enum Bound<'a> {
    One(Param<'a>),
    Texts(Vec<&'a str>),
}

fn bind<'a>(params: &[Param<'a>]) -> Vec<Bound<'a>> {
    let mut bound = Vec::with_capacity(params.len() + 1);
    for param in params {
        match *param {
            Param::Ids(ids) => bound.push(Bound::Texts(ids.iter().map(|id| &**id).collect())),
            Param::Principals(principals) => {
                bound.push(Bound::Texts(
                    principals.iter().map(|p| p.kind.as_str()).collect(),
                ));
                bound.push(Bound::Texts(principals.iter().map(|p| &*p.id).collect()));
            }
            one => bound.push(Bound::One(one)),
        }
    }
    bound
}

impl Bound<'_> {
    /// The value as the driver's own type for it, which checks it against
    /// the statement's parameter type.
    fn value(&self) -> &(dyn ToSql + Sync) {
        match self {
            Bound::One(Param::Text(text)) => text,
            Bound::One(Param::OptText(text)) => text,
            Bound::One(Param::Int(n)) => n,
            Bound::One(Param::Bytes(bytes)) => bytes,
            Bound::Texts(texts) => texts,
            Bound::One(Param::Ids(_) | Param::Principals(_)) => {
                unreachable!("lists are bound as text arrays")
            }
        }
    }
}

/// Runs `call` with `params` bound for PostgreSQL.
fn with_bound<T>(params: &[Param<'_>], call: impl FnOnce(&[&(dyn ToSql + Sync)]) -> T) -> T {
    let bound = bind(params);
    let refs: Vec<&(dyn ToSql + Sync)> = bound.iter().map(Bound::value).collect();
    call(&refs)
}

impl_sql_row!(Row, |self, idx| {
    text: Ok(self.try_get(idx)?),
    opt_text: Ok(self.try_get(idx)?),
    int: Ok(self.try_get(idx)?),
    opt_int: Ok(self.try_get(idx)?),
    flag: Ok(self.try_get(idx)?),
    bytes: Ok(self.try_get(idx)?),
});

impl Executor for PostgresStore {
    type Row<'r> = Row;

    fn statements(&self) -> &'static Statements {
        &STATEMENTS
    }

    fn query<T>(
        &self,
        sql: &str,
        params: &[Param<'_>],
        read: impl FnMut(&Row) -> Result<T, DbError>,
    ) -> Result<Vec<T>, DbError> {
        let rows = with_bound(params, |p| {
            self.db.pg_conn()?.query(sql, p).map_err(DbError::from)
        })?;
        rows.iter().map(read).collect()
    }

    fn execute(&self, sql: &str, params: &[Param<'_>]) -> Result<u64, DbError> {
        with_bound(params, |p| {
            self.db.pg_conn()?.execute(sql, p).map_err(DbError::from)
        })
    }

    fn execute_each(&self, sql: &str, each: &[Vec<Param<'_>>]) -> Result<(), DbError> {
        let mut conn = self.db.pg_conn()?;
        let mut tx = conn.transaction()?;
        for params in each {
            with_bound(params, |p| tx.execute(sql, p))?;
        }
        tx.commit()?;
        Ok(())
    }

    fn execute_steps(&self, steps: &[(&str, &[Param<'_>])]) -> Result<Vec<u64>, DbError> {
        let mut conn = self.db.pg_conn()?;
        let mut tx = conn.transaction()?;
        let mut changed = Vec::with_capacity(steps.len());
        for (sql, params) in steps {
            let n = match sql.is_empty() {
                true => 0,
                false => with_bound(params, |p| tx.execute(sql, p))?,
            };
            changed.push(n);
        }
        tx.commit()?;
        Ok(changed)
    }
}
