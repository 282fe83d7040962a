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
        out.clear();
        let mut w = JsonObject::new(out);
        w.raw_key("time");
        // humantime writes RFC 3339 with nanoseconds and `Z`; infallible into a String.
        w.out.push('"');
        let _ = write!(w.out, "{}", humantime::format_rfc3339_nanos(time));
        w.out.push('"');
        w.str("level", "INFO");
        w.str(self.message_key(), "perf_trace");
        w.str("component", &self.component);
        w.str("subsystem", "hub.perf-trace");
        w.str("endpoint", snapshot.endpoint);
        w.us("elapsed_us", snapshot.elapsed);
        for phase in &snapshot.phases {
            w.key_parts("phase_", phase.name, "_us");
            w.int(micros(phase.duration));
            w.key_parts("phase_", phase.name, "_n");
            w.int(phase.count);
        }
        for store in &snapshot.store_calls {
            w.key_parts("store_", store.name, "_n");
            w.int(store.count);
            w.key_parts("store_", store.name, "_us");
            w.int(micros(store.duration));
        }
        w.u64("authz_store_calls", snapshot.authz_store_calls);
        w.us("authz_store_us", snapshot.authz_store_time);
        let d = &snapshot.decisions;
        w.u64("audit_records", d.records);
        w.u64("audit_allow", d.allow);
        w.u64("audit_deny", d.deny);
        w.u64("audit_other", d.other);
        w.us("audit_emit_us", d.emit_time);
        if snapshot.sse_events > 0 {
            w.u64("sse_events", snapshot.sse_events);
        }
        if let Some(db) = &snapshot.db {
            w.u64("db_wait_count", db.wait_count);
            w.us("db_wait_us", db.wait_time);
            w.u64("db_in_use", db.in_use);
            w.u64("db_open", db.open);
        }
        if let Some(stage) = snapshot.sse_stage {
            w.str("sse_stage", stage.as_str());
        }
        w.str("method", snapshot.method);
        if !snapshot.request_id.is_empty() {
            w.str("request_id", &snapshot.request_id);
        }
        w.out.push('}');
    }
}

/// Whole microseconds, truncated.
#[inline]
pub(crate) fn micros(d: Duration) -> u64 {
    (d.as_nanos() / 1_000) as u64
}

/// Appends keys and values of one JSON object without building a map.
struct JsonObject<'a> {
    out: &'a mut String,
    first: bool,
}

impl<'a> JsonObject<'a> {
    fn new(out: &'a mut String) -> Self {
        out.push('{');
        JsonObject { out, first: true }
    }

    fn separator(&mut self) {
        if !std::mem::take(&mut self.first) {
            self.out.push(',');
        }
    }

    /// A key known to need no escaping.
    fn raw_key(&mut self, key: &str) {
        self.separator();
        self.out.push('"');
        self.out.push_str(key);
        self.out.push_str("\":");
    }

    /// A key made of a prefix, a key-set name (validated at compile time to
    /// need no escaping) and a suffix.
    fn key_parts(&mut self, prefix: &str, name: &str, suffix: &str) {
        self.separator();
        self.out.push('"');
        self.out.push_str(prefix);
        self.out.push_str(name);
        self.out.push_str(suffix);
        self.out.push_str("\":");
    }

    fn int(&mut self, v: u64) {
        self.out.push_str(itoa::Buffer::new().format(v));
    }

    fn u64(&mut self, key: &str, v: u64) {
        self.raw_key(key);
        self.int(v);
    }

    fn us(&mut self, key: &str, d: Duration) {
        self.u64(key, micros(d));
    }

    fn str(&mut self, key: &str, v: &str) {
        self.raw_key(key);
        push_json_string(self.out, v);
    }
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
