//! Serving connections over HTTP/1.1 with hyper: one accept loop over every
//! listener of the process (the API, the web client, the metrics port),
//! each connection's header-read and idle timeouts, a cap on a listener's
//! open connections, JSON bodies for the answers hyper writes itself, and
//! one graceful shutdown with a deadline.
//!
//! A connection is watched from outside hyper: the bytes it moves and the
//! requests it has in flight. With none in flight, it is closed when a
//! request head has been arriving for longer than the header-read timeout
//! (counted from accepting the connection for its first request, from the
//! head's first byte afterwards), or when nothing has moved for longer than
//! the idle timeout. A request in flight is bounded by the request timeout
//! instead (see [`crate::api::enforce_request_timeout`]).
//!
//! A listener with a cap on its connections is not accepted from while it
//! holds that many: further clients wait in the kernel's queue and take no
//! descriptor of the process, so a flood on one port cannot use up the
//! descriptors the others need. Over every listener, [`ConnectionGate`]
//! caps the connections below the descriptor limit, keeps headroom for
//! `/healthz` and callers with a credential, caps each client address, and
//! shortens the idle timeout as the cap nears (see [`crate::connections`]).
//! Each request carries its connection's peer as [`ClientAddr`].
//!
//! On shutdown every listener is closed at once, the [`ShutdownSignal`] is
//! given (event streams send a final event and end), connections with
//! nothing in flight are closed, the others, on every listener, finish
//! their requests, and whatever is still open at the one deadline is cut
//! off. A log line marks the start; what was cut off is returned, for the
//! caller to log as the end once it has drained what the requests left
//! behind. A cut-off request still writes its perf_trace line: its future
//! is dropped, which writes it.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::Router;
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tower::ServiceExt;

use crate::api::public::HEALTHZ;
use crate::api::{ApiError, StreamLimiter};
use crate::auth::session::SESSION_COOKIE;
use crate::connections::{ClientAddr, ConnectionGate, GateSlot, Probation, PROBATION_HEAD_TIMEOUT};
use crate::log::Logger;
use crate::settings::ServerLimits;
use crate::shutdown::ShutdownSignal;

/// What the Hub counts across its connections.
#[derive(Debug, Default)]
pub(crate) struct ServerCounters {
    requests_in_flight: AtomicUsize,
}

impl ServerCounters {
    /// Requests received in full head and not yet answered in full.
    pub(crate) fn requests_in_flight(&self) -> usize {
        self.requests_in_flight.load(Ordering::Relaxed)
    }
}

/// "No request head is arriving."
const NO_HEAD: u64 = u64::MAX;

/// The states of a connection's probation ([`Activity::probation`]).
const NOT_ON_PROBATION: u8 = 0;
const PROBATION_HEADROOM: u8 = 1;
const PROBATION_ADDRESS: u8 = 2;

/// One connection's activity, as its watcher sees it. Times are
/// milliseconds since the connection was accepted.
#[derive(Debug)]
struct Activity {
    accepted: Instant,
    last_io: AtomicU64,
    head_since: AtomicU64,
    in_flight: AtomicUsize,
    /// Until its first request arrives, whether (and why) the connection
    /// is on probation.
    probation: AtomicU8,
    counters: Arc<ServerCounters>,
    gate: Arc<ConnectionGate>,
}

impl Activity {
    fn new(
        counters: Arc<ServerCounters>,
        gate: Arc<ConnectionGate>,
        probation: Option<Probation>,
    ) -> Self {
        Activity {
            accepted: Instant::now(),
            last_io: AtomicU64::new(0),
            // The first head's clock starts when the connection is accepted.
            head_since: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            probation: AtomicU8::new(match probation {
                None => NOT_ON_PROBATION,
                Some(Probation::Headroom) => PROBATION_HEADROOM,
                Some(Probation::Address) => PROBATION_ADDRESS,
            }),
            counters,
            gate,
        }
    }

    fn on_probation(&self) -> bool {
        self.probation.load(Ordering::Acquire) != NOT_ON_PROBATION
    }

    /// Ends the probation, at the first request: why it was on it, if it was.
    fn take_probation(&self) -> Option<Probation> {
        match self.probation.swap(NOT_ON_PROBATION, Ordering::AcqRel) {
            PROBATION_HEADROOM => Some(Probation::Headroom),
            PROBATION_ADDRESS => Some(Probation::Address),
            _ => None,
        }
    }

    /// How often its timeouts are looked at.
    fn tick(&self, limits: &ServerLimits) -> Duration {
        match self.on_probation() {
            true => (PROBATION_HEAD_TIMEOUT.min(limits.header_read_timeout) / 4)
                .max(Duration::from_millis(10)),
            false => limits.connection_tick(),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.accepted.elapsed().as_millis()).unwrap_or(u64::MAX - 1)
    }

    fn on_read(&self, bytes: usize) {
        self.on_read_at(bytes, self.now());
    }

    fn on_read_at(&self, bytes: usize, now: u64) {
        if bytes == 0 {
            return;
        }
        // Never 0: that is "nothing moved yet".
        self.last_io.store(now.max(1), Ordering::Relaxed);
        if self.in_flight.load(Ordering::Acquire) == 0 {
            let _ =
                self.head_since
                    .compare_exchange(NO_HEAD, now, Ordering::AcqRel, Ordering::Relaxed);
        }
    }

    fn on_write(&self) {
        self.last_io.store(self.now().max(1), Ordering::Relaxed);
    }

    fn begin_request(self: &Arc<Self>) -> RequestGuard {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.counters
            .requests_in_flight
            .fetch_add(1, Ordering::Relaxed);
        self.head_since.store(NO_HEAD, Ordering::Release);
        RequestGuard(Arc::clone(self))
    }

    fn idle(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
    }

    /// A head is arriving and no request is in flight: anything hyper
    /// writes now is its own answer to a head it could not parse.
    fn head_pending(&self) -> bool {
        self.idle() && self.head_since.load(Ordering::Acquire) != NO_HEAD
    }

    fn timed_out(&self, limits: &ServerLimits) -> bool {
        self.timed_out_at(self.now(), limits)
    }

    fn timed_out_at(&self, now: u64, limits: &ServerLimits) -> bool {
        if !self.idle() {
            return false;
        }
        let head = self.head_since.load(Ordering::Acquire);
        let last_io = self.last_io.load(Ordering::Relaxed);
        if head != NO_HEAD {
            // A connection that has sent nothing yet is idle too: under
            // pressure it waits less.
            let mut limit = match head == 0 && last_io == 0 {
                true => self.gate.scaled(limits.header_read_timeout),
                false => limits.header_read_timeout,
            };
            if self.on_probation() {
                limit = limit.min(PROBATION_HEAD_TIMEOUT);
            }
            return u128::from(now.saturating_sub(head)) > limit.as_millis();
        }
        let quiet = now.saturating_sub(last_io);
        u128::from(quiet) > self.gate.scaled(limits.idle_timeout).as_millis()
    }
}

/// A request in flight, until its response body is dropped.
#[derive(Debug)]
struct RequestGuard(Arc<Activity>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.0.on_write();
        self.0
            .counters
            .requests_in_flight
            .fetch_sub(1, Ordering::Relaxed);
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that keeps its request counted as in flight.
struct GuardedBody {
    body: Body,
    _guard: RequestGuard,
}

impl http_body::Body for GuardedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The JSON answer that replaces hyper's own (empty) answer to a request
/// head it could not parse.
fn parse_error_answer(status_line: &[u8]) -> Vec<u8> {
    let code = status_line.get(9..12).unwrap_or(b"400");
    let (code, reason, message) = match code {
        b"414" => ("414", "URI Too Long", "request path too long"),
        b"431" => (
            "431",
            "Request Header Fields Too Large",
            "request headers too large",
        ),
        _ => ("400", "Bad Request", "malformed request"),
    };
    let body = format!("{{\"error\":\"{message}\"}}");
    format!(
        "HTTP/1.1 {code} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Whether `buf` is hyper's own answer to a head it could not parse: a 4xx
/// with an empty body (every answer of the Hub's own has a JSON body).
fn is_parse_error_answer(buf: &[u8]) -> bool {
    let head_end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(buf.len());
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    (head.starts_with("http/1.1 4") || head.starts_with("http/1.0 4"))
        && head.contains("\r\ncontent-length: 0")
}

/// Rewriting hyper's own answer to an unparsable head.
enum Rewrite {
    /// Nothing to rewrite.
    Off,
    /// Writing the JSON answer in its place.
    Writing { answer: Vec<u8>, written: usize },
    /// The answer is out; anything else hyper writes is dropped.
    Done,
}

/// The connection's socket, reporting its activity and rewriting hyper's
/// own parse-error answers to JSON.
struct WatchedStream {
    inner: TcpStream,
    activity: Arc<Activity>,
    rewrite: Rewrite,
}

impl AsyncRead for WatchedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = result {
            self.activity.on_read(buf.filled().len() - before);
        }
        result
    }
}

impl AsyncWrite for WatchedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if matches!(this.rewrite, Rewrite::Off)
            && this.activity.head_pending()
            && is_parse_error_answer(buf)
        {
            this.rewrite = Rewrite::Writing {
                answer: parse_error_answer(buf),
                written: 0,
            };
        }
        match &mut this.rewrite {
            Rewrite::Off => {
                let result = Pin::new(&mut this.inner).poll_write(cx, buf);
                if let Poll::Ready(Ok(n)) = result {
                    if n > 0 {
                        this.activity.on_write();
                    }
                }
                result
            }
            Rewrite::Writing { answer, written } => {
                while *written < answer.len() {
                    match Pin::new(&mut this.inner).poll_write(cx, &answer[*written..]) {
                        Poll::Ready(Ok(0)) => {
                            return Poll::Ready(Err(io::ErrorKind::WriteZero.into()))
                        }
                        Poll::Ready(Ok(n)) => *written += n,
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                        Poll::Pending => return Poll::Pending,
                    }
                }
                this.rewrite = Rewrite::Done;
                Poll::Ready(Ok(buf.len()))
            }
            Rewrite::Done => Poll::Ready(Ok(buf.len())),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A listening socket and what it serves, for
/// [`Hub::serving_listeners`](crate::Hub::serving_listeners).
#[derive(Debug)]
pub struct Listener {
    socket: TcpListener,
    router: Router,
    name: &'static str,
    max_connections: Option<usize>,
    open: Arc<AtomicUsize>,
}

impl Listener {
    /// Serves `router` on `socket`; `name` says which in the log (`api`,
    /// `web`, `metrics`).
    pub fn new(name: &'static str, socket: TcpListener, router: Router) -> Listener {
        Listener {
            socket,
            router,
            name,
            max_connections: None,
            open: Arc::default(),
        }
    }

    /// Holds at most `max` connections open at once; further clients wait
    /// in the kernel's queue until one ends.
    pub fn with_max_connections(mut self, max: usize) -> Listener {
        self.max_connections = Some(max.max(1));
        self
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// What it serves, as the log names it.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Whether it has a cap of its own, apart from the Hub's.
    fn has_own_cap(&self) -> bool {
        self.max_connections.is_some()
    }

    fn is_full(&self) -> bool {
        self.max_connections
            .is_some_and(|max| self.open.load(Ordering::Acquire) >= max)
    }

    fn take_slot(&self) -> ConnectionSlot {
        self.open.fetch_add(1, Ordering::AcqRel);
        ConnectionSlot(Arc::clone(&self.open))
    }
}

/// A connection counted against its listener's cap until it ends.
struct ConnectionSlot(Arc<AtomicUsize>);

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Waits for a connection on any listener with room for one, trying them
/// from `first` on, so that a busy listener cannot starve the others. A
/// listener at its cap is not polled: the end of one of its connections
/// (seen by the accept loop) asks again.
fn accept_any<'a>(
    listeners: &'a [Listener],
    gate: &'a ConnectionGate,
    first: usize,
) -> impl Future<Output = (usize, io::Result<(TcpStream, SocketAddr)>)> + 'a {
    std::future::poll_fn(move |cx| {
        // At the cap, clients wait in the kernel's queues (but those of a
        // listener with a cap of its own, bounded by it).
        let room = gate.has_room();
        let count = listeners.len();
        for index in (0..count).map(|k| (first + k) % count) {
            let listener = &listeners[index];
            if listener.is_full() || !(room || listener.has_own_cap()) {
                continue;
            }
            if let Poll::Ready(accepted) = listener.socket.poll_accept(cx) {
                return Poll::Ready((index, accepted));
            }
        }
        Poll::Pending
    })
}

/// Whether a request carries a credential (a bearer header or the session
/// cookie; checked, as any, by the routes).
fn carries_credential<B>(request: &http::Request<B>) -> bool {
    let headers = request.headers();
    headers.contains_key(http::header::AUTHORIZATION)
        || headers
            .get_all(http::header::COOKIE)
            .iter()
            .any(|v| memchr::memmem::find(v.as_bytes(), SESSION_COOKIE.as_bytes()).is_some())
}

/// How a connection's first request on probation is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Headroom {
    /// It carries a credential: served, and the connection kept unless
    /// the credential is refused.
    Caller,
    /// `/healthz` without a credential: served, then the connection closed.
    HealthCheck,
    /// Anything else: refused.
    Refused,
}

/// What a first request on probation may do with the headroom.
fn headroom_for<B>(request: &http::Request<B>) -> Headroom {
    if carries_credential(request) {
        Headroom::Caller
    } else if request.uri().path() == HEALTHZ {
        Headroom::HealthCheck
    } else {
        Headroom::Refused
    }
}

/// The answer to an anonymous request on probation: 503 in the headroom,
/// 429 past its address's cap; either with `Retry-After`, closing the
/// connection.
fn refusal(probation: Probation) -> axum::response::Response {
    use axum::response::IntoResponse;
    let (status, message) = match probation {
        Probation::Headroom => (
            http::StatusCode::SERVICE_UNAVAILABLE,
            "too many connections; retry later",
        ),
        Probation::Address => (
            http::StatusCode::TOO_MANY_REQUESTS,
            "too many connections from this address; retry later",
        ),
    };
    let mut response = ApiError::new(status, message)
        .retry_after(1)
        .into_response();
    close_after(&mut response);
    response
}

/// Has hyper close the connection once `response` is written.
fn close_after<B>(response: &mut http::Response<B>) {
    response.headers_mut().insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
}

/// A connection as accepted: its socket, its peer and its place under the
/// caps.
struct Accepted {
    stream: TcpStream,
    peer: SocketAddr,
    _listener_slot: ConnectionSlot,
    _gate_slot: GateSlot,
    probation: Option<Probation>,
}

/// Serves one connection until it ends, times out, or is cut off.
async fn serve_connection(
    accepted: Accepted,
    router: Router,
    limits: ServerLimits,
    signal: ShutdownSignal,
    counters: Arc<ServerCounters>,
    gate: Arc<ConnectionGate>,
) {
    let Accepted {
        stream,
        peer,
        _listener_slot,
        _gate_slot,
        probation,
    } = accepted;
    let activity = Arc::new(Activity::new(counters, Arc::clone(&gate), probation));
    let io = TokioIo::new(WatchedStream {
        inner: stream,
        activity: Arc::clone(&activity),
        rewrite: Rewrite::Off,
    });
    let watched = Arc::clone(&activity);
    let request_signal = signal.clone();
    let client = ClientAddr(peer);
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let probation = watched
            .take_probation()
            .map(|probation| (probation, headroom_for(&request)));
        let refused = match probation {
            Some((probation, Headroom::Refused)) => {
                gate.refuse();
                Some(refusal(probation))
            }
            _ => None,
        };
        let guard = watched.begin_request();
        let routed = refused.is_none().then(|| {
            let mut request: Request = request.map(Body::new);
            let extensions = request.extensions_mut();
            extensions.insert(request_signal.clone());
            extensions.insert(client);
            router.clone().oneshot(request)
        });
        async move {
            let response = match (routed, refused) {
                (Some(routed), _) => match routed.await {
                    Ok(response) => response,
                    Err(never) => match never {},
                },
                (None, refused) => refused.expect("refused when not routed"),
            };
            // A health check, or a credential refused, keeps no room.
            let mut response = response;
            let keeps_no_room = match probation {
                Some((_, Headroom::HealthCheck)) => true,
                Some((_, Headroom::Caller)) => response.status() == http::StatusCode::UNAUTHORIZED,
                _ => false,
            };
            if keeps_no_room {
                close_after(&mut response);
            }
            Ok::<_, Infallible>(response.map(|body| GuardedBody {
                body,
                _guard: guard,
            }))
        }
    });
    let connection = hyper::server::conn::http1::Builder::new().serve_connection(io, service);
    tokio::pin!(connection);
    let mut tick = tokio::time::interval(activity.tick(&limits));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut shutting_down = false;
    loop {
        tokio::select! {
            _ = connection.as_mut() => return,
            _ = signal.started(), if !shutting_down => {
                shutting_down = true;
                // No more requests on this connection; those in flight finish.
                connection.as_mut().graceful_shutdown();
            }
            _ = tick.tick() => {
                // Nothing in flight: a half-sent head or an idle connection
                // loses nothing when closed at shutdown.
                if activity.timed_out(&limits) || (shutting_down && activity.idle()) {
                    // On probation to the end: refused without a request.
                    if activity.take_probation().is_some() {
                        activity.gate.refuse();
                    }
                    return;
                }
            }
        }
    }
}

/// What shutdown cut off at its deadline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CutOff {
    connections: usize,
    requests: usize,
}

impl CutOff {
    /// Logs the end of the shutdown, its last line.
    pub(crate) fn log_finished(self, logger: &Logger) {
        logger.info(
            "shutdown finished",
            &[
                ("cut_off_connections", self.connections.into()),
                ("cut_off_requests", self.requests.into()),
            ],
        );
    }
}

/// Accepts connections on every listener and serves each listener's router
/// on them until `trigger` completes, then shuts them all down together as
/// the module describes, and returns what was cut off.
pub(crate) async fn serve(
    listeners: Vec<Listener>,
    logger: Logger,
    limits: ServerLimits,
    streams: StreamLimiter,
    counters: Arc<ServerCounters>,
    gate: Arc<ConnectionGate>,
    trigger: impl Future<Output = ()> + Send + 'static,
) -> CutOff {
    let signal = ShutdownSignal::new();
    let mut connections = JoinSet::new();
    let mut first = 0;
    tokio::pin!(trigger);
    loop {
        tokio::select! {
            _ = &mut trigger => break,
            (index, accepted) = accept_any(&listeners, &gate, first) => match accepted {
                Ok((stream, peer)) => {
                    first = (index + 1) % listeners.len();
                    let listener = &listeners[index];
                    let _ = stream.set_nodelay(true);
                    let (gate_slot, probation) = gate.admit(peer.ip());
                    // A listener with a cap of its own (the metrics port)
                    // is bounded by it, never on probation.
                    let probation = probation.filter(|_| !listener.has_own_cap());
                    let accepted = Accepted {
                        stream,
                        peer,
                        _listener_slot: listener.take_slot(),
                        _gate_slot: gate_slot,
                        probation,
                    };
                    connections.spawn(serve_connection(
                        accepted,
                        listener.router.clone(),
                        limits,
                        signal.clone(),
                        Arc::clone(&counters),
                        Arc::clone(&gate),
                    ));
                }
                // Out of file descriptors and the like: wait, then go on
                // (a failed accept is the client's problem, not the Hub's).
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    // Every listener stops accepting at once.
    drop(listeners);
    let deadline_ms = u64::try_from(limits.shutdown_timeout.as_millis()).unwrap_or(u64::MAX);
    logger.info(
        "shutdown started",
        &[
            ("connections", connections.len().into()),
            (
                "requests_in_flight",
                counters.requests_in_flight.load(Ordering::Relaxed).into(),
            ),
            ("event_streams", streams.open().into()),
            ("deadline_ms", deadline_ms.into()),
        ],
    );
    signal.start();
    let drained = tokio::time::timeout(limits.shutdown_timeout, async {
        while connections.join_next().await.is_some() {}
    })
    .await
    .is_ok();
    if drained {
        return CutOff::default();
    }
    let cut = CutOff {
        connections: connections.len(),
        requests: counters.requests_in_flight.load(Ordering::Relaxed),
    };
    // Dropping each connection's task drops its requests' futures, which
    // writes their perf_trace lines.
    connections.abort_all();
    while connections.join_next().await.is_some() {}
    cut
}

#[cfg(test)]
#[path = "accept_tests.rs"]
mod tests;
