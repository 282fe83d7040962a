//! The perf response headers: the same figures as the line, as `name=int`
//! pairs sorted by name, for callers allowed to see them. The profile
//! ([`LineFormat`](crate::LineFormat)) gives their prefix (`X-Scion-Perf-`
//! in the contract).

use crate::line::micros;
use crate::line::scion::{self, suffix};
use crate::snapshot::{KeyStat, Snapshot};

/// One header: its name suffix (after the prefix) and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfHeader {
    /// `Endpoint`, `Phases`, `Phase-Counts`, `Store-Calls`, `Store-Us`,
    /// `Decisions`, `DB`, or a counter or timer set's suffix (`Cache`,
    /// `Render-Us`, `Render-Counts`).
    pub suffix: &'static str,
    /// The rendered value.
    pub value: String,
}

fn pairs(stats: &[KeyStat], value: impl Fn(&KeyStat) -> u64) -> String {
    scion::pairs_value(stats.iter().map(|s| (s.name, value(s))))
}

/// Renders the headers of `snapshot`. Empty sets are left out; `Decisions` is
/// present whenever the schema has the decisions group (the Scion
/// contract's); `DB`
/// only with pool figures; then one header per counter set and two per timer
/// set (microseconds, counts) that recorded anything.
///
/// ```
/// # use perf_trace_core::{line::render_headers, Snapshot};
/// # use perf_trace_core::snapshot::Decisions;
/// # use perf_trace_core::keys::Groups;
/// # use std::time::Duration;
/// # let snapshot = Snapshot {
/// #     decisions: Decisions { records: 3, allow: 2, deny: 1, other: 0, emit_time: Duration::from_nanos(1_999) },
/// #     groups: Groups::SCION,
/// #     ..Snapshot::default()
/// # };
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
    push(suffix::ENDPOINT, snapshot.endpoint.to_owned());
    push(
        suffix::PHASES,
        pairs(&snapshot.phases, |s| micros(s.duration)),
    );
    push(suffix::PHASE_COUNTS, pairs(&snapshot.phases, |s| s.count));
    push(
        suffix::STORE_CALLS,
        pairs(&snapshot.store_calls, |s| s.count),
    );
    push(
        suffix::STORE_US,
        pairs(&snapshot.store_calls, |s| micros(s.duration)),
    );
    let groups = snapshot.groups;
    if groups.decisions {
        let d = &snapshot.decisions;
        push(
            suffix::DECISIONS,
            scion::decisions_value(d.records, d.allow, d.deny, d.other, micros(d.emit_time)),
        );
    }
    if let Some(db) = snapshot.db.as_ref().filter(|_| groups.pool) {
        push(
            suffix::DB,
            scion::db_value(db.wait_count, micros(db.wait_time), db.in_use, db.open),
        );
    }
    for set in &snapshot.counters {
        let mut value = String::new();
        for (i, counter) in set.values.iter().enumerate() {
            if i > 0 {
                value.push(',');
            }
            value.extend(counter.rendered_bytes().map(char::from));
            value.push('=');
            value.push_str(itoa::Buffer::new().format(counter.value));
        }
        push(set.set.header, value);
    }
    for set in &snapshot.timers {
        push(set.set.header, pairs(&set.stats, |s| micros(s.duration)));
        push(set.set.header_counts, pairs(&set.stats, |s| s.count));
    }
    headers
}
