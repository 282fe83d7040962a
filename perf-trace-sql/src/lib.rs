//! Every SQL statement of a request counted and timed at the driver, with
//! one line of wiring and no store trait to write.
//!
//! Wrap the pool (or client) once where the service builds it; every
//! statement that runs through the wrapper inside a traced request is then
//! recorded by its kind, under a fixed set of keys:
//!
//! | field | what |
//! | --- | --- |
//! | `sql_select_n`, `sql_select_us` | `SELECT` statements (and `WITH .. SELECT`), their count and time |
//! | `sql_insert_n`, `sql_insert_us` | `INSERT` (and `REPLACE`) |
//! | `sql_update_n`, `sql_update_us` | `UPDATE` |
//! | `sql_delete_n`, `sql_delete_us` | `DELETE` |
//! | `sql_other_n`, `sql_other_us` | anything else: DDL, `PRAGMA`, `BEGIN`, a statement with no leading keyword |
//! | `sql_repeated_n` | statements whose text already ran in the same request: the N+1 suspects |
//!
//! Only counts and times reach the line, never a statement's text, so the
//! keys stay bounded whatever the statements are. The fields appear only
//! on lines of requests that ran a statement: the sets are recorded as
//! sets the schema does not list (see
//! [`Schema::TIMERS`](perf_trace_core::Schema::TIMERS)); a service that
//! runs SQL on every request lists [`SqlStatement`] and [`SqlRepeated`] in
//! its schema to record them on the fast path.
//!
//! - `sqlx` (features `sqlx-sqlite`, `sqlx-postgres`): `CountedPool`, a
//!   pool that is a sqlx executor, and `Counted` around any executor (a
//!   transaction, a connection).
//! - `postgres` (feature `tokio-postgres`): a counted tokio-postgres
//!   client, over a client or a connection of a bb8 or deadpool pool
//!   (features `bb8`, `deadpool`).
//! - [`start_statement`]: the hook the wrappers call, for any other driver.
//! - [`testing`]: `assert_num_statements`, Django's `assertNumQueries`
//!   over a block.
//!
//! # Costs and limits
//!
//! - Outside a request (no recorder current on the thread) a wrapper costs
//!   one thread-local read per statement and records nothing.
//! - A statement run from a `tokio::spawn`ed task that does not carry the
//!   request's recorder counts nothing: spawn it with
//!   `perf_trace_core::scope::spawn` (feature `tokio` of
//!   `perf-trace-core`) or instrument it with the recorder to count it.
//! - The kind is read from the statement's first keyword, past leading
//!   whitespace, comments and parentheses, within its first 4 KiB; a
//!   statement with no leading keyword counts as `other`.
//! - Repeats are found by a hash of the text that reads at most its first
//!   and last 4 KiB and its length
//!   ([`statement_hash`](perf_trace_core::recorder::statements::statement_hash)),
//!   so a statement of megabytes costs what one of 8 KiB does.
//! - A statement that fails counts once, with its time; one dropped before
//!   it ends (a cancelled request) counts once, with its time until then.
//!
//! # Example
//!
//! ```
//! # #[cfg(feature = "sqlx-sqlite")]
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use perf_trace_core::{KeySet, Recorder, Schema};
//! use perf_trace_sql::sqlx::CountedPool;
//! use perf_trace_sql::{SqlRepeated, SqlStatement};
//! # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
//! # #[key_set(phases)]
//! # enum Phase { Load }
//! # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
//! # #[key_set(store_methods)]
//! # enum Method { Unused }
//! # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
//! # #[key_set(endpoints)]
//! # enum Endpoint { #[key(default)] Other }
//! # struct App;
//! # impl Schema for App { type Phase = Phase; type StoreMethod = Method; type Endpoint = Endpoint; }
//!
//! // The one line of wiring: the pool the handlers use is counted.
//! let pool = CountedPool::new(sqlx::SqlitePool::connect("sqlite::memory:").await?);
//!
//! let recorder = Recorder::new::<App>();
//! recorder
//!     .instrument(async {
//!         for _ in 0..3 {
//!             sqlx::query("SELECT 1").fetch_one(&pool).await?;
//!         }
//!         Ok::<_, sqlx::Error>(())
//!     })
//!     .await?;
//! let snapshot = recorder.snapshot();
//! assert_eq!(snapshot.timer(SqlStatement::Select).count, 3);
//! assert_eq!(snapshot.counter(SqlRepeated::N), 2);
//! # Ok::<_, sqlx::Error>(())
//! # }).unwrap();
//! ```
//!
//! # Features
//!
#![doc = document_features::document_features!()]
#![warn(missing_docs)]

// The README's example compiles as a doctest too.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use perf_trace_core::record::{note_statement, Stopwatch};
use perf_trace_core::{count, scope, KeySet};

mod kind;
#[cfg(feature = "tokio-postgres")]
pub mod postgres;
#[cfg(feature = "sqlx")]
pub mod sqlx;
pub mod testing;

pub use kind::kind_of;

/// The kinds of statement, a timer set: `sql_<kind>_n`, `sql_<kind>_us` on
/// the line (headers `Sql-Us`, `Sql-Counts`).
#[derive(KeySet, Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[key_set(timers, prefix = "sql")]
pub enum SqlStatement {
    /// `SELECT`, and a `WITH` whose statement is a `SELECT`.
    Select,
    /// `INSERT`, `REPLACE`.
    Insert,
    /// `UPDATE`.
    Update,
    /// `DELETE`.
    Delete,
    /// Anything else, a statement with no leading keyword included.
    Other,
}

/// Statements whose text already ran in the request, a counter set:
/// `sql_repeated_n` on the line (header `Sql-Repeated`).
#[derive(KeySet, Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[key_set(counters, prefix = "sql_repeated")]
pub enum SqlRepeated {
    /// A run of a statement that had already run in the request.
    N,
}

/// One statement being timed (see [`start_statement`]): it records when it
/// is [finished](StatementTimer::finish) or dropped.
#[derive(Debug)]
#[must_use = "the statement is timed until this is finished or dropped"]
pub struct StatementTimer(Option<Stopwatch>);

impl StatementTimer {
    /// Whether the statement is recorded (a recorder was current at its start).
    pub fn is_recording(&self) -> bool {
        self.0.is_some()
    }

    /// Ends the statement now: its time goes to the current recorder.
    pub fn finish(self) {
        if let Some(watch) = self.0 {
            watch.finish();
        }
    }
}

/// Starts one statement of text `sql` in the current request: counts it
/// under its [kind](kind_of), counts it in [`SqlRepeated`] when the same
/// text already ran in the request, and times it until the returned timer
/// is finished or dropped. With no recorder current, it reads nothing but
/// one thread-local and records nothing.
///
/// The wrappers call this for every statement; a driver without one can
/// call it around its own calls.
#[inline]
pub fn start_statement(sql: &str) -> StatementTimer {
    if !scope::is_active() {
        return StatementTimer(None);
    }
    start_in_request(sql)
}

/// [`start_statement`] once a recorder is known to be current (the
/// wrappers check first, to hand a statement outside a request straight
/// on).
#[inline(never)]
pub(crate) fn start_in_request(sql: &str) -> StatementTimer {
    let kind = kind_of(sql);
    if note_statement(sql) {
        count(SqlRepeated::N);
    }
    StatementTimer(Some(Stopwatch::start(kind)))
}

pin_project_lite::pin_project! {
    /// A statement's future, timed until it completes or is dropped.
    #[derive(Debug)]
    #[must_use = "futures do nothing unless polled"]
    pub struct TimedStatement<F> {
        #[pin]
        inner: F,
        timer: Option<StatementTimer>,
    }
}

impl<F> TimedStatement<F> {
    /// Times `inner` with `timer` (from [`start_statement`]).
    pub fn new(inner: F, timer: StatementTimer) -> Self {
        TimedStatement {
            inner,
            timer: Some(timer),
        }
    }
}

impl<F: Future> Future for TimedStatement<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let out = this.inner.poll(cx);
        if out.is_ready() {
            if let Some(timer) = this.timer.take() {
                timer.finish();
            }
        }
        out
    }
}

#[cfg(feature = "sqlx")]
impl<S: futures_core::Stream> futures_core::Stream for TimedStatement<S> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let this = self.project();
        let out = this.inner.poll_next(cx);
        if let Poll::Ready(None) = out {
            if let Some(timer) = this.timer.take() {
                timer.finish();
            }
        }
        out
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}
