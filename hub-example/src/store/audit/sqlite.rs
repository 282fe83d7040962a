//! The audit table on SQLite: its statements, its read snapshot, and its
//! writer.
//!
//! The writer has a connection of its own, so it never takes a pooled
//! connection from a request, and a short busy timeout: a locked database
//! fails the batch quickly, to be retried while the queue absorbs the
//! records.

use std::path::Path;
use std::time::Duration;

use rusqlite::{params_from_iter, Connection, OpenFlags, Transaction};

use super::read;
use super::rows::{AuditPage, AuditQuery, AuditRow};
use super::statements::{columns_through, EachRow, Snapshot, Statements};
use crate::store::db::{Db, DbError};

/// The statements, with SQLite's `?n` placeholders.
pub(super) const STATEMENTS: Statements = Statements {
    page: "SELECT id, at_ms, principal_kind, principal_id, action, resource_kind, resource_id, \
           outcome, allowed, denied, errors, denied_ids, last_ms FROM audit_events \
           WHERE at_ms >= ?1 AND at_ms < ?2 AND (at_ms < ?3 OR (at_ms = ?3 AND id < ?4)) \
           ORDER BY at_ms DESC, id DESC LIMIT ?5",
    count: "SELECT COUNT(*) FROM audit_events WHERE at_ms >= ?1 AND at_ms < ?2",
    histogram: "SELECT (at_ms / ?3) * ?3 AS bucket, COUNT(*) FROM audit_events \
                WHERE at_ms >= ?1 AND at_ms < ?2 GROUP BY bucket ORDER BY bucket DESC",
    first_id: "SELECT id FROM audit_events WHERE at_ms >= ?1 AND at_ms < ?2 \
               ORDER BY at_ms, id LIMIT 1",
    last_id: "SELECT id FROM audit_events WHERE at_ms >= ?1 AND at_ms < ?2 \
              ORDER BY at_ms DESC, id DESC LIMIT 1",
    prune: "DELETE FROM audit_events WHERE id IN \
            (SELECT id FROM audit_events WHERE at_ms < ?1 ORDER BY at_ms, id LIMIT ?2)",
};

columns_through!(rusqlite::Row<'_>, get);

impl Snapshot for Transaction<'_> {
    fn each_row(&mut self, sql: &str, params: &[i64], each: EachRow<'_>) -> Result<(), DbError> {
        let mut statement = self.prepare_cached(sql)?;
        let mut rows = statement.query(params_from_iter(params))?;
        while let Some(row) = rows.next()? {
            each(row)?;
        }
        Ok(())
    }
}

/// One page of the window `query` names, read in one transaction on a
/// pooled connection of `db`.
pub(super) fn read_page(db: &Db, query: &AuditQuery) -> Result<AuditPage, DbError> {
    let mut conn = db.conn()?;
    let mut snapshot = conn.transaction()?;
    read::page(&mut snapshot, &STATEMENTS, query)
}

/// Writes rows into `audit_events` on a connection of its own.
#[derive(Debug)]
pub(super) struct Writer {
    conn: Connection,
}

/// Rows per multi-row `INSERT`: one statement per 64 rows instead of one
/// per row (11 parameters a row, far below SQLite's limit).
const ROWS_PER_INSERT: usize = 64;
/// Parameters per row.
const COLUMNS: usize = 12;

fn insert_sql(rows: usize) -> String {
    let values = vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"; rows].join(", ");
    format!(
        "INSERT INTO audit_events \
         (at_ms, principal_kind, principal_id, action, resource_kind, resource_id, outcome, \
          allowed, denied, errors, denied_ids, last_ms) \
         VALUES {values}"
    )
}

impl Writer {
    /// Opens its own connection to the database file at `path` (which must
    /// exist and be migrated) with `busy_timeout`.
    pub(super) fn open(path: &Path, busy_timeout: Duration) -> rusqlite::Result<Writer> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(busy_timeout)?;
        conn.execute_batch("PRAGMA synchronous = NORMAL;")?;
        Ok(Writer { conn })
    }

    /// Writes `rows` in one transaction, in their order.
    pub(super) fn write(&mut self, rows: &[AuditRow<'_>]) -> Result<(), DbError> {
        let tx = self.conn.transaction()?;
        for chunk in rows.chunks(ROWS_PER_INSERT) {
            let mut insert = tx.prepare_cached(&insert_sql(chunk.len()))?;
            let mut index = 1;
            for row in chunk {
                let [allowed, denied, errors] = row.tally;
                insert.raw_bind_parameter(index, row.at_ms)?;
                insert.raw_bind_parameter(index + 1, row.principal_kind)?;
                insert.raw_bind_parameter(index + 2, row.principal_id)?;
                insert.raw_bind_parameter(index + 3, row.action)?;
                insert.raw_bind_parameter(index + 4, row.resource_kind)?;
                insert.raw_bind_parameter(index + 5, row.resource_id)?;
                insert.raw_bind_parameter(index + 6, row.outcome)?;
                insert.raw_bind_parameter(index + 7, allowed)?;
                insert.raw_bind_parameter(index + 8, denied)?;
                insert.raw_bind_parameter(index + 9, errors)?;
                insert.raw_bind_parameter(index + 10, row.denied_ids.as_deref())?;
                insert.raw_bind_parameter(index + 11, row.last_ms)?;
                index += COLUMNS;
            }
            insert.raw_execute()?;
        }
        Ok(tx.commit()?)
    }

    /// Runs `sql` with `params`; the rows it changed.
    pub(super) fn execute(&mut self, sql: &str, params: &[i64]) -> Result<u64, DbError> {
        let changed = self
            .conn
            .prepare_cached(sql)?
            .execute(params_from_iter(params))?;
        Ok(changed as u64)
    }
}
