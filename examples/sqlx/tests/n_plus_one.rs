//! The inventory API's SQL counted with no store trait, and its N+1 caught
//! with no baseline: a planted per-row query fails both checks, naming the
//! keys and the statement; the shipped handler passes them.

use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use perf_trace_core::testing::{
    assert_flat, assert_no_repeated_statements, check_flat, perf_traced_request,
};
use perf_trace_core::LineSink;
use sqlx_example::{app, router, Inventory, InventorySchema, Product};
use tower::ServiceExt;

/// The list as a first version might write it: the products, then one
/// statement per product for its stock.
async fn list_per_row(State(inventory): State<Inventory>) -> Response {
    let mut products = Vec::new();
    for (id, name) in inventory.list_products().await.unwrap() {
        let qty = inventory.get_stock(id).await.unwrap().unwrap_or(0);
        products.push(Product { id, name, qty });
    }
    Json(products).into_response()
}

fn planted(inventory: Inventory) -> Router {
    Router::new()
        .route("/products", get(list_per_row))
        .with_state(inventory)
}

fn list() -> Request<Body> {
    Request::get("/products").body(Body::empty()).unwrap()
}

#[tokio::test]
async fn the_line_has_sql_counts_from_the_counted_pool_and_no_statement_text() {
    let (sink, lines) = LineSink::memory();
    let service = app(Inventory::in_memory(3).await.unwrap(), sink);
    let response = service.clone().oneshot(list()).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(body.starts_with(br#"[{"id":1,"name":"product-1","qty":1}"#));
    let line = lines.last().expect("a line");
    for field in [
        r#""endpoint":"products_list""#,
        r#""store_list_with_stock_n":1"#,
        r#""sql_select_n":1"#,
        r#""sql_select_us":"#,
    ] {
        assert!(line.contains(field), "{field} in {line}");
    }
    assert!(
        !line.contains("sql_insert"),
        "kinds not run stay off: {line}"
    );
    assert!(!line.contains("sql_repeated"), "{line}");
    assert!(!line.contains("SELECT"), "no statement text: {line}");

    let request = Request::get("/products/2/stock")
        .body(Body::empty())
        .unwrap();
    let response = service.oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let line = lines.last().expect("a line");
    assert!(line.contains(r#""sql_select_n":1"#), "{line}");
}

#[tokio::test]
async fn a_per_row_query_fails_the_flatness_check_naming_each_key_and_its_counts() {
    let error = check_flat::<InventorySchema, _, _, _, _, _>(&[2, 10], |n| async move {
        (planted(Inventory::in_memory(n).await.unwrap()), list())
    })
    .await
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "counts grow with the number of rows (an N+1?): \
         sql_repeated_n: 1 at 2 rows, 9 at 10 rows; \
         sql_select_n: 3 at 2 rows, 11 at 10 rows; \
         store_get_stock_n: 2 at 2 rows, 10 at 10 rows"
    );
}

#[tokio::test]
async fn the_shipped_list_is_flat() {
    let responses = assert_flat::<InventorySchema, _, _, _, _, _>(&[2, 10, 50], |n| async move {
        (router(Inventory::in_memory(n).await.unwrap()), list())
    })
    .await;
    let last = &responses[2];
    assert_eq!(last.status, StatusCode::OK);
    assert_eq!(
        last.snapshot
            .timer(perf_trace_sql::SqlStatement::Select)
            .count,
        1
    );
}

#[tokio::test]
async fn a_repeated_statement_fails_naming_the_statement_and_its_runs() {
    let inventory = Inventory::in_memory(4).await.unwrap();
    let response = perf_traced_request::<InventorySchema, _, _, _>(planted(inventory), list())
        .await
        .unwrap();
    let panic = std::panic::catch_unwind(|| assert_no_repeated_statements(&response, 1))
        .expect_err("the stock statement ran once per product");
    let message = panic.downcast_ref::<String>().unwrap();
    assert_eq!(
        message,
        "1 statement(s) ran more than 1 time(s) in the request:\n  \
         4 runs: SELECT COALESCE(s.qty, 0) FROM products p \
         LEFT JOIN stock s ON s.product_id = p.id WHERE p.id = ?"
    );

    let inventory = Inventory::in_memory(4).await.unwrap();
    let fixed = perf_traced_request::<InventorySchema, _, _, _>(router(inventory), list())
        .await
        .unwrap();
    assert_no_repeated_statements(&fixed, 1);
}

#[tokio::test]
async fn a_bad_or_unknown_id_is_a_json_error_naming_it() {
    let service = router(Inventory::in_memory(2).await.unwrap());
    for (path, status, error) in [
        (
            "/products/abc/stock",
            StatusCode::BAD_REQUEST,
            r#"{"error":"`id` must be a positive integer, not \"abc\"","parameter":"id"}"#,
        ),
        (
            "/products/0/stock",
            StatusCode::BAD_REQUEST,
            r#"{"error":"`id` must be a positive integer, not \"0\"","parameter":"id"}"#,
        ),
        (
            "/products/9/stock",
            StatusCode::NOT_FOUND,
            r#"{"error":"no product 9","parameter":"id"}"#,
        ),
    ] {
        let request = Request::get(path).body(Body::empty()).unwrap();
        let response = service.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), status, "{path}");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body, error.as_bytes(), "{path}");
    }
}
