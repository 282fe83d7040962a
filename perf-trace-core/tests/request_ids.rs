//! The request id beside tower-http: adopted from `SetRequestIdLayer` or
//! (when the policy allows) the caller, refused when it could break a
//! line, never written over the service's own response header, and
//! recorded into `TraceLayer`'s span so that every `tracing` line of a
//! request and its perf line share it. The Scion profile keeps its own
//! random id.

mod common;

use std::convert::Infallible;

use bytes::Bytes;
use common::{Captured, Endpoint, TestSchema};
use http::{HeaderValue, Request, Response};
use http_body_util::{BodyExt, Full};
use perf_trace_core::layer::{RequestSpan, RoutePolicy, TracePolicy};
use perf_trace_core::{Emitter, LineFormat, LineSink, PerfTraceLayer};
use tower::{service_fn, ServiceBuilder, ServiceExt};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

const X_REQUEST_ID: http::HeaderName = http::HeaderName::from_static("x-request-id");

/// The plain profile's policy, adopting callers' ids when `trusted`.
fn policy(trusted: bool) -> RoutePolicy<TestSchema> {
    RoutePolicy::new().adopt_incoming_request_id(trusted)
}

fn emitter(format: LineFormat, lines: &Captured) -> Emitter {
    Emitter::new(format, LineSink::new(lines.clone()))
}

fn plain() -> LineFormat {
    LineFormat::plain("ledger", "ledger.perf")
}

/// A handler that logs one `tracing` line and answers `[]`, setting
/// `X-Request-ID` itself when the request asks with `x-set-own-id`, and
/// refining its endpoint class on `/things`.
async fn handler(request: Request<String>) -> Result<Response<Full<Bytes>>, Infallible> {
    tracing::info!("transfers listed");
    if request.uri().path() == "/things" {
        perf_trace_core::record::set_endpoint(Endpoint::ThingsList);
    }
    let mut response = Response::new(Full::new(Bytes::from_static(b"[]")));
    if let Some(own) = request.headers().get("x-set-own-id") {
        response.headers_mut().insert(X_REQUEST_ID, own.clone());
    }
    Ok(response)
}

/// Serves `request` on the perf layer alone and returns the response's
/// `X-Request-ID` and the line's `request_id`.
async fn serve<P: TracePolicy<TestSchema>>(
    policy: P,
    format: LineFormat,
    request: Request<String>,
) -> (Option<String>, String) {
    let lines = Captured::default();
    let service = ServiceBuilder::new()
        .layer(PerfTraceLayer::new(policy, emitter(format, &lines)))
        .service(service_fn(handler));
    let response = service.oneshot(request).await.unwrap();
    let header = response.headers().get(X_REQUEST_ID).map(header_text);
    response.into_body().collect().await.unwrap();
    (header, line_id(&lines))
}

fn header_text(value: &HeaderValue) -> String {
    value.to_str().expect("a visible ASCII header").to_owned()
}

/// The `request_id` of the one line `lines` holds.
fn line_id(lines: &Captured) -> String {
    let lines = lines.json_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    lines[0]["request_id"]
        .as_str()
        .expect("a request id")
        .to_owned()
}

fn is_uuid(id: &str) -> bool {
    uuid::Uuid::parse_str(id).is_ok_and(|uuid| uuid.get_version_num() == 4)
}

fn with_id(value: HeaderValue) -> Request<String> {
    let mut request = Request::get("/transfers").body(String::new()).unwrap();
    request.headers_mut().insert(X_REQUEST_ID, value);
    request
}

#[tokio::test]
async fn a_caller_s_well_formed_id_is_kept_when_the_policy_allows_it() {
    let id = HeaderValue::from_static("my-own-id-123");
    let (header, line) = serve(policy(true), plain(), with_id(id.clone())).await;
    assert_eq!(header.as_deref(), Some("my-own-id-123"));
    assert_eq!(line, "my-own-id-123");

    // By default a caller's id is not trusted: the layer draws one.
    let (header, line) = serve(policy(false), plain(), with_id(id)).await;
    assert!(is_uuid(&line), "{line}");
    assert_eq!(header.as_deref(), Some(line.as_str()));
}

#[tokio::test]
async fn an_id_that_could_break_a_line_is_replaced_by_a_drawn_one() {
    let long = HeaderValue::from_str(&"a".repeat(200)).unwrap();
    // A newline cannot reach a `HeaderValue` (the unit tests of the id's
    // check refuse one); a tab and bytes past ASCII can.
    let odd = [
        long,
        HeaderValue::from_static("abc\t{\"forged\":1}"),
        HeaderValue::from_static("a b"),
        HeaderValue::from_static("a\"b"),
        HeaderValue::from_bytes("é".as_bytes()).unwrap(),
        HeaderValue::from_static(""),
    ];
    for value in odd {
        let (header, line) = serve(policy(true), plain(), with_id(value.clone())).await;
        assert!(is_uuid(&line), "{value:?} -> {line}");
        assert_eq!(header.as_deref(), Some(line.as_str()), "{value:?}");
    }
    // 64 bytes is the most adopted.
    let longest = "a".repeat(64);
    let value = HeaderValue::from_str(&longest).unwrap();
    let (header, line) = serve(policy(true), plain(), with_id(value)).await;
    assert_eq!(
        (header.as_deref(), line.as_str()),
        (Some(&*longest), &*longest)
    );
}

#[tokio::test]
async fn a_request_id_header_the_service_set_is_kept() {
    let mut request = Request::get("/transfers").body(String::new()).unwrap();
    request
        .headers_mut()
        .insert("x-set-own-id", HeaderValue::from_static("svc-7"));
    let (header, line) = serve(policy(false), plain(), request).await;
    assert_eq!(header.as_deref(), Some("svc-7"));
    assert!(is_uuid(&line), "{line}");
}

#[tokio::test]
async fn the_scion_profile_keeps_its_own_random_id() {
    let mut request = with_id(HeaderValue::from_static("my-own-id-123"));
    request
        .headers_mut()
        .insert("x-set-own-id", HeaderValue::from_static("svc-7"));
    request
        .extensions_mut()
        .insert(tower_http::request_id::RequestId::new(
            HeaderValue::from_static("outer-id"),
        ));
    let (header, line) = serve(policy(true), LineFormat::scion("hub"), request).await;
    assert!(is_uuid(&line), "{line}");
    // The contract's header is the layer's id, over whatever the service set.
    assert_eq!(header.as_deref(), Some(line.as_str()));
}

/// A service stacked as most are: tower-http's request ids and
/// `TraceLayer` outside, perf-trace inside recording into the span; its
/// `tracing` lines go to `logs` as JSON.
async fn serve_stacked(
    request: Request<String>,
    trusted: bool,
) -> (String, String, Vec<serde_json::Value>) {
    let lines = Captured::default();
    let perf = PerfTraceLayer::new(policy(trusted), emitter(plain(), &lines)).record_in_span();
    let service = ServiceBuilder::new()
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .layer(TraceLayer::new_for_http().make_span_with(RequestSpan))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(perf)
        .service(service_fn(handler));
    serve_logged(service, request, &lines).await
}

/// Serves `request` on `service` with its `tracing` lines (from `DEBUG`
/// up) written as JSON; returns the response's `X-Request-ID`, the
/// `request_id` of the one perf line in `lines`, and the `tracing` lines.
async fn serve_logged<Svc, B, RB>(
    service: Svc,
    request: Request<B>,
    lines: &Captured,
) -> (String, String, Vec<serde_json::Value>)
where
    Svc: tower::Service<Request<B>, Response = Response<RB>>,
    Svc::Error: std::fmt::Debug,
    RB: http_body::Body,
    RB::Error: std::fmt::Debug,
{
    let logs = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_current_span(true)
        .with_max_level(tracing::Level::DEBUG)
        .with_writer({
            let logs = logs.clone();
            move || logs.clone()
        })
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);
    let response = service.oneshot(request).await.unwrap();
    let header = header_text(&response.headers()[X_REQUEST_ID]);
    response.into_body().collect().await.unwrap();
    (header, line_id(lines), logs.json_lines())
}

/// Each `tracing` line's span `request_id`, with its message.
fn logged_ids(logs: &[serde_json::Value]) -> Vec<(String, String)> {
    logs.iter()
        .map(|log| {
            let id = log["span"]["request_id"].as_str().unwrap_or("(none)");
            let message = log["fields"]["message"].as_str().unwrap_or("");
            (message.to_owned(), id.to_owned())
        })
        .collect()
}

#[tokio::test]
async fn tower_http_s_id_is_the_header_s_the_line_s_and_every_tracing_line_s() {
    let (header, line, logs) = serve_stacked(
        Request::get("/transfers").body(String::new()).unwrap(),
        false,
    )
    .await;
    assert!(is_uuid(&header), "{header}");
    assert_eq!(line, header);
    let messages: Vec<_> = logged_ids(&logs)
        .into_iter()
        .map(|(m, id)| {
            assert_eq!(id, header, "{m}");
            m
        })
        .collect();
    // TraceLayer's own lines and the handler's.
    assert_eq!(
        messages,
        [
            "started processing request",
            "transfers listed",
            "finished processing request",
            "end of stream"
        ]
    );
    assert_eq!(logs[2]["span"]["endpoint"], "other");
}

#[tokio::test]
async fn the_span_s_class_is_the_one_the_handler_refined_from_the_response_on() {
    let request = Request::get("/things").body(String::new()).unwrap();
    let (_, _, logs) = serve_stacked(request, false).await;
    let classes: Vec<_> = logs
        .iter()
        .map(|log| log["span"]["endpoint"].clone())
        .collect();
    // None before the perf layer runs; classed by the policy when it is
    // called; refined by the handler, and recorded again as the response
    // starts.
    let expected = [
        serde_json::Value::Null,
        "other".into(),
        "things.list".into(),
        "things.list".into(),
    ];
    assert_eq!(classes, expected);
}

#[tokio::test]
async fn a_caller_s_id_kept_by_tower_http_is_the_one_everywhere() {
    let request = with_id(HeaderValue::from_static("my-own-id-123"));
    // tower-http keeps the caller's id whatever the policy says; the layer
    // adopts tower-http's.
    let (header, line, logs) = serve_stacked(request, false).await;
    assert_eq!(
        (header.as_str(), line.as_str()),
        ("my-own-id-123", "my-own-id-123")
    );
    for (message, id) in logged_ids(&logs) {
        assert_eq!(id, "my-own-id-123", "{message}");
    }
}

#[tokio::test]
async fn an_id_tower_http_kept_but_that_could_break_a_line_is_replaced_everywhere() {
    let request = with_id(HeaderValue::from_str(&"x".repeat(200)).unwrap());
    let (header, line, logs) = serve_stacked(request, true).await;
    assert!(is_uuid(&line), "{line}");
    // The layer's header is set before tower-http's propagation, which keeps it.
    assert_eq!(header, line);
    // The span is made before the layer draws: its first line has no id,
    // and never the refused one; every line after has the drawn one.
    let ids = logged_ids(&logs);
    assert_eq!(
        ids[0],
        ("started processing request".into(), "(none)".into())
    );
    for (message, id) in &ids[1..] {
        assert_eq!(id, &line, "{message}");
    }
    assert!(!logs.iter().any(|log| log.to_string().contains("xxxx")));
}

#[tokio::test]
async fn an_axum_router_s_ids_are_joined_the_same_way() {
    let lines = Captured::default();
    let perf = PerfTraceLayer::new(policy(false), emitter(plain(), &lines)).record_in_span();
    let transfers = || async {
        tracing::info!("transfers listed");
        "[]"
    };
    let app = axum::Router::new()
        .route("/accounts/{id}/transfers", axum::routing::get(transfers))
        .layer(perf)
        .layer(
            ServiceBuilder::new()
                .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
                .layer(TraceLayer::new_for_http().make_span_with(RequestSpan))
                .layer(PropagateRequestIdLayer::x_request_id()),
        );
    let request = Request::get("/accounts/7/transfers")
        .header(X_REQUEST_ID, "ledger-client-42")
        .body(axum::body::Body::empty())
        .unwrap();
    let (header, line, logs) = serve_logged(app, request, &lines).await;
    assert_eq!(
        (header.as_str(), line.as_str()),
        ("ledger-client-42", "ledger-client-42")
    );
    let ids = logged_ids(&logs);
    assert_eq!(ids.len(), 4, "{ids:?}");
    for (message, id) in ids {
        assert_eq!(id, "ledger-client-42", "{message}");
    }
}
