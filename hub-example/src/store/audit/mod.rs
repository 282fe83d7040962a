//! The audit table, `audit_events`: the writer the audit queue persists
//! through, and the reads behind `GET /api/v1/admin/audit-events`. The
//! database's engine is chosen once, when the writer is opened or a read
//! takes its snapshot; below, `sqlite` and `postgres` hold each one's
//! statements and what only it does (SQLite's multi-row `INSERT`,
//! PostgreSQL's arrays and reconnection). The reads order, page, count and
//! bucket the same on both, so the endpoint answers the same JSON on both.

mod postgres;
mod read;
mod rows;
mod sqlite;
mod statements;

use std::time::Duration;

pub(crate) use rows::AuditRow;
pub(crate) use rows::{AuditCursor, AuditEventRow, AuditPage, AuditQuery};

use crate::store::db::{Db, DbError, Engine};

/// Writes rows into `audit_events` on a connection of its own, so it never
/// takes a pooled connection from a request.
#[derive(Debug)]
pub struct AuditWriter {
    writer: Writer,
}

#[derive(Debug)]
enum Writer {
    Sqlite(sqlite::Writer),
    // Boxed: the PostgreSQL client is several times the SQLite one's size.
    Postgres(Box<postgres::Writer>),
}

/// The writer into `db`'s `audit_events` (which must be migrated), each
/// batch waiting at most `busy_timeout` for a lock another connection
/// holds. On SQLite it opens its connection now; on PostgreSQL at its first
/// batch, on the thread that writes (so only SQLite's error can come back).
pub fn open(db: &Db, busy_timeout: Duration) -> rusqlite::Result<AuditWriter> {
    let writer = match db.pg_manager() {
        Some(manager) => Writer::Postgres(Box::new(postgres::Writer::new(manager, busy_timeout))),
        None => Writer::Sqlite(sqlite::Writer::open(db.path(), busy_timeout)?),
    };
    Ok(AuditWriter { writer })
}

impl AuditWriter {
    /// The database it writes into: `sqlite` or `postgres`.
    pub(crate) fn database(&self) -> &'static str {
        match self.writer {
            Writer::Sqlite(_) => "sqlite",
            Writer::Postgres(_) => "postgres",
        }
    }

    /// Writes `rows` entirely (one transaction, ids in their order) or not
    /// at all.
    pub fn write(&mut self, rows: &[AuditRow<'_>]) -> Result<(), DbError> {
        match &mut self.writer {
            Writer::Sqlite(writer) => writer.write(rows),
            Writer::Postgres(writer) => writer.write(rows),
        }
    }

    /// Deletes at most `max_rows` of the oldest rows decided before
    /// `before_ms` (Unix milliseconds); how many went.
    pub fn prune(&mut self, before_ms: i64, max_rows: u32) -> Result<u64, DbError> {
        let params = [before_ms, i64::from(max_rows)];
        match &mut self.writer {
            Writer::Sqlite(writer) => writer.execute(sqlite::STATEMENTS.prune, &params),
            Writer::Postgres(writer) => writer.execute(postgres::STATEMENTS.prune, &params),
        }
    }
}

/// Reads one page of the window `query` names, with the window's count and
/// histogram. Its statements read one snapshot: the audit writer keeps
/// committing while they run, and the count must be the histogram's sum.
pub(crate) fn query_events(db: &Db, query: &AuditQuery) -> Result<AuditPage, DbError> {
    match db.engine() {
        Engine::Sqlite => sqlite::read_page(db, query),
        Engine::Postgres => postgres::read_page(db, query),
    }
}
