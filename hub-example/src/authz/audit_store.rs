//! The `audit_events` table (migration 3) on either database: the columns a
//! record is stored as, which both writers share, and the reads behind
//! `GET /api/v1/admin/audit-events`. [`query_events`] runs the statements of
//! the database's dialect ([`super::audit_sqlite`] or
//! [`super::audit_postgres`]); both order, page, count and bucket the same,
//! so the endpoint answers the same JSON on both.

use std::time::UNIX_EPOCH;

use super::audit::{AuditOutcome, AuditRecord, Resource};
use crate::db::{Db, DbError, Dialect};

/// The `outcome` column of a record.
pub(super) fn outcome_name(outcome: AuditOutcome) -> &'static str {
    match outcome {
        AuditOutcome::Allow => "allow",
        AuditOutcome::Deny => "deny",
        AuditOutcome::Error => "error",
    }
}

/// The `resource_kind` and `resource_id` columns of a record.
pub(super) fn resource_parts(resource: &Resource) -> (&'static str, Option<&str>) {
    match resource {
        Resource::Hub => ("hub", None),
        Resource::Project(id) => ("project", Some(id)),
        Resource::Agent(id) => ("agent", Some(id)),
        Resource::Group(id) => ("group", Some(id)),
        Resource::User(id) => ("user", Some(id)),
    }
}

/// The `at_ms` column of a record: Unix milliseconds.
pub(super) fn millis(record: &AuditRecord) -> i64 {
    record
        .at
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// One stored record, as the admin endpoint returns it.
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
    /// The resource's id (none for the Hub).
    pub resource_id: Option<String>,
    /// `allow`, `deny` or `error`.
    pub outcome: String,
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
