//! Tracing the orders API: its policy, its profile and its layer.

use std::sync::Arc;

use axum::Router;
use http::Request;
use perf_trace_core::{layer::TracePolicy, Emitter, LineFormat, LineSink, PerfTraceLayer};

use crate::api::{router, SharedStore};
use crate::keys::{classify, EndpointClass, OrdersSchema};
use crate::store::{CountedOrderStore, MemoryStore};

/// The `component` of the orders API's lines.
pub const COMPONENT: &str = "orders-api";

/// The `subsystem` of the orders API's lines.
pub const SUBSYSTEM: &str = "orders.perf-trace";

/// The prefix of its perf headers (`X-Orders-Perf-Endpoint`, ...; the
/// trigger is `X-Orders-Perf-Trace: 1`).
pub const HEADER_PREFIX: &str = "X-Orders-Perf-";

/// How the orders API answers the layer's questions.
#[derive(Debug, Clone, Copy, Default)]
pub struct OrdersPolicy;

impl TracePolicy<OrdersSchema> for OrdersPolicy {
    fn classify<B>(&self, request: &Request<B>) -> EndpointClass {
        classify(request.method(), request.uri().path())
    }

    /// The example has no users, so any caller that asks gets the headers;
    /// a service with authentication answers from its principal.
    fn headers_allowed<B>(&self, _request: &Request<B>) -> bool {
        true
    }
}

/// The orders API's profile: its own component, subsystem and header prefix.
pub fn line_format() -> LineFormat {
    LineFormat::plain(COMPONENT, SUBSYSTEM)
        .header_prefix(HEADER_PREFIX)
        .expect("HEADER_PREFIX is a valid header name start")
}

/// The API over `store`; with `trace` set, its store calls are counted and
/// every request writes one line to `trace`.
pub fn app(store: MemoryStore, trace: Option<LineSink>) -> Router {
    match trace {
        None => router(Arc::new(store) as SharedStore),
        Some(sink) => {
            let store = Arc::new(CountedOrderStore::new(store)) as SharedStore;
            let layer = PerfTraceLayer::<OrdersSchema, _>::new(
                OrdersPolicy,
                Emitter::new(line_format(), sink),
            );
            router(store).layer(layer)
        }
    }
}
