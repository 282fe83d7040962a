//! Route keys checked against the service's router: a mistyped key fails
//! `testing::assert_routes` naming it and the nearest route, and at run
//! time warns once per route of the service it left in the default class.

mod common;

use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;

use axum::body::Body;
use axum::routing::{get, post};
use axum::Router;
use common::{Captured, Method, Phase};
use futures_util::FutureExt as _;
use http::Request;
use http_body_util::BodyExt;
use perf_trace_core::keys::EndpointKey;
use perf_trace_core::layer::RoutePolicy;
use perf_trace_core::testing::{assert_routes, check_routes, UnmatchedRouteKey};
use perf_trace_core::{Emitter, KeySet, LineFormat, LineSink, PerfTraceLayer, Schema};
use tower::ServiceExt;

/// The keys as meant.
#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
enum Endpoint {
    #[key(default)]
    Other,
    #[key(route = "GET /accounts/{account}/transfers")]
    Transfers,
    #[key(route = "POST /accounts")]
    AccountsCreate,
    #[key(route = "/files/{*path}")]
    Files,
}

/// The same keys, one mistyped.
#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
enum Typo {
    #[key(default)]
    Other,
    #[key(route = "GET /acounts/{id}/transfers")]
    Transfers,
    #[key(route = "POST /accounts")]
    AccountsCreate,
}

/// The ledger's schema, with endpoint classes `E`.
struct Ledger<E>(PhantomData<E>);

impl<E: EndpointKey> Schema for Ledger<E> {
    type Phase = Phase;
    type StoreMethod = Method;
    type Endpoint = E;
}

/// The ledger's routes. Their handlers must not run under the check.
fn routes() -> Router {
    let never = || async {
        panic!("a handler ran under the route check");
        #[allow(unreachable_code)]
        ""
    };
    Router::new()
        .route("/accounts", post(never))
        .route("/accounts/{id}/transfers", get(|| async { "[]" }))
        .route("/files/{*path}", get(never))
        .route("/health", get(|| async { "ok" }))
}

#[tokio::test]
async fn keys_that_match_the_router_s_routes_pass() {
    assert_routes::<Ledger<Endpoint>>(&routes()).await;
    // Nested under a prefix, the routes are no longer the keys'.
    let nested = Router::new().nest("/v1", routes());
    assert_eq!(check_routes::<Ledger<Endpoint>>(&nested).await.len(), 3);
}

#[tokio::test]
async fn a_mistyped_key_is_named_with_the_nearest_route() {
    assert_eq!(
        check_routes::<Ledger<Typo>>(&routes()).await,
        [UnmatchedRouteKey {
            key: "GET /acounts/{id}/transfers".into(),
            class: "Typo::Transfers".into(),
            nearest: Some("/accounts/{id}/transfers".into()),
        }]
    );
    let failed = AssertUnwindSafe(assert_routes::<Ledger<Typo>>(&routes()))
        .catch_unwind()
        .await
        .unwrap_err();
    let message = failed.downcast_ref::<String>().expect("a message");
    assert_eq!(
        message,
        "the route key `GET /acounts/{id}/transfers` of `Typo::Transfers` matches no route \
         of the service; the nearest route it has is `/accounts/{id}/transfers`"
    );
    // A router with no routes has nothing to be near.
    let empty = check_routes::<Ledger<Typo>>(&Router::new()).await;
    assert_eq!(empty.len(), 2);
    assert_eq!(empty[0].nearest, None);
}

#[tokio::test]
async fn a_mistyped_key_warns_once_per_route_it_left_in_the_default_class() {
    let (logs, lines) = (Captured::default(), Captured::default());
    let emitter = Emitter::new(
        LineFormat::plain("ledger", "ledger.perf"),
        LineSink::new(lines.clone()),
    );
    let app = routes().layer(PerfTraceLayer::new(
        RoutePolicy::<Ledger<Typo>>::new(),
        emitter,
    ));
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_writer({
            let logs = logs.clone();
            move || logs.clone()
        })
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);
    for path in [
        "/accounts/1/transfers",
        "/health",
        "/accounts/2/transfers",
        "/health",
    ] {
        let request = Request::get(path).body(Body::empty()).unwrap();
        let response = app.clone().oneshot(request).await.unwrap();
        response.into_body().collect().await.unwrap();
    }
    let warnings = logs.json_lines();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0]["level"], "WARN");
    assert_eq!(warnings[0]["target"], "perf_trace");
    assert_eq!(
        warnings[0]["fields"]["message"],
        "perf-trace: the route key `GET /acounts/{id}/transfers` of `Typo::Transfers` matches \
         no route of the service; requests to its nearest route, `GET /accounts/{id}/transfers`, \
         are classed `other`"
    );
    let classes: Vec<_> = lines
        .json_lines()
        .iter()
        .map(|line| line["endpoint"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(classes, ["other"; 4]);
}
