//! The `X-Scion-Perf-*` response headers: the same figures as the line, as
//! `name=int` pairs sorted by name, for callers allowed to see them.

use std::fmt::Write as _;

use crate::line::micros;
use crate::snapshot::{KeyStat, Snapshot};

/// One header: its name suffix (after the prefix) and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfHeader {
    /// `Endpoint`, `Phases`, `Phase-Counts`, `Store-Calls`, `Store-Us`, `Decisions` or `DB`.
    pub suffix: &'static str,
    /// The rendered value.
    pub value: String,
}

/// The header suffixes, in the order they are rendered.
pub const HEADER_SUFFIXES: [&str; 7] = [
    "Endpoint",
    "Phases",
    "Phase-Counts",
    "Store-Calls",
    "Store-Us",
    "Decisions",
    "DB",
];

fn pairs(stats: &[KeyStat], value: impl Fn(&KeyStat) -> u64) -> String {
    let mut out = String::new();
    for (i, stat) in stats.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(stat.name);
        out.push('=');
        out.push_str(itoa::Buffer::new().format(value(stat)));
    }
    out
}

/// Renders the headers of `snapshot`. Empty sets are left out; `Decisions` is
/// always present; `DB` only with pool figures.
///
/// ```
/// # use perf_trace_core::{render_headers, Decisions, Snapshot};
/// # use std::time::Duration;
/// # let snapshot = Snapshot { endpoint: "other", elapsed: Duration::ZERO, phases: vec![],
/// #     store_calls: vec![], authz_store_calls: 0, authz_store_time: Duration::ZERO,
/// #     decisions: Decisions { records: 3, allow: 2, deny: 1, other: 0, emit_time: Duration::from_nanos(1_999) },
/// #     sse_events: 0, db: None, sse_stage: None, method: "GET", request_id: String::new() };
/// let headers = render_headers(&snapshot);
/// assert_eq!(headers[0].suffix, "Endpoint");
/// assert_eq!(headers[1].value, "count=3,allow=2,deny=1,other=0,audit_us=1");
/// ```
pub fn render_headers(snapshot: &Snapshot) -> Vec<PerfHeader> {
    let mut headers = Vec::with_capacity(7);
    let mut push = |suffix, value: String| {
        if !value.is_empty() {
            headers.push(PerfHeader { suffix, value });
        }
    };
    push("Endpoint", snapshot.endpoint.to_owned());
    push("Phases", pairs(&snapshot.phases, |s| micros(s.duration)));
    push("Phase-Counts", pairs(&snapshot.phases, |s| s.count));
    push("Store-Calls", pairs(&snapshot.store_calls, |s| s.count));
    push(
        "Store-Us",
        pairs(&snapshot.store_calls, |s| micros(s.duration)),
    );
    let d = &snapshot.decisions;
    let mut decisions = String::new();
    let _ = write!(
        decisions,
        "count={},allow={},deny={},other={},audit_us={}",
        d.records,
        d.allow,
        d.deny,
        d.other,
        micros(d.emit_time)
    );
    push("Decisions", decisions);
    if let Some(db) = &snapshot.db {
        push(
            "DB",
            format!(
                "wait_count={},wait_us={},in_use={},open={}",
                db.wait_count,
                micros(db.wait_time),
                db.in_use,
                db.open
            ),
        );
    }
    headers
}
