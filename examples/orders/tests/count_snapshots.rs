//! The exact counts of the orders API's requests, reviewed as insta
//! snapshots: a change of any count (a store call more, a cache miss more)
//! shows up as a diff naming the key that moved.

use axum::body::Body;
use http::Request;
use orders_example::keys::OrdersSchema;
use orders_example::perf::app;
use orders_example::store::MemoryStore;
use perf_trace_core::testing::perf_traced_request;
use perf_trace_core::{assert_counts_snapshot, LineSink};

async fn counts_of(request: Request<Body>) -> perf_trace_core::testing::TracedResponse {
    let app = app(MemoryStore::sample(), Some(LineSink::new(std::io::sink())));
    perf_traced_request::<OrdersSchema, _, _, _>(app, request)
        .await
        .expect("the in-process router answers")
}

#[tokio::test]
async fn one_priced_order() {
    let response = counts_of(Request::get("/orders/1").body(Body::empty()).unwrap()).await;
    assert_eq!(response.status, 200);
    assert_counts_snapshot!("orders-get", &response);
}

#[tokio::test]
async fn the_order_list() {
    let response = counts_of(Request::get("/orders").body(Body::empty()).unwrap()).await;
    assert_eq!(response.status, 200);
    assert_counts_snapshot!("orders-list", &response);
}

#[tokio::test]
async fn an_unknown_order() {
    let response = counts_of(Request::get("/orders/99").body(Body::empty()).unwrap()).await;
    assert_eq!(response.status, 404);
    assert_counts_snapshot!("orders-get-unknown", &response);
}
