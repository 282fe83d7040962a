//! The `audit_events` table (migrations 3 and 5) on either database: the
//! columns an entry is stored as, which both writers share, and the reads behind
//! `GET /api/v1/admin/audit-events`. [`query_events`] runs the statements of
//! the database's dialect ([`super::audit_sqlite`] or
//! [`super::audit_postgres`]); both order, page, count and bucket the same,
//! so the endpoint answers the same JSON on both.

use std::time::UNIX_EPOCH;

use super::audit::{AuditEntry, AuditOutcome};
use crate::db::{Db, DbError, Dialect};

/// The `outcome` column of an entry: its gravest outcome.
pub(super) fn outcome_name(entry: &AuditEntry) -> &'static str {
    match entry.tally.outcome() {
        AuditOutcome::Allow => "allow",
        AuditOutcome::Deny => "deny",
        AuditOutcome::Error => "error",
    }
}

/// The `denied_ids` column of an entry: a JSON array of the ids not
/// allowed, or NULL when there are none.
pub(super) fn denied_ids_json(entry: &AuditEntry) -> Option<String> {
    if entry.denied_ids.is_empty() {
        return None;
    }
    let ids: Vec<&str> = entry.denied_ids.iter().map(|id| &**id).collect();
    serde_json::to_string(&ids).ok()
}

/// The `at_ms` column of an entry: Unix milliseconds.
pub(super) fn millis(entry: &AuditEntry) -> i64 {
    entry
        .at
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The count columns of an entry, as stored.
pub(super) fn tally_columns(entry: &AuditEntry) -> [i64; 3] {
    let t = entry.tally;
    [t.allowed, t.denied, t.errors].map(i64::from)
}

/// One stored row, as the admin endpoint returns it: a decision, or the
/// decisions of one question of a batch (a list's), counted by outcome with
/// the ids not allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEventRow {
    /// Its row id (increasing in the order records were written).
    pub id: i64,
    /// When it was decided, Unix milliseconds.
    pub at_ms: i64,
    /// `user`, `group` or `agent`.
    pub principal_kind: String,
    /// The principal's id.
    pub principal_id: String,
    /// The permission name (`agent.read`).
    pub action: String,
    /// `hub`, `project`, `agent`, `group` or `user`.
    pub resource_kind: String,
    /// The resource's id (none for the Hub and for a row of several
    /// decisions).
    pub resource_id: Option<String>,
    /// `allow`, `deny` or `error`: the gravest outcome of the row's
    /// decisions.
    pub outcome: String,
    /// Decisions allowed, denied and in error (`[1, 0, 0]` for a single
    /// allowed decision).
    pub tally: [i64; 3],
    /// For a row of several decisions, the JSON array of the ids not
    /// allowed (NULL when none).
    pub denied_ids: Option<String>,
}

/// The columns the page reads, in [`AuditEventRow`]'s order.
pub(super) const EVENT_COLUMNS: &str = "id, at_ms, principal_kind, principal_id, action, \
     resource_kind, resource_id, outcome, allowed, denied, errors, denied_ids";

/// Deletes at most `max_rows` of the oldest rows before `before_ms`: the
/// statement both dialects run (SQLite's `?` and PostgreSQL's `$n`).
pub(super) fn prune_sql(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => {
            "DELETE FROM audit_events WHERE id IN \
             (SELECT id FROM audit_events WHERE at_ms < ?1 ORDER BY at_ms, id LIMIT ?2)"
        }
        Dialect::Postgres => {
            "DELETE FROM audit_events WHERE id IN \
             (SELECT id FROM audit_events WHERE at_ms < $1 ORDER BY at_ms, id LIMIT $2)"
        }
    }
}

/// A position in the newest-first order: the last row of a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditCursor {
    /// The row's time, Unix milliseconds.
    pub at_ms: i64,
    /// The row's id.
    pub id: i64,
}

impl AuditCursor {
    /// Cuts a page read with one row more than `limit` back to `limit`
    /// rows, and gives the cursor of its last row when that extra row showed
    /// another page follows.
    pub fn after_page(rows: &mut Vec<AuditEventRow>, limit: u32) -> Option<AuditCursor> {
        if rows.len() <= limit as usize {
            return None;
        }
        rows.truncate(limit as usize);
        rows.last().map(|row| AuditCursor {
            at_ms: row.at_ms,
            id: row.id,
        })
    }
}

/// What to read: rows with `from_ms <= at_ms < to_ms`, newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditQuery {
    /// The window's start (inclusive), Unix milliseconds.
    pub from_ms: i64,
    /// The window's end (exclusive), Unix milliseconds.
    pub to_ms: i64,
    /// Continue after this row.
    pub after: Option<AuditCursor>,
    /// Most rows in the page.
    pub limit: u32,
    /// The histogram's bucket width in milliseconds, if one is wanted.
    pub bucket_ms: Option<i64>,
    /// Estimate the count from row ids instead of counting rows.
    pub approximate_count: bool,
}

/// One page of rows and the figures of the whole window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditPage {
    /// The rows, newest first.
    pub events: Vec<AuditEventRow>,
    /// Where the next page starts, when there is one.
    pub next: Option<AuditCursor>,
    /// Rows in the window (estimated when `count_is_approximate`).
    pub count: u64,
    /// Whether `count` is an estimate.
    pub count_is_approximate: bool,
    /// Rows per bucket, `(bucket start ms, rows)`, newest first; only
    /// buckets that hold rows.
    pub histogram: Vec<(i64, u64)>,
}

/// Reads one page of the window `query` names, with the window's count and
/// histogram, from whichever database `db` is. Its statements read one
/// snapshot (a read transaction): the audit writer keeps committing while
/// they run, and the count must be the histogram's sum.
pub fn query_events(db: &Db, query: &AuditQuery) -> Result<AuditPage, DbError> {
    match db.dialect() {
        Dialect::Sqlite => {
            let mut conn = db.conn()?;
            let snapshot = conn.transaction()?;
            Ok(super::audit_sqlite::query_events(&snapshot, query)?)
        }
        Dialect::Postgres => {
            let mut conn = db.pg_conn()?;
            let mut snapshot = conn.transaction()?;
            snapshot.batch_execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")?;
            super::audit_postgres::query_events(&mut snapshot, query)
        }
    }
}
