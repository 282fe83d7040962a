//! Exits beyond the line: the contract the [`Emitter`](crate::Emitter)
//! hands every finished request over with ([`RequestSink`]), and the crate's
//! own exits, after (or instead of) writing its line.
//!
//! A sink sees the request's [`Snapshot`] and what the layer knew of it
//! ([`RequestFacts`]: the status, whether perf headers were sent, the W3C
//! trace context, [`TraceContext`]), never the request itself, so it cannot
//! see a path, a query or a caller. Sinks run on the request's thread when
//! it ends: a sink that does I/O hands the work to a thread of its own and
//! never blocks.
//!
//! The crate's own exits: [`sampling`] (tail sampling, whether a request
//! keeps its line), `tracing_sink` (`tracing_sink::TracingSink`, a
//! `tracing` event per kept request, feature `tracing`) and `metrics`
//! (`metrics::MetricsSink`, Prometheus metrics, feature `metrics`).
//! OpenTelemetry export is the `perf-trace-otel` crate, built on the same
//! contract. The core's emitter names only the contract, never an exit.
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
//! use std::sync::Arc;
//! use perf_trace_core::exits::{FinishedRequest, RequestFacts, RequestSink};
//! use perf_trace_core::{Emitter, LineFormat, LineSink, Snapshot};
//!
//! #[derive(Default)]
//! struct ServerErrors(AtomicU64);
//!
//! impl RequestSink for ServerErrors {
//!     fn record(&self, request: &FinishedRequest<'_>) {
//!         if request.facts.status.is_some_and(|s| s >= 500) {
//!             self.0.fetch_add(1, Relaxed);
//!         }
//!     }
//! }
//!
//! let errors = Arc::new(ServerErrors::default());
//! let emitter = Emitter::new(LineFormat::scion("svc"), LineSink::new(std::io::sink()))
//!     .with_sink(Arc::clone(&errors));
//! let facts = RequestFacts { status: Some(503), ..RequestFacts::default() };
//! emitter.emit_request(&Snapshot::default(), &facts);
//! assert_eq!(errors.0.load(Relaxed), 1);
//! ```

use std::sync::Arc;
use std::time::SystemTime;

use crate::snapshot::Snapshot;

#[cfg(feature = "metrics")]
pub mod metrics;
pub mod sampling;
mod trace_context;
#[cfg(feature = "tracing")]
pub mod tracing_sink;

pub use trace_context::{TraceContext, TraceParent, TRACEPARENT, TRACERESPONSE};

/// What the layer knows of a request besides its snapshot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestFacts {
    /// The response status; `None` when the service failed without one
    /// (its error, or a stream's connect line before a status is known).
    pub status: Option<u16>,
    /// The request asked for the perf headers and was allowed them.
    pub perf_headers: bool,
    /// The request's trace, when a sink asked for trace context.
    pub trace: Option<TraceContext>,
}

/// One finished request, as a sink sees it.
#[derive(Debug, Clone, Copy)]
pub struct FinishedRequest<'a> {
    /// Everything the request recorded.
    pub snapshot: &'a Snapshot,
    /// What the layer knew of it.
    pub facts: &'a RequestFacts,
    /// Whether tail sampling kept it (always true without sampling). A
    /// sink that only wants kept requests never sees the others.
    pub sampled: bool,
    /// The line as written, when it was.
    pub line: Option<&'a str>,
    /// When it ended (the line's `time`).
    pub end_time: SystemTime,
}

/// An exit for finished requests: a `tracing` event, a span, metrics.
pub trait RequestSink: Send + Sync + 'static {
    /// Takes one finished request. Called on the request's thread: never
    /// block, never panic.
    fn record(&self, request: &FinishedRequest<'_>);

    /// Whether this sink sees the requests tail sampling drops too
    /// (metrics do; lines and spans do not).
    fn sees_every_request(&self) -> bool {
        false
    }

    /// Whether the layer should read `traceparent` and answer with
    /// `traceresponse`, so [`RequestFacts::trace`] is set.
    fn wants_trace_context(&self) -> bool {
        false
    }
}

impl<T: RequestSink + ?Sized> RequestSink for Arc<T> {
    fn record(&self, request: &FinishedRequest<'_>) {
        (**self).record(request)
    }

    fn sees_every_request(&self) -> bool {
        (**self).sees_every_request()
    }

    fn wants_trace_context(&self) -> bool {
        (**self).wants_trace_context()
    }
}
