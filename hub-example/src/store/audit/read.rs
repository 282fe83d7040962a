//! The reads behind `GET /api/v1/admin/audit-events`, the same on both
//! engines: one page of a window, newest first, with the window's count
//! (exact, or estimated from row ids) and histogram, all read in one
//! snapshot that the engine opens.

use super::rows::{AuditCursor, AuditEventRow, AuditPage, AuditQuery};
use super::statements::{Columns, Snapshot, Statements};
use crate::store::db::DbError;

/// Reads one page of the window `query` names with `statements`.
pub(super) fn page(
    snapshot: &mut dyn Snapshot,
    statements: &Statements,
    query: &AuditQuery,
) -> Result<AuditPage, DbError> {
    let window = [query.from_ms, query.to_ms];
    let (after_at, after_id) = query
        .after
        .map_or((i64::MAX, i64::MAX), |c| (c.at_ms, c.id));
    // One row more than the page tells whether another page follows.
    let page_params = [
        query.from_ms,
        query.to_ms,
        after_at,
        after_id,
        i64::from(query.limit) + 1,
    ];
    let mut events = rows(snapshot, statements.page, &page_params, event_row)?;
    let next = AuditCursor::after_page(&mut events, query.limit);
    let count = if query.approximate_count {
        let first = first_int(snapshot, statements.first_id, &window)?;
        let last = first_int(snapshot, statements.last_id, &window)?;
        approximate_count(first, last)
    } else {
        first_int(snapshot, statements.count, &window)?.unwrap_or(0) as u64
    };
    let histogram = match query.bucket_ms {
        Some(width) => rows(
            snapshot,
            statements.histogram,
            &[query.from_ms, query.to_ms, width],
            |r| Ok((r.int(0)?, r.int(1)? as u64)),
        )?,
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

/// The rows `sql` returns, each mapped by `map`.
fn rows<T>(
    snapshot: &mut dyn Snapshot,
    sql: &str,
    params: &[i64],
    mut map: impl FnMut(&dyn Columns) -> Result<T, DbError>,
) -> Result<Vec<T>, DbError> {
    let mut out = Vec::new();
    snapshot.each_row(sql, params, &mut |row| {
        out.push(map(row)?);
        Ok(())
    })?;
    Ok(out)
}

fn event_row(r: &dyn Columns) -> Result<AuditEventRow, DbError> {
    Ok(AuditEventRow {
        id: r.int(0)?,
        at_ms: r.int(1)?,
        principal_kind: r.text(2)?,
        principal_id: r.text(3)?,
        action: r.text(4)?,
        resource_kind: r.text(5)?,
        resource_id: r.optional_text(6)?,
        outcome: r.text(7)?,
        tally: [r.int(8)?, r.int(9)?, r.int(10)?],
        denied_ids: r.optional_text(11)?,
        last_ms: r.optional_int(12)?,
    })
}

/// The first column of the first row `sql` returns, if any.
fn first_int(
    snapshot: &mut dyn Snapshot,
    sql: &str,
    params: &[i64],
) -> Result<Option<i64>, DbError> {
    Ok(rows(snapshot, sql, params, |r| r.int(0))?
        .into_iter()
        .next())
}

/// The rows of a window estimated from the ids of its first and last rows
/// (two index seeks). Exact while ids follow time (one writer, entries
/// written in the order they were decided, only the oldest rows deleted);
/// off by the few entries whose batch was written out of time order
/// otherwise, as with replicas sharing a PostgreSQL database.
fn approximate_count(first: Option<i64>, last: Option<i64>) -> u64 {
    match (first, last) {
        (Some(first), Some(last)) if last >= first => (last - first + 1) as u64,
        (Some(_), Some(_)) => 1,
        _ => 0,
    }
}
