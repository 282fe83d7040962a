//! The exits beyond the line, through the tower layer: the `tracing` event,
//! Prometheus metrics with bounded series, tail sampling and W3C trace
//! context. None of them changes the line.

mod common;
#[path = "common/metric_series.rs"]
mod metric_series;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::{Batch, Cache, Captured, Endpoint, Phase, Render, TestSchema};
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use metric_series::{series, Rng};
use parking_lot::Mutex;
use perf_trace_core::exits::metrics::MetricsSink;
use perf_trace_core::exits::sampling::TailSampling;
use perf_trace_core::exits::tracing_sink::TracingSink;
use perf_trace_core::exits::TraceContext;
use perf_trace_core::exits::{FinishedRequest, RequestSink};
use perf_trace_core::layer::TracedBody;
use perf_trace_core::{
    count, layer::TracePolicy, record::count_by, record::count_n, record::record_decision,
    record::Outcome, time, traced_phase, Emitter, LineFormat, LineSink, PerfTraceLayer,
};
use tower::{service_fn, Layer, Service, ServiceExt};

#[derive(Clone)]
struct Policy;

impl TracePolicy<TestSchema> for Policy {
    fn classify<B>(&self, request: &Request<B>) -> Endpoint {
        let path = request.uri().path();
        if path.starts_with("/things") {
            Endpoint::ThingsList
        } else {
            Endpoint::Other
        }
    }

    fn headers_allowed<B>(&self, request: &Request<B>) -> bool {
        request.headers().contains_key("x-admin")
    }
}

#[traced_phase(Phase::Load)]
fn load() {}

#[traced_phase(Phase::Check)]
fn check(allow: bool) {
    record_decision(if allow { Outcome::Allow } else { Outcome::Deny });
}

type Body = Full<Bytes>;

/// Records something of every kind; the status is the query's `status=`.
async fn handler(request: Request<()>) -> Result<Response<Body>, Infallible> {
    load();
    let query = request.uri().query().unwrap_or("");
    check(query.len().is_multiple_of(2));
    count_by(Endpoint::ThingsList, Cache::Hit);
    count(Batch::Count);
    count_n(Batch::Largest, query.len() as u64 + 1);
    time(Render::Page, || ());
    let status = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("status="))
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    Ok(Response::builder()
        .status(status)
        .body(Full::new(Bytes::from_static(b"[]")))
        .unwrap())
}

fn traced(
    emitter: Emitter,
) -> impl Service<Request<()>, Response = Response<TracedBody<Body>>, Error = Infallible> + Clone {
    PerfTraceLayer::<TestSchema, _>::new(Policy, emitter).layer(service_fn(handler))
}

async fn serve(
    service: &(impl Service<Request<()>, Response = Response<TracedBody<Body>>, Error = Infallible>
          + Clone),
    request: Request<()>,
) -> Response<Bytes> {
    let response = service.clone().oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    Response::from_parts(parts, body)
}

fn get(path: &str) -> Request<()> {
    Request::get(path).body(()).unwrap()
}

// ---- tracing ----------------------------------------------------------------

#[derive(Debug, Default, Clone)]
struct Event {
    target: String,
    fields: Vec<(String, String)>,
}

impl Event {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A subscriber layer that keeps every event's target and fields.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Event>>>);

struct Visitor<'a>(&'a mut Vec<(String, String)>);

impl tracing::field::Visit for Visitor<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Capture {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut fields = Vec::new();
        event.record(&mut Visitor(&mut fields));
        self.0.lock().push(Event {
            target: event.metadata().target().to_owned(),
            fields,
        });
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_tracing_sink_writes_one_event_per_request_with_the_whole_line() {
    use tracing_subscriber::layer::SubscriberExt;
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let _guard = tracing::subscriber::set_default(subscriber);

    let captured = Captured::default();
    let emitter = Emitter::new(LineFormat::scion("svc"), LineSink::new(captured.clone()))
        .with_sink(TracingSink::new());
    let service = traced(emitter);
    serve(&service, get("/things?a=1")).await;
    serve(&service, get("/other?status=404")).await;

    let events = capture.0.lock().clone();
    let lines = captured.lines();
    assert_eq!(events.len(), 2);
    assert_eq!(lines.len(), 2, "the line is written as before");
    for (event, line) in events.iter().zip(&lines) {
        assert_eq!(event.target, "perf_trace");
        assert_eq!(event.field("message"), Some("perf_trace"));
        assert_eq!(event.field("line"), Some(line.as_str()));
        let json: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(event.field("endpoint"), json["endpoint"].as_str());
        assert_eq!(event.field("request_id"), json["request_id"].as_str());
        assert_eq!(event.field("method"), Some("GET"));
        assert_eq!(
            event.field("elapsed_us"),
            Some(json["elapsed_us"].to_string().as_str())
        );
        assert_eq!(
            event.field("audit_records"),
            Some(json["audit_records"].to_string().as_str())
        );
    }
    assert_eq!(events[0].field("status"), Some("200"));
    assert_eq!(events[1].field("status"), Some("404"));
    assert_eq!(events[1].field("endpoint"), Some("other"));
}

// ---- metrics -----------------------------------------------------------------

#[tokio::test(flavor = "current_thread")]
async fn metric_series_are_fixed_by_the_key_sets_not_by_the_input() {
    let metrics = Arc::new(MetricsSink::new("svc"));
    let emitter = Emitter::new(LineFormat::scion("svc"), LineSink::new(std::io::sink()))
        .with_sink(Arc::clone(&metrics));
    let service = traced(emitter);
    let statuses = [200, 201, 204, 301, 400, 403, 404, 409, 500, 503];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut counts_after = Vec::new();
    for round in 0..4 {
        for _ in 0..250 {
            let prefix = if rng.next().is_multiple_of(2) {
                "/things"
            } else {
                ""
            };
            let status = statuses[(rng.next() % statuses.len() as u64) as usize];
            let path = format!(
                "{prefix}/{}/{}?{}={}&status={status}",
                rng.word(1..=12),
                rng.word(1..=12),
                rng.word(1..=12),
                rng.word(1..=12)
            );
            let request = Request::get(path.as_str())
                .header("authorization", format!("Bearer {}", rng.word(1..=12)))
                .header("x-user", rng.word(1..=12))
                .body(())
                .unwrap();
            serve(&service, request).await;
        }
        let text = metrics.encode();
        assert!(
            !text.contains("Bearer") && !text.contains("/things/"),
            "no request text in the metrics"
        );
        counts_after.push((round, series(&text).len()));
    }
    let text = metrics.encode();
    let all = series(&text);
    // 2 endpoints x 2 decision outcomes x ... : every series is named by keys.
    let expected = [
        // duration histogram: 2 endpoints x (16 buckets + inf + sum + count)
        2 * 19,
        // requests: 2 endpoints x 4 status classes seen (2xx, 3xx, 4xx, 5xx)
        2 * 4,
        // phase histograms: 2 endpoints x 3 phases (load, check, serialize) x (10 + 3)
        2 * 3 * 13,
        // phase entries
        2 * 3,
        // decisions: 2 endpoints x 2 outcomes
        2 * 2,
        // counter: cache things.list hit, batch count
        2,
        // counter max: batch largest, 8 buckets + inf + sum + count
        11,
        // timers: render page, duration and entries
        2,
        // sampled_out
        1,
    ]
    .iter()
    .sum::<usize>();
    assert_eq!(all.len(), expected, "series:\n{}", {
        let list: Vec<_> = all.iter().cloned().collect();
        list.join("\n")
    });
    assert!(
        counts_after.iter().all(|&(_, n)| n == expected),
        "the number of series never grows with more requests: {counts_after:?}"
    );
    assert!(text.contains(r#"svc_requests_total{endpoint="things.list",status="5xx"}"#));
    assert!(text.contains(r#"svc_counter_total{set="cache",by="things.list",key="hit"} 1000"#));
    assert!(text.contains(r#"svc_decisions_total{endpoint="other",outcome="allow"}"#));
    // An exemplar carries a request id: 36 characters of a UUID.
    let exemplar = text
        .lines()
        .find_map(|line| line.split_once(r#"# {request_id=""#))
        .map(|(_, rest)| &rest[..36])
        .expect("an exemplar");
    assert_eq!(exemplar.matches('-').count(), 4);
}

// ---- sampling ---------------------------------------------------------------

#[derive(Default)]
struct Seen(Mutex<Vec<(Option<u16>, bool, bool)>>);

impl RequestSink for Seen {
    fn record(&self, request: &FinishedRequest<'_>) {
        self.0.lock().push((
            request.facts.status,
            request.sampled,
            request.line.is_some(),
        ));
    }
}

#[tokio::test(flavor = "current_thread")]
async fn tail_sampling_keeps_failures_perf_header_requests_and_one_in_n() {
    let captured = Captured::default();
    let metrics = Arc::new(MetricsSink::new("svc"));
    let spans = Arc::new(Seen::default());
    let emitter = Emitter::new(LineFormat::scion("svc"), LineSink::new(captured.clone()))
        .with_sink(Arc::clone(&metrics))
        .with_sink(Arc::clone(&spans))
        .with_sampling(TailSampling::one_in(10).slow_over(Duration::from_secs(60)));
    let service = traced(emitter);
    for _ in 0..100 {
        serve(&service, get("/things")).await;
    }
    for _ in 0..5 {
        serve(&service, get("/things?status=503")).await;
    }
    for _ in 0..3 {
        let request = Request::get("/things")
            .header("x-scion-perf-trace", "1")
            .header("x-admin", "1")
            .body(())
            .unwrap();
        let response = serve(&service, request).await;
        assert!(response.headers().contains_key("x-scion-perf-endpoint"));
    }
    let lines = captured.json_lines();
    assert_eq!(lines.len(), 10 + 5 + 3);
    assert_eq!(
        lines
            .iter()
            .filter(|l| l["endpoint"] == "things.list")
            .count(),
        18
    );
    // Every exit that wants kept requests only saw exactly the written lines.
    let seen = spans.0.lock().clone();
    assert_eq!(seen.len(), 18);
    assert!(seen.iter().all(|&(_, sampled, line)| sampled && line));
    assert_eq!(seen.iter().filter(|s| s.0 == Some(503)).count(), 5);
    // Metrics counted every request, and the sampled-out ones apart.
    assert_eq!(metrics.sampled_out(), 90);
    let text = metrics.encode();
    assert!(text.contains(r#"svc_requests_total{endpoint="things.list",status="2xx"} 103"#));
    assert!(text.contains("svc_sampled_out_total 90"));
}

#[tokio::test(flavor = "current_thread")]
async fn slow_requests_over_their_endpoint_threshold_are_kept() {
    let captured = Captured::default();
    let emitter = Emitter::new(LineFormat::scion("svc"), LineSink::new(captured.clone()))
        .with_sampling(
            TailSampling::one_in(u64::MAX)
                .slow_over(Duration::from_secs(3600))
                // Every request of this class is slower than zero.
                .slow_over_for("things.list", Duration::ZERO),
        );
    let service = traced(emitter);
    for _ in 0..5 {
        serve(&service, get("/things")).await;
        serve(&service, get("/other")).await;
    }
    let endpoints: Vec<_> = captured
        .json_lines()
        .iter()
        .map(|l| l["endpoint"].as_str().unwrap().to_owned())
        .collect();
    // The first "other" is the 1 in N; the rest of them are dropped.
    assert_eq!(endpoints.iter().filter(|e| *e == "things.list").count(), 5);
    assert_eq!(endpoints.iter().filter(|e| *e == "other").count(), 1);
}

// ---- trace context -----------------------------------------------------------

#[derive(Default)]
struct Traces(Mutex<Vec<TraceContext>>);

impl RequestSink for Traces {
    fn record(&self, request: &FinishedRequest<'_>) {
        self.0.lock().extend(request.facts.trace);
    }

    fn wants_trace_context(&self) -> bool {
        true
    }
}

#[tokio::test(flavor = "current_thread")]
async fn trace_context_is_continued_and_answered_only_when_an_exit_wants_it() {
    let captured = Captured::default();
    let plain = traced(Emitter::new(
        LineFormat::scion("svc"),
        LineSink::new(captured.clone()),
    ));
    let incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let request = Request::get("/things")
        .header("traceparent", incoming)
        .body(())
        .unwrap();
    let response = serve(&plain, request).await;
    assert!(response.headers().get("traceresponse").is_none());

    let traces = Arc::new(Traces::default());
    let emitter = Emitter::new(LineFormat::scion("svc"), LineSink::new(captured.clone()))
        .with_sink(Arc::clone(&traces));
    let service = traced(emitter);
    let request = Request::get("/things")
        .header("traceparent", incoming)
        .body(())
        .unwrap();
    let continued = serve(&service, request).await;
    let fresh = serve(&service, get("/things")).await;

    let recorded = traces.0.lock().clone();
    assert_eq!(recorded.len(), 2);
    assert_eq!(
        recorded[0].trace_id_hex(),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_eq!(
        recorded[0].parent_span_id,
        Some([0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7])
    );
    assert_eq!(
        continued.headers()["traceresponse"].to_str().unwrap(),
        recorded[0].traceresponse()
    );
    assert_eq!(recorded[1].parent_span_id, None);
    assert_ne!(recorded[1].trace_id, recorded[0].trace_id);
    assert_eq!(
        fresh.headers()["traceresponse"].to_str().unwrap(),
        recorded[1].traceresponse()
    );
    // The lines are the same with or without the exits.
    let lines = captured.json_lines();
    assert_eq!(lines.len(), 3);
    let keys = |line: &serde_json::Value| -> Vec<String> {
        line.as_object().unwrap().keys().cloned().collect()
    };
    assert_eq!(keys(&lines[0]), keys(&lines[1]));
    assert!(!captured.lines().iter().any(|l| l.contains("4bf92f35")));
}
