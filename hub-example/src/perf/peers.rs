//! The Hub instrumented the ways a Rust team would otherwise do it, for the
//! benchmarks that set perf-trace beside them (feature `peer-tracing`, for
//! benchmarks only). Each peer serves the untraced Hub (perf-trace off)
//! with:
//!
//! - [`Peer::TowerHttp`]: tower-http's `TraceLayer`, its span holding the
//!   method and the matched route, and its response event the status and
//!   the latency, written by tracing-subscriber's JSON formatter: one line
//!   per request.
//! - [`Peer::Spans`]: the same, and a `tracing` span at every phase and
//!   store call (perf-trace-core's `tracing-spans`: the attributes the Hub
//!   already carries open them, so no handler changes; the store is put
//!   behind its counted decorator as when traced), each written as a JSON
//!   line with its own durations when it closes: a naive port of the
//!   phases and store calls to `tracing`.
//!
//! The lines go through tracing-appender's background writer, as
//! perf-trace's go through its own. `hub-example serve` built with the
//! feature reads `PEER_ENV` (`tower-http` or `spans`) at start; unset, it
//! serves as without the feature.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::extract::MatchedPath;
use axum::Router;
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tower_http::LatencyUnit;
use tracing::{Level, Span};
use tracing_appender::non_blocking::{NonBlocking, NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::{reload, Layer, Registry};

/// The environment variable naming the peer `serve` instruments the Hub with.
pub(crate) const PEER_ENV: &str = "HUB_PEER_TRACING";

/// The target of the request span, as tower-http names its own.
const REQUEST_TARGET: &str = "tower_http::trace::make_span";

/// An instrumentation a team would pick instead of perf-trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// tower-http's `TraceLayer`: one JSON line per request.
    TowerHttp,
    /// `TraceLayer` and a span at every phase and store call, each a line.
    Spans,
}

impl Peer {
    /// Both peers.
    pub const ALL: [Peer; 2] = [Peer::TowerHttp, Peer::Spans];

    /// The peer's name in `PEER_ENV` and in the benchmarks' tables.
    pub fn name(self) -> &'static str {
        match self {
            Peer::TowerHttp => "tower-http",
            Peer::Spans => "spans",
        }
    }

    /// The peer named `name`.
    pub fn parse(name: &str) -> Option<Peer> {
        Peer::ALL.into_iter().find(|peer| peer.name() == name)
    }

    /// The targets whose spans and events the peer writes.
    fn targets(self) -> Targets {
        let request = Targets::new().with_target("tower_http", Level::INFO);
        match self {
            Peer::TowerHttp => request,
            Peer::Spans => request.with_target("perf_trace::span", Level::INFO),
        }
    }
}

/// A subscriber layer of `peer`, over a registry.
pub(crate) type PeerLayer = Box<dyn Layer<Registry> + Send + Sync>;

/// `peer`'s JSON lines, written to `writer`.
pub(crate) fn peer_layer<W>(peer: Peer, writer: W) -> PeerLayer
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let json = tracing_subscriber::fmt::layer().json().with_writer(writer);
    let json = match peer {
        Peer::TowerHttp => json,
        Peer::Spans => json.with_span_events(FmtSpan::CLOSE),
    };
    peer.targets().and_then(json).boxed()
}

/// `router` with tower-http's `TraceLayer`: a span per request (method,
/// route) and, once the response is ready, its status and latency.
pub fn traced(router: Router) -> Router {
    router.layer(
        TraceLayer::new_for_http()
            .make_span_with(request_span)
            .on_request(())
            .on_response(
                DefaultOnResponse::new()
                    .level(Level::INFO)
                    .latency_unit(LatencyUnit::Micros),
            )
            .on_body_chunk(())
            .on_eos(()),
    )
}

fn request_span(request: &http::Request<axum::body::Body>) -> Span {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str);
    tracing::info_span!(target: REQUEST_TARGET, "request", method = %request.method(), route)
}

/// A background writer to `out` that drops no line, and the guard that
/// writes out what is left when dropped.
pub(crate) fn background_writer<T: Write + Send + 'static>(out: T) -> (NonBlocking, WorkerGuard) {
    NonBlockingBuilder::default().lossy(false).finish(out)
}

/// Set while [`building_for`] builds a Hub for the spans peer.
static BUILDING_FOR_SPANS: AtomicBool = AtomicBool::new(false);

/// Whether a Hub built now puts its store behind the counted decorator
/// although perf-trace is off, so that its store calls open their spans as
/// its phases do: with [`PEER_ENV`] `spans` (`serve`), or inside
/// [`building_for`] the spans peer.
pub(crate) fn spans_at_store_calls() -> bool {
    BUILDING_FOR_SPANS.load(Ordering::Relaxed)
        || std::env::var(PEER_ENV).is_ok_and(|name| name == Peer::Spans.name())
}

/// Runs `build`, which builds a Hub in this process, as `serve` builds one
/// for `peer` (the spans peer's store behind the counted decorator): for
/// the benchmarks, which build their Hubs in-process, one at a time,
/// instead of setting `PEER_ENV` under threads that may read the
/// environment.
pub fn building_for<T>(peer: Peer, build: impl FnOnce() -> T) -> T {
    /// Clears the flag however `build` ends.
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            BUILDING_FOR_SPANS.store(false, Ordering::Relaxed);
        }
    }
    BUILDING_FOR_SPANS.store(peer == Peer::Spans, Ordering::Relaxed);
    let _reset = Reset;
    build()
}

/// For `serve`: when `PEER_ENV` names a peer, installs its subscriber as
/// the process's, writing to standard output, and returns `router` traced
/// by it; unset, `router` as it is.
pub fn from_env(router: Router) -> Result<Router, String> {
    let Ok(name) = std::env::var(PEER_ENV) else {
        return Ok(router);
    };
    let peer = Peer::parse(&name)
        .ok_or_else(|| format!("{PEER_ENV}: {name:?} is not a peer (tower-http or spans)"))?;
    let guard = install(peer, std::io::stdout()).map_err(|e| format!("{PEER_ENV}: {e}"))?;
    // The writer lives as long as the process.
    std::mem::forget(guard);
    Ok(traced(router))
}

/// Installs `peer`'s subscriber as the process's, writing to `out` in the
/// background; dropping the guard writes out what is left and stops it.
pub fn install<T: Write + Send + 'static>(peer: Peer, out: T) -> Result<WorkerGuard, String> {
    let (writer, guard) = background_writer(out);
    tracing::subscriber::set_global_default(Registry::default().with(peer_layer(peer, writer)))
        .map_err(|e| e.to_string())?;
    Ok(guard)
}

/// One process-wide subscriber whose peer can be changed between requests,
/// for a benchmark that interleaves the peers' requests with others in one
/// process. With no peer every callsite is off, as with no subscriber.
pub struct PeerSwitch {
    handle: reload::Handle<PeerLayer, Registry>,
    writer: NonBlocking,
    current: Option<Peer>,
    _guard: WorkerGuard,
}

impl PeerSwitch {
    /// Installs the switch as the process's subscriber, no peer on, the
    /// peers' lines written to `out`.
    pub fn install<T: Write + Send + 'static>(out: T) -> Result<PeerSwitch, String> {
        let (writer, guard) = background_writer(out);
        let (layer, handle) = reload::Layer::new(LevelFilter::OFF.boxed());
        tracing::subscriber::set_global_default(Registry::default().with(layer))
            .map_err(|e| e.to_string())?;
        Ok(PeerSwitch {
            handle,
            writer,
            current: None,
            _guard: guard,
        })
    }

    /// Turns `peer` on (none: every callsite off).
    pub fn set(&mut self, peer: Option<Peer>) {
        if self.current == peer {
            return;
        }
        let layer = match peer {
            Some(peer) => peer_layer(peer, self.writer.clone()),
            None => LevelFilter::OFF.boxed(),
        };
        self.handle
            .reload(layer)
            .expect("the subscriber outlives the switch");
        self.current = peer;
    }
}

#[cfg(test)]
mod tests {
    use axum::routing::get;
    use tower::ServiceExt as _;

    use super::*;
    use crate::log::CaptureBuffer;

    /// Lines written to memory, handed to the layer under test.
    #[derive(Clone, Default)]
    struct Lines(CaptureBuffer);

    impl<'w> MakeWriter<'w> for Lines {
        type Writer = CaptureBuffer;
        fn make_writer(&'w self) -> CaptureBuffer {
            self.0.clone()
        }
    }

    #[perf_trace_core::traced_phase(crate::perf::keys::Phase::Enrich)]
    fn enrich() -> &'static str {
        "enriched"
    }

    /// The lines `peer` writes for one request to `/items/{id}`.
    async fn lines_of(peer: Peer) -> Vec<serde_json::Value> {
        let lines = Lines::default();
        let subscriber = Registry::default().with(peer_layer(peer, lines.clone()));
        let _default = tracing::subscriber::set_default(subscriber);
        let router = traced(Router::new().route("/items/{id}", get(|| async { enrich() })));
        let request = http::Request::get("/items/7")
            .body(axum::body::Body::empty())
            .unwrap();
        let response = router.oneshot(request).await.unwrap();
        assert_eq!(response.status(), http::StatusCode::OK);
        drop(response);
        lines
            .0
            .lines()
            .iter()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    #[test]
    fn a_hub_built_for_the_spans_peer_counts_its_store_calls_and_no_later_one_does() {
        assert!(!spans_at_store_calls());
        assert!(building_for(Peer::Spans, spans_at_store_calls));
        assert!(!building_for(Peer::TowerHttp, spans_at_store_calls));
        assert!(!spans_at_store_calls());
        let panicked = std::panic::catch_unwind(|| {
            building_for(Peer::Spans, || panic!("the Hub failed to build"))
        });
        assert!(panicked.is_err());
        assert!(!spans_at_store_calls(), "the flag outlived a failed build");
    }

    #[tokio::test]
    async fn tower_http_writes_one_line_with_method_route_status_and_latency() {
        let lines = lines_of(Peer::TowerHttp).await;
        assert_eq!(lines.len(), 1, "{lines:?}");
        let line = &lines[0];
        assert_eq!(line["span"]["method"], "GET");
        assert_eq!(line["span"]["route"], "/items/{id}");
        assert_eq!(line["fields"]["status"], 200);
        assert!(line["fields"]["latency"].as_str().unwrap().ends_with("μs"));
    }

    #[tokio::test]
    async fn spans_also_write_each_phase_as_it_closes() {
        let lines = lines_of(Peer::Spans).await;
        let phase = lines
            .iter()
            .find(|line| line["span"]["name"] == "phase")
            .unwrap_or_else(|| panic!("no phase line: {lines:?}"));
        assert_eq!(phase["span"]["key"], "enrich");
        assert_eq!(phase["fields"]["message"], "close");
        assert!(lines.iter().any(|line| line["fields"]["status"] == 200));
    }
}
