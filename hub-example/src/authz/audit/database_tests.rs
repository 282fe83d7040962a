//! The audit pipeline into the database's `audit_events` table (SQLite):
//! batches written whole, a locked database retried, pages read back
//! newest first, the approximate count, and the retention window.

use std::time::{Duration, UNIX_EPOCH};

use rusqlite::{Connection, TransactionBehavior};

use super::tests::{totals, wait_for};
use super::*;
use crate::authz::Action;
use crate::model::PrincipalRef;
use crate::store::audit::{open, query_events, AuditQuery};
use crate::store::db::{temp_db, Db};

fn migrated() -> (tempfile::TempDir, Db) {
    let (dir, db) = temp_db();
    db.migrate(0).unwrap();
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

/// Every row stored, counted.
fn rows(db: &Db) -> u64 {
    query_events(db, &window(i64::MIN, i64::MAX)).unwrap().count
}

#[test]
fn a_batch_is_written_in_one_transaction_with_every_field() {
    let (_dir, db) = migrated();
    let mut backend = open(&db, WRITER_BUSY_TIMEOUT).unwrap();
    let mut hub = record_at(1_000, AuditOutcome::Deny);
    hub.resource = Resource::Hub;
    hub.action = Action::HubAdmin;
    backend
        .write_batch(&[record_at(2_000, AuditOutcome::Allow).into(), hub.into()])
        .unwrap();
    let page = query_events(
        &db,
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
    let backend = open(&db, Duration::from_millis(20)).unwrap();
    let (sink, log) = ChannelAuditSink::start_with(Box::new(backend), 1_024, 0);
    let mut locker = Connection::open(db.path()).unwrap();
    let lock = locker
        .transaction_with_behavior(TransactionBehavior::Exclusive)
        .unwrap();
    for i in 0..200 {
        sink.emit(record_at(1_000 + i, AuditOutcome::Allow));
    }
    wait_for(|| log.failed_flushes() >= 2);
    assert!(log.failed_flushes() >= 2, "the lock fails the flushes");
    assert_eq!(log.flushed(), 0);
    lock.commit().unwrap();
    wait_for(|| log.flushed() == 200);
    let health = log.health();
    assert_eq!(totals(&health), (200, 200, 0, 0));
    assert_eq!(health.backend, "sqlite");
    assert_eq!(rows(&db), 200, "every record written exactly once");
}

#[test]
fn pages_run_newest_first_and_the_cursor_continues_without_overlap() {
    let (_dir, db) = migrated();
    let mut backend = open(&db, WRITER_BUSY_TIMEOUT).unwrap();
    // Two records share each millisecond, so the cursor needs the id too.
    let batch: Vec<AuditEntry> = (0..50)
        .map(|i| record_at(60_000 + (i / 2) * 1_000, AuditOutcome::Allow).into())
        .collect();
    backend.write_batch(&batch).unwrap();
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
        let page = query_events(&db, &query).unwrap();
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
    let page = query_events(&db, &query).unwrap();
    // Buckets of 10 s: [60,70) holds 20, [70,80) 20, [80,85) 10.
    assert_eq!(
        page.histogram,
        vec![(80_000, 10), (70_000, 20), (60_000, 20)]
    );
}

#[test]
fn the_approximate_count_matches_rows_written_in_time_order() {
    let (_dir, db) = migrated();
    let mut backend = open(&db, WRITER_BUSY_TIMEOUT).unwrap();
    let batch: Vec<AuditEntry> = (0..300)
        .map(|i| record_at(i * 100, AuditOutcome::Deny).into())
        .collect();
    backend.write_batch(&batch).unwrap();
    // Several multi-row statements and a shorter last one, every row in
    // its place.
    let all = AuditQuery {
        limit: 1_000,
        ..window(0, 30_000)
    };
    let stored = query_events(&db, &all).unwrap().events;
    let misplaced = stored
        .iter()
        .filter(|e| e.id != e.at_ms / 100 + 1 || e.outcome != "deny")
        .count();
    assert_eq!((stored.len(), misplaced), (300, 0));
    for (from_ms, to_ms, want) in [(0, 30_000, 300), (5_000, 10_000, 50), (40_000, 50_000, 0)] {
        let query = AuditQuery {
            from_ms,
            to_ms,
            after: None,
            limit: 1,
            bucket_ms: None,
            approximate_count: true,
        };
        let page = query_events(&db, &query).unwrap();
        assert_eq!((page.count, page.count_is_approximate), (want, true));
    }
}

#[test]
fn a_list_batch_is_one_row_per_question_with_its_counts_and_denied_ids() {
    let (_dir, db) = migrated();
    let mut backend = open(&db, WRITER_BUSY_TIMEOUT).unwrap();
    let mut records = (0..4).map(|i| AuditRecord {
        resource: Resource::Agent(format!("a-{i}").into()),
        ..record_at(5_000, [AuditOutcome::Allow, AuditOutcome::Deny][i % 2])
    });
    let entries = summarize(&mut records);
    backend.write_batch(&entries).unwrap();
    let page = query_events(&db, &window(0, 10_000)).unwrap();
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
    let mut backend = open(&db, WRITER_BUSY_TIMEOUT).unwrap();
    let batch: Vec<AuditEntry> = (0..10)
        .map(|i| record_at(1_000 * (i + 1), AuditOutcome::Allow).into())
        .collect();
    backend.write_batch(&batch).unwrap();
    // Rows at 1 s to 10 s; the cutoff at 7.5 s expires seven of them.
    assert_eq!(backend.prune(7_500, 4).unwrap(), 4, "a batch at most");
    assert_eq!(backend.prune(7_500, 4).unwrap(), 3);
    assert_eq!(backend.prune(7_500, 4).unwrap(), 0);
    let left: Vec<i64> = query_events(&db, &window(0, 20_000))
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
    let backend = open(&db, WRITER_BUSY_TIMEOUT).unwrap();
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
    let left = query_events(&db, &window(0, i64::MAX)).unwrap();
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

#[test]
fn a_summary_row_keeps_its_first_and_last_time_and_its_counts() {
    let (_dir, db) = migrated();
    let mut backend = open(&db, WRITER_BUSY_TIMEOUT).unwrap();
    let mut summary = AuditEntry::from(record_at(3_000, AuditOutcome::Deny));
    summary.resource_id = None;
    summary.tally.denied = 41;
    summary.last_at = Some(UNIX_EPOCH + Duration::from_millis(7_500));
    backend
        .write_batch(&[record_at(2_000, AuditOutcome::Allow).into(), summary])
        .unwrap();
    let page = query_events(&db, &window(0, 10_000)).unwrap();
    let (summary, single) = (&page.events[0], &page.events[1]);
    assert_eq!(
        (
            summary.at_ms,
            summary.last_ms,
            summary.tally,
            summary.resource_id.as_deref()
        ),
        (3_000, Some(7_500), [0, 41, 0], None)
    );
    assert_eq!(single.last_ms, None, "a decision's own row is no summary");
}
