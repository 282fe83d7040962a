//! sqlx: a counted pool and a counted wrapper around any executor.
//!
//! [`CountedPool`] is a [`sqlx::Pool`] whose reference is an executor that
//! records each statement ([`crate::start_statement`]) and
//! hands it to the pool unchanged: the same rows, the same errors. It
//! dereferences to the pool, so `begin`, `acquire`, `close` and the rest
//! are the pool's. [`Counted`] does the same for any other executor: a
//! transaction (`Counted(&mut *tx)`) or a connection.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use perf_trace_sql::sqlx::{Counted, CountedPool};
//!
//! let pool = CountedPool::new(sqlx::SqlitePool::connect("sqlite::memory:").await?);
//! sqlx::query("CREATE TABLE stock (sku INTEGER PRIMARY KEY, qty INTEGER)")
//!     .execute(&pool)
//!     .await?;
//! let mut tx = pool.begin().await?;
//! sqlx::query("INSERT INTO stock VALUES (1, 5)").execute(Counted(&mut *tx)).await?;
//! tx.commit().await?;
//! let (qty,): (i64,) = sqlx::query_as("SELECT qty FROM stock WHERE sku = ?")
//!     .bind(1)
//!     .fetch_one(&pool)
//!     .await?;
//! assert_eq!(qty, 5);
//! # Ok::<_, sqlx::Error>(())
//! # }).unwrap();
//! ```
//!
//! `prepare` and `describe` are handed on uncounted: they run no statement.

use std::fmt;
use std::ops::Deref;

use futures_core::future::BoxFuture;
use futures_core::stream::BoxStream;
use perf_trace_core::scope;
use sqlx::database::Database;
use sqlx::error::BoxDynError;
use sqlx::{Describe, Either, Error, Execute, Executor, Pool, SqlStr};

use crate::{start_in_request, StatementTimer, TimedStatement};

/// Any sqlx executor whose statements are counted and timed: `Counted(&pool)`,
/// `Counted(&mut *tx)`, `Counted(&mut conn)`.
#[derive(Debug, Clone, Copy)]
pub struct Counted<E>(pub E);

/// A query taken apart to read its text, put back together for the
/// executor: the same text, arguments, prepared statement and persistence.
struct Rebuilt<DB: Database> {
    sql: SqlStr,
    statement: Option<DB::Statement>,
    arguments: Option<Result<Option<DB::Arguments>, BoxDynError>>,
    persistent: bool,
}

impl<DB: Database> Execute<'_, DB> for Rebuilt<DB> {
    fn sql(self) -> SqlStr {
        self.sql
    }

    fn statement(&self) -> Option<&DB::Statement> {
        self.statement.as_ref()
    }

    fn take_arguments(&mut self) -> Result<Option<DB::Arguments>, BoxDynError> {
        self.arguments.take().unwrap_or(Ok(None))
    }

    fn persistent(&self) -> bool {
        self.persistent
    }
}

/// Reads `query`'s text to start its statement, in a request; the query,
/// rebuilt.
fn start<'q, DB: Database>(mut query: impl Execute<'q, DB>) -> (Rebuilt<DB>, StatementTimer) {
    // The text is had only by consuming the query: its parts are taken first.
    let arguments = Some(query.take_arguments());
    let statement = query.statement().cloned();
    let persistent = query.persistent();
    let sql = query.sql();
    let timer = start_in_request(sql.as_str());
    let query = Rebuilt {
        sql,
        statement,
        arguments,
        persistent,
    };
    (query, timer)
}

/// Hands `query` to the inner executor's `method`: unchanged outside a
/// request, its text read and the statement timed inside one.
macro_rules! timed {
    ($inner:expr, $method:ident, $query:ident) => {{
        if !scope::is_active() {
            return $inner.$method($query);
        }
        let (query, timer) = start($query);
        Box::pin(TimedStatement::new($inner.$method(query), timer))
    }};
}

impl<'c, E: Executor<'c>> Executor<'c> for Counted<E> {
    type Database = E::Database;

    fn fetch_many<'e, 'q: 'e, Q>(
        self,
        query: Q,
    ) -> BoxStream<
        'e,
        Result<
            Either<<Self::Database as Database>::QueryResult, <Self::Database as Database>::Row>,
            Error,
        >,
    >
    where
        'c: 'e,
        Q: 'q + Execute<'q, Self::Database>,
    {
        timed!(self.0, fetch_many, query)
    }

    fn fetch_optional<'e, 'q: 'e, Q>(
        self,
        query: Q,
    ) -> BoxFuture<'e, Result<Option<<Self::Database as Database>::Row>, Error>>
    where
        'c: 'e,
        Q: 'q + Execute<'q, Self::Database>,
    {
        timed!(self.0, fetch_optional, query)
    }

    fn prepare_with<'e>(
        self,
        sql: SqlStr,
        parameters: &'e [<Self::Database as Database>::TypeInfo],
    ) -> BoxFuture<'e, Result<<Self::Database as Database>::Statement, Error>>
    where
        'c: 'e,
    {
        self.0.prepare_with(sql, parameters)
    }

    fn describe<'e>(self, sql: SqlStr) -> BoxFuture<'e, Result<Describe<Self::Database>, Error>>
    where
        'c: 'e,
    {
        self.0.describe(sql)
    }
}

/// A sqlx pool whose statements are counted and timed: pass `&pool` where
/// sqlx takes an executor. Dereferences to the [`Pool`]; cloning is cheap,
/// as the pool's.
pub struct CountedPool<DB: Database>(Pool<DB>);

impl<DB: Database> CountedPool<DB> {
    /// Counts the statements run through `pool`.
    pub fn new(pool: Pool<DB>) -> Self {
        CountedPool(pool)
    }

    /// The pool itself: statements run through it are not counted.
    pub fn inner(&self) -> &Pool<DB> {
        &self.0
    }

    /// Unwraps the pool.
    pub fn into_inner(self) -> Pool<DB> {
        self.0
    }
}

impl<DB: Database> Clone for CountedPool<DB> {
    fn clone(&self) -> Self {
        CountedPool(self.0.clone())
    }
}

impl<DB: Database> fmt::Debug for CountedPool<DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CountedPool").field(&self.0).finish()
    }
}

impl<DB: Database> Deref for CountedPool<DB> {
    type Target = Pool<DB>;

    fn deref(&self) -> &Pool<DB> {
        &self.0
    }
}

impl<DB: Database> From<Pool<DB>> for CountedPool<DB> {
    fn from(pool: Pool<DB>) -> Self {
        CountedPool(pool)
    }
}

impl<'p, DB: Database> Executor<'p> for &'p CountedPool<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    type Database = DB;

    fn fetch_many<'e, 'q: 'e, Q>(
        self,
        query: Q,
    ) -> BoxStream<'e, Result<Either<DB::QueryResult, DB::Row>, Error>>
    where
        'p: 'e,
        Q: 'q + Execute<'q, DB>,
    {
        Counted(&self.0).fetch_many(query)
    }

    fn fetch_optional<'e, 'q: 'e, Q>(
        self,
        query: Q,
    ) -> BoxFuture<'e, Result<Option<DB::Row>, Error>>
    where
        'p: 'e,
        Q: 'q + Execute<'q, DB>,
    {
        Counted(&self.0).fetch_optional(query)
    }

    fn prepare_with<'e>(
        self,
        sql: SqlStr,
        parameters: &'e [DB::TypeInfo],
    ) -> BoxFuture<'e, Result<DB::Statement, Error>>
    where
        'p: 'e,
    {
        self.0.prepare_with(sql, parameters)
    }

    fn describe<'e>(self, sql: SqlStr) -> BoxFuture<'e, Result<Describe<DB>, Error>>
    where
        'p: 'e,
    {
        self.0.describe(sql)
    }
}
