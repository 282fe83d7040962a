//! perf-trace's quick start: an inventory API on axum whose every request
//! writes one line of where its time went and what it cost.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::{http::StatusCode, routing::get, Json, Router};
use perf_trace_core::layer::RoutePolicy;
use perf_trace_core::{count, counted_store, phase, Emitter, KeySet, LineFormat, LineSink};
use perf_trace_core::{PerfTraceLayer, Schema};

/// Where a request's time goes.
#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Phase {
    Load,
    Encode,
}

/// What kind of request it was: by route, `other` for the rest.
#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
pub enum Endpoint {
    #[key(default)]
    Other,
    #[key(route = "GET /items")]
    ItemsList,
    #[key(route = "GET /items/{sku}")]
    ItemsGet,
}

/// Items low on stock, and out of it: `stock_low`, `stock_out`.
#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(counters, prefix = "stock")]
pub enum Stock {
    Low,
    Out,
}

/// The store: `#[counted_store]` counts and times every call of its decorator,
/// `CountedItemStore`, under the keys of `ItemStoreMethod`.
#[counted_store]
pub trait ItemStore: Send + Sync + 'static {
    fn list_skus(&self) -> Vec<String>;
    fn get_stock(&self, sku: &str) -> Option<u32>;
}

/// The sets one request records.
pub struct Inventory;
impl Schema for Inventory {
    type Phase = Phase;
    type StoreMethod = ItemStoreMethod;
    type Endpoint = Endpoint;
}

/// The service: its routes, with the tracing layer around them.
pub fn app(store: impl ItemStore, lines: LineSink, policy: RoutePolicy<Inventory>) -> Router {
    let emitter = Emitter::new(LineFormat::plain("inventory", "inventory.perf"), lines);
    Router::new()
        .route("/items", get(list))
        .route("/items/{sku}", get(item))
        .with_state(Arc::new(CountedItemStore::new(store)) as Arc<dyn ItemStore>)
        .layer(PerfTraceLayer::new(policy, emitter))
}

async fn list(State(store): State<Arc<dyn ItemStore>>) -> Response {
    // One read for the list, then one per item: the N+1 a budget catches.
    let mut stock = BTreeMap::new();
    phase!(Phase::Load, {
        for sku in store.list_skus() {
            let n = noted(store.get_stock(&sku).unwrap_or(0));
            stock.insert(sku, n);
        }
    });
    // `Json` encodes as the response is made: inside the phase, that is timed.
    phase!(Phase::Encode, { Json(stock).into_response() })
}

async fn item(State(store): State<Arc<dyn ItemStore>>, Path(sku): Path<String>) -> Response {
    match phase!(Phase::Load, { store.get_stock(&sku) }) {
        Some(n) => Json(noted(n)).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// Counts a stock that is low or out.
fn noted(n: u32) -> u32 {
    match n {
        0 => count(Stock::Out),
        1..5 => count(Stock::Low),
        _ => {}
    }
    n
}

/// A few items in memory.
pub struct Shelf(pub BTreeMap<String, u32>);
impl ItemStore for Shelf {
    fn list_skus(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }
    fn get_stock(&self, sku: &str) -> Option<u32> {
        self.0.get(sku).copied()
    }
}

impl Shelf {
    /// Three items: one plenty, one low, one out.
    pub fn sample() -> Shelf {
        Shelf(
            [("apple", 40), ("pear", 3), ("plum", 0)]
                .map(|(s, n)| (s.to_owned(), n))
                .into(),
        )
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    axum::serve(
        listener,
        app(Shelf::sample(), LineSink::stdout(), RoutePolicy::new()),
    )
    .await
}
