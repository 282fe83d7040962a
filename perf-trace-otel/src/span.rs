//! One finished request as one OpenTelemetry SERVER span: named by its
//! endpoint class, the line's figures as attributes, parented from the
//! caller's `traceparent`.
//!
//! Attributes are the line's numeric fields under `perf_trace.` (the same
//! names: `perf_trace.elapsed_us`, `perf_trace.phase_list_db_read_us`, ...),
//! `perf_trace.endpoint`, `perf_trace.request_id` (random per request, to
//! join a span to its line), `perf_trace.sse_stage` on stream lines, and
//! `http.request.method` / `http.response.status_code`. Never a path, a
//! query, an identity or a token: the snapshot holds none.
//!
//! Phases are attributes, not child spans: the recorder keeps a count and a
//! total per phase in a fixed table, not each entry's offsets, and a phase
//! can be entered thousands of times in one request (one per audited
//! decision), so child spans would need a growing buffer per request on
//! the recording path that the table was built to avoid.

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator, SpanData, SpanEvents, SpanLinks};
use perf_trace_core::exits::RequestFacts;
use perf_trace_core::snapshot::KeyStat;
use perf_trace_core::Snapshot;

/// A finished request, owned, on its way to the export thread.
#[derive(Debug, Clone)]
pub(crate) struct Finished {
    pub snapshot: Snapshot,
    pub facts: RequestFacts,
    pub end_time: SystemTime,
}

fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A phase's, store method's or timer's time and entries, as the line
/// names them: `perf_trace.{prefix}_{name}_us`, then `..._n`.
fn time_and_count(prefix: &str, stat: &KeyStat) -> [(String, i64); 2] {
    [
        (
            format!("perf_trace.{prefix}_{}_us", stat.name),
            micros(stat.duration),
        ),
        (
            format!("perf_trace.{prefix}_{}_n", stat.name),
            count(stat.count),
        ),
    ]
}

/// The attributes of a span: see the [module](self).
pub(crate) fn attributes(snapshot: &Snapshot, facts: &RequestFacts) -> Vec<KeyValue> {
    let mut out = Vec::with_capacity(16 + 2 * (snapshot.phases.len() + snapshot.store_calls.len()));
    let mut int = |name: String, value: i64| out.push(KeyValue::new(name, value));
    int("perf_trace.elapsed_us".into(), micros(snapshot.elapsed));
    for phase in &snapshot.phases {
        for (name, value) in time_and_count("phase", phase) {
            int(name, value);
        }
    }
    for call in &snapshot.store_calls {
        // The line names a store method's count before its time.
        for (name, value) in time_and_count("store", call).into_iter().rev() {
            int(name, value);
        }
    }
    let groups = snapshot.groups;
    if groups.store_total {
        int(
            "perf_trace.authz_store_calls".into(),
            count(snapshot.authz_store_calls),
        );
        int(
            "perf_trace.authz_store_us".into(),
            micros(snapshot.authz_store_time),
        );
    }
    if groups.decisions {
        let d = &snapshot.decisions;
        int("perf_trace.audit_records".into(), count(d.records));
        int("perf_trace.audit_allow".into(), count(d.allow));
        int("perf_trace.audit_deny".into(), count(d.deny));
        int("perf_trace.audit_other".into(), count(d.other));
        int("perf_trace.audit_emit_us".into(), micros(d.emit_time));
    }
    if snapshot.sse_events > 0 {
        int("perf_trace.sse_events".into(), count(snapshot.sse_events));
    }
    if let Some(db) = snapshot.db.as_ref().filter(|_| groups.pool) {
        int("perf_trace.db_wait_count".into(), count(db.wait_count));
        int("perf_trace.db_wait_us".into(), micros(db.wait_time));
        int("perf_trace.db_in_use".into(), count(db.in_use));
        int("perf_trace.db_open".into(), count(db.open));
    }
    for set in &snapshot.counters {
        for value in &set.values {
            let name = format!("perf_trace.{}_{}", set.set.prefix, value.rendered_name());
            int(name, count(value.value));
        }
    }
    for set in &snapshot.timers {
        for stat in &set.stats {
            for (name, value) in time_and_count(set.set.prefix, stat) {
                int(name, value);
            }
        }
    }
    out.push(KeyValue::new("perf_trace.endpoint", snapshot.endpoint));
    if let Some(stage) = snapshot.sse_stage {
        out.push(KeyValue::new("perf_trace.sse_stage", stage.as_str()));
    }
    if !snapshot.method.is_empty() {
        out.push(KeyValue::new("http.request.method", snapshot.method));
    }
    if let Some(status) = facts.status {
        out.push(KeyValue::new(
            "http.response.status_code",
            i64::from(status),
        ));
    }
    if !snapshot.request_id.is_empty() {
        out.push(KeyValue::new(
            "perf_trace.request_id",
            snapshot.request_id.clone(),
        ));
    }
    out
}

/// The span of one finished request.
pub(crate) fn span(finished: Finished, scope: &InstrumentationScope) -> SpanData {
    let Finished {
        snapshot,
        facts,
        end_time,
    } = finished;
    let (trace_id, span_id, parent, flags) = match facts.trace {
        Some(trace) => (
            TraceId::from_bytes(trace.trace_id),
            SpanId::from_bytes(trace.span_id),
            trace.parent_span_id.map(SpanId::from_bytes),
            TraceFlags::new(trace.flags),
        ),
        // Emitted outside the layer (no trace context): a trace of its own.
        None => {
            let ids = RandomIdGenerator::default();
            (
                ids.new_trace_id(),
                ids.new_span_id(),
                None,
                TraceFlags::SAMPLED,
            )
        }
    };
    let status = match facts.status {
        Some(status) if status < 500 => Status::Unset,
        Some(_) => Status::error("server error"),
        None => Status::error("no response"),
    };
    let attributes = attributes(&snapshot, &facts);
    SpanData {
        span_context: SpanContext::new(trace_id, span_id, flags, false, TraceState::default()),
        parent_span_id: parent.unwrap_or(SpanId::INVALID),
        parent_span_is_remote: parent.is_some(),
        span_kind: SpanKind::Server,
        name: Cow::Borrowed(snapshot.endpoint),
        start_time: end_time.checked_sub(snapshot.elapsed).unwrap_or(end_time),
        end_time,
        attributes,
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: SpanLinks::default(),
        status,
        instrumentation_scope: scope.clone(),
    }
}
