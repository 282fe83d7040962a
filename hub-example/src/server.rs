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
//! descriptors the others need.
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
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
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

use crate::api::StreamLimiter;
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

/// One connection's activity, as its watcher sees it. Times are
/// milliseconds since the connection was accepted.
#[derive(Debug)]
struct Activity {
    accepted: Instant,
    last_io: AtomicU64,
    head_since: AtomicU64,
    in_flight: AtomicUsize,
    counters: Arc<ServerCounters>,
}

impl Activity {
    fn new(counters: Arc<ServerCounters>) -> Self {
        Activity {
            accepted: Instant::now(),
            last_io: AtomicU64::new(0),
            // The first head's clock starts when the connection is accepted.
            head_since: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            counters,
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
        self.last_io.store(now, Ordering::Relaxed);
        if self.in_flight.load(Ordering::Acquire) == 0 {
            let _ =
                self.head_since
                    .compare_exchange(NO_HEAD, now, Ordering::AcqRel, Ordering::Relaxed);
        }
    }

    fn on_write(&self) {
        self.last_io.store(self.now(), Ordering::Relaxed);
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
        if head != NO_HEAD {
            return u128::from(now.saturating_sub(head)) > limits.header_read_timeout.as_millis();
        }
        let quiet = now.saturating_sub(self.last_io.load(Ordering::Relaxed));
        u128::from(quiet) > limits.idle_timeout.as_millis()
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
fn accept_any(
    listeners: &[Listener],
    first: usize,
) -> impl Future<Output = (usize, io::Result<TcpStream>)> + '_ {
    std::future::poll_fn(move |cx| {
        let count = listeners.len();
        for index in (0..count).map(|k| (first + k) % count) {
            let listener = &listeners[index];
            if listener.is_full() {
                continue;
            }
            if let Poll::Ready(accepted) = listener.socket.poll_accept(cx) {
                return Poll::Ready((index, accepted.map(|(stream, _)| stream)));
            }
        }
        Poll::Pending
    })
}

/// Serves one connection until it ends, times out, or is cut off.
async fn serve_connection(
    stream: TcpStream,
    router: Router,
    limits: ServerLimits,
    signal: ShutdownSignal,
    counters: Arc<ServerCounters>,
    _slot: ConnectionSlot,
) {
    let activity = Arc::new(Activity::new(counters));
    let io = TokioIo::new(WatchedStream {
        inner: stream,
        activity: Arc::clone(&activity),
        rewrite: Rewrite::Off,
    });
    let watched = Arc::clone(&activity);
    let request_signal = signal.clone();
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let guard = watched.begin_request();
        let mut request: Request = request.map(Body::new);
        request.extensions_mut().insert(request_signal.clone());
        let response = router.clone().oneshot(request);
        async move {
            let response = match response.await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            Ok::<_, Infallible>(response.map(|body| GuardedBody {
                body,
                _guard: guard,
            }))
        }
    });
    let connection = hyper::server::conn::http1::Builder::new().serve_connection(io, service);
    tokio::pin!(connection);
    let mut tick = tokio::time::interval(limits.connection_tick());
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
    trigger: impl Future<Output = ()> + Send + 'static,
) -> CutOff {
    let signal = ShutdownSignal::new();
    let mut connections = JoinSet::new();
    let mut first = 0;
    tokio::pin!(trigger);
    loop {
        tokio::select! {
            _ = &mut trigger => break,
            (index, accepted) = accept_any(&listeners, first) => match accepted {
                Ok(stream) => {
                    first = (index + 1) % listeners.len();
                    let listener = &listeners[index];
                    let _ = stream.set_nodelay(true);
                    connections.spawn(serve_connection(
                        stream,
                        listener.router.clone(),
                        limits,
                        signal.clone(),
                        Arc::clone(&counters),
                        listener.take_slot(),
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
mod tests {
    use super::*;

    fn limits(header_ms: u64, idle_ms: u64) -> ServerLimits {
        ServerLimits {
            header_read_timeout: Duration::from_millis(header_ms),
            idle_timeout: Duration::from_millis(idle_ms),
            ..ServerLimits::default()
        }
    }

    fn activity() -> Arc<Activity> {
        Arc::new(Activity::new(Arc::default()))
    }

    #[test]
    fn a_request_in_flight_never_times_out_here() {
        let a = activity();
        let guard = a.begin_request();
        assert!(!a.timed_out_at(10_000, &limits(1, 1)));
        drop(guard);
        assert!(a.idle());
        assert!(a.timed_out_at(10_000, &limits(1, 1)));
    }

    #[test]
    fn the_first_head_is_timed_from_the_accept_and_later_ones_from_their_first_byte() {
        let a = activity();
        assert!(a.head_pending());
        assert!(!a.timed_out_at(100, &limits(200, 60_000)));
        assert!(a.timed_out_at(500, &limits(200, 60_000)), "first head late");

        let b = activity();
        drop(b.begin_request());
        assert!(!b.head_pending(), "between requests no head is arriving");
        assert!(!b.timed_out_at(500, &limits(200, 60_000)), "idle, not slow");
        assert!(b.timed_out_at(500, &limits(60_000, 200)), "idle too long");
        b.on_read_at(3, 450);
        assert!(b.head_pending());
        assert!(
            !b.timed_out_at(500, &limits(200, 200)),
            "the head just started"
        );
        assert!(
            b.timed_out_at(700, &limits(200, 60_000)),
            "the head is late"
        );
    }

    #[test]
    fn only_empty_4xx_answers_are_taken_for_the_parser_s() {
        assert!(is_parse_error_answer(
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n"
        ));
        assert!(!is_parse_error_answer(
            b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: 27\r\n\r\n{}"
        ));
        assert!(!is_parse_error_answer(
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"
        ));
    }

    #[test]
    fn hyper_parse_errors_become_json() {
        for (status, code, message) in [
            (
                &b"HTTP/1.1 431 Request Header Fields Too Large\r\n"[..],
                "431",
                "request headers too large",
            ),
            (
                b"HTTP/1.1 414 URI Too Long\r\n",
                "414",
                "request path too long",
            ),
            (b"HTTP/1.1 400 Bad Request\r\n", "400", "malformed request"),
        ] {
            let answer = String::from_utf8(parse_error_answer(status)).unwrap();
            assert!(answer.starts_with(&format!("HTTP/1.1 {code} ")), "{answer}");
            let (head, body) = answer.split_once("\r\n\r\n").unwrap();
            assert!(head.contains("content-type: application/json"));
            assert!(head.contains(&format!("content-length: {}", body.len())));
            let json: serde_json::Value = serde_json::from_str(body).unwrap();
            assert_eq!(json["error"], message);
        }
    }
}
