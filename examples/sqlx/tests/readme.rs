//! The test the repository's README shows, as it is shown.

use axum::body::Body;
use http::Request;
use perf_trace_core::testing::{assert_flat, assert_no_repeated_statements};
use sqlx_example::{router, Inventory, InventorySchema};

/// N+1 checks with no baseline: a list that ran one statement per product
/// fails here, naming `sql_select_n: 3 at 2 rows, 11 at 10 rows` and the
/// statement that repeated.
#[tokio::test]
async fn the_product_list_has_no_n_plus_one() {
    let responses = assert_flat::<InventorySchema, _, _, _, _, _>(&[2, 10], |n| async move {
        let app = router(Inventory::in_memory(n).await.unwrap());
        (app, Request::get("/products").body(Body::empty()).unwrap())
    })
    .await;
    assert_no_repeated_statements(&responses[1], 1);
}

#[test]
fn the_readme_shows_this_test_verbatim() {
    let source = include_str!("readme.rs");
    let start = source.find("use axum::body::Body;").unwrap();
    let len = source[start..].find("\n}\n").unwrap() + 2;
    let shown = &source[start..start + len];
    assert!(
        include_str!("../../../README.md").contains(shown),
        "README.md lacks:\n{shown}"
    );
}
