//! OpenTelemetry export for [perf-trace](perf_trace_core): one SERVER span
//! per request, sent over OTLP/HTTP (protobuf) from a thread of its own.
//!
//! [`OtlpSink`] is an exit of the perf-trace [`Emitter`](perf_trace_core::Emitter):
//! every request that keeps its line (all of them, unless tail sampling is
//! on) becomes one span
//!
//! - named by its endpoint class (`agents.project.legacy`), kind SERVER;
//! - with the line's figures as attributes (`perf_trace.elapsed_us`,
//!   `perf_trace.phase_<p>_us`, `perf_trace.store_<M>_n`, ...), the method
//!   and status, and the request id; never a path, a query, an identity or a
//!   token;
//! - parented from the caller's W3C `traceparent`, and answered with a
//!   `traceresponse` header naming the trace and the span;
//! - with an error status for a 5xx or a request that got no response.
//!
//! Phases are attributes, not child spans (the [`span`] module says why).
//!
//! Spans wait in a bounded queue and leave in batches. When the queue is
//! full, or the collector answers an error or does not answer, spans are
//! dropped and counted ([`ExportStats`]); a request never waits for the
//! collector.
//!
//! # Example
//!
//! ```no_run
//! use std::sync::Arc;
//! use perf_trace_core::{Emitter, LineFormat, LineSink};
//! use perf_trace_otel::{OtlpConfig, OtlpSink};
//!
//! let config = OtlpConfig::from_env("orders-api")
//!     .unwrap_or_else(|| OtlpConfig::new("http://127.0.0.1:4318", "orders-api"));
//! let otlp = Arc::new(OtlpSink::start(config)?);
//! let emitter = Emitter::new(LineFormat::plain("orders-api", "orders.perf"), LineSink::stdout())
//!     .with_sink(Arc::clone(&otlp));
//! // ... install `PerfTraceLayer::new(policy, emitter)`; later:
//! println!("dropped spans: {}", otlp.stats().dropped());
//! # Ok::<(), perf_trace_otel::OtlpError>(())
//! ```

#![warn(missing_docs)]

// The README's example compiles as a doctest too.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod config;
mod export;
pub mod span;

use std::fmt;
use std::time::Duration;

use perf_trace_core::exits::{FinishedRequest, RequestSink};

pub use config::{OtlpConfig, ENDPOINT_ENV};
pub use export::ExportStats;

/// The exporter could not start (a bad endpoint, no thread).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpError(pub String);

impl fmt::Display for OtlpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OtlpError {}

/// Exports each finished request as one span (see the [crate] docs).
///
/// Dropping it exports what is queued (waiting at most a second), then the
/// export thread ends.
pub struct OtlpSink {
    queue: export::Queue,
    traces_url: String,
}

impl fmt::Debug for OtlpSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtlpSink")
            .field("traces_url", &self.traces_url)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl OtlpSink {
    /// Starts the export thread for `config`; a bad endpoint is an error
    /// now, an unreachable collector only counts dropped spans later.
    pub fn start(config: OtlpConfig) -> Result<Self, OtlpError> {
        let traces_url = config.traces_url();
        // The thread is not joined: it ends by itself once the queue's
        // sender is dropped with the sink, after exporting what is left.
        let (queue, _thread) = export::start(config)?;
        Ok(OtlpSink { queue, traces_url })
    }

    /// The URL spans are posted to.
    pub fn traces_url(&self) -> &str {
        &self.traces_url
    }

    /// Spans exported and dropped so far.
    pub fn stats(&self) -> ExportStats {
        self.queue.stats()
    }

    /// Exports what is queued now, waiting at most `timeout`. Returns
    /// whether it finished in time (a failed export finishes too: see
    /// [`stats`](Self::stats)).
    pub fn flush(&self, timeout: Duration) -> bool {
        self.queue.flush(timeout)
    }
}

impl Drop for OtlpSink {
    fn drop(&mut self) {
        self.queue.flush(Duration::from_secs(1));
    }
}

impl RequestSink for OtlpSink {
    fn record(&self, request: &FinishedRequest<'_>) {
        self.queue.push(span::Finished {
            snapshot: request.snapshot.clone(),
            facts: *request.facts,
            end_time: request.end_time,
        });
    }

    fn wants_trace_context(&self) -> bool {
        true
    }
}
