//! OTLP export against a collector in the test process: what arrives is
//! decoded with `opentelemetry-proto` and checked (trace id, parent, name,
//! kind, attributes); a collector that answers 503 or is gone costs
//! requests nothing and is counted.

mod common;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::Collector;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::Span;
use perf_trace_core::keys::Groups;
use perf_trace_core::{
    layer::TracePolicy, record::record_decision, record::Outcome, traced_phase, Emitter, KeySet,
    LineFormat, LineSink, PerfTraceLayer, Schema,
};
use perf_trace_otel::{OtlpConfig, OtlpSink};
use tower::{service_fn, Layer, ServiceExt};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
enum Phase {
    Load,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(store_methods)]
enum Method {
    GetThing,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
enum Endpoint {
    #[key(default)]
    Other,
    #[key(rename = "things.get")]
    ThingsGet,
}

struct App;

impl Schema for App {
    type Phase = Phase;
    type StoreMethod = Method;
    type Endpoint = Endpoint;
    const GROUPS: Groups = Groups::SCION;
}

#[derive(Clone)]
struct Policy;

impl TracePolicy<App> for Policy {
    fn classify<B>(&self, request: &Request<B>) -> Endpoint {
        if request.uri().path().starts_with("/things/") {
            Endpoint::ThingsGet
        } else {
            Endpoint::Other
        }
    }

    fn headers_allowed<B>(&self, _: &Request<B>) -> bool {
        false
    }
}

#[traced_phase(Phase::Load)]
fn load() {
    record_decision(Outcome::Allow);
}

async fn handler(request: Request<()>) -> Result<Response<Full<Bytes>>, Infallible> {
    load();
    let status = if request.uri().path().ends_with("/fail") {
        500
    } else {
        200
    };
    Ok(Response::builder()
        .status(status)
        .body(Full::new(Bytes::from_static(b"{}")))
        .unwrap())
}

struct Served {
    status: u16,
    traceresponse: String,
}

/// Serves `requests` through the layer with `otlp` as an exit; returns the
/// responses and the lines.
async fn serve(
    otlp: &Arc<OtlpSink>,
    requests: Vec<Request<()>>,
) -> (Vec<Served>, Vec<serde_json::Value>) {
    let captured = Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let writer = SharedVec(Arc::clone(&captured));
    let emitter =
        Emitter::new(LineFormat::scion("svc"), LineSink::new(writer)).with_sink(Arc::clone(otlp));
    let service = PerfTraceLayer::<App, _>::new(Policy, emitter).layer(service_fn(handler));
    let mut served = Vec::new();
    for request in requests {
        let response = service.clone().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let traceresponse = response.headers()["traceresponse"]
            .to_str()
            .unwrap()
            .to_owned();
        response.into_body().collect().await.unwrap();
        served.push(Served {
            status,
            traceresponse,
        });
    }
    let text = String::from_utf8(captured.lock().unwrap().clone()).unwrap();
    let lines = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (served, lines)
}

#[derive(Clone)]
struct SharedVec(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for SharedVec {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn get(path: &str) -> Request<()> {
    Request::get(path).body(()).unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn int_attribute(span: &Span, key: &str) -> Option<i64> {
    span.attributes.iter().find(|a| a.key == key).and_then(|a| {
        match a.value.as_ref()?.value.as_ref()? {
            Value::IntValue(v) => Some(*v),
            _ => None,
        }
    })
}

fn string_attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes.iter().find(|a| a.key == key).and_then(|a| {
        match a.value.as_ref()?.value.as_ref()? {
            Value::StringValue(v) => Some(v.clone()),
            _ => None,
        }
    })
}

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[tokio::test(flavor = "current_thread")]
async fn one_server_span_per_request_parented_from_traceparent() {
    let collector = Collector::start(200);
    let otlp =
        Arc::new(OtlpSink::start(OtlpConfig::new(collector.endpoint(), "svc-test")).unwrap());
    let with_parent = Request::get("/things/secret-name?token=abc")
        .header("traceparent", PARENT)
        .header("authorization", "Bearer hunter2")
        .body(())
        .unwrap();
    let (served, lines) = serve(&otlp, vec![with_parent, get("/things/x/fail")]).await;
    assert!(otlp.flush(Duration::from_secs(10)));
    assert_eq!(otlp.stats().exported, 2);
    assert_eq!(otlp.stats().dropped(), 0);
    assert_eq!(collector.paths(), ["/v1/traces"]);

    let request = &collector.requests()[0];
    let resource = request.resource_spans[0].resource.as_ref().unwrap();
    assert!(resource.attributes.iter().any(|a| a.key == "service.name"
        && matches!(a.value.as_ref().and_then(|v| v.value.as_ref()), Some(Value::StringValue(s)) if s == "svc-test")));

    let spans = collector.spans();
    assert_eq!(spans.len(), 2);
    let continued = &spans[0];
    assert_eq!(hex(&continued.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(hex(&continued.parent_span_id), "00f067aa0ba902b7");
    assert_eq!(continued.name, "things.get");
    assert_eq!(continued.kind, SpanKind::Server as i32);
    // The response named this span.
    assert_eq!(
        served[0].traceresponse,
        format!(
            "00-{}-{}-01",
            hex(&continued.trace_id),
            hex(&continued.span_id)
        )
    );
    // The line's figures, as on the line.
    let line = &lines[0];
    assert_eq!(
        int_attribute(continued, "perf_trace.elapsed_us"),
        line["elapsed_us"].as_i64()
    );
    assert_eq!(int_attribute(continued, "perf_trace.phase_load_n"), Some(1));
    assert_eq!(int_attribute(continued, "perf_trace.audit_allow"), Some(1));
    assert_eq!(
        int_attribute(continued, "http.response.status_code"),
        Some(200)
    );
    assert_eq!(
        string_attribute(continued, "perf_trace.request_id").as_deref(),
        line["request_id"].as_str()
    );
    assert!(continued.end_time_unix_nano >= continued.start_time_unix_nano);
    // Never the path, the query or the credential.
    let all = format!("{:?}", collector.requests());
    for secret in ["secret-name", "token", "hunter2", "/things/"] {
        assert!(!all.contains(secret), "{secret} leaked into the export");
    }

    let fresh = &spans[1];
    assert!(fresh.parent_span_id.is_empty());
    assert_ne!(fresh.trace_id, continued.trace_id);
    assert_eq!(served[1].status, 500);
    assert_eq!(
        fresh.status.as_ref().map(|s| s.code),
        Some(StatusCode::Error as i32)
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_collector_answering_503_costs_requests_nothing_and_is_counted() {
    let collector = Collector::start(503);
    let mut config = OtlpConfig::new(collector.endpoint(), "svc");
    config.batch_size = 4;
    let otlp = Arc::new(OtlpSink::start(config).unwrap());
    let requests = (0..10).map(|i| get(&format!("/things/{i}"))).collect();
    let (served, lines) = serve(&otlp, requests).await;
    assert!(served.iter().all(|s| s.status == 200));
    assert_eq!(lines.len(), 10);
    assert!(otlp.flush(Duration::from_secs(30)));
    let stats = otlp.stats();
    assert_eq!(stats.exported, 0);
    assert_eq!(stats.dropped_export_failed, 10);
    assert!(stats.failed_batches >= 3);
    assert!(!collector.paths().is_empty(), "the exporter did try");
}

#[tokio::test(flavor = "current_thread")]
async fn a_collector_that_is_gone_costs_requests_nothing_and_is_counted() {
    let addr = Collector::gone();
    let otlp = Arc::new(OtlpSink::start(OtlpConfig::new(format!("http://{addr}"), "svc")).unwrap());
    let requests = (0..5).map(|i| get(&format!("/things/{i}"))).collect();
    let (served, lines) = serve(&otlp, requests).await;
    assert!(served.iter().all(|s| s.status == 200));
    assert_eq!(lines.len(), 5);
    assert!(otlp.flush(Duration::from_secs(30)));
    assert_eq!(otlp.stats().dropped_export_failed, 5);
    assert_eq!(otlp.stats().exported, 0);
}

#[tokio::test(flavor = "current_thread")]
async fn a_full_queue_drops_and_counts_instead_of_waiting() {
    let collector = Collector::start(200);
    // Each export is held back, so the queue of 4 fills behind it.
    collector.delay(300);
    let mut config = OtlpConfig::new(collector.endpoint(), "svc");
    config.queue_size = 4;
    config.batch_size = 1;
    let otlp = Arc::new(OtlpSink::start(config).unwrap());
    let requests = (0..40).map(|i| get(&format!("/things/{i}"))).collect();
    let (served, lines) = serve(&otlp, requests).await;
    assert_eq!(served.len(), 40);
    assert_eq!(lines.len(), 40, "every request kept its line");
    let dropped = otlp.stats().dropped_queue_full;
    assert!(dropped > 0, "a full queue drops");
    collector.delay(0);
    assert!(otlp.flush(Duration::from_secs(30)));
    let stats = otlp.stats();
    assert_eq!(stats.exported + stats.dropped_queue_full, 40);
    assert_eq!(collector.spans().len() as u64, stats.exported);
}

#[test]
fn a_bad_endpoint_is_an_error_at_start() {
    let error = OtlpSink::start(OtlpConfig::new("not a url", "svc")).unwrap_err();
    assert!(error.to_string().contains("endpoint"), "{error}");
}
