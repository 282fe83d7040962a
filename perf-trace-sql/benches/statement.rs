//! What the counted wrapper adds to one statement: a SQLite point select
//! through sqlx's pool bare, through the counted pool inside a request,
//! and through the counted pool outside one; and the wrapper's own work
//! per statement (`start_statement` and its finish) without the database,
//! whose tens of microseconds hide it. In one run:
//!
//! ```text
//! cargo bench -p perf-trace-sql --bench statement
//! ```

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use perf_trace_core::Recorder;
use perf_trace_sql::sqlx::CountedPool;
use perf_trace_sql::start_statement;
use sqlx::{Sqlite, SqlitePool};
use tokio::runtime::Runtime;

#[path = "../tests/common/mod.rs"]
mod common;

const SELECT: &str = "SELECT qty FROM stock WHERE sku = ?";

fn setup(rt: &Runtime) -> SqlitePool {
    rt.block_on(async {
        let pool = common::stock_db().await;
        sqlx::query(
            "INSERT INTO stock SELECT value, value * 2 FROM json_each('[1,2,3,4,5,6,7,8]')",
        )
        .execute(&pool)
        .await
        .unwrap();
        pool
    })
}

async fn point_select<'e, E: sqlx::Executor<'e, Database = Sqlite>>(pool: E, sku: i64) -> i64 {
    sqlx::query_scalar(SELECT)
        .bind(sku)
        .fetch_one(pool)
        .await
        .unwrap()
}

fn statement(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let bare = setup(&rt);
    let counted = CountedPool::new(bare.clone());
    let mut group = c.benchmark_group("sqlite_point_select");
    group.bench_function("sqlx_bare", |b| {
        b.iter(|| rt.block_on(point_select(&bare, black_box(3))))
    });
    group.bench_function("counted_outside_request", |b| {
        b.iter(|| rt.block_on(point_select(&counted, black_box(3))))
    });
    group.bench_function("counted_in_request", |b| {
        // A request's recorder, as the layer makes one; the statement's
        // text is noted as each request's would be.
        b.iter_batched(
            Recorder::new::<common::App>,
            |recorder| {
                rt.block_on(recorder.instrument(point_select(&counted, black_box(3))));
                recorder
            },
            criterion::BatchSize::SmallInput,
        )
    });
    group.finish();
}

/// The hook alone: what each statement adds, in and out of a request.
fn hook(c: &mut Criterion) {
    let mut group = c.benchmark_group("statement_hook");
    group.bench_function("outside_request", |b| {
        b.iter(|| start_statement(black_box(SELECT)).finish())
    });
    let recorder = Recorder::new::<common::App>();
    group.bench_function("in_request_first_run", |b| {
        // A fresh request each time: the statement is new to it.
        b.iter_batched(
            Recorder::new::<common::App>,
            |recorder| {
                recorder.in_scope(|| start_statement(black_box(SELECT)).finish());
                recorder
            },
            criterion::BatchSize::SmallInput,
        )
    });
    group.bench_function("in_request_repeated", |b| {
        recorder.in_scope(|| b.iter(|| start_statement(black_box(SELECT)).finish()))
    });
    group.bench_function("recorder_only", |b| {
        // What the first-run row pays for its fresh recorder, to subtract.
        b.iter_batched(
            Recorder::new::<common::App>,
            |recorder| {
                recorder.in_scope(|| black_box(()));
                recorder
            },
            criterion::BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, statement, hook);
criterion_main!(benches);
