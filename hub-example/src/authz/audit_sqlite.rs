//! The audit backend on SQLite: batches of entries written into the
//! `audit_events` table (migrations 3 and 5), one transaction per batch,
//! expired rows deleted in small batches, and the SQLite statements behind
//! [`super::audit_store::query_events`].
//!
//! The writer has a connection of its own, so it never takes a pooled
//! connection from a request, and a short busy timeout
//! ([`WRITER_BUSY_TIMEOUT`](super::audit::WRITER_BUSY_TIMEOUT)): a locked
//! database fails the batch quickly, the writer counts it and retries it,
//! and the queue absorbs the records meanwhile.

use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, OptionalExtension};

use super::audit::{AuditBackend, AuditEntry, AuditWriteError};
use super::audit_store::{
    denied_ids_json, millis, outcome_name, prune_sql, tally_columns, AuditCursor, AuditEventRow,
    AuditPage, AuditQuery, EVENT_COLUMNS,
};
use crate::db::Dialect;

/// Writes batches into `audit_events`.
#[derive(Debug)]
pub struct SqliteAuditBackend {
    conn: Connection,
}

impl SqliteAuditBackend {
    /// Opens its own connection to the database file at `path` (which must
    /// exist and be migrated) with `busy_timeout`.
    pub fn open(path: &Path, busy_timeout: Duration) -> rusqlite::Result<Self> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(busy_timeout)?;
        conn.execute_batch("PRAGMA synchronous = NORMAL;")?;
        Ok(SqliteAuditBackend { conn })
    }
}

/// Rows per multi-row `INSERT`: one statement per 64 entries instead of one
/// per entry (11 parameters a row, far below SQLite's limit).
const ROWS_PER_INSERT: usize = 64;
/// Parameters per row.
const COLUMNS: usize = 11;

fn insert_sql(rows: usize) -> String {
    let values = vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"; rows].join(", ");
    format!(
        "INSERT INTO audit_events \
         (at_ms, principal_kind, principal_id, action, resource_kind, resource_id, outcome, \
          allowed, denied, errors, denied_ids) \
         VALUES {values}"
    )
}

fn write_all(conn: &mut Connection, batch: &[AuditEntry]) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    for chunk in batch.chunks(ROWS_PER_INSERT) {
        let mut insert = tx.prepare_cached(&insert_sql(chunk.len()))?;
        let mut index = 1;
        for entry in chunk {
            let [allowed, denied, errors] = tally_columns(entry);
            insert.raw_bind_parameter(index, millis(entry))?;
            insert.raw_bind_parameter(index + 1, entry.principal.kind.as_str())?;
            insert.raw_bind_parameter(index + 2, &*entry.principal.id)?;
            insert.raw_bind_parameter(index + 3, entry.action.as_str())?;
            insert.raw_bind_parameter(index + 4, entry.resource_kind)?;
            insert.raw_bind_parameter(index + 5, entry.resource_id.as_deref())?;
            insert.raw_bind_parameter(index + 6, outcome_name(entry))?;
            insert.raw_bind_parameter(index + 7, allowed)?;
            insert.raw_bind_parameter(index + 8, denied)?;
            insert.raw_bind_parameter(index + 9, errors)?;
            insert.raw_bind_parameter(index + 10, denied_ids_json(entry))?;
            index += COLUMNS;
        }
        insert.raw_execute()?;
    }
    tx.commit()
}

impl AuditBackend for SqliteAuditBackend {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn write_batch(&mut self, batch: &[AuditEntry]) -> Result<(), AuditWriteError> {
        write_all(&mut self.conn, batch).map_err(|e| AuditWriteError(e.to_string()))
    }

    fn prune(&mut self, before_ms: i64, max_rows: u32) -> Result<u64, AuditWriteError> {
        self.conn
            .prepare_cached(prune_sql(Dialect::Sqlite))
            .and_then(|mut delete| delete.execute(params![before_ms, max_rows]))
            .map(|n| n as u64)
            .map_err(|e| AuditWriteError(e.to_string()))
    }
}

/// Reads one page of the window `query` names (the SQLite statements of
/// [`super::audit_store::query_events`]).
pub fn query_events(conn: &Connection, query: &AuditQuery) -> rusqlite::Result<AuditPage> {
    let (after_at, after_id) = query
        .after
        .map_or((i64::MAX, i64::MAX), |c| (c.at_ms, c.id));
    let mut page = conn.prepare_cached(&format!(
        "SELECT {EVENT_COLUMNS} FROM audit_events \
         WHERE at_ms >= ?1 AND at_ms < ?2 AND (at_ms < ?3 OR (at_ms = ?3 AND id < ?4)) \
         ORDER BY at_ms DESC, id DESC LIMIT ?5",
    ))?;
    // One row more than the page tells whether another page follows.
    let mut events: Vec<AuditEventRow> = page
        .query_map(
            params![
                query.from_ms,
                query.to_ms,
                after_at,
                after_id,
                i64::from(query.limit) + 1
            ],
            |r| {
                Ok(AuditEventRow {
                    id: r.get(0)?,
                    at_ms: r.get(1)?,
                    principal_kind: r.get(2)?,
                    principal_id: r.get(3)?,
                    action: r.get(4)?,
                    resource_kind: r.get(5)?,
                    resource_id: r.get(6)?,
                    outcome: r.get(7)?,
                    tally: [r.get(8)?, r.get(9)?, r.get(10)?],
                    denied_ids: r.get(11)?,
                })
            },
        )?
        .collect::<Result<_, _>>()?;
    let next = AuditCursor::after_page(&mut events, query.limit);
    let count = if query.approximate_count {
        approximate_count(conn, query.from_ms, query.to_ms)?
    } else {
        conn.prepare_cached("SELECT COUNT(*) FROM audit_events WHERE at_ms >= ?1 AND at_ms < ?2")?
            .query_row(params![query.from_ms, query.to_ms], |r| r.get::<_, i64>(0))? as u64
    };
    let histogram = match query.bucket_ms {
        Some(width) => conn
            .prepare_cached(
                "SELECT (at_ms / ?3) * ?3 AS bucket, COUNT(*) FROM audit_events \
                 WHERE at_ms >= ?1 AND at_ms < ?2 GROUP BY bucket ORDER BY bucket DESC",
            )?
            .query_map(params![query.from_ms, query.to_ms, width], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)? as u64))
            })?
            .collect::<Result<_, _>>()?,
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

/// The rows of a window estimated from two index seeks: the ids of its
/// first and last rows. Exact while ids follow time (one writer, entries
/// written in the order they were decided, only the oldest rows deleted);
/// off by the few entries whose batch was written out of time order
/// otherwise.
fn approximate_count(conn: &Connection, from_ms: i64, to_ms: i64) -> rusqlite::Result<u64> {
    let first: Option<i64> = conn
        .prepare_cached(
            "SELECT id FROM audit_events WHERE at_ms >= ?1 AND at_ms < ?2 \
             ORDER BY at_ms, id LIMIT 1",
        )?
        .query_row(params![from_ms, to_ms], |r| r.get(0))
        .optional()?;
    let last: Option<i64> = conn
        .prepare_cached(
            "SELECT id FROM audit_events WHERE at_ms >= ?1 AND at_ms < ?2 \
             ORDER BY at_ms DESC, id DESC LIMIT 1",
        )?
        .query_row(params![from_ms, to_ms], |r| r.get(0))
        .optional()?;
    Ok(match (first, last) {
        (Some(first), Some(last)) if last >= first => (last - first + 1) as u64,
        (Some(_), Some(_)) => 1,
        _ => 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::audit::{
        AuditEmitter, AuditOutcome, AuditRecord, ChannelAuditSink, Resource, WRITER_BUSY_TIMEOUT,
    };
    use crate::authz::Action;
    use crate::db::{migrate, Db, OpenMode, PoolOptions};
    use crate::model::PrincipalRef;
    use std::time::{Instant, UNIX_EPOCH};

    fn migrated() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hub.db");
        let db = Db::open(&path, OpenMode::CreateIfMissing, PoolOptions::default()).unwrap();
        migrate(&mut db.conn().unwrap(), 0).unwrap();
        (dir, db)
    }

    fn record_at(at_ms: u64, outcome: AuditOutcome) -> AuditRecord {
        AuditRecord {
            at: UNIX_EPOCH + Duration::from_millis(at_ms),
            principal: PrincipalRef::user("u-1"),
            action: Action::AgentRead,
            resource: Resource::Agent("a-1".into()),
            outcome,
        }
    }

    fn rows(db: &Db) -> i64 {
        db.conn()
            .unwrap()
            .query_row("SELECT COUNT(*) FROM audit_events", [], |r| r.get(0))
            .unwrap()
    }

    fn wait_for(what: impl Fn() -> bool) {
        let until = Instant::now() + Duration::from_secs(20);
        while !what() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_batch_is_written_in_one_transaction_with_every_field() {
        let (_dir, db) = migrated();
        let mut backend = SqliteAuditBackend::open(db.path(), WRITER_BUSY_TIMEOUT).unwrap();
        let mut hub = record_at(1_000, AuditOutcome::Deny);
        hub.resource = Resource::Hub;
        hub.action = Action::HubAdmin;
        backend
            .write_batch(&[record_at(2_000, AuditOutcome::Allow).into(), hub.into()])
            .unwrap();
        let page = query_events(
            &db.conn().unwrap(),
            &AuditQuery {
                from_ms: 0,
                to_ms: 10_000,
                after: None,
                limit: 10,
                bucket_ms: None,
                approximate_count: false,
            },
        )
        .unwrap();
        assert_eq!(page.count, 2);
        let first = &page.events[0];
        assert_eq!(
            (
                first.at_ms,
                first.principal_kind.as_str(),
                first.principal_id.as_str(),
                first.action.as_str(),
                first.resource_kind.as_str(),
                first.resource_id.as_deref(),
                first.outcome.as_str()
            ),
            (
                2_000,
                "user",
                "u-1",
                "agent.read",
                "agent",
                Some("a-1"),
                "allow"
            )
        );
        let second = &page.events[1];
        assert_eq!(
            (
                second.action.as_str(),
                second.resource_kind.as_str(),
                second.resource_id.as_deref(),
                second.outcome.as_str()
            ),
            ("hub.admin", "hub", None, "deny")
        );
    }

    #[test]
    fn a_locked_database_fails_the_flush_which_is_retried_and_loses_nothing() {
        let (_dir, db) = migrated();
        let backend = SqliteAuditBackend::open(db.path(), Duration::from_millis(20)).unwrap();
        let (sink, log) = ChannelAuditSink::start_with(Box::new(backend), 1_024, 0);
        let locker = Connection::open(db.path()).unwrap();
        locker.execute_batch("BEGIN EXCLUSIVE").unwrap();
        for i in 0..200 {
            sink.emit(record_at(1_000 + i, AuditOutcome::Allow));
        }
        wait_for(|| log.failed_flushes() >= 2);
        assert!(log.failed_flushes() >= 2, "the lock fails the flushes");
        assert_eq!(log.flushed(), 0);
        locker.execute_batch("COMMIT").unwrap();
        wait_for(|| log.flushed() == 200);
        let health = log.health();
        assert_eq!(
            (
                health.accepted,
                health.flushed,
                health.rejected,
                health.queue_size
            ),
            (200, 200, 0, 0)
        );
        assert_eq!(health.backend, "sqlite");
        assert_eq!(rows(&db), 200, "every record written exactly once");
    }

    #[test]
    fn pages_run_newest_first_and_the_cursor_continues_without_overlap() {
        let (_dir, db) = migrated();
        let mut backend = SqliteAuditBackend::open(db.path(), WRITER_BUSY_TIMEOUT).unwrap();
        // Two records share each millisecond, so the cursor needs the id too.
        let batch: Vec<AuditEntry> = (0..50)
            .map(|i| record_at(60_000 + (i / 2) * 1_000, AuditOutcome::Allow).into())
            .collect();
        backend.write_batch(&batch).unwrap();
        let conn = db.conn().unwrap();
        let mut query = AuditQuery {
            from_ms: 60_000,
            to_ms: 60_000 + 25_000,
            after: None,
            limit: 7,
            bucket_ms: Some(10_000),
            approximate_count: false,
        };
        let mut seen = Vec::new();
        loop {
            let page = query_events(&conn, &query).unwrap();
            assert_eq!(page.count, 50);
            seen.extend(page.events.iter().map(|e| (e.at_ms, e.id)));
            match page.next {
                Some(next) => query.after = Some(next),
                None => break,
            }
        }
        let mut expected = seen.clone();
        expected.sort_by(|a, b| b.cmp(a));
        expected.dedup();
        assert_eq!(seen, expected, "newest first, no row twice");
        assert_eq!(seen.len(), 50);
        let page = query_events(&conn, &query).unwrap();
        // Buckets of 10 s: [60,70) holds 20, [70,80) 20, [80,85) 10.
        assert_eq!(
            page.histogram,
            vec![(80_000, 10), (70_000, 20), (60_000, 20)]
        );
    }

    #[test]
    fn the_approximate_count_matches_rows_written_in_time_order() {
        let (_dir, db) = migrated();
        let mut backend = SqliteAuditBackend::open(db.path(), WRITER_BUSY_TIMEOUT).unwrap();
        let batch: Vec<AuditEntry> = (0..300)
            .map(|i| record_at(i * 100, AuditOutcome::Deny).into())
            .collect();
        backend.write_batch(&batch).unwrap();
        let conn = db.conn().unwrap();
        // Several multi-row statements and a shorter last one, every row in
        // its place.
        let misplaced: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM audit_events WHERE id != at_ms / 100 + 1 OR outcome != 'deny'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(misplaced, 0);
        for (from_ms, to_ms, want) in [(0, 30_000, 300), (5_000, 10_000, 50), (40_000, 50_000, 0)] {
            let query = AuditQuery {
                from_ms,
                to_ms,
                after: None,
                limit: 1,
                bucket_ms: None,
                approximate_count: true,
            };
            let page = query_events(&conn, &query).unwrap();
            assert_eq!((page.count, page.count_is_approximate), (want, true));
        }
    }

    #[test]
    fn a_list_batch_is_one_row_per_question_with_its_counts_and_denied_ids() {
        let (_dir, db) = migrated();
        let mut backend = SqliteAuditBackend::open(db.path(), WRITER_BUSY_TIMEOUT).unwrap();
        let mut records = (0..4).map(|i| AuditRecord {
            resource: Resource::Agent(format!("a-{i}").into()),
            ..record_at(5_000, [AuditOutcome::Allow, AuditOutcome::Deny][i % 2])
        });
        let entries = crate::authz::audit::summarize(&mut records);
        backend.write_batch(&entries).unwrap();
        let page = query_events(&db.conn().unwrap(), &window(0, 10_000)).unwrap();
        assert_eq!(page.count, 1);
        let row = &page.events[0];
        assert_eq!(
            (row.resource_kind.as_str(), row.resource_id.as_deref()),
            ("agent", None)
        );
        assert_eq!((row.tally, row.outcome.as_str()), ([2, 2, 0], "deny"));
        assert_eq!(row.denied_ids.as_deref(), Some(r#"["a-1","a-3"]"#));
    }

    #[test]
    fn pruning_deletes_rows_past_the_window_oldest_first_in_batches() {
        let (_dir, db) = migrated();
        let mut backend = SqliteAuditBackend::open(db.path(), WRITER_BUSY_TIMEOUT).unwrap();
        let batch: Vec<AuditEntry> = (0..10)
            .map(|i| record_at(1_000 * (i + 1), AuditOutcome::Allow).into())
            .collect();
        backend.write_batch(&batch).unwrap();
        // Rows at 1 s to 10 s; the cutoff at 7.5 s expires seven of them.
        assert_eq!(backend.prune(7_500, 4).unwrap(), 4, "a batch at most");
        assert_eq!(backend.prune(7_500, 4).unwrap(), 3);
        assert_eq!(backend.prune(7_500, 4).unwrap(), 0);
        let left: Vec<i64> = query_events(&db.conn().unwrap(), &window(0, 20_000))
            .unwrap()
            .events
            .iter()
            .map(|e| e.at_ms)
            .collect();
        assert_eq!(left, vec![10_000, 9_000, 8_000], "the newer rows stay");
    }

    #[test]
    fn the_writer_prunes_past_the_retention_window_between_batches() {
        let (_dir, db) = migrated();
        let backend = SqliteAuditBackend::open(db.path(), WRITER_BUSY_TIMEOUT).unwrap();
        let (sink, log) = ChannelAuditSink::start_with(Box::new(backend), 64, 0);
        let now = std::time::SystemTime::now();
        let old = AuditRecord {
            at: now - Duration::from_secs(7_200),
            ..record_at(0, AuditOutcome::Deny)
        };
        let new = AuditRecord {
            at: now,
            ..record_at(0, AuditOutcome::Allow)
        };
        sink.emit(old);
        sink.emit(new);
        wait_for(|| log.flushed() == 2);
        assert_eq!(rows(&db), 2, "both kept under the default 30 days");
        // A new window takes effect at the writer's next turn.
        log.set_retention(Duration::from_secs(3_600));
        wait_for(|| rows(&db) == 1);
        let left = query_events(&db.conn().unwrap(), &window(0, i64::MAX)).unwrap();
        assert_eq!(left.count, 1, "the old row went, the new one stayed");
        assert_eq!(left.events[0].outcome, "allow");
    }

    fn window(from_ms: i64, to_ms: i64) -> AuditQuery {
        AuditQuery {
            from_ms,
            to_ms,
            after: None,
            limit: 100,
            bucket_ms: None,
            approximate_count: false,
        }
    }
}
