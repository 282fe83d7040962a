//! The tower layer: one line per request however it ends, headers only when
//! asked for and allowed, serialize timed over the body, stream lines.

mod common;

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::{Captured, Endpoint, Phase, TestSchema};
use futures_util::FutureExt as _;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody};
use perf_trace_core::layer::TracedBody;
use perf_trace_core::record::{PoolFigures, PoolStats};
use perf_trace_core::{
    layer::TracePolicy, traced_phase, Emitter, LineFormat, LineSink, PerfTraceLayer,
};
use tower::{service_fn, Layer, Service, ServiceExt};

#[derive(Clone)]
struct Policy;

/// Marks an "admin" request in the tests (set by the outer authentication).
#[derive(Clone)]
struct Admin;

impl TracePolicy<TestSchema> for Policy {
    fn classify<B>(&self, request: &Request<B>) -> Endpoint {
        match request.uri().path() {
            "/things" => Endpoint::ThingsList,
            "/stream" => Endpoint::ThingsStream,
            _ => Endpoint::Other,
        }
    }

    fn headers_allowed<B>(&self, request: &Request<B>) -> bool {
        request.extensions().get::<Admin>().is_some()
    }
}

struct FakePool(AtomicU64);

impl PoolStats for FakePool {
    fn pool_figures(&self) -> PoolFigures {
        let waits = self.0.fetch_add(5, Ordering::Relaxed);
        PoolFigures {
            wait_count: waits,
            wait_time: Duration::from_micros(waits * 10),
            in_use: 1,
            open: 4,
        }
    }
}

#[traced_phase(Phase::Load)]
fn load() {}

#[traced_phase(Phase::Render)]
async fn render_for_a_minute() {
    tokio::time::sleep(Duration::from_secs(60)).await;
}

type BoxBody = http_body_util::combinators::UnsyncBoxBody<Bytes, Infallible>;

async fn handler(request: Request<()>) -> Result<Response<BoxBody>, Infallible> {
    load();
    match request.uri().path() {
        "/panic" => panic!("handler panicked"),
        "/slow" => {
            render_for_a_minute().await;
            Ok(Response::new(Full::new(Bytes::new()).boxed_unsync()))
        }
        "/discard" => {
            perf_trace_core::record::discard_line();
            Ok(Response::builder()
                .status(400)
                .body(Full::new(Bytes::new()).boxed_unsync())
                .unwrap())
        }
        "/stream" => {
            perf_trace_core::record::mark_stream();
            let chunks = futures_util::stream::iter((0..3).map(|i| {
                perf_trace_core::record::add_sse_events(1);
                Ok::<_, Infallible>(http_body::Frame::data(Bytes::from(format!(
                    "data: {i}\n\n"
                ))))
            }));
            Ok(Response::new(StreamBody::new(chunks).boxed_unsync()))
        }
        _ => Ok(Response::new(
            Full::new(Bytes::from_static(b"[1,2,3]")).boxed_unsync(),
        )),
    }
}

fn traced(
    captured: &Captured,
) -> impl Service<Request<()>, Response = Response<TracedBody<BoxBody>>, Error = Infallible> + Clone
{
    let emitter = Emitter::new(
        LineFormat::scion("test-svc"),
        LineSink::new(captured.clone()),
    );
    PerfTraceLayer::<TestSchema, _>::new(Policy, emitter)
        .with_pool(Arc::new(FakePool(AtomicU64::new(0))))
        .layer(service_fn(handler))
}

fn get(path: &str) -> Request<()> {
    Request::get(path).body(()).unwrap()
}

/// Waits for `response` and reads its body to the end, which writes the
/// request's line.
async fn drain<B>(response: impl std::future::Future<Output = Result<Response<B>, Infallible>>)
where
    B: http_body::Body,
    B::Error: std::fmt::Debug,
{
    response.await.unwrap().into_body().collect().await.unwrap();
}

#[tokio::test]
async fn one_line_per_request_with_request_id_header() {
    let captured = Captured::default();
    let response = traced(&captured).oneshot(get("/things")).await.unwrap();
    let id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(id.len(), 36);
    assert!(response.headers().get("x-scion-perf-endpoint").is_none());
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"[1,2,3]");
    let lines = captured.json_lines();
    assert_eq!(lines.len(), 1);
    let line = &lines[0];
    assert_eq!(line["endpoint"], "things.list");
    assert_eq!(line["request_id"], id.as_str());
    assert_eq!(line["method"], "GET");
    assert_eq!(line["phase_load_n"], 1);
    assert_eq!(line["phase_serialize_n"], 1);
    assert_eq!(line["db_wait_count"], 5);
    assert_eq!(line["db_open"], 4);
    assert_eq!(line["component"], "test-svc");
}

#[tokio::test]
async fn a_baseline_from_a_middleware_in_front_counts_its_waits_too() {
    let captured = Captured::default();
    let svc = traced(&captured);
    // The fake pool gains 5 waits per read: the layer reads it at the
    // request's start (0) and end (5).
    drain(svc.clone().oneshot(get("/things"))).await;
    // A middleware in front read 0 waits; the layer then reads only the end
    // (10): its own start (10) would have said 5.
    let mut request = get("/things");
    request
        .extensions_mut()
        .insert(perf_trace_core::record::PoolBaseline(PoolFigures::default()));
    drain(svc.oneshot(request)).await;
    let lines = captured.json_lines();
    assert_eq!(lines[0]["db_wait_count"], 5);
    assert_eq!(lines[1]["db_wait_count"], 10);
    assert_eq!(lines[1]["db_wait_us"], 100);
}

#[tokio::test]
async fn a_baseline_handed_for_the_first_poll_counts_and_is_not_kept() {
    use perf_trace_core::record::{with_baseline, PoolBaseline};
    let captured = Captured::default();
    let svc = traced(&captured);
    // Each read of the fake pool adds 5 waits (10 µs each): a request that
    // reads both its ends counts 5, one handed a baseline of 0 counts every
    // wait up to its end (10 for the second request, 15 for the third).
    drain(svc.clone().oneshot(get("/things"))).await;
    drain(with_baseline(
        PoolFigures::default(),
        svc.clone().oneshot(get("/things")),
    ))
    .await;
    // Handed over and in the extensions: the handed one counts.
    let mut request = get("/things");
    let in_extensions = PoolFigures {
        wait_count: 10,
        ..PoolFigures::default()
    };
    request.extensions_mut().insert(PoolBaseline(in_extensions));
    drain(with_baseline(
        PoolFigures::default(),
        svc.clone().oneshot(request),
    ))
    .await;
    // A poll that panics leaves nothing behind for the next request.
    let panicked = std::panic::AssertUnwindSafe(with_baseline(PoolFigures::default(), async {
        panic!("inside the first poll")
    }))
    .catch_unwind()
    .await;
    assert!(panicked.is_err());
    // Started after the handed polls, a request reads its own start.
    drain(svc.clone().oneshot(get("/things"))).await;
    let lines = captured.json_lines();
    let waits: Vec<_> = lines.iter().map(|line| &line["db_wait_count"]).collect();
    assert_eq!(waits, [5, 10, 15, 5]);
    let wait_us: Vec<_> = lines.iter().map(|line| &line["db_wait_us"]).collect();
    assert_eq!(wait_us, [50, 100, 150, 50]);
}

#[tokio::test]
async fn headers_need_the_exact_trigger_and_an_allowed_caller() {
    let captured = Captured::default();
    let svc = traced(&captured);
    let ask = |value: &str, admin: bool| {
        let mut request = Request::get("/things")
            .header("X-Scion-Perf-Trace", value)
            .body(())
            .unwrap();
        if admin {
            request.extensions_mut().insert(Admin);
        }
        request
    };
    let allowed = svc.clone().oneshot(ask("1", true)).await.unwrap();
    let h = allowed.headers();
    assert_eq!(h["x-scion-perf-endpoint"], "things.list");
    assert_eq!(h["x-scion-perf-phase-counts"], "load=1");
    assert!(h["x-scion-perf-phases"]
        .to_str()
        .unwrap()
        .starts_with("load="));
    assert_eq!(
        h["x-scion-perf-decisions"],
        "count=0,allow=0,deny=0,other=0,audit_us=0"
    );
    assert!(h["x-scion-perf-db"]
        .to_str()
        .unwrap()
        .starts_with("wait_count=5,"));
    assert!(
        h.get("x-scion-perf-store-calls").is_none(),
        "empty sets are left out"
    );
    assert!(
        !h["x-scion-perf-phases"]
            .to_str()
            .unwrap()
            .contains("serialize"),
        "headers are set before the body is serialized"
    );

    for (value, admin) in [("1", false), ("true", true), ("1 ", true), ("0", true)] {
        let response = svc.clone().oneshot(ask(value, admin)).await.unwrap();
        let perf: Vec<_> = response
            .headers()
            .keys()
            .filter(|k| k.as_str().starts_with("x-scion-perf-"))
            .collect();
        assert!(perf.is_empty(), "value {value:?} admin {admin}: {perf:?}");
    }
}

#[tokio::test]
async fn a_panicking_handler_still_writes_its_line() {
    let captured = Captured::default();
    let result = std::panic::AssertUnwindSafe(traced(&captured).oneshot(get("/panic")))
        .catch_unwind()
        .await;
    assert!(result.is_err());
    let lines = captured.json_lines();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["phase_load_n"], 1);
}

#[tokio::test]
async fn a_request_dropped_mid_phase_writes_its_line_with_the_phase() {
    let captured = Captured::default();
    let pending = traced(&captured).oneshot(get("/slow"));
    let outcome = tokio::time::timeout(Duration::from_millis(20), pending).await;
    assert!(outcome.is_err(), "dropped before the response");
    let lines = captured.json_lines();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["phase_load_n"], 1);
    // The phase the drop cut short counts, in the line the drop wrote.
    assert_eq!(lines[0]["phase_render_n"], 1);
    assert!(lines[0]["phase_render_us"].as_u64().unwrap() >= 20_000);
    assert!(lines[0].get("phase_serialize_n").is_none());
}

#[tokio::test]
async fn a_dropped_body_writes_the_line_once() {
    let captured = Captured::default();
    let response = traced(&captured).oneshot(get("/things")).await.unwrap();
    assert!(captured.lines().is_empty(), "no line before the body ends");
    drop(response);
    assert_eq!(captured.lines().len(), 1);
}

#[tokio::test]
async fn a_discarded_request_writes_no_line() {
    let captured = Captured::default();
    let response = traced(&captured).oneshot(get("/discard")).await.unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    response.into_body().collect().await.unwrap();
    assert!(captured.lines().is_empty());
}

#[tokio::test]
async fn a_stream_writes_connect_then_close() {
    let captured = Captured::default();
    let response = traced(&captured).oneshot(get("/stream")).await.unwrap();
    let mut body = response.into_body();
    let first = body.frame().await.unwrap().unwrap();
    assert!(first.is_data());
    let lines = captured.json_lines();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["sse_stage"], "connect");
    body.collect().await.unwrap();
    let lines = captured.json_lines();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["sse_stage"], "close");
    assert_eq!(lines[1]["sse_events"], 3);
    assert_eq!(lines[1]["endpoint"], "things.stream");
    assert!(
        lines[1].get("phase_serialize_n").is_none(),
        "streams are not serialized"
    );
    assert_eq!(lines[0]["request_id"], lines[1]["request_id"]);
}

#[tokio::test]
async fn a_failing_sink_never_fails_the_request() {
    struct Broken;
    impl std::io::Write for Broken {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "closed",
            ))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let reports = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&reports);
    let sink = LineSink::new(Broken).on_failure(move |_| {
        counted.fetch_add(1, Ordering::Relaxed);
    });
    let emitter = Emitter::new(LineFormat::scion("test-svc"), sink);
    let svc =
        PerfTraceLayer::<TestSchema, _>::new(Policy, emitter.clone()).layer(service_fn(handler));
    for _ in 0..5 {
        let response = svc.clone().oneshot(get("/things")).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.into_body().collect().await.unwrap();
    }
    assert_eq!(
        reports.load(Ordering::Relaxed),
        1,
        "reported once, not per request"
    );
    assert_eq!(emitter.sink().lost_lines(), 5);
}
