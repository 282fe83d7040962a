//! The `perf_trace` log line: one JSON object, keys in the fixed order of the
//! contract, integers only, microseconds truncated; and the perf response
//! headers ([`render_headers`]), the same figures for callers allowed to see
//! them. The Scion contract's names are in [`scion`].

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use crate::keys::{Groups, KeySetInfo};
use crate::record::pool::DbFigures;
use crate::snapshot::{Decisions, Snapshot, SseStage};

mod headers;
pub mod scion;
pub(crate) mod writer;

pub use headers::{render_headers, PerfHeader};
pub(crate) use writer::LineWriter;

/// A profile: what a service's lines and headers are called.
///
/// [`LineFormat::plain`] is a service's own profile: headers `X-Perf-*`
/// until [`header_prefix`](LineFormat::header_prefix) names them, the store
/// total as `store_calls` / `store_us`, and the response's `status` on
/// every line. [`LineFormat::scion`] is the Scion contract's (subsystem
/// `hub.perf-trace`, headers `X-Scion-Perf-*`, the store total as
/// `authz_store_calls` / `authz_store_us`, no `status`), used with
/// [`Groups::SCION`](crate::keys::Groups::SCION). Which optional fields a
/// line has is the schema's business ([`Groups`]), not the profile's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineFormat {
    component: Cow<'static, str>,
    subsystem: Cow<'static, str>,
    gcp: bool,
    /// What follows the time in every line, up to the endpoint: level,
    /// message, component and subsystem, escaped once here.
    head: String,
    header_prefix: Cow<'static, str>,
    request_id_header: Cow<'static, str>,
    /// The Scion contract's field names (`authz_store_*`) and no `status`.
    scion: bool,
}

/// A header prefix or name that cannot name an HTTP header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidHeaderName(pub String);

impl std::fmt::Display for InvalidHeaderName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:?} cannot start an HTTP header name: use ASCII letters, digits and `-`",
            self.0
        )
    }
}

impl std::error::Error for InvalidHeaderName {}

/// `name`, when it is made of HTTP token characters only (and not empty),
/// so that it can name an HTTP header or start one's name.
fn header_token(
    name: impl Into<Cow<'static, str>>,
) -> Result<Cow<'static, str>, InvalidHeaderName> {
    let name = name.into();
    let token = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if token {
        Ok(name)
    } else {
        Err(InvalidHeaderName(name.into_owned()))
    }
}

impl LineFormat {
    /// The Scion contract's profile for `component` (the Hub uses `scion-hub`).
    pub fn scion(component: impl Into<Cow<'static, str>>) -> Self {
        LineFormat {
            component: component.into(),
            subsystem: Cow::Borrowed(scion::SUBSYSTEM),
            gcp: false,
            header_prefix: Cow::Borrowed(scion::HEADER_PREFIX),
            request_id_header: Cow::Borrowed(scion::REQUEST_ID_HEADER),
            head: String::new(),
            scion: true,
        }
        .with_head()
    }

    /// A service's own profile: its component and subsystem, headers
    /// `X-Perf-*` (see [`header_prefix`](Self::header_prefix)), the request
    /// id in `X-Request-ID`.
    ///
    /// ```
    /// use perf_trace_core::LineFormat;
    /// let format = LineFormat::plain("orders-api", "orders.perf")
    ///     .header_prefix("X-Orders-Perf-")
    ///     .expect("a valid prefix");
    /// assert_eq!(format.subsystem(), "orders.perf");
    /// assert_eq!(format.header_name("Endpoint"), "X-Orders-Perf-Endpoint");
    /// assert!(LineFormat::plain("a", "b").header_prefix("X Perf").is_err());
    /// ```
    pub fn plain(
        component: impl Into<Cow<'static, str>>,
        subsystem: impl Into<Cow<'static, str>>,
    ) -> Self {
        LineFormat {
            component: component.into(),
            subsystem: subsystem.into(),
            gcp: false,
            header_prefix: Cow::Borrowed("X-Perf-"),
            request_id_header: Cow::Borrowed(scion::REQUEST_ID_HEADER),
            head: String::new(),
            scion: false,
        }
        .with_head()
    }

    /// Switches the message key to `message` (GCP format) when `gcp` is true.
    pub fn gcp(mut self, gcp: bool) -> Self {
        self.gcp = gcp;
        self.with_head()
    }

    fn with_head(mut self) -> Self {
        let mut head = String::from(if self.gcp {
            "\",\"level\":\"INFO\",\"message\":\"perf_trace\",\"component\":"
        } else {
            "\",\"level\":\"INFO\",\"msg\":\"perf_trace\",\"component\":"
        });
        {
            let head = &mut LineWriter::new(&mut head, 0);
            push_json_string(head, &self.component);
            head.str(",\"subsystem\":");
            push_json_string(head, &self.subsystem);
        }
        self.head = head;
        self
    }

    /// Names the headers `{prefix}Endpoint`, `{prefix}Phases`, ... and the
    /// trigger header `{prefix}Trace`. A prefix that cannot start a header
    /// name is refused and the format is dropped.
    pub fn header_prefix(
        mut self,
        prefix: impl Into<Cow<'static, str>>,
    ) -> Result<Self, InvalidHeaderName> {
        self.header_prefix = header_token(prefix)?;
        Ok(self)
    }

    /// Names the response header that carries the request id.
    pub fn request_id_header(
        mut self,
        name: impl Into<Cow<'static, str>>,
    ) -> Result<Self, InvalidHeaderName> {
        self.request_id_header = header_token(name)?;
        Ok(self)
    }

    /// The `component` value.
    pub fn component(&self) -> &str {
        &self.component
    }

    /// The `subsystem` value.
    pub fn subsystem(&self) -> &str {
        &self.subsystem
    }

    /// The full name of the header with `suffix` (`Endpoint`, `Trace`, ...).
    pub fn header_name(&self, suffix: &str) -> String {
        format!("{}{suffix}", self.header_prefix)
    }

    /// Whether this is the Scion contract's profile, whose request id is
    /// always the layer's own random one.
    pub(crate) fn is_scion(&self) -> bool {
        self.scion
    }

    /// The name of the response header that carries the request id.
    pub fn request_id_header_name(&self) -> &str {
        &self.request_id_header
    }

    /// Renders `snapshot` as one line (without the trailing newline) into
    /// `out`, which is cleared first.
    ///
    /// The order is fixed: `time, level, msg, component, subsystem,
    /// endpoint, elapsed_us`, the phases, the store methods, then the
    /// schema's groups (store total, decisions, `sse_events`, `db_*`), the
    /// counter sets and the timer sets (non-zero keys only, each set sorted
    /// by name, in the schema's order), `sse_stage`, `method`, `status`
    /// (plain profile, when known), `request_id`.
    ///
    /// ```
    /// use perf_trace_core::keys::Groups;
    /// use perf_trace_core::{LineFormat, Snapshot};
    /// # use std::time::{Duration, UNIX_EPOCH};
    /// let snapshot = Snapshot {
    ///     elapsed: Duration::from_nanos(12_999),
    ///     method: "GET",
    ///     status: Some(404),
    ///     ..Snapshot::default()
    /// };
    /// let mut line = String::new();
    /// LineFormat::plain("inventory", "inventory.perf").render(&snapshot, UNIX_EPOCH, &mut line);
    /// assert_eq!(
    ///     line,
    ///     r#"{"time":"1970-01-01T00:00:00.000000000Z","level":"INFO","msg":"perf_trace","component":"inventory","subsystem":"inventory.perf","endpoint":"other","elapsed_us":12,"method":"GET","status":404}"#
    /// );
    ///
    /// // The Scion contract's line: every group, its own names, no status.
    /// let snapshot = Snapshot { groups: Groups::SCION, ..snapshot };
    /// LineFormat::scion("scion-hub").render(&snapshot, UNIX_EPOCH, &mut line);
    /// assert_eq!(
    ///     line,
    ///     r#"{"time":"1970-01-01T00:00:00.000000000Z","level":"INFO","msg":"perf_trace","component":"scion-hub","subsystem":"hub.perf-trace","endpoint":"other","elapsed_us":12,"authz_store_calls":0,"authz_store_us":0,"audit_records":0,"audit_allow":0,"audit_deny":0,"audit_other":0,"audit_emit_us":0,"method":"GET"}"#
    /// );
    /// ```
    pub fn render(&self, snapshot: &Snapshot, time: SystemTime, out: &mut String) {
        out.clear();
        self.render_onto(snapshot, crate::timestamp::epoch_nanos(time), out);
    }

    /// [`render`](Self::render), appending to what `out` holds; from a
    /// snapshot or straight from a finished request's recorder, stamped
    /// `epoch_nanos` nanoseconds after the epoch.
    pub(crate) fn render_onto(&self, line: &impl LineSource, epoch_nanos: u64, out: &mut String) {
        // Fixed keys are written as one literal each, separators and quotes
        // included: the line is mostly keys, and each write costs a copy.
        let out = &mut LineWriter::new(out, 1024);
        out.str("{\"time\":\"");
        crate::timestamp::push_rfc3339_nanos(out, epoch_nanos);
        out.str(&self.head);
        out.str(",\"endpoint\":");
        let endpoint = line.endpoint();
        if line.endpoint_is_plain() {
            push_plain_json_string(out, endpoint);
        } else {
            push_json_string(out, endpoint);
        }
        out.field(",\"elapsed_us\":", line.elapsed_us());
        line.phases(|name, count, us| match name {
            FieldName::Keys(keys) => out.two_fields(keys, [us, count]),
            // Key-set names are checked at compile time to need no escaping.
            FieldName::Name(name) => named_phase(out, name, us, count),
        });
        line.store_calls(|name, count, us| match name {
            FieldName::Keys(keys) => out.two_fields(keys, [count, us]),
            FieldName::Name(name) => named_store(out, name, count, us),
        });
        let groups = line.groups();
        if groups.store_total {
            let (calls, us) = line.store_total();
            let [zero, calls_key, us_key] = if self.scion {
                SCION_STORE_TOTAL
            } else {
                PLAIN_STORE_TOTAL
            };
            if calls == 0 && us == 0 {
                // A request with no store call (a cache hit) is common: its
                // fields, all zero, are one copy.
                out.str(zero);
            } else {
                out.field(calls_key, calls);
                out.field(us_key, us);
            }
        }
        if groups.decisions {
            let d = line.decisions();
            if d == Decisions::default() {
                out.str(NO_DECISIONS);
            } else {
                for (key, value) in [
                    (",\"audit_records\":", d.records),
                    (",\"audit_allow\":", d.allow),
                    (",\"audit_deny\":", d.deny),
                    (",\"audit_other\":", d.other),
                    (",\"audit_emit_us\":", micros(d.emit_time)),
                ] {
                    out.field(key, value);
                }
            }
        }
        if groups.sse {
            let events = line.sse_events();
            if events > 0 {
                out.field(",\"sse_events\":", events);
            }
        }
        if let Some(db) = line.db().filter(|_| groups.pool) {
            let wait_us = micros(db.wait_time);
            if db.wait_count == 0 && wait_us == 0 {
                // A request that waited for no connection is the rule.
                out.str(",\"db_wait_count\":0,\"db_wait_us\":0");
            } else {
                out.field(",\"db_wait_count\":", db.wait_count);
                out.field(",\"db_wait_us\":", wait_us);
            }
            out.field(",\"db_in_use\":", db.in_use);
            out.field(",\"db_open\":", db.open);
        }
        line.counters(|name, value| match name {
            CounterName::Key(key) => out.field(key, value),
            CounterName::Name { set, by, name } => named_counter(out, set.prefix, by, name, value),
        });
        line.timers(|set, name, count, us| match name {
            FieldName::Keys(keys) => out.two_fields(keys, [us, count]),
            FieldName::Name(name) => named_timer(out, set.prefix, name, us, count),
        });
        if let Some(stage) = line.sse_stage().filter(|_| groups.sse) {
            out.str(",\"sse_stage\":\"");
            out.str(stage.as_str());
            out.byte(b'"');
        }
        out.str(",\"method\":");
        if line.method_is_plain() {
            push_plain_json_string(out, line.method());
        } else {
            push_json_string(out, line.method());
        }
        if let Some(status) = line.status().filter(|_| !self.scion) {
            out.field(",\"status\":", u64::from(status));
        }
        let request_id = line.request_id();
        if !request_id.is_empty() {
            out.str(",\"request_id\":");
            if line.request_id_is_plain() {
                push_plain_json_string(out, request_id);
            } else {
                push_json_string(out, request_id);
            }
        }
        out.byte(b'}');
    }
}

/// A phase's two fields, `,"phase_<name>_us":<us>,"phase_<name>_n":<n>`,
/// for a key whose JSON keys were not rendered for the schema: every
/// phase of a snapshot's line, none of a finished request's. Called, never
/// inlined, as are the store's and a timer's below, so that the
/// renderer's code, which a loaded service fetches afresh for every line,
/// holds the finished request's path only; within each, the copies are
/// inlined and all but the name's of a known length (copied through
/// calls, or with lengths known only at run time, they made the seed's
/// line a third slower).
#[inline(never)]
fn named_phase(out: &mut LineWriter<'_>, name: &str, us: u64, n: u64) {
    named_fields(out, [",\"phase_"], name, [("_us\":", us), ("_n\":", n)]);
}

/// A store method's two fields, `,"store_<name>_n":<n>,"store_<name>_us":<us>`,
/// as [`named_phase`] writes a phase's.
#[inline(never)]
fn named_store(out: &mut LineWriter<'_>, name: &str, n: u64, us: u64) {
    named_fields(out, [",\"store_"], name, [("_n\":", n), ("_us\":", us)]);
}

/// A timer's two fields, `,"<prefix>_<name>_us":<us>,"<prefix>_<name>_n":<n>`,
/// as [`named_phase`] writes a phase's.
#[inline(never)]
fn named_timer(out: &mut LineWriter<'_>, prefix: &str, name: &str, us: u64, n: u64) {
    let head = [",\"", prefix, "_"];
    named_fields(out, head, name, [("_us\":", us), ("_n\":", n)]);
}

/// Fields `<head><name><suffix><value>`, the head in pieces: inlined,
/// so that the pieces and suffixes that are literals copy with their
/// lengths known.
#[inline(always)]
fn named_fields<const N: usize>(
    out: &mut LineWriter<'_>,
    head: [&str; N],
    name: &str,
    fields: [(&str, u64); 2],
) {
    for (suffix, value) in fields {
        for piece in head {
            out.str_inline(piece);
        }
        out.str_inline(name);
        out.str_inline(suffix);
        out.int(value);
    }
}

/// A counter's field whose JSON key was not rendered for the schema (every
/// counter of a snapshot's line); called, with its copies inlined, as
/// [`named_phase`] is.
#[inline(never)]
fn named_counter(out: &mut LineWriter<'_>, prefix: &str, by: Option<&str>, name: &str, value: u64) {
    out.str_inline(",\"");
    out.str_inline(prefix);
    out.byte(b'_');
    if let Some(by) = by {
        out.str_inline(by);
        out.byte(b'_');
    }
    out.str_inline(name);
    out.str_inline("\":");
    out.int(value);
}

/// A timed field's name as a [`LineSource`] gives it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FieldName {
    /// The key's name: the renderer writes the prefix and suffixes around it.
    Name(&'static str),
    /// The field's two JSON keys in line order, separators included,
    /// rendered once for the schema.
    Keys((&'static str, &'static str)),
}

/// A counter's name as a [`LineSource`] gives it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum CounterName {
    /// The set, the `by` key of a paired set, and the key: the renderer
    /// writes `,"<prefix>_<by>_<key>":` from them.
    Name {
        set: &'static KeySetInfo,
        by: Option<&'static str>,
        name: &'static str,
    },
    /// The counter's JSON key, separator included, rendered once for the schema.
    Key(&'static str),
}

/// What a line is rendered from, field by field, in the line's order: a
/// [`Snapshot`], or a finished request's recorder read in place, which
/// builds no lists (the line of every request that has no exit).
pub(crate) trait LineSource {
    fn endpoint(&self) -> &str;
    /// Whether the endpoint is a key set's name (checked at compile time to
    /// need no escaping).
    fn endpoint_is_plain(&self) -> bool;
    /// The request's time, in whole microseconds (as every time below:
    /// the line's unit, taken straight from a recorder's ticks).
    fn elapsed_us(&self) -> u64;
    /// Each phase entered at least once, by name: its name or keys, count,
    /// time.
    fn phases(&self, each: impl FnMut(FieldName, u64, u64));
    /// Each store method called at least once, by name: its name or keys,
    /// count, time.
    fn store_calls(&self, each: impl FnMut(FieldName, u64, u64));
    /// Store calls and time over all methods.
    fn store_total(&self) -> (u64, u64);
    fn decisions(&self) -> Decisions;
    fn sse_events(&self) -> u64;
    fn db(&self) -> Option<DbFigures>;
    /// Each non-zero counter, the sets in the schema's order, each set by
    /// rendered name: its name or key, value.
    fn counters(&self, each: impl FnMut(CounterName, u64));
    /// Each timer entered at least once, the sets in the schema's order,
    /// each by name: set, its name or keys, count, time.
    fn timers(&self, each: impl FnMut(&'static KeySetInfo, FieldName, u64, u64));
    fn sse_stage(&self) -> Option<SseStage>;
    fn method(&self) -> &str;
    /// Whether the method is known to need no escaping (one the layer named).
    fn method_is_plain(&self) -> bool;
    fn request_id(&self) -> &str;
    /// Whether the request id is known to need no escaping (one the layer drew).
    fn request_id_is_plain(&self) -> bool;
    /// The response's status, when known.
    fn status(&self) -> Option<u16>;
    fn groups(&self) -> Groups;
}

impl LineSource for Snapshot {
    fn endpoint(&self) -> &str {
        self.endpoint
    }

    fn endpoint_is_plain(&self) -> bool {
        // A snapshot's fields are anyone's to set.
        false
    }

    fn elapsed_us(&self) -> u64 {
        micros(self.elapsed)
    }

    fn phases(&self, mut each: impl FnMut(FieldName, u64, u64)) {
        for phase in &self.phases {
            each(
                FieldName::Name(phase.name),
                phase.count,
                micros(phase.duration),
            );
        }
    }

    fn store_calls(&self, mut each: impl FnMut(FieldName, u64, u64)) {
        for store in &self.store_calls {
            each(
                FieldName::Name(store.name),
                store.count,
                micros(store.duration),
            );
        }
    }

    fn store_total(&self) -> (u64, u64) {
        (self.authz_store_calls, micros(self.authz_store_time))
    }

    fn decisions(&self) -> Decisions {
        self.decisions
    }

    fn sse_events(&self) -> u64 {
        self.sse_events
    }

    fn db(&self) -> Option<DbFigures> {
        self.db
    }

    fn counters(&self, mut each: impl FnMut(CounterName, u64)) {
        for set in &self.counters {
            for counter in &set.values {
                let name = CounterName::Name {
                    set: set.set,
                    by: counter.by,
                    name: counter.name,
                };
                each(name, counter.value);
            }
        }
    }

    fn timers(&self, mut each: impl FnMut(&'static KeySetInfo, FieldName, u64, u64)) {
        for set in &self.timers {
            for timer in &set.stats {
                each(
                    set.set,
                    FieldName::Name(timer.name),
                    timer.count,
                    micros(timer.duration),
                );
            }
        }
    }

    fn sse_stage(&self) -> Option<SseStage> {
        self.sse_stage
    }

    fn method(&self) -> &str {
        self.method
    }

    fn method_is_plain(&self) -> bool {
        false
    }

    fn request_id(&self) -> &str {
        &self.request_id
    }

    fn request_id_is_plain(&self) -> bool {
        false
    }

    fn status(&self) -> Option<u16> {
        self.status
    }

    fn groups(&self) -> Groups {
        self.groups
    }
}

/// The store total's fields in the Scion profile: both zero, the calls'
/// key, the time's key.
const SCION_STORE_TOTAL: [&str; 3] = [
    ",\"authz_store_calls\":0,\"authz_store_us\":0",
    ",\"authz_store_calls\":",
    ",\"authz_store_us\":",
];

/// The store total's fields in a plain profile, as [`SCION_STORE_TOTAL`].
const PLAIN_STORE_TOTAL: [&str; 3] = [
    ",\"store_calls\":0,\"store_us\":0",
    ",\"store_calls\":",
    ",\"store_us\":",
];

/// The decision fields of a request that made none, in line order.
const NO_DECISIONS: &str =
    ",\"audit_records\":0,\"audit_allow\":0,\"audit_deny\":0,\"audit_other\":0,\"audit_emit_us\":0";

/// Whole microseconds, truncated.
#[inline]
pub(crate) fn micros(d: Duration) -> u64 {
    // Not `as_nanos() / 1_000`: a 128-bit division is a call, per field.
    d.as_secs()
        .saturating_mul(1_000_000)
        .saturating_add(u64::from(d.subsec_micros()))
}

/// Whether any byte of `s` must be escaped in a JSON string (a control
/// character, `"` or `\`), eight bytes at a time: the line's strings (the
/// request id above all) almost never do, and a byte-by-byte scan was a
/// tenth of the line's cost.
pub(crate) fn needs_escape(s: &str) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // Whether a byte of `x` is below `n` (`n` at most 0x80); exact.
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGHS != 0;
    let any_is = |x: u64, b: u64| below(x ^ (ONES * b), 1);
    let mut chunks = s.as_bytes().chunks_exact(8);
    for chunk in chunks.by_ref() {
        let x = u64::from_ne_bytes(chunk.try_into().expect("eight bytes"));
        if below(x, 0x20) || any_is(x, u64::from(b'"')) || any_is(x, u64::from(b'\\')) {
            return true;
        }
    }
    chunks
        .remainder()
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

/// Appends `s`, known to need no escaping, as a JSON string literal.
#[inline(always)]
fn push_plain_json_string(out: &mut LineWriter<'_>, s: &str) {
    debug_assert!(!needs_escape(s), "{s:?}");
    out.byte(b'"');
    out.str(s);
    out.byte(b'"');
}

/// Writes the library's own trouble to standard error as one JSON line,
/// `{"level":..,"msg":..}` and the fields after them, each escaped as a
/// line's strings are (what is said when no `tracing` subscriber or
/// service hook takes it).
pub(crate) fn report_on_stderr(level: &str, fields: &[(&str, &str)]) {
    use std::io::Write;
    let mut text = String::new();
    {
        let out = &mut LineWriter::new(&mut text, 128);
        out.str("{\"level\":");
        push_json_string(out, level);
        for (name, value) in fields {
            out.byte(b',');
            push_json_string(out, name);
            out.byte(b':');
            push_json_string(out, value);
        }
        out.str("}\n");
    }
    let _ = std::io::stderr().write_all(text.as_bytes());
}

pub(crate) fn push_json_string(out: &mut LineWriter<'_>, s: &str) {
    // Names, classes and ids almost never need escaping: one scan, one copy.
    if !needs_escape(s) {
        push_plain_json_string(out, s);
        return;
    }
    out.byte(b'"');
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
        out.str(&s[start..i]);
        match escape {
            Some(e) => out.str(e),
            None => {
                let hex = b"0123456789abcdef";
                out.str("\\u00");
                out.byte(hex[usize::from(b >> 4)]);
                out.byte(hex[usize::from(b & 0xf)]);
            }
        }
        start = i + 1;
    }
    out.str(&s[start..]);
    out.byte(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte-by-byte rule the word-at-a-time scan must agree with.
    fn needs_escape_bytewise(s: &str) -> bool {
        s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\')
    }

    #[test]
    fn the_word_scan_finds_every_byte_that_needs_escaping_wherever_it_is() {
        // Every byte value below 0x80, at every position of strings of 0 to
        // 19 bytes (across two words and a remainder), among bytes that
        // come close to the boundaries (0x1f..0x21, 0x5b..0x5d, 0x7f) and
        // beside multi-byte characters.
        let fillers = ["a", "!", "#", "[", "]", "\u{7f}", "é", "😀"];
        for len in 0..20 {
            for filler in fillers {
                let base: String = filler.repeat(len);
                assert!(!needs_escape(&base), "{base:?}");
                for at in 0..len {
                    for b in 0u8..0x80 {
                        let mut s: String = filler.repeat(at);
                        s.push(char::from(b));
                        s.push_str(&filler.repeat(len - at - 1));
                        assert_eq!(needs_escape(&s), needs_escape_bytewise(&s), "{s:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn escaped_strings_are_valid_json_strings_of_the_same_text() {
        for s in [
            "",
            "plain",
            "a\"b",
            "back\\slash",
            "line\nbreak",
            "\u{1}\u{1f}",
            "é😀",
        ] {
            let mut out = String::new();
            push_json_string(&mut LineWriter::new(&mut out, 0), s);
            assert_eq!(serde_json::from_str::<String>(&out).unwrap(), s);
        }
    }
}
