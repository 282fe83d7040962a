//! The `perf_trace` log line: one JSON object, keys in the fixed order of the
//! contract, integers only, microseconds truncated.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

use crate::snapshot::Snapshot;

/// How lines are rendered: the service's component name and the message key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineFormat {
    /// The `component` value (the Hub uses `scion-hub`).
    pub component: Cow<'static, str>,
    /// GCP log format: the message goes under `message` instead of `msg`.
    pub gcp: bool,
}

impl LineFormat {
    /// A default-format line for `component`.
    pub fn new(component: impl Into<Cow<'static, str>>) -> Self {
        LineFormat {
            component: component.into(),
            gcp: false,
        }
    }

    /// Switches the message key to `message` (GCP format) when `gcp` is true.
    pub fn gcp(mut self, gcp: bool) -> Self {
        self.gcp = gcp;
        self
    }

    /// The message key: `msg`, or `message` in GCP format.
    pub fn message_key(&self) -> &'static str {
        if self.gcp {
            "message"
        } else {
            "msg"
        }
    }

    /// Renders `snapshot` as one line (without the trailing newline) into
    /// `out`, which is cleared first.
    ///
    /// ```
    /// use perf_trace_core::{LineFormat, Snapshot};
    /// # use perf_trace_core::Decisions;
    /// # use std::time::{Duration, UNIX_EPOCH};
    /// let snapshot = Snapshot {
    ///     endpoint: "other",
    ///     elapsed: Duration::from_nanos(12_999),
    ///     phases: vec![],
    ///     store_calls: vec![],
    ///     authz_store_calls: 0,
    ///     authz_store_time: Duration::ZERO,
    ///     decisions: Decisions::default(),
    ///     sse_events: 0,
    ///     db: None,
    ///     sse_stage: None,
    ///     method: "GET",
    ///     request_id: String::new(),
    /// };
    /// let mut line = String::new();
    /// LineFormat::new("scion-hub").render(&snapshot, UNIX_EPOCH, &mut line);
    /// assert_eq!(
    ///     line,
    ///     r#"{"time":"1970-01-01T00:00:00.000000000Z","level":"INFO","msg":"perf_trace","component":"scion-hub","subsystem":"hub.perf-trace","endpoint":"other","elapsed_us":12,"authz_store_calls":0,"authz_store_us":0,"audit_records":0,"audit_allow":0,"audit_deny":0,"audit_other":0,"audit_emit_us":0,"method":"GET"}"#
    /// );
    /// ```
    pub fn render(&self, snapshot: &Snapshot, time: SystemTime, out: &mut String) {
        // Fixed keys are written as one literal each, separators and quotes
        // included: the line is mostly keys, and each push costs a copy.
        out.clear();
        out.reserve(1024);
        out.push_str("{\"time\":\"");
        crate::timestamp::push_rfc3339_nanos(out, time);
        out.push_str(if self.gcp {
            "\",\"level\":\"INFO\",\"message\":\"perf_trace\",\"component\":"
        } else {
            "\",\"level\":\"INFO\",\"msg\":\"perf_trace\",\"component\":"
        });
        push_json_string(out, &self.component);
        out.push_str(",\"subsystem\":\"hub.perf-trace\",\"endpoint\":");
        push_json_string(out, snapshot.endpoint);
        out.push_str(",\"elapsed_us\":");
        push_int(out, micros(snapshot.elapsed));
        for phase in &snapshot.phases {
            // Key-set names are checked at compile time to need no escaping.
            out.push_str(",\"phase_");
            out.push_str(phase.name);
            out.push_str("_us\":");
            push_int(out, micros(phase.duration));
            out.push_str(",\"phase_");
            out.push_str(phase.name);
            out.push_str("_n\":");
            push_int(out, phase.count);
        }
        for store in &snapshot.store_calls {
            out.push_str(",\"store_");
            out.push_str(store.name);
            out.push_str("_n\":");
            push_int(out, store.count);
            out.push_str(",\"store_");
            out.push_str(store.name);
            out.push_str("_us\":");
            push_int(out, micros(store.duration));
        }
        let d = &snapshot.decisions;
        for (key, value) in [
            (",\"authz_store_calls\":", snapshot.authz_store_calls),
            (",\"authz_store_us\":", micros(snapshot.authz_store_time)),
            (",\"audit_records\":", d.records),
            (",\"audit_allow\":", d.allow),
            (",\"audit_deny\":", d.deny),
            (",\"audit_other\":", d.other),
            (",\"audit_emit_us\":", micros(d.emit_time)),
        ] {
            out.push_str(key);
            push_int(out, value);
        }
        if snapshot.sse_events > 0 {
            out.push_str(",\"sse_events\":");
            push_int(out, snapshot.sse_events);
        }
        if let Some(db) = &snapshot.db {
            for (key, value) in [
                (",\"db_wait_count\":", db.wait_count),
                (",\"db_wait_us\":", micros(db.wait_time)),
                (",\"db_in_use\":", db.in_use),
                (",\"db_open\":", db.open),
            ] {
                out.push_str(key);
                push_int(out, value);
            }
        }
        if let Some(stage) = snapshot.sse_stage {
            out.push_str(",\"sse_stage\":\"");
            out.push_str(stage.as_str());
            out.push('"');
        }
        out.push_str(",\"method\":");
        push_json_string(out, snapshot.method);
        if !snapshot.request_id.is_empty() {
            out.push_str(",\"request_id\":");
            push_json_string(out, &snapshot.request_id);
        }
        out.push('}');
    }
}

#[inline]
fn push_int(out: &mut String, value: u64) {
    // Most counts are single digits.
    if value < 10 {
        out.push(char::from(b'0' + value as u8));
    } else {
        out.push_str(itoa::Buffer::new().format(value));
    }
}

/// Whole microseconds, truncated.
#[inline]
pub(crate) fn micros(d: Duration) -> u64 {
    (d.as_nanos() / 1_000) as u64
}

/// Appends `s` as a JSON string literal.
pub(crate) fn push_json_string(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0..=0x1f => None,
            _ => continue,
        };
        out.push_str(&s[start..i]);
        match escape {
            Some(e) => out.push_str(e),
            None => {
                let _ = write!(out, "\\u{:04x}", b);
            }
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}
