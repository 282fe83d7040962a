//! Each request's record as one `tracing` event, so an existing
//! `tracing-subscriber` pipeline (JSON fmt, OpenTelemetry layers, a log
//! shipper) carries it.
//!
//! The event has target `perf_trace`, level `INFO` and message `perf_trace`;
//! its fields are the fixed ones of the line (`endpoint`, `elapsed_us`,
//! `status`, `method`, `request_id`, `authz_store_calls`, `authz_store_us`,
//! `audit_records`, `audit_allow`, `audit_deny`, `audit_other`,
//! `sse_events`, `trace_id` when known) and the whole line as `line`. Per-key
//! figures stay in `line`: a `tracing` field name is fixed at compile time
//! per call site, and one call site serves every schema.
//!
//! Only requests that keep their line reach it (see
//! [`sampling`](super::sampling)). To send the records to `tracing` only, give
//! the [`Emitter`](crate::Emitter) a [`LineSink`](crate::LineSink) over
//! [`std::io::sink()`].
//!
//! ```
//! use perf_trace_core::exits::tracing_sink::TracingSink;
//! use perf_trace_core::{Emitter, LineFormat, LineSink};
//!
//! let emitter = Emitter::new(LineFormat::scion("svc"), LineSink::new(std::io::sink()))
//!     .with_sink(TracingSink::new());
//! # let _ = emitter;
//! ```

use crate::exits::{FinishedRequest, RequestSink};

/// The target of the events.
pub const TARGET: &str = "perf_trace";

/// Writes one `tracing` event per kept request (see the [module](self)).
#[derive(Debug, Clone, Copy, Default)]
pub struct TracingSink;

impl TracingSink {
    /// A sink of events at target [`TARGET`], level `INFO`.
    pub fn new() -> Self {
        TracingSink
    }
}

impl RequestSink for TracingSink {
    fn record(&self, request: &FinishedRequest<'_>) {
        let snapshot = request.snapshot;
        let decisions = &snapshot.decisions;
        let trace_id = request.facts.trace.map(|trace| trace.trace_id_hex());
        tracing::event!(
            target: TARGET,
            tracing::Level::INFO,
            endpoint = snapshot.endpoint,
            elapsed_us = snapshot.elapsed.as_micros() as u64,
            status = request.facts.status,
            method = snapshot.method,
            request_id = snapshot.request_id.as_str(),
            authz_store_calls = snapshot.authz_store_calls,
            authz_store_us = snapshot.authz_store_time.as_micros() as u64,
            audit_records = decisions.records,
            audit_allow = decisions.allow,
            audit_deny = decisions.deny,
            audit_other = decisions.other,
            sse_events = snapshot.sse_events,
            sse_stage = snapshot.sse_stage.map(|stage| stage.as_str()),
            trace_id = trace_id.as_deref(),
            line = request.line.unwrap_or(""),
            "perf_trace"
        );
    }
}
