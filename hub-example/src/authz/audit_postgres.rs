//! The audit backend on PostgreSQL: batches of entries written into the
//! `audit_events` table (the ports of migrations 3 and 5), one transaction
//! per batch, expired rows deleted in small batches, and the PostgreSQL
//! statements behind
//! [`super::audit_store::query_events`], clause for clause those of
//! [`super::audit_sqlite`].
//!
//! As on SQLite, the writer has a connection of its own (opened on its own
//! thread, at its first batch), so it never takes a pooled connection from a
//! request, and a short lock timeout
//! ([`WRITER_BUSY_TIMEOUT`](super::audit::WRITER_BUSY_TIMEOUT)): a batch
//! that cannot be written (a lock, the server restarting) fails quickly, is
//! counted and retried on a fresh connection, and the queue absorbs the
//! records meanwhile.
//!
//! A batch travels as eleven arrays in one `INSERT ... SELECT FROM unnest`,
//! so the statement text never depends on the batch's length, and the ids
//! follow the batch's order.

use tokio_postgres::Row;

use super::audit::{AuditBackend, AuditEntry, AuditWriteError, WRITER_BUSY_TIMEOUT};
use super::audit_store::{
    denied_ids_json, millis, outcome_name, prune_sql, tally_columns, AuditCursor, AuditEventRow,
    AuditPage, AuditQuery, EVENT_COLUMNS,
};
use crate::db::postgres::{PgClient, PgManager, PgTransaction};
use crate::db::{Db, DbError, Dialect};

/// Writes batches into `audit_events` on a connection of its own.
#[derive(Debug)]
pub struct PostgresAuditBackend {
    manager: PgManager,
    conn: Option<PgClient>,
}

impl PostgresAuditBackend {
    /// A writer into `db`'s database (which must be migrated). Connects at
    /// its first batch, on the writer's thread: the synchronous client may
    /// not run on the async runtime's threads that build the Hub.
    pub fn for_db(db: &Db) -> Result<Self, DbError> {
        let manager = db
            .pg_manager()
            .ok_or(DbError::WrongDialect(Dialect::Sqlite))?;
        Ok(PostgresAuditBackend {
            manager,
            conn: None,
        })
    }

    fn connection(&mut self) -> Result<&mut PgClient, DbError> {
        let conn = match self.conn.take() {
            Some(conn) => conn,
            None => self.manager.open_client()?,
        };
        Ok(self.conn.insert(conn))
    }
}

const INSERT: &str = "INSERT INTO audit_events \
     (at_ms, principal_kind, principal_id, action, resource_kind, resource_id, outcome, \
      allowed, denied, errors, denied_ids) \
     SELECT at_ms, principal_kind, principal_id, action, resource_kind, resource_id, outcome, \
      allowed, denied, errors, denied_ids \
     FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], \
      $8::bigint[], $9::bigint[], $10::bigint[], $11::text[]) \
     WITH ORDINALITY AS r(at_ms, principal_kind, principal_id, action, resource_kind, resource_id, outcome, \
      allowed, denied, errors, denied_ids, n) \
     ORDER BY n";

fn write_all(conn: &mut PgClient, batch: &[AuditEntry]) -> Result<(), DbError> {
    let mut at_ms = Vec::with_capacity(batch.len());
    let mut principal_kinds = Vec::with_capacity(batch.len());
    let mut principal_ids = Vec::with_capacity(batch.len());
    let mut actions = Vec::with_capacity(batch.len());
    let mut resource_kinds = Vec::with_capacity(batch.len());
    let mut resource_ids = Vec::with_capacity(batch.len());
    let mut outcomes = Vec::with_capacity(batch.len());
    let mut tallies: [Vec<i64>; 3] = Default::default();
    let mut denied_ids = Vec::with_capacity(batch.len());
    for entry in batch {
        at_ms.push(millis(entry));
        principal_kinds.push(entry.principal.kind.as_str());
        principal_ids.push(&*entry.principal.id);
        actions.push(entry.action.as_str());
        resource_kinds.push(entry.resource_kind);
        resource_ids.push(entry.resource_id.as_deref());
        outcomes.push(outcome_name(entry));
        for (column, count) in tallies.iter_mut().zip(tally_columns(entry)) {
            column.push(count);
        }
        denied_ids.push(denied_ids_json(entry));
    }
    let mut tx = conn.transaction()?;
    tx.batch_execute(&format!(
        "SET LOCAL lock_timeout = {}",
        WRITER_BUSY_TIMEOUT.as_millis()
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
        ],
    )?;
    tx.commit()?;
    Ok(())
}

impl AuditBackend for PostgresAuditBackend {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn write_batch(&mut self, batch: &[AuditEntry]) -> Result<(), AuditWriteError> {
        let written = self.connection().and_then(|conn| write_all(conn, batch));
        written.map_err(|e| {
            // The retry starts on a fresh connection: this one may be the
            // one a restarted server closed.
            self.conn = None;
            AuditWriteError(e.to_string())
        })
    }

    fn prune(&mut self, before_ms: i64, max_rows: u32) -> Result<u64, AuditWriteError> {
        let deleted = self.connection().and_then(|conn| {
            let limit = i64::from(max_rows);
            Ok(conn.execute(prune_sql(Dialect::Postgres), &[&before_ms, &limit])?)
        });
        deleted.map_err(|e| {
            self.conn = None;
            AuditWriteError(e.to_string())
        })
    }
}

fn event_row(row: &Row) -> Result<AuditEventRow, DbError> {
    Ok(AuditEventRow {
        id: row.try_get(0)?,
        at_ms: row.try_get(1)?,
        principal_kind: row.try_get(2)?,
        principal_id: row.try_get(3)?,
        action: row.try_get(4)?,
        resource_kind: row.try_get(5)?,
        resource_id: row.try_get(6)?,
        outcome: row.try_get(7)?,
        tally: [row.try_get(8)?, row.try_get(9)?, row.try_get(10)?],
        denied_ids: row.try_get(11)?,
    })
}

/// Reads one page of the window `query` names (the PostgreSQL statements of
/// [`super::audit_store::query_events`]).
pub fn query_events(
    conn: &mut PgTransaction<'_>,
    query: &AuditQuery,
) -> Result<AuditPage, DbError> {
    let (after_at, after_id) = query
        .after
        .map_or((i64::MAX, i64::MAX), |c| (c.at_ms, c.id));
    // One row more than the page tells whether another page follows.
    let mut events = conn
        .query(
            &format!(
                "SELECT {EVENT_COLUMNS} FROM audit_events \
                 WHERE at_ms >= $1 AND at_ms < $2 AND (at_ms < $3 OR (at_ms = $3 AND id < $4)) \
                 ORDER BY at_ms DESC, id DESC LIMIT $5"
            ),
            &[
                &query.from_ms,
                &query.to_ms,
                &after_at,
                &after_id,
                &(i64::from(query.limit) + 1),
            ],
        )?
        .iter()
        .map(event_row)
        .collect::<Result<Vec<_>, _>>()?;
    let next = AuditCursor::after_page(&mut events, query.limit);
    let count = if query.approximate_count {
        approximate_count(conn, query.from_ms, query.to_ms)?
    } else {
        let row = conn.query_opt(
            "SELECT COUNT(*) FROM audit_events WHERE at_ms >= $1 AND at_ms < $2",
            &[&query.from_ms, &query.to_ms],
        )?;
        row.map_or(Ok(0), |r| r.try_get::<_, i64>(0))? as u64
    };
    let histogram = match query.bucket_ms {
        Some(width) => conn
            .query(
                "SELECT (at_ms / $3) * $3 AS bucket, COUNT(*) FROM audit_events \
                 WHERE at_ms >= $1 AND at_ms < $2 GROUP BY bucket ORDER BY bucket DESC",
                &[&query.from_ms, &query.to_ms, &width],
            )?
            .iter()
            .map(|r| Ok((r.try_get::<_, i64>(0)?, r.try_get::<_, i64>(1)? as u64)))
            .collect::<Result<_, DbError>>()?,
        None => Vec::new(),
    };
    Ok(AuditPage {
        events,
        next,
        count,
        count_is_approximate: query.approximate_count,
        histogram,
    })
}

/// The rows of a window estimated from the ids of its first and last rows,
/// as on SQLite. Exact while ids follow time; replicas sharing the database
/// each write their own batches, so there it is off by the records of the
/// batches written out of time order.
fn approximate_count(
    conn: &mut PgTransaction<'_>,
    from_ms: i64,
    to_ms: i64,
) -> Result<u64, DbError> {
    let mut id_at = |sql: &str| -> Result<Option<i64>, DbError> {
        let row = conn.query_opt(sql, &[&from_ms, &to_ms])?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    };
    let first = id_at(
        "SELECT id FROM audit_events WHERE at_ms >= $1 AND at_ms < $2 \
         ORDER BY at_ms, id LIMIT 1",
    )?;
    let last = id_at(
        "SELECT id FROM audit_events WHERE at_ms >= $1 AND at_ms < $2 \
         ORDER BY at_ms DESC, id DESC LIMIT 1",
    )?;
    Ok(match (first, last) {
        (Some(first), Some(last)) if last >= first => (last - first + 1) as u64,
        (Some(_), Some(_)) => 1,
        _ => 0,
    })
}
