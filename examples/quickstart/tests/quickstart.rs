//! The quick start's line, headers, budget and count snapshot, pinned: the
//! README shows this service, and these tests keep what it shows true.

use axum::body::Body;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use perf_trace_core::budget::Budget;
use perf_trace_core::layer::RoutePolicy;
use perf_trace_core::testing::{assert_routes, perf_traced_request};
use perf_trace_core::{assert_counts_snapshot, sink::MemoryLines, LineSink};
use quickstart_example::{app, Inventory, ItemStoreMethod, Phase, Shelf, Stock};
use tower::ServiceExt;

/// Serves one request to a fresh quick start; its status, its headers
/// named `x-perf-*` or `x-request-id` (sorted), and its line, with the
/// time, the request id and every duration made fixed.
async fn serve(
    uri: &str,
    policy: RoutePolicy<Inventory>,
) -> (StatusCode, Vec<(String, String)>, String) {
    let (sink, lines): (LineSink, MemoryLines) = LineSink::memory();
    let request = Request::get(uri)
        .header("X-Perf-Trace", "1")
        .body(Body::empty())
        .unwrap();
    let response = app(Shelf::sample(), sink, policy)
        .oneshot(request)
        .await
        .unwrap();
    let status = response.status();
    let mut headers: Vec<(String, String)> = response
        .headers()
        .iter()
        .filter(|(name, _)| name.as_str().starts_with("x-"))
        .map(|(name, value)| (name.to_string(), value.to_str().unwrap().to_owned()))
        .collect();
    headers.sort();
    response.into_body().collect().await.unwrap();
    (status, headers, fixed(&lines.last().expect("one line")))
}

/// `line` with its time `T`, its request id `ID`, and every duration 0.
fn fixed(line: &str) -> String {
    let mut out = String::new();
    for (i, field) in line.split(',').enumerate() {
        if i > 0 {
            out.push(',');
        }
        let (key, _) = field.split_once(':').expect("a field");
        match key.trim_start_matches('{') {
            r#""time""# => out.push_str(r#"{"time":"T""#),
            r#""request_id""# => out.push_str(r#""request_id":"ID"}"#),
            k if k.ends_with(r#"_us""#) => out.push_str(&format!("{key}:0")),
            _ => out.push_str(field),
        }
    }
    out
}

#[tokio::test]
async fn an_item_request_writes_one_line_with_its_keys_and_status() {
    let (status, headers, line) = serve("/items/pear", RoutePolicy::new()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        line,
        r#"{"time":"T","level":"INFO","msg":"perf_trace","component":"inventory","subsystem":"inventory.perf","endpoint":"items_get","elapsed_us":0,"phase_load_us":0,"phase_load_n":1,"store_get_stock_n":1,"store_get_stock_us":0,"stock_low":1,"method":"GET","status":200,"request_id":"ID"}"#
    );
    // No perf header without the policy's leave: the request id only.
    let names: Vec<_> = headers.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["x-request-id"]);
}

#[tokio::test]
async fn an_unknown_item_and_an_unknown_route_carry_their_404() {
    let (status, _, line) = serve("/items/kiwi", RoutePolicy::new()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(line.contains(r#""endpoint":"items_get","#), "{line}");
    assert!(line.contains(r#""status":404,"#), "{line}");
    let (status, _, line) = serve("/nothing", RoutePolicy::new()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        line.contains(r#""endpoint":"other","elapsed_us":0,"method":"GET","status":404,"#),
        "{line}"
    );
}

#[tokio::test]
async fn the_perf_headers_go_to_whom_the_policy_allows() {
    let everyone = RoutePolicy::new().perf_headers_for(|_| true);
    let (_, headers, line) = serve("/items", everyone).await;
    assert!(
        line.contains(r#""store_get_stock_n":3,"store_get_stock_us":0,"store_list_skus_n":1,"#),
        "{line}"
    );
    let values: Vec<_> = headers
        .iter()
        .filter(|(name, _)| {
            !name.ends_with("-us") && name != "x-perf-phases" && name != "x-request-id"
        })
        .map(|(name, value)| format!("{name}: {value}"))
        .collect();
    assert_eq!(
        values,
        [
            "x-perf-endpoint: items_list",
            "x-perf-phase-counts: encode=1,load=1",
            "x-perf-stock: low=1,out=1",
            "x-perf-store-calls: get_stock=3,list_skus=1",
        ]
    );
}

/// A budget test: the list reads each item's stock once; a change that
/// reads it twice fails here, naming the key.
#[tokio::test]
async fn the_item_list_stays_within_its_budget() {
    let app = app(Shelf::sample(), LineSink::memory().0, RoutePolicy::new());
    let request = Request::get("/items").body(Body::empty()).unwrap();
    let response = perf_traced_request::<Inventory, _, _, _>(app, request)
        .await
        .unwrap();
    Budget::for_snapshot("items-list", &response.snapshot)
        .store(ItemStoreMethod::ListSkus, 1)
        .store(ItemStoreMethod::GetStock, 3)
        .phase(Phase::Load, 1)
        .counter(Stock::Out, 1)
        .response_bytes(response.body.len() as u64, 32)
        .check()
        .unwrap();
}

/// A snapshot test: every count of the request, reviewed with insta
/// (`cargo insta review`) when one moves.
#[tokio::test]
async fn the_item_list_counts() {
    let app = app(Shelf::sample(), LineSink::memory().0, RoutePolicy::new());
    let request = Request::get("/items").body(Body::empty()).unwrap();
    let response = perf_traced_request::<Inventory, _, _, _>(app, request)
        .await
        .unwrap();
    assert_counts_snapshot!("items-list", &response);
}

/// Every route key of the quick start names a route its router has.
#[tokio::test]
async fn its_route_keys_match_its_routes() {
    let app = app(Shelf::sample(), LineSink::memory().0, RoutePolicy::new());
    assert_routes::<Inventory>(&app).await;
}

/// The crate's README and the repository's show this service and the budget
/// test above as they are here; the crate's README and the repository's
/// guide show the snapshot test.
#[test]
fn the_readmes_show_this_service_and_its_tests_verbatim() {
    let tests = include_str!("quickstart.rs");
    let shown = |start: &str, end: &str| {
        let at = tests.find(start).expect(start);
        let len = tests[at..].find(end).expect(end);
        tests[at..at + len].trim_end().to_owned()
    };
    let budget = shown("/// A budget test", "/// A snapshot test");
    let snapshot = shown("/// A snapshot test", "\n}\n");
    let core = include_str!("../../../perf-trace-core/README.md");
    let root = include_str!("../../../README.md");
    let guide = include_str!("../../../docs/guide.md");
    for (doc, service, blocks) in [
        (core, true, vec![&budget, &snapshot]),
        (root, true, vec![&budget]),
        (guide, false, vec![&snapshot]),
    ] {
        if service {
            assert!(doc.contains(include_str!("../src/main.rs")));
        }
        for block in blocks {
            assert!(doc.contains(block.as_str()), "a README lacks:\n{block}");
        }
    }
}
