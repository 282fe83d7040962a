//! The audit table on PostgreSQL (the ports of migrations 3, 5 and 6): its
//! statements, its read snapshot, and its writer.
//!
//! As on SQLite, the writer has a connection of its own (opened on its own
//! thread, at its first batch), so it never takes a pooled connection from a
//! request, and a short lock timeout: a batch that cannot be written (a
//! lock, the server restarting) fails quickly and is retried on a fresh
//! connection while the queue absorbs the records.
//!
//! A batch travels as twelve arrays in one `INSERT ... SELECT FROM unnest`,
//! so the statement text never depends on the batch's length, and the ids
//! follow the batch's order.

use std::time::Duration;

use tokio_postgres::types::ToSql;

use super::read;
use super::rows::{AuditPage, AuditQuery, AuditRow};
use super::statements::{columns_through, EachRow, Snapshot, Statements};
use crate::store::db::{Db, DbError};
use crate::store::postgres::{PgClient, PgManager, PgTransaction};

/// The statements, with PostgreSQL's `$n` placeholders.
pub(super) const STATEMENTS: Statements = Statements {
    page: "SELECT id, at_ms, principal_kind, principal_id, action, resource_kind, resource_id, \
           outcome, allowed, denied, errors, denied_ids, last_ms FROM audit_events \
           WHERE at_ms >= $1 AND at_ms < $2 AND (at_ms < $3 OR (at_ms = $3 AND id < $4)) \
           ORDER BY at_ms DESC, id DESC LIMIT $5",
    count: "SELECT COUNT(*) FROM audit_events WHERE at_ms >= $1 AND at_ms < $2",
    histogram: "SELECT (at_ms / $3) * $3 AS bucket, COUNT(*) FROM audit_events \
                WHERE at_ms >= $1 AND at_ms < $2 GROUP BY bucket ORDER BY bucket DESC",
    first_id: "SELECT id FROM audit_events WHERE at_ms >= $1 AND at_ms < $2 \
               ORDER BY at_ms, id LIMIT 1",
    last_id: "SELECT id FROM audit_events WHERE at_ms >= $1 AND at_ms < $2 \
              ORDER BY at_ms DESC, id DESC LIMIT 1",
    prune: "DELETE FROM audit_events WHERE id IN \
            (SELECT id FROM audit_events WHERE at_ms < $1 ORDER BY at_ms, id LIMIT $2)",
};

const INSERT: &str = "INSERT INTO audit_events \
     (at_ms, principal_kind, principal_id, action, resource_kind, resource_id, outcome, \
      allowed, denied, errors, denied_ids, last_ms) \
     SELECT at_ms, principal_kind, principal_id, action, resource_kind, resource_id, outcome, \
      allowed, denied, errors, denied_ids, last_ms \
     FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], \
      $8::bigint[], $9::bigint[], $10::bigint[], $11::text[], $12::bigint[]) \
     WITH ORDINALITY AS r(at_ms, principal_kind, principal_id, action, resource_kind, resource_id, outcome, \
      allowed, denied, errors, denied_ids, last_ms, n) \
     ORDER BY n";

columns_through!(tokio_postgres::Row, try_get);

impl Snapshot for PgTransaction<'_> {
    fn each_row(&mut self, sql: &str, params: &[i64], each: EachRow<'_>) -> Result<(), DbError> {
        for row in self.query(sql, &driver_params(params))? {
            each(&row)?;
        }
        Ok(())
    }
}

/// `params` as the driver takes them.
fn driver_params(params: &[i64]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p as _).collect()
}

/// One page of the window `query` names, read in a repeatable-read,
/// read-only transaction on a pooled connection of `db`.
pub(super) fn read_page(db: &Db, query: &AuditQuery) -> Result<AuditPage, DbError> {
    let mut conn = db.pg_conn()?;
    let mut snapshot = conn.transaction()?;
    snapshot.batch_execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")?;
    read::page(&mut snapshot, &STATEMENTS, query)
}

/// Writes rows into `audit_events` on a connection of its own.
#[derive(Debug)]
pub(super) struct Writer {
    manager: PgManager,
    conn: Option<PgClient>,
    lock_timeout: Duration,
}

impl Writer {
    /// A writer through `manager`'s server (whose schema must be migrated),
    /// each batch waiting at most `lock_timeout` for a lock. Connects at its
    /// first batch, on the writer's thread: the synchronous client may not
    /// run on the async runtime's threads that build the Hub.
    pub(super) fn new(manager: PgManager, lock_timeout: Duration) -> Writer {
        Writer {
            manager,
            conn: None,
            lock_timeout,
        }
    }

    /// Runs `work` on the writer's connection, connecting first when it has
    /// none. After a failure the next call starts on a fresh connection:
    /// this one may be the one a restarted server closed.
    fn on_connection<T>(
        &mut self,
        work: impl FnOnce(&mut PgClient, Duration) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        let conn = match self.conn.take() {
            Some(conn) => conn,
            None => self.manager.open_client()?,
        };
        let conn = self.conn.insert(conn);
        let done = work(conn, self.lock_timeout);
        if done.is_err() {
            self.conn = None;
        }
        done
    }

    /// Writes `rows` in one transaction, in their order.
    pub(super) fn write(&mut self, rows: &[AuditRow<'_>]) -> Result<(), DbError> {
        self.on_connection(|conn, lock_timeout| write_all(conn, lock_timeout, rows))
    }

    /// Runs `sql` with `params`; the rows it changed.
    pub(super) fn execute(&mut self, sql: &str, params: &[i64]) -> Result<u64, DbError> {
        self.on_connection(|conn, _| Ok(conn.execute(sql, &driver_params(params))?))
    }
}

fn write_all(
    conn: &mut PgClient,
    lock_timeout: Duration,
    rows: &[AuditRow<'_>],
) -> Result<(), DbError> {
    let mut at_ms = Vec::with_capacity(rows.len());
    let mut principal_kinds = Vec::with_capacity(rows.len());
    let mut principal_ids = Vec::with_capacity(rows.len());
    let mut actions = Vec::with_capacity(rows.len());
    let mut resource_kinds = Vec::with_capacity(rows.len());
    let mut resource_ids = Vec::with_capacity(rows.len());
    let mut outcomes = Vec::with_capacity(rows.len());
    let mut tallies: [Vec<i64>; 3] = Default::default();
    let mut denied_ids = Vec::with_capacity(rows.len());
    let mut last_ms = Vec::with_capacity(rows.len());
    for row in rows {
        at_ms.push(row.at_ms);
        principal_kinds.push(row.principal_kind);
        principal_ids.push(row.principal_id);
        actions.push(row.action);
        resource_kinds.push(row.resource_kind);
        resource_ids.push(row.resource_id);
        outcomes.push(row.outcome);
        for (column, count) in tallies.iter_mut().zip(row.tally) {
            column.push(count);
        }
        denied_ids.push(row.denied_ids.as_deref());
        last_ms.push(row.last_ms);
    }
    let mut tx = conn.transaction()?;
    tx.batch_execute(&format!(
        "SET LOCAL lock_timeout = {}",
        lock_timeout.as_millis()
    ))?;
    tx.execute(
        INSERT,
        &[
            &at_ms,
            &principal_kinds,
            &principal_ids,
            &actions,
            &resource_kinds,
            &resource_ids,
            &outcomes,
            &tallies[0],
            &tallies[1],
            &tallies[2],
            &denied_ids,
            &last_ms,
        ],
    )?;
    tx.commit()?;
    Ok(())
}
