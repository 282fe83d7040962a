//! The request's id and endpoint class in the service's own `tracing`
//! span (feature `tracing`), so that its `tracing` lines and its perf line
//! can be joined.

use crate::recorder::Recorder;

/// The span field the request id is recorded into.
pub const REQUEST_ID_FIELD: &str = "request_id";

/// The span field the endpoint class is recorded into.
pub const ENDPOINT_FIELD: &str = "endpoint";

/// Records `recorder`'s request id and endpoint class into the current
/// span's `request_id` and `endpoint` fields. A field the span did not
/// declare is left alone (`tracing` records only declared fields).
#[inline(never)]
pub(super) fn record_ids(recorder: &Recorder) {
    let span = tracing::Span::current();
    span.record(REQUEST_ID_FIELD, recorder.request_id());
    span.record(ENDPOINT_FIELD, recorder.endpoint_name());
}

/// Records the endpoint class again at response start: a handler may have
/// refined it.
#[inline(never)]
pub(super) fn record_endpoint(recorder: &Recorder) {
    tracing::Span::current().record(ENDPOINT_FIELD, recorder.endpoint_name());
}

/// A tower-http `TraceLayer` span that the perf layer's
/// [`record_in_span`](super::PerfTraceLayer::record_in_span) fills: an
/// `INFO` span `request` with `method`, `path` (never the query), `version`,
/// `request_id` and `endpoint` (features `tracing` and `tower-http`).
///
/// `request_id` is set when the span is made from tower-http's `RequestId`
/// (an outer `SetRequestIdLayer`), when the perf layer would adopt it, so
/// that even `TraceLayer`'s first line carries it; else the perf layer
/// records its own id when it runs. `endpoint` is recorded by the perf
/// layer.
///
/// ```
/// use perf_trace_core::layer::RequestSpan;
/// use tower_http::trace::TraceLayer;
///
/// let trace = TraceLayer::new_for_http().make_span_with(RequestSpan);
/// # let _ = trace;
/// ```
#[cfg(feature = "tower-http")]
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestSpan;

#[cfg(feature = "tower-http")]
impl<B> tower_http::trace::MakeSpan<B> for RequestSpan {
    fn make_span(&mut self, request: &http::Request<B>) -> tracing::Span {
        let span = tracing::info_span!(
            "request",
            method = %request.method(),
            path = request.uri().path(),
            version = ?request.version(),
            request_id = tracing::field::Empty,
            endpoint = tracing::field::Empty,
        );
        if let Some(id) = super::adopt::incoming_id(request, None) {
            span.record(REQUEST_ID_FIELD, id);
        }
        span
    }
}
