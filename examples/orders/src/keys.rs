//! The orders API's key sets and its schema.
//!
//! Not the Scion contract: no authorization, so no decisions and no store
//! total; no pool and no event streams. The line carries the phases, the
//! store methods and the price cache, under the service's own subsystem.

use perf_trace_core::keys::{CounterSet, Groups};
use perf_trace_core::{KeySet, Schema};

use crate::store::OrderStoreMethod;

/// The steps of an orders request.
#[derive(KeySet, Clone, Copy, Debug, PartialEq, Eq)]
#[key_set(phases)]
pub enum Phase {
    /// Reading orders from the store.
    Load,
    /// Pricing each order's lines.
    Price,
    /// Encoding the response body (timed by the tracing layer).
    Serialize,
}

/// The class of a request, as it appears in the `endpoint` key.
#[derive(KeySet, Clone, Copy, Debug, PartialEq, Eq)]
#[key_set(endpoints)]
pub enum EndpointClass {
    /// Anything else (health, unknown paths).
    #[key(default)]
    Other,
    /// `GET /orders`.
    #[key(rename = "orders.list")]
    List,
    /// `GET /orders/{id}`.
    #[key(rename = "orders.get")]
    Get,
    /// `POST /orders`.
    #[key(rename = "orders.create")]
    Create,
}

/// The request's product price cache: a price read once per request is
/// reused for every other line with the same product.
#[derive(KeySet, Clone, Copy, Debug, PartialEq, Eq)]
#[key_set(counters, prefix = "price_cache")]
pub enum PriceCache {
    /// The price was already read in this request.
    Hit,
    /// The price was read from the store.
    Miss,
}

/// What one orders request records.
#[derive(Debug, Clone, Copy)]
pub struct OrdersSchema;

impl Schema for OrdersSchema {
    type Phase = Phase;
    type StoreMethod = OrderStoreMethod;
    type Endpoint = EndpointClass;
    const SERIALIZE: Option<Phase> = Some(Phase::Serialize);
    const COUNTERS: &'static [CounterSet] = &[CounterSet::of::<PriceCache>()];
    const GROUPS: Groups = Groups::NONE;
}

/// Classifies a request from its method and path alone.
pub fn classify(method: &http::Method, path: &str) -> EndpointClass {
    let path = path.trim_end_matches('/');
    match (method.as_str(), path) {
        ("GET", "/orders") => EndpointClass::List,
        ("POST", "/orders") => EndpointClass::Create,
        ("GET", p)
            if p.strip_prefix("/orders/")
                .is_some_and(|id| !id.contains('/')) =>
        {
            EndpointClass::Get
        }
        _ => EndpointClass::Other,
    }
}
