//! The rows of the `audit_events` table (migrations 3, 5 and 6), as written
//! and as read back, and what a read asks for and gets. Plain values: both
//! engines and every caller share them.

/// One row to write, its columns borrowed from the entry it stores: a
/// decision, or the decisions of one question of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRow<'a> {
    /// When it was decided, Unix milliseconds.
    pub at_ms: i64,
    /// `user`, `group` or `agent`.
    pub principal_kind: &'a str,
    /// The principal's id.
    pub principal_id: &'a str,
    /// The permission name (`agent.read`).
    pub action: &'a str,
    /// `hub`, `project`, `agent`, `group` or `user`.
    pub(crate) resource_kind: &'a str,
    /// The resource's id (none for the Hub and for a row of several
    /// decisions).
    pub(crate) resource_id: Option<&'a str>,
    /// `allow`, `deny` or `error`: the gravest outcome of the row's
    /// decisions.
    pub outcome: &'a str,
    /// Decisions allowed, denied and in error.
    pub tally: [i64; 3],
    /// For a row of several decisions, the JSON array of the ids not
    /// allowed (NULL when none).
    pub(crate) denied_ids: Option<String>,
    /// For a summary row (a principal's decisions past its audit rate,
    /// folded per interval), its last decision's time, Unix milliseconds;
    /// `at_ms` is the first's. NULL on every other row.
    pub last_ms: Option<i64>,
}

/// One stored row, as the admin endpoint returns it: a decision, or the
/// decisions of one question of a batch (a list's), counted by outcome with
/// the ids not allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AuditEventRow {
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
    pub(crate) resource_kind: String,
    /// The resource's id (none for the Hub and for a row of several
    /// decisions).
    pub(crate) resource_id: Option<String>,
    /// `allow`, `deny` or `error`: the gravest outcome of the row's
    /// decisions.
    pub outcome: String,
    /// Decisions allowed, denied and in error (`[1, 0, 0]` for a single
    /// allowed decision).
    pub tally: [i64; 3],
    /// For a row of several decisions, the JSON array of the ids not
    /// allowed (NULL when none).
    pub(crate) denied_ids: Option<String>,
    /// For a summary row (a principal's decisions past its audit rate,
    /// folded per interval), its last decision's time, Unix milliseconds;
    /// `at_ms` is the first's. NULL on every other row.
    pub last_ms: Option<i64>,
}

/// A position in the newest-first order: the last row of a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AuditCursor {
    /// The row's time, Unix milliseconds.
    pub at_ms: i64,
    /// The row's id.
    pub id: i64,
}

impl AuditCursor {
    /// Cuts a page read with one row more than `limit` back to `limit`
    /// rows, and gives the cursor of its last row when that extra row showed
    /// another page follows.
    pub(crate) fn after_page(rows: &mut Vec<AuditEventRow>, limit: u32) -> Option<AuditCursor> {
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
pub(crate) struct AuditQuery {
    /// The window's start (inclusive), Unix milliseconds.
    pub(crate) from_ms: i64,
    /// The window's end (exclusive), Unix milliseconds.
    pub(crate) to_ms: i64,
    /// Continue after this row.
    pub after: Option<AuditCursor>,
    /// Most rows in the page.
    pub limit: u32,
    /// The histogram's bucket width in milliseconds, if one is wanted.
    pub(crate) bucket_ms: Option<i64>,
    /// Estimate the count from row ids instead of counting rows.
    pub(crate) approximate_count: bool,
}

/// One page of rows and the figures of the whole window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AuditPage {
    /// The rows, newest first.
    pub events: Vec<AuditEventRow>,
    /// Where the next page starts, when there is one.
    pub next: Option<AuditCursor>,
    /// Rows in the window (estimated when `count_is_approximate`).
    pub count: u64,
    /// Whether `count` is an estimate.
    pub(crate) count_is_approximate: bool,
    /// Rows per bucket, `(bucket start ms, rows)`, newest first; only
    /// buckets that hold rows.
    pub histogram: Vec<(i64, u64)>,
}
