//! The tower layer: one recorder per request, the request id, the headers at
//! response start, the `serialize` phase over the body, and exactly one line
//! per request, whichever way the request ends.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::{HeaderName, HeaderValue};
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};

use crate::clock;
use crate::emitter::Emitter;
use crate::exits::RequestFacts;
use crate::exits::{TraceContext, TRACEPARENT, TRACERESPONSE};
use crate::keys::{KeySet, Schema};
use crate::line::render_headers;
use crate::line::scion::{suffix, REQUEST_ID_HEADER};
use crate::record::pool::{self, PoolBaseline, PoolStats};
use crate::recorder::scope::current;
use crate::recorder::{in_scope_of, Recorder, RequestStart, Table};
use crate::request_id;
use crate::snapshot::SseStage;

mod adopt;
#[cfg(feature = "axum")]
pub(crate) mod route_check;
mod routes;
#[cfg(feature = "tracing")]
mod span;

pub use routes::RoutePolicy;
#[cfg(all(feature = "tracing", feature = "tower-http"))]
pub use span::RequestSpan;
#[cfg(feature = "tracing")]
pub use span::{ENDPOINT_FIELD, REQUEST_ID_FIELD};

/// What the service decides about each request. [`RoutePolicy`] is the
/// common case (classes by route, headers for whom a closure allows);
/// write one for anything else (the Hub classifies by query parameters).
pub trait TracePolicy<S: Schema>: Clone + Send + Sync + 'static {
    /// The request's endpoint class (handlers may refine it with
    /// [`set_endpoint`](crate::record::set_endpoint)).
    fn classify<B>(&self, request: &Request<B>) -> S::Endpoint;

    /// Whether the caller may receive the perf headers. Asked only when the
    /// request carries the trigger header with the exact value `1`; answer
    /// from the authenticated principal (the layer sits inside
    /// authentication, so its extensions are set).
    fn headers_allowed<B>(&self, request: &Request<B>) -> bool;

    /// Whether the layer may adopt the request id a caller sent in the
    /// request-id header (plain profile only; see [`PerfTraceLayer`] for
    /// which id wins when). No by default: a caller's id is kept only when
    /// the service says so. [`RoutePolicy::adopt_incoming_request_id`]
    /// turns it on.
    fn adopts_incoming_request_id(&self) -> bool {
        false
    }
}

/// What every clone of a layer and its services shares, read by every
/// request. Aligned past a cache line: the reference count ahead of it in
/// its `Arc` is written four times a request (axum clones a route's
/// service per request, the response future keeps a handle, and both are
/// dropped), and on the same line those writes, from every worker thread,
/// would evict these read-mostly fields from the other threads' caches.
#[derive(Clone)]
#[repr(align(128))]
struct Shared<P> {
    policy: P,
    emitter: Emitter,
    pool: Option<Arc<dyn PoolStats>>,
    /// `None` when the profile's names cannot be header names: then no
    /// request gets the perf headers.
    trigger: Option<HeaderName>,
    request_id: Option<HeaderName>,
    /// Every response header the schema can render, by suffix.
    names: Vec<(&'static str, HeaderName)>,
    /// An exit asked for W3C trace context: read `traceparent`, answer
    /// `traceresponse`.
    trace_context: bool,
    /// The plain profile: adopt the id a request carries, and keep a
    /// request-id header the service set. (The Scion contract's id is
    /// always the layer's own.)
    adopt_ids: bool,
    /// Record the request id and class into the current `tracing` span.
    #[cfg(feature = "tracing")]
    record_in_span: bool,
}

impl<P> Shared<P> {
    fn header_name(&self, suffix: &str) -> Option<&HeaderName> {
        self.names
            .iter()
            .find(|(s, _)| *s == suffix)
            .map(|(_, name)| name)
    }
}

/// Traces every request of the wrapped service. Install it innermost, inside
/// authentication, and only when tracing is on.
///
/// # Request ids
///
/// Every line carries a `request_id`, also sent in the response's
/// request-id header (`X-Request-ID` unless the profile renames it). Which
/// id that is:
///
/// - **The Scion profile** ([`LineFormat::scion`](crate::LineFormat::scion)):
///   always a random UUID drawn by the layer, set on the response whatever
///   the service set (the contract's).
/// - **The plain profile**: the id the request already carries, when it is
///   1 to 64 bytes of `[A-Za-z0-9._:-]`: first tower-http's `RequestId`
///   extension, which an outer `SetRequestIdLayer` sets (feature
///   `tower-http`, on by default); else, when the policy
///   [adopts callers' ids](TracePolicy::adopts_incoming_request_id), the
///   request's own request-id header. Otherwise (none, or one with other
///   bytes or longer) a random UUID, so no caller's byte that could break
///   a log line is written. A request-id header the service set on the
///   response is kept; else the layer sets its id there.
///
/// So with tower-http's `SetRequestIdLayer` and `PropagateRequestIdLayer`
/// outside this layer, the response header, the line and (see
/// `record_in_span`, feature `tracing`) the service's `tracing` lines all
/// carry the same id.
pub struct PerfTraceLayer<S, P> {
    shared: Arc<Shared<P>>,
    _schema: PhantomData<fn() -> S>,
}

impl<S, P> Clone for PerfTraceLayer<S, P> {
    fn clone(&self) -> Self {
        PerfTraceLayer {
            shared: Arc::clone(&self.shared),
            _schema: PhantomData,
        }
    }
}

impl<S, P> fmt::Debug for PerfTraceLayer<S, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PerfTraceLayer")
            .field("emitter", &self.shared.emitter)
            .field("pool", &self.shared.pool.is_some())
            .field("trigger", &self.shared.trigger)
            .finish_non_exhaustive()
    }
}

impl<S: Schema, P: TracePolicy<S>> PerfTraceLayer<S, P> {
    /// A layer that writes `emitter`'s lines; its headers are named by the
    /// emitter's [`LineFormat`](crate::LineFormat): `{prefix}Endpoint`, ...,
    /// the trigger header `{prefix}Trace`, and the request-id header.
    pub fn new(policy: P, emitter: Emitter) -> Self {
        let format = emitter.format();
        let name =
            |suffix: &str| HeaderName::from_bytes(format.header_name(suffix).as_bytes()).ok();
        let schema_suffixes = S::COUNTERS.iter().map(|set| set.0.header).chain(
            S::TIMERS
                .iter()
                .flat_map(|set| [set.0.header, set.0.header_counts]),
        );
        let names = suffix::ALL
            .into_iter()
            .chain(schema_suffixes)
            .filter_map(|s| Some((s, name(s)?)))
            .collect();
        let trigger = name(suffix::TRIGGER);
        let request_id = request_id_header(format.request_id_header_name());
        let adopt_ids = !format.is_scion();
        clock::warm_up();
        PerfTraceLayer {
            shared: Arc::new(Shared {
                policy,
                trace_context: emitter.wants_trace_context(),
                emitter,
                pool: None,
                trigger,
                request_id,
                names,
                adopt_ids,
                #[cfg(feature = "tracing")]
                record_in_span: false,
            }),
            _schema: PhantomData,
        }
    }

    /// Reads `pool`'s figures at the start and end of every request.
    pub fn with_pool(mut self, pool: Arc<dyn PoolStats>) -> Self {
        // Clones of this layer made earlier keep their own configuration.
        Arc::make_mut(&mut self.shared).pool = Some(pool);
        self
    }

    /// Records each request's id and endpoint class into the service's
    /// request span, the `tracing` span current when the layer is called:
    /// into its fields [`request_id`](REQUEST_ID_FIELD) and
    /// [`endpoint`](ENDPOINT_FIELD) (the class again at response start, a
    /// handler may refine it), when the span declares them. Every
    /// `tracing` line of the request then carries the id its perf line
    /// has (feature `tracing`).
    ///
    /// Install this layer inside the layer that opens the span (tower-http's
    /// `TraceLayer`, whose span is entered while the inner service is
    /// called), and declare the fields there: [`RequestSpan`] does (two
    /// lines of wiring in all, `TraceLayer::new_for_http().make_span_with(RequestSpan)`
    /// and this call), or a span of the service's own declares them empty:
    ///
    /// ```
    /// # use perf_trace_core::{Emitter, KeySet, LineFormat, LineSink, PerfTraceLayer, Schema};
    /// # use perf_trace_core::layer::RoutePolicy;
    /// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
    /// # #[key_set(phases)]
    /// # enum Phase { Load }
    /// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
    /// # #[key_set(store_methods)]
    /// # enum Method { GetItem }
    /// # #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
    /// # #[key_set(endpoints)]
    /// # enum Endpoint { #[key(default)] Other }
    /// # struct App;
    /// # impl Schema for App { type Phase = Phase; type StoreMethod = Method; type Endpoint = Endpoint; }
    /// # let emitter = Emitter::new(LineFormat::plain("svc", "svc.perf"), LineSink::memory().0);
    /// use tower::ServiceBuilder;
    /// use tower_http::trace::TraceLayer;
    ///
    /// let stack = ServiceBuilder::new()
    ///     // Outside: the span, declaring `request_id` and `endpoint` empty.
    ///     .layer(TraceLayer::new_for_http().make_span_with(|request: &http::Request<String>| {
    ///         tracing::info_span!(
    ///             "request",
    ///             method = %request.method(),
    ///             request_id = tracing::field::Empty,
    ///             endpoint = tracing::field::Empty,
    ///         )
    ///     }))
    ///     // Inside: the perf layer, recording into it.
    ///     .layer(PerfTraceLayer::new(RoutePolicy::<App>::new(), emitter).record_in_span());
    /// # let _ = stack;
    /// ```
    #[cfg(feature = "tracing")]
    pub fn record_in_span(mut self) -> Self {
        Arc::make_mut(&mut self.shared).record_in_span = true;
        self
    }
}

impl<Svc, S, P> tower_layer::Layer<Svc> for PerfTraceLayer<S, P> {
    type Service = PerfTrace<Svc, S, P>;

    fn layer(&self, inner: Svc) -> Self::Service {
        PerfTrace {
            inner,
            shared: Arc::clone(&self.shared),
            _schema: PhantomData,
        }
    }
}

/// The service made by [`PerfTraceLayer`].
pub struct PerfTrace<Svc, S, P> {
    inner: Svc,
    shared: Arc<Shared<P>>,
    _schema: PhantomData<fn() -> S>,
}

impl<Svc: Clone, S, P> Clone for PerfTrace<Svc, S, P> {
    fn clone(&self) -> Self {
        PerfTrace {
            inner: self.inner.clone(),
            shared: Arc::clone(&self.shared),
            _schema: PhantomData,
        }
    }
}

impl<Svc: fmt::Debug, S, P> fmt::Debug for PerfTrace<Svc, S, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PerfTrace")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

/// The name of the request-id header. The contract's own (however it is
/// spelt) is a static name: a copy of it into each response touches no
/// reference count, where a copy of a name built at run time counts on one
/// shared by every core.
fn request_id_header(name: &str) -> Option<HeaderName> {
    if name.eq_ignore_ascii_case(REQUEST_ID_HEADER) {
        return Some(HeaderName::from_static("x-request-id"));
    }
    HeaderName::from_bytes(name.as_bytes()).ok()
}

/// Requests with at most this many header names are searched by
/// comparing names before any hashing.
const SCAN_HEADERS_MAX: usize = 16;

/// `name`'s first value in `headers`. Every request is searched for the
/// trigger header, which few carry: a custom name is hashed a byte at a
/// time, and comparing it with a request's handful of names (most of them
/// standard ones, told apart from a custom name at once) costs less. Only
/// a request that has the name pays for the lookup.
fn header_value<'h>(headers: &'h http::HeaderMap, name: &HeaderName) -> Option<&'h HeaderValue> {
    if headers.keys_len() <= SCAN_HEADERS_MAX && !headers.keys().any(|key| key == name) {
        return None;
    }
    headers.get(name)
}

pub(crate) fn method_name(method: &http::Method) -> &'static str {
    use http::Method as M;
    match *method {
        M::GET => "GET",
        M::POST => "POST",
        M::PUT => "PUT",
        M::DELETE => "DELETE",
        M::PATCH => "PATCH",
        M::HEAD => "HEAD",
        M::OPTIONS => "OPTIONS",
        M::CONNECT => "CONNECT",
        M::TRACE => "TRACE",
        // An extension method is request-derived text: never rendered.
        _ => "OTHER",
    }
}

impl<Svc, S, P, ReqB, ResB> tower_service::Service<Request<ReqB>> for PerfTrace<Svc, S, P>
where
    Svc: tower_service::Service<Request<ReqB>, Response = Response<ResB>>,
    S: Schema,
    P: TracePolicy<S>,
    ResB: Body,
{
    type Response = Response<TracedBody<ResB>>;
    type Error = Svc::Error;
    type Future = ResponseFuture<Svc::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<ReqB>) -> Self::Future {
        let shared = &self.shared;
        // A recorder already in scope (a test helper tracing one request) is reused.
        let reused = current();
        let drew_id = reused.is_none();
        let recorder = reused.unwrap_or_else(|| {
            let adopted = if shared.adopt_ids {
                let header = shared.request_id.as_ref();
                let header = header.filter(|_| shared.policy.adopts_incoming_request_id());
                adopt::incoming_id(&request, header)
            } else {
                None
            };
            let drawn;
            let id = match adopted {
                Some(id) => id,
                None => {
                    drawn = request_id::draw();
                    drawn.as_str()
                }
            };
            let pool = shared.pool.as_ref().map(|pool| {
                let baseline = pool::take_handed().or_else(|| {
                    let baseline = request.extensions().get::<PoolBaseline>();
                    baseline.map(|PoolBaseline(start)| *start)
                });
                (pool, baseline)
            });
            let start = RequestStart {
                method: method_name(request.method()),
                request_id: id,
                pool,
            };
            Recorder::for_request::<S>(start)
        });
        recorder.set_endpoint(shared.policy.classify(&request));
        #[cfg(feature = "tracing")]
        if shared.record_in_span {
            span::record_ids(&recorder);
        }
        let want_headers = shared
            .trigger
            .as_ref()
            .and_then(|trigger| header_value(request.headers(), trigger))
            .is_some_and(|v| v.as_bytes() == b"1")
            && shared.policy.headers_allowed(&request);
        let trace = shared
            .trace_context
            .then(|| start_trace_context(&mut request));
        // Handlers reach the recorder as the current one (`current()`), not
        // through the request's extensions: no map insert per request.
        let inner = recorder.in_scope(|| self.inner.call(request));
        ResponseFuture {
            inner: ManuallyDrop::new(inner),
            trace: Some(RequestTrace {
                recorder: ManuallyDrop::new(recorder),
                want_headers,
                drew_id,
                keep_service_id: shared.adopt_ids,
                #[cfg(feature = "tracing")]
                record_in_span: shared.record_in_span,
                facts: RequestFacts {
                    status: None,
                    perf_headers: want_headers,
                    trace,
                },
                layer: Arc::clone(shared) as Arc<dyn LayerParts>,
                serialize: S::SERIALIZE.map(|p| p.index()),
                serialize_start: None,
                connect_written: false,
            }),
        }
    }
}

/// The request's W3C trace context, continued from its `traceparent` or
/// started, and put in its extensions for the service. Out of line, as are
/// the other paths only some requests take: the layer's call and futures
/// run once per request among all of a service's code, and the fewer
/// instructions they bring into the cache with them, the less a loaded
/// service spends fetching them.
#[inline(never)]
fn start_trace_context<B>(request: &mut Request<B>) -> TraceContext {
    let ids = fastrand::u128(..).to_le_bytes();
    let span_id = fastrand::u64(..).to_le_bytes();
    let incoming = request.headers().get(TRACEPARENT).map(|v| v.as_bytes());
    let context = TraceContext::continue_or_start(incoming, ids, span_id);
    request.extensions_mut().insert(context);
    context
}

/// What a request's trace needs of its layer, the policy type erased.
trait LayerParts: Send + Sync {
    fn name(&self, suffix: &str) -> Option<&HeaderName>;
    fn request_id(&self) -> Option<&HeaderName>;
    fn emitter(&self) -> &Emitter;
}

impl<P: Send + Sync> LayerParts for Shared<P> {
    fn name(&self, suffix: &str) -> Option<&HeaderName> {
        self.header_name(suffix)
    }

    fn request_id(&self) -> Option<&HeaderName> {
        self.request_id.as_ref()
    }

    fn emitter(&self) -> &Emitter {
        &self.emitter
    }
}

/// One request's trace from call to the end of its body; writes the line
/// when dropped, so it is written exactly once however the request ends.
struct RequestTrace {
    /// Taken by `drop`, which hands it to the emitter.
    recorder: ManuallyDrop<Recorder>,
    want_headers: bool,
    /// Whether this layer drew or adopted the recorder's request id (not so
    /// for a recorder found in scope, whose id is its own).
    drew_id: bool,
    /// The plain profile: a request-id header the service set is kept.
    keep_service_id: bool,
    /// Record the endpoint class into the current span at response start.
    #[cfg(feature = "tracing")]
    record_in_span: bool,
    /// The status (set at response start) and trace, for the exits.
    facts: RequestFacts,
    layer: Arc<dyn LayerParts>,
    serialize: Option<usize>,
    serialize_start: Option<u64>,
    connect_written: bool,
}

impl RequestTrace {
    fn on_response<B>(&mut self, response: &mut Response<B>) {
        let status = response.status().as_u16();
        self.facts.status = Some(status);
        self.recorder.0.set_status(status);
        #[cfg(feature = "tracing")]
        if self.record_in_span {
            span::record_endpoint(&self.recorder);
        }
        let headers = response.headers_mut();
        if let Some(trace) = &self.facts.trace {
            insert_traceresponse(trace, headers);
        }
        if let Some(name) = self.layer.request_id() {
            // The plain profile keeps a request id the service set.
            if !(self.keep_service_id && headers.contains_key(name)) {
                let id = self.recorder.request_id();
                let value = if self.drew_id {
                    Some(request_id::header_value(id))
                } else {
                    Some(id)
                        .filter(|id| !id.is_empty())
                        .and_then(|id| HeaderValue::from_str(id).ok())
                };
                if let Some(value) = value {
                    headers.insert(name.clone(), value);
                }
            }
        }
        if self.want_headers {
            self.insert_perf_headers(headers);
        }
    }

    /// The perf headers, for the few requests that ask and may have them.
    #[cold]
    #[inline(never)]
    fn insert_perf_headers(&self, headers: &mut http::HeaderMap) {
        // Taken now, before the body: the headers never include serialize.
        for header in render_headers(&self.recorder.snapshot()) {
            // A set the schema does not list has no name made in advance.
            let name = self.layer.name(header.suffix).cloned().or_else(|| {
                let name = self.layer.emitter().format().header_name(header.suffix);
                HeaderName::from_bytes(name.as_bytes()).ok()
            });
            if let (Some(name), Ok(value)) = (name, HeaderValue::from_str(&header.value)) {
                headers.insert(name, value);
            }
        }
    }

    fn on_first_body_poll(&mut self, success: bool) {
        if self.recorder.is_stream() {
            if success && !self.connect_written && !self.recorder.is_discarded() {
                self.connect_written = true;
                let snapshot = self.recorder.snapshot().with_stage(Some(SseStage::Connect));
                self.layer.emitter().emit_request(&snapshot, &self.facts);
            }
        } else if self.serialize.is_some() && self.serialize_start.is_none() {
            self.serialize_start = Some(clock::now());
        }
    }
}

impl Drop for RequestTrace {
    fn drop(&mut self) {
        // One reading ends both the serialize phase and the request.
        let end = clock::now();
        if let (Some(index), Some(start)) = (self.serialize, self.serialize_start.take()) {
            let ticks = clock::span(start, end);
            self.recorder.0.add_stat(Table::Phases, index, 1, ticks);
        }
        // SAFETY: taken once, here, as the trace is dropped; never used after.
        let recorder = unsafe { ManuallyDrop::take(&mut self.recorder) };
        if !recorder.is_discarded() {
            self.layer.emitter().finish(recorder, &self.facts, end);
        }
    }
}

/// The response's `traceresponse` header, from the request's trace context.
#[inline(never)]
fn insert_traceresponse(trace: &TraceContext, headers: &mut http::HeaderMap) {
    if let Ok(value) = HeaderValue::from_str(&trace.traceresponse()) {
        headers.insert(HeaderName::from_static(TRACERESPONSE), value);
    }
}

pin_project_lite::pin_project! {
    /// The future of [`PerfTrace`]: polls the service with the recorder current.
    pub struct ResponseFuture<F> {
        // Dropped by hand, with the recorder current until the response:
        // phases cut short by cancellation still count, in the line the
        // trace then writes.
        #[pin]
        inner: ManuallyDrop<F>,
        trace: Option<RequestTrace>,
    }

    impl<F> PinnedDrop for ResponseFuture<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            // SAFETY: the future is dropped in place, once, here; nothing
            // reads it after.
            let inner = unsafe { this.inner.get_unchecked_mut() };
            let recorder = this.trace.as_ref().map(|trace| &*trace.recorder);
            in_scope_of(recorder, || unsafe { ManuallyDrop::drop(inner) });
        }
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

impl<F, B, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<TracedBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        // SAFETY: the future is pinned in place inside its `ManuallyDrop`,
        // never moved out.
        let inner = unsafe { this.inner.map_unchecked_mut(|inner| &mut **inner) };
        let recorder = this.trace.as_ref().map(|trace| &*trace.recorder);
        let polled = in_scope_of(recorder, || inner.poll(cx));
        let result = match polled {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(result) => result,
        };
        // Dropping the trace on error writes the line now.
        let mut trace = this.trace.take();
        Poll::Ready(result.map(|mut response| {
            if let Some(trace) = &mut trace {
                trace.on_response(&mut response);
            }
            let success = response.status().is_success();
            response.map(|body| TracedBody {
                inner: body,
                trace,
                polled: false,
                success,
            })
        }))
    }
}

pin_project_lite::pin_project! {
    /// A response body that keeps the request's recorder current while it is
    /// polled and writes the request's line when it ends or is dropped.
    pub struct TracedBody<B> {
        #[pin]
        inner: B,
        trace: Option<RequestTrace>,
        polled: bool,
        success: bool,
    }
}

impl<B> fmt::Debug for TracedBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TracedBody").finish_non_exhaustive()
    }
}

impl<B: Body> Body for TracedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let Some(trace) = this.trace.as_mut() else {
            return this.inner.poll_frame(cx);
        };
        if !*this.polled {
            *this.polled = true;
            trace.on_first_body_poll(*this.success);
        }
        let inner = this.inner;
        let polled = trace.recorder.in_scope(|| inner.poll_frame(cx));
        if matches!(polled, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            // The body is over: time serialize to here and write the line.
            this.trace.take();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_is_found_by_name_among_few_headers_and_among_many() {
        let trigger = HeaderName::from_static("x-orders-perf-trace");
        for others in [0, 3, SCAN_HEADERS_MAX - 1, SCAN_HEADERS_MAX, 40] {
            let mut headers = http::HeaderMap::new();
            assert_eq!(header_value(&headers, &trigger), None);
            for i in 0..others {
                let name = HeaderName::from_bytes(format!("x-other-{i}").as_bytes()).unwrap();
                headers.insert(name, HeaderValue::from_static("0"));
            }
            headers.insert(http::header::HOST, HeaderValue::from_static("a"));
            assert_eq!(header_value(&headers, &trigger), None, "{others}");
            headers.append(&trigger, HeaderValue::from_static("1"));
            headers.append(&trigger, HeaderValue::from_static("2"));
            assert_eq!(header_value(&headers, &trigger), headers.get(&trigger));
            assert_eq!(header_value(&headers, &trigger).unwrap(), "1", "{others}");
        }
    }

    #[test]
    fn the_request_id_header_is_the_profile_s_name_static_when_it_is_the_contract_s() {
        for spelling in ["X-Request-ID", "x-request-id", "X-REQUEST-ID"] {
            let name = request_id_header(spelling).expect("a valid name");
            assert_eq!(name, HeaderName::from_static("x-request-id"));
        }
        let own = request_id_header("X-Correlation-Id").expect("a valid name");
        assert_eq!(own.as_str(), "x-correlation-id");
        assert!(request_id_header("not a name").is_none());
    }
}
