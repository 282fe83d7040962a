//! The PostgreSQL wrappers against a live server: sqlx's `PgPool`, a
//! tokio-postgres client, and a connection of a bb8 and of a deadpool pool.
//!
//! The server is `PERF_TRACE_PG_URL` (see `common/pg_url.rs`).

use perf_trace_core::Recorder;
use perf_trace_sql::postgres::{Bb8Pool, CountedClient, DeadPool};
use perf_trace_sql::sqlx::CountedPool;
use perf_trace_sql::testing::count_statements;
use perf_trace_sql::{SqlRepeated, SqlStatement};
use tokio_postgres::NoTls;

mod common;
use common::{insert_three_skus, App};

#[path = "common/pg_url.rs"]
mod pg_url;
use pg_url::pg_url;

#[tokio::test]
async fn sqlx_pg_pool_counts_each_kind_and_repeats() {
    let Some(url) = pg_url() else { return };
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .unwrap();
    let pool = CountedPool::new(pool);
    sqlx::query("CREATE TEMP TABLE stock (sku INT PRIMARY KEY, qty INT NOT NULL)")
        .execute(&pool)
        .await
        .unwrap();
    let recorder = Recorder::new::<App>();
    recorder
        .instrument(async {
            insert_three_skus(&pool, "INSERT INTO stock VALUES ($1, 1)").await;
            let total: i64 = sqlx::query_scalar("SELECT SUM(qty) FROM stock")
                .fetch_one(&pool)
                .await
                .unwrap();
            assert_eq!(total, 3);
            let failed = sqlx::query("UPDATE missing SET x = 1").execute(&pool).await;
            assert!(failed.is_err());
        })
        .await;
    let snapshot = recorder.snapshot();
    assert_eq!(snapshot.timer(SqlStatement::Insert).count, 3);
    assert_eq!(snapshot.timer(SqlStatement::Select).count, 1);
    assert_eq!(snapshot.timer(SqlStatement::Update).count, 1);
    assert_eq!(snapshot.counter(SqlRepeated::N), 2);
}

#[tokio::test]
async fn a_tokio_postgres_client_counts_text_and_prepared_statements() {
    let Some(url) = pg_url() else { return };
    let (client, connection) = tokio_postgres::connect(&url, NoTls).await.unwrap();
    let driver = tokio::spawn(connection);
    let client = CountedClient::new(client);
    let prepared = client.prepare("SELECT $1::INT + 1").await.unwrap();
    let (sum, counts) = count_statements(async {
        client
            .batch_execute("CREATE TEMP TABLE t (x INT); INSERT INTO t VALUES (1)")
            .await
            .unwrap();
        client.execute("DELETE FROM t", &[]).await.unwrap();
        let mut sum = 0;
        for i in 0..3 {
            let row = client.query_one(&prepared, &[&i]).await.unwrap();
            sum += row.get::<_, i32>(0);
        }
        assert!(client.query_opt("SELECT nope", &[]).await.is_err());
        sum
    })
    .await;
    assert_eq!(sum, 6);
    assert_eq!(
        (counts.other, counts.delete, counts.select, counts.repeated),
        (1, 1, 4, 2)
    );
    assert_eq!(counts.statements[0].runs, 3);
    assert_eq!(
        counts.statements[0].text.as_deref(),
        Some("SELECT $1::INT + 1")
    );
    drop(client);
    driver.await.unwrap().unwrap();
}

#[tokio::test]
async fn bb8_and_deadpool_connections_are_counted() {
    let Some(url) = pg_url() else { return };
    let manager =
        bb8_postgres::PostgresConnectionManager::new_from_stringlike(&url, NoTls).unwrap();
    let bb8 = Bb8Pool::new(
        bb8::Pool::builder()
            .max_size(1)
            .build(manager)
            .await
            .unwrap(),
    );
    let mut config = deadpool_postgres::Config::new();
    config.url = Some(url);
    let dead = DeadPool::new(
        config
            .create_pool(Some(deadpool_postgres::Runtime::Tokio1), NoTls)
            .unwrap(),
    );
    let (_, counts) = count_statements(async {
        let conn = bb8.get().await.unwrap();
        conn.query("SELECT 1", &[]).await.unwrap();
        let conn = dead.get().await.unwrap();
        conn.query("SELECT 1", &[]).await.unwrap();
        conn.execute("INSERT INTO missing VALUES (1)", &[])
            .await
            .unwrap_err();
    })
    .await;
    assert_eq!((counts.select, counts.insert, counts.repeated), (2, 1, 1));
}
