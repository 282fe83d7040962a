//! The sqlx wrappers over SQLite: every statement counted by kind and
//! timed, repeats counted, errors counted once, nothing outside a request,
//! and the statements of a block asserted as Django's `assertNumQueries`.

use std::time::Duration;

use perf_trace_core::Recorder;
use perf_trace_sql::sqlx::{Counted, CountedPool};
use perf_trace_sql::testing::{assert_num_statements, count_statements};
use perf_trace_sql::{SqlRepeated, SqlStatement};

mod common;
use common::{execute, insert_three_skus, App};

async fn pool() -> CountedPool<sqlx::Sqlite> {
    CountedPool::new(common::stock_db().await)
}

#[tokio::test]
async fn each_kind_is_counted_and_timed_and_repeats_are_counted() {
    let pool = pool().await;
    let recorder = Recorder::new::<App>();
    recorder
        .instrument(async {
            insert_three_skus(&pool, "INSERT INTO stock VALUES (?, 1)").await;
            execute(&pool, "UPDATE stock SET qty = 2").await;
            let rows: Vec<(i64,)> = sqlx::query_as("SELECT qty FROM stock")
                .fetch_all(&pool)
                .await
                .unwrap();
            assert_eq!(rows.len(), 3);
            let one: Option<(i64,)> = sqlx::query_as("SELECT qty FROM stock WHERE sku = 1")
                .fetch_optional(&pool)
                .await
                .unwrap();
            assert_eq!(one, Some((2,)));
            execute(&pool, "DELETE FROM stock WHERE sku = 0").await;
            sqlx::query("PRAGMA user_version")
                .fetch_one(&pool)
                .await
                .unwrap();
        })
        .await;
    let snapshot = recorder.snapshot();
    let count = |kind| snapshot.timer(kind).count;
    assert_eq!(count(SqlStatement::Insert), 3);
    assert_eq!(count(SqlStatement::Update), 1);
    assert_eq!(count(SqlStatement::Select), 2);
    assert_eq!(count(SqlStatement::Delete), 1);
    assert_eq!(count(SqlStatement::Other), 1);
    assert_eq!(
        snapshot.counter(SqlRepeated::N),
        2,
        "the insert ran 3 times"
    );
    assert!(snapshot.timer(SqlStatement::Insert).duration > Duration::ZERO);
}

#[tokio::test]
async fn a_failing_statement_counts_once_with_its_time() {
    let pool = pool().await;
    let recorder = Recorder::new::<App>();
    let result = recorder
        .instrument(sqlx::query("SELECT nope FROM missing").fetch_all(&pool))
        .await;
    assert!(result.is_err());
    let result = recorder
        .instrument(sqlx::query("INSERT INTO stock VALUES (1, NULL)").execute(&pool))
        .await;
    assert!(result.is_err());
    let snapshot = recorder.snapshot();
    assert_eq!(snapshot.timer(SqlStatement::Select).count, 1);
    assert_eq!(snapshot.timer(SqlStatement::Insert).count, 1);
    assert!(snapshot.timer(SqlStatement::Insert).duration > Duration::ZERO);
}

#[tokio::test]
async fn outside_a_request_or_in_a_bare_spawned_task_nothing_is_counted() {
    let pool = pool().await;
    let recorder = Recorder::new::<App>();
    sqlx::query("SELECT 1").fetch_one(&pool).await.unwrap();
    let spawned = pool.clone();
    recorder
        .instrument(async move {
            // The spawned task does not carry the recorder.
            tokio::spawn(async move { sqlx::query("SELECT 2").fetch_one(&spawned).await })
                .await
                .unwrap()
                .unwrap();
        })
        .await;
    let snapshot = recorder.snapshot();
    assert!(snapshot.timers.is_empty(), "{:?}", snapshot.timers);
    assert!(snapshot.counters.is_empty());
    assert!(recorder.statements().is_empty());
}

#[tokio::test]
async fn a_transaction_is_counted_through_counted() {
    let pool = pool().await;
    let (_, counts) = count_statements(async {
        let mut tx = pool.begin().await.unwrap();
        execute(Counted(&mut *tx), "INSERT INTO stock VALUES (7, 1)").await;
        // The transaction itself, not wrapped: not counted.
        execute(&mut *tx, "INSERT INTO stock VALUES (8, 1)").await;
        tx.commit().await.unwrap();
    })
    .await;
    assert_eq!(counts.insert, 1);
    assert_eq!(counts.total(), 1);
    assert_eq!(
        counts.statements[0].text.as_deref(),
        Some("INSERT INTO stock VALUES (7, 1)")
    );
}

#[tokio::test]
async fn a_megabyte_statement_is_counted_without_keeping_it_whole() {
    let pool = pool().await;
    let long = format!("SELECT '{}'", "x".repeat(2 * 1024 * 1024));
    let (_, counts) = count_statements(async {
        for _ in 0..2 {
            sqlx::query(sqlx::AssertSqlSafe(long.clone()))
                .fetch_one(&pool)
                .await
                .unwrap();
        }
    })
    .await;
    assert_eq!((counts.select, counts.repeated), (2, 1));
    let kept = counts.statements[0].text.as_deref().unwrap();
    assert!(kept.len() < 5000 && kept.ends_with('…'), "{}", kept.len());
}

#[tokio::test]
async fn assert_num_statements_passes_on_the_exact_count() {
    let pool = pool().await;
    let n = assert_num_statements(2, async {
        execute(&pool, "INSERT INTO stock VALUES (1, 4)").await;
        sqlx::query_scalar::<_, i64>("SELECT qty FROM stock")
            .fetch_one(&pool)
            .await
            .unwrap()
    })
    .await;
    assert_eq!(n, 4);
}

#[tokio::test]
#[should_panic(expected = "expected 1 statement(s), and the block at")]
async fn assert_num_statements_fails_listing_the_statements() {
    let pool = pool().await;
    assert_num_statements(1, async {
        for _ in 0..2 {
            sqlx::query("SELECT qty FROM stock")
                .fetch_all(&pool)
                .await
                .unwrap();
        }
    })
    .await;
}

#[tokio::test]
async fn the_failure_message_lists_each_statement_and_its_runs() {
    let pool = pool().await;
    let (_, counts) = count_statements(async {
        for _ in 0..2 {
            sqlx::query("SELECT qty FROM stock")
                .fetch_all(&pool)
                .await
                .unwrap();
        }
        execute(&pool, "DELETE FROM stock").await;
    })
    .await;
    assert_eq!(
        counts.to_string(),
        "3 statement(s): 2 select, 0 insert, 0 update, 1 delete, 0 other (1 repeated)\n  \
         2 run(s): SELECT qty FROM stock\n  1 run(s): DELETE FROM stock"
    );
}

/// A service that runs SQL on every request lists the sets: the same
/// counts, on the fast path, and still only the kinds that ran on the line.
struct Listed;

impl perf_trace_core::Schema for Listed {
    type Phase = common::Phase;
    type StoreMethod = common::Method;
    type Endpoint = common::Endpoint;
    const TIMERS: &'static [perf_trace_core::keys::TimerSet] =
        &[perf_trace_core::keys::TimerSet::of::<SqlStatement>()];
    const COUNTERS: &'static [perf_trace_core::keys::CounterSet] =
        &[perf_trace_core::keys::CounterSet::of::<SqlRepeated>()];
}

#[tokio::test]
async fn listed_sets_count_the_same_and_the_line_has_only_the_kinds_that_ran() {
    let pool = pool().await;
    for recorder in [Recorder::new::<Listed>(), Recorder::new::<App>()] {
        recorder
            .instrument(async {
                for _ in 0..2 {
                    sqlx::query("SELECT 1").fetch_one(&pool).await.unwrap();
                }
            })
            .await;
        let snapshot = recorder.snapshot();
        assert_eq!(snapshot.timer(SqlStatement::Select).count, 2);
        assert_eq!(snapshot.counter(SqlRepeated::N), 1);
        let mut line = String::new();
        perf_trace_core::LineFormat::plain("test", "test.perf").render(
            &snapshot,
            std::time::SystemTime::UNIX_EPOCH,
            &mut line,
        );
        assert!(line.contains(r#""sql_select_n":2"#), "{line}");
        assert!(line.contains(r#""sql_repeated_n":1"#), "{line}");
        assert!(
            !line.contains("sql_insert") && !line.contains("SELECT"),
            "{line}"
        );
    }
}
