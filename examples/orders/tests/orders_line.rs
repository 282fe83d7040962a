//! The orders API's exact line and headers (durations, time and request id
//! normalised), and its answers to bad input.

use axum::body::Body;
use axum::Router;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use orders_example::perf::app;
use orders_example::store::MemoryStore;
use perf_trace_core::sink::MemoryLines;
use perf_trace_core::LineSink;
use tower::ServiceExt;

/// Replaces every run of digits after `marker` with `0`.
fn zero_after(text: &str, marker: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(marker) {
        let (head, tail) = rest.split_at(at + marker.len());
        out.push_str(head);
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            out.push('0');
        }
        rest = &tail[digits..];
    }
    out.push_str(rest);
    out
}

/// The line with host-dependent values fixed: time, request id, durations.
fn normalised(line: &str, request_id: &str) -> String {
    let time_end = line.find(r#"","level""#).expect("a time field");
    let line = format!(r#"{{"time":"T{}"#, &line[time_end..]);
    let line = line.replace(request_id, "ID");
    zero_after(&zero_after(&line, "_us\":"), "=")
}

async fn send(app: &Router, request: Request<Body>) -> (StatusCode, http::HeaderMap, String) {
    let response = app.clone().oneshot(request).await.expect("infallible");
    let (parts, body) = response.into_parts();
    let body = body.collect().await.expect("a body").to_bytes();
    (
        parts.status,
        parts.headers,
        String::from_utf8(body.to_vec()).expect("UTF-8"),
    )
}

fn traced_app() -> (Router, MemoryLines) {
    let (sink, lines) = LineSink::memory();
    (app(MemoryStore::sample(), Some(sink)), lines)
}

#[tokio::test]
async fn a_priced_order_has_its_own_line_and_headers() {
    let (app, captured) = traced_app();
    let request = Request::get("/orders/1")
        .header("X-Orders-Perf-Trace", "1")
        .body(Body::empty())
        .unwrap();
    let (status, headers, body) = send(&app, request).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        r#"{"id":1,"lines":[{"product":1,"quantity":2},{"product":3,"quantity":10},{"product":1,"quantity":1}],"total_cents":1500}"#
    );

    let request_id = headers["x-request-id"].to_str().unwrap().to_owned();
    let lines = captured.lines();
    assert_eq!(lines.len(), 1);
    assert_eq!(
        normalised(&lines[0], &request_id),
        r#"{"time":"T","level":"INFO","msg":"perf_trace","component":"orders-api","subsystem":"orders.perf-trace","endpoint":"orders.get","elapsed_us":0,"phase_load_us":0,"phase_load_n":1,"phase_price_us":0,"phase_price_n":1,"phase_serialize_us":0,"phase_serialize_n":1,"store_get_order_n":1,"store_get_order_us":0,"store_get_product_n":2,"store_get_product_us":0,"price_cache_hit":1,"price_cache_miss":2,"method":"GET","status":200,"request_id":"ID"}"#
    );
    for absent in ["authz_", "audit_", "db_", "sse_"] {
        assert!(!lines[0].contains(absent), "{absent} in {}", lines[0]);
    }

    let perf: Vec<(String, String)> = headers
        .iter()
        .filter(|(name, _)| name.as_str().starts_with("x-orders-perf-"))
        .map(|(name, value)| {
            let value = value.to_str().unwrap();
            (name.as_str().to_owned(), zero_after(value, "="))
        })
        .collect();
    let expected = [
        ("x-orders-perf-endpoint", "orders.get"),
        ("x-orders-perf-phases", "load=0,price=0"),
        ("x-orders-perf-phase-counts", "load=0,price=0"),
        ("x-orders-perf-store-calls", "get_order=0,get_product=0"),
        ("x-orders-perf-store-us", "get_order=0,get_product=0"),
        ("x-orders-perf-price-cache", "hit=0,miss=0"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    assert_eq!(perf, expected);
    // The counts themselves, which `zero_after` hid above.
    assert_eq!(headers["x-orders-perf-phase-counts"], "load=1,price=1");
    assert_eq!(
        headers["x-orders-perf-store-calls"],
        "get_order=1,get_product=2"
    );
    assert_eq!(headers["x-orders-perf-price-cache"], "hit=1,miss=2");
    assert!(headers
        .keys()
        .all(|name| !name.as_str().contains("decisions") && !name.as_str().starts_with("x-scion")));
}

#[tokio::test]
async fn without_the_trigger_there_are_no_perf_headers_but_still_a_line() {
    let (app, captured) = traced_app();
    let (status, headers, _) =
        send(&app, Request::get("/orders").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert!(headers
        .keys()
        .all(|name| !name.as_str().starts_with("x-orders-perf-")));
    let line: serde_json::Value = serde_json::from_str(&captured.lines()[0]).unwrap();
    assert_eq!(line["endpoint"], "orders.list");
    // Two orders, products 1, 3, 1 and 2: three distinct products read once.
    assert_eq!(line["price_cache_miss"], 3);
    assert_eq!(line["price_cache_hit"], 1);
    assert_eq!(line["store_list_orders_n"], 1);
}

#[tokio::test]
async fn bad_input_is_a_json_error_and_writes_nothing() {
    let (app, _) = traced_app();
    let post = |body: &'static str| {
        Request::post("/orders")
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap()
    };
    for (request, status, code) in [
        (post("{"), StatusCode::BAD_REQUEST, "bad_order"),
        (
            post(r#"{"lines":[],"x":1}"#),
            StatusCode::UNPROCESSABLE_ENTITY,
            "bad_order",
        ),
        (
            post(r#"{"lines":[]}"#),
            StatusCode::UNPROCESSABLE_ENTITY,
            "empty_order",
        ),
        (
            post(r#"{"lines":[{"product":1,"quantity":0}]}"#),
            StatusCode::UNPROCESSABLE_ENTITY,
            "zero_quantity",
        ),
        (
            post(r#"{"lines":[{"product":9,"quantity":1}]}"#),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_product",
        ),
        (
            Request::get("/orders/abc").body(Body::empty()).unwrap(),
            StatusCode::BAD_REQUEST,
            "bad_order_id",
        ),
        (
            Request::get("/orders/99").body(Body::empty()).unwrap(),
            StatusCode::NOT_FOUND,
            "order_not_found",
        ),
    ] {
        let (got, _, body) = send(&app, request).await;
        assert_eq!(got, status, "{body}");
        let body: serde_json::Value = serde_json::from_str(&body).expect("a JSON error");
        assert_eq!(body["error"], code, "{body}");
        assert!(!body["message"].as_str().unwrap().is_empty());
    }
    // Nothing refused was stored.
    let (_, _, body) = send(&app, Request::get("/orders").body(Body::empty()).unwrap()).await;
    let orders: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(orders.as_array().unwrap().len(), 2);

    let (status, _, body) = send(&app, post(r#"{"lines":[{"product":2,"quantity":3}]}"#)).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(
        body,
        r#"{"id":3,"lines":[{"product":2,"quantity":3}],"total_cents":5997}"#
    );
}
