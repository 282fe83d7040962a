//! Django's `assertNumQueries` over a block: the statements a future ran,
//! counted by kind, with their texts.
//!
//! For the statements of a whole request served in a test, and the N+1
//! checks that need no baseline (counts flat across data sizes, no
//! repeated statement), see `perf_trace_core::testing`.

use std::fmt;
use std::future::Future;
use std::panic::Location;

use perf_trace_core::recorder::statements::StatementRuns;
use perf_trace_core::{KeySet, Recorder, Schema, Snapshot};

use crate::{SqlRepeated, SqlStatement};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
enum NoPhase {
    None,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(store_methods)]
enum NoStore {
    None,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
enum NoEndpoint {
    #[key(default)]
    None,
}

/// The schema of a block counted on its own: SQL only.
struct Block;

impl Schema for Block {
    type Phase = NoPhase;
    type StoreMethod = NoStore;
    type Endpoint = NoEndpoint;
}

/// The statements a block ran (see [`count_statements`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementCounts {
    /// `SELECT` statements.
    pub select: u64,
    /// `INSERT` statements.
    pub insert: u64,
    /// `UPDATE` statements.
    pub update: u64,
    /// `DELETE` statements.
    pub delete: u64,
    /// Other statements.
    pub other: u64,
    /// Runs of a statement whose text had already run in the block.
    pub repeated: u64,
    /// Each distinct statement with its text and runs, most runs first.
    pub statements: Vec<StatementRuns>,
}

impl StatementCounts {
    fn from_block(snapshot: &Snapshot, statements: Vec<StatementRuns>) -> Self {
        StatementCounts {
            select: snapshot.timer(SqlStatement::Select).count,
            insert: snapshot.timer(SqlStatement::Insert).count,
            update: snapshot.timer(SqlStatement::Update).count,
            delete: snapshot.timer(SqlStatement::Delete).count,
            other: snapshot.timer(SqlStatement::Other).count,
            repeated: snapshot.counter(SqlRepeated::N),
            statements,
        }
    }

    /// Every statement, of any kind.
    pub fn total(&self) -> u64 {
        self.select + self.insert + self.update + self.delete + self.other
    }
}

impl fmt::Display for StatementCounts {
    /// The counts, then each statement with its runs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} statement(s): {} select, {} insert, {} update, {} delete, {} other ({} repeated)",
            self.total(),
            self.select,
            self.insert,
            self.update,
            self.delete,
            self.other,
            self.repeated
        )?;
        for s in &self.statements {
            let text = s.text.as_deref().unwrap_or("<text not kept>");
            write!(f, "\n  {} run(s): {text}", s.runs)?;
        }
        Ok(())
    }
}

/// Runs `future` with a recorder of its own current, and returns its
/// output with the statements it ran through the wrappers (texts kept).
/// Statements of tasks it spawns without the recorder are not counted.
pub async fn count_statements<F: Future>(future: F) -> (F::Output, StatementCounts) {
    let recorder = Recorder::builder().capture_statements().build::<Block>();
    let output = recorder.instrument(future).await;
    let counts = StatementCounts::from_block(&recorder.snapshot(), recorder.statements());
    (output, counts)
}

/// Runs `future` and fails unless it ran exactly `expected` statements,
/// listing the statements it ran, as Django's `assertNumQueries` does;
/// the future's output otherwise.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use perf_trace_sql::sqlx::CountedPool;
/// use perf_trace_sql::testing::assert_num_statements;
///
/// let pool = CountedPool::new(sqlx::SqlitePool::connect("sqlite::memory:").await.unwrap());
/// let one = assert_num_statements(2, async {
///     sqlx::query("CREATE TABLE t (x)").execute(&pool).await.unwrap();
///     sqlx::query_scalar::<_, i64>("SELECT 1").fetch_one(&pool).await.unwrap()
/// })
/// .await;
/// assert_eq!(one, 1);
/// # });
/// ```
#[track_caller]
pub fn assert_num_statements<F: Future>(
    expected: u64,
    future: F,
) -> impl Future<Output = F::Output> {
    let caller = Location::caller();
    async move {
        let (output, counts) = count_statements(future).await;
        assert!(
            counts.total() == expected,
            "expected {expected} statement(s), and the block at {caller} ran {counts}"
        );
        output
    }
}
