//! The schema the tests and the bench record into (SQL needs no key set
//! of its own), and the SQLite database they run on.

// Each test binary, and the bench, uses part of this.
#![allow(dead_code)]

use perf_trace_core::{KeySet, Schema};
use perf_trace_sql::sqlx::CountedPool;
use sqlx::sqlite::SqlitePoolOptions;
use sqlx::{Database, Encode, Executor, IntoArguments, Sqlite, SqlitePool, Type};

/// An in-memory database with an empty `stock (sku, qty)` table, on one
/// connection: an in-memory database lives in its connection.
pub async fn stock_db() -> SqlitePool {
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect("sqlite::memory:")
        .await
        .unwrap();
    execute(
        &pool,
        "CREATE TABLE stock (sku INTEGER PRIMARY KEY, qty INTEGER NOT NULL)",
    )
    .await;
    pool
}

/// Runs `sql` on `executor` with `execute`, its result unread.
pub async fn execute<'e>(executor: impl Executor<'e, Database = Sqlite>, sql: &'static str) {
    sqlx::query(sql).execute(executor).await.unwrap();
}

/// Runs `insert`, a statement with one parameter, for the skus 0, 1 and 2:
/// one statement run three times, whatever the database.
pub async fn insert_three_skus<DB>(pool: &CountedPool<DB>, insert: &'static str)
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    i32: for<'q> Encode<'q, DB> + Type<DB>,
{
    for sku in 0..3 {
        sqlx::query(insert).bind(sku).execute(pool).await.unwrap();
    }
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Phase {
    Load,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(store_methods)]
pub enum Method {
    Unused,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
pub enum Endpoint {
    #[key(default)]
    Other,
}

/// A service that runs SQL through the wrappers.
pub struct App;

impl Schema for App {
    type Phase = Phase;
    type StoreMethod = Method;
    type Endpoint = Endpoint;
}
