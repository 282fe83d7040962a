//! A PostgreSQL connection as the synchronous store sees it: a
//! `tokio-postgres` client, the statements prepared on it, and the runtime
//! its calls block on. Each method is one async call of the driver, awaited
//! with [`Handle::block_on`]: call them from a blocking-pool thread or a
//! thread of no runtime, never from an async task.

use std::collections::HashMap;

use tokio::runtime::Handle;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Error, Row, Statement, Transaction};

/// Prepared statements kept per connection (as many shapes as the Hub has,
/// with room to spare; past it the cache starts again).
const STATEMENT_CACHE: usize = 128;

/// The statements prepared on one connection, by their text.
#[derive(Default)]
struct Statements(HashMap<String, Statement>);

impl Statements {
    /// The statement for `sql`, prepared through `client` the first time.
    async fn prepared(&mut self, client: &Client, sql: &str) -> Result<Statement, Error> {
        if let Some(statement) = self.0.get(sql) {
            return Ok(statement.clone());
        }
        let statement = client.prepare(sql).await?;
        if self.0.len() >= STATEMENT_CACHE {
            self.0.clear();
        }
        self.0.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }
}

/// A PostgreSQL connection and the statements prepared on it.
pub struct PgClient {
    client: Client,
    statements: Statements,
    runtime: Handle,
}

impl std::fmt::Debug for PgClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgClient")
            .field("statements", &self.statements.0.len())
            .field("closed", &self.client.is_closed())
            .finish_non_exhaustive()
    }
}

impl PgClient {
    /// `client`, whose calls block on `runtime` (the one driving its
    /// connection).
    pub(crate) fn new(client: Client, runtime: Handle) -> PgClient {
        PgClient {
            client,
            statements: Statements::default(),
            runtime,
        }
    }

    /// Whether the connection is closed (the pool then drops it).
    pub(crate) fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    /// The async client, for the pool's own checks.
    pub(crate) fn inner_mut(&mut self) -> &mut Client {
        &mut self.client
    }

    /// Every row of `sql`, through its cached statement.
    pub fn query(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, Error> {
        self.with_statement(sql, async |client, statement| {
            client.query(statement, params).await
        })
    }

    /// The one row of `sql` (an error when there is none or several).
    pub(crate) fn query_one(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, Error> {
        self.with_statement(sql, async |client, statement| {
            client.query_one(statement, params).await
        })
    }

    /// The row of `sql`, if there is one (an error when there are several).
    pub fn query_opt(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, Error> {
        self.with_statement(sql, async |client, statement| {
            client.query_opt(statement, params).await
        })
    }

    /// The number of rows `sql` changed.
    pub fn execute(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, Error> {
        self.with_statement(sql, async |client, statement| {
            client.execute(statement, params).await
        })
    }

    /// `call` with the cached statement of `sql`, both in one turn on the
    /// runtime (a statement already prepared costs no round trip).
    fn with_statement<T>(
        &mut self,
        sql: &str,
        call: impl AsyncFnOnce(&Client, &Statement) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let PgClient {
            client,
            statements,
            runtime,
        } = self;
        runtime.block_on(async {
            let statement = statements.prepared(client, sql).await?;
            call(client, &statement).await
        })
    }

    /// Runs `sql`, one or more statements separated by semicolons, without
    /// parameters and without preparing it (schema changes, `SET`, `LISTEN`).
    pub fn batch_execute(&mut self, sql: &str) -> Result<(), Error> {
        self.runtime.block_on(self.client.batch_execute(sql))
    }

    /// Starts a transaction: committed by [`PgTransaction::commit`], rolled
    /// back when dropped without it. Its statements share this connection's
    /// cache.
    pub(crate) fn transaction(&mut self) -> Result<PgTransaction<'_>, Error> {
        let PgClient {
            client,
            statements,
            runtime,
        } = self;
        let transaction = runtime.block_on(client.transaction())?;
        Ok(PgTransaction {
            transaction,
            statements,
            runtime,
        })
    }
}

/// A transaction on a [`PgClient`], with the same synchronous calls.
pub(crate) struct PgTransaction<'a> {
    transaction: Transaction<'a>,
    statements: &'a mut Statements,
    runtime: &'a Handle,
}

impl std::fmt::Debug for PgTransaction<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTransaction").finish_non_exhaustive()
    }
}

impl<'a> PgTransaction<'a> {
    /// The statement for `sql`, prepared on the connection the first time.
    pub(crate) fn prepare_cached(&mut self, sql: &str) -> Result<Statement, Error> {
        self.with_statement(sql, async |_, statement| Ok(statement.clone()))
    }

    /// Every row of `sql`, through its cached statement.
    pub fn query(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, Error> {
        self.with_statement(sql, async |tx, statement| tx.query(statement, params).await)
    }

    /// The number of rows `sql` changed.
    pub fn execute(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, Error> {
        self.with_statement(sql, async |tx, statement| {
            tx.execute(statement, params).await
        })
    }

    /// Runs `sql`, one or more statements without parameters, unprepared.
    pub fn batch_execute(&mut self, sql: &str) -> Result<(), Error> {
        self.runtime.block_on(self.transaction.batch_execute(sql))
    }

    /// Commits the transaction.
    pub fn commit(self) -> Result<(), Error> {
        self.runtime.block_on(self.transaction.commit())
    }

    /// `call` with the cached statement of `sql`, in one turn on the runtime.
    fn with_statement<T>(
        &mut self,
        sql: &str,
        call: impl AsyncFnOnce(&Transaction<'a>, &Statement) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let PgTransaction {
            transaction,
            statements,
            runtime,
        } = self;
        runtime.block_on(async {
            let statement = statements.prepared(transaction.client(), sql).await?;
            call(transaction, &statement).await
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::store::db::{Db, PoolOptions};
    use crate::store::postgres::test_server;

    #[test]
    fn a_transaction_commits_or_rolls_back_when_dropped() {
        let Some(server) = test_server() else { return };
        let db = Db::open_postgres(&server, PoolOptions::default()).unwrap();
        let mut conn = db.pg_conn().unwrap();
        // A temporary table is the session's own: no other test sees it.
        conn.batch_execute("CREATE TEMP TABLE tx_probe (x INTEGER)")
            .unwrap();
        let insert = "INSERT INTO tx_probe (x) VALUES ($1)";

        let mut dropped = conn.transaction().unwrap();
        assert_eq!(dropped.execute(insert, &[&1i32]).unwrap(), 1);
        drop(dropped);
        let mut committed = conn.transaction().unwrap();
        committed.execute(insert, &[&2i32]).unwrap();
        let seen = committed
            .query("SELECT COUNT(*) FROM tx_probe", &[])
            .unwrap();
        assert_eq!(seen[0].get::<_, i64>(0), 1);
        committed.commit().unwrap();

        let rows = conn
            .query("SELECT x FROM tx_probe ORDER BY x", &[])
            .unwrap();
        let xs: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
        assert_eq!(xs, [2]);
    }

    #[test]
    fn statements_are_prepared_once_per_connection() {
        let Some(server) = test_server() else { return };
        let db = Db::open_postgres(&server, PoolOptions::default()).unwrap();
        let mut conn = db.pg_conn().unwrap();
        let sql = "SELECT $1::int + 1";
        for n in 0..3i32 {
            assert_eq!(conn.query_one(sql, &[&n]).unwrap().get::<_, i32>(0), n + 1);
        }
        let prepared = conn
            .query_one(
                "SELECT COUNT(*) FROM pg_prepared_statements WHERE statement = $1",
                &[&sql],
            )
            .unwrap();
        assert_eq!(prepared.get::<_, i64>(0), 1);
        let row = conn.query_one(sql, &[&41i32]).unwrap();
        assert_eq!(row.get::<_, i32>(0), 42);
    }
}
