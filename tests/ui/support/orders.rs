//! The store methods, routes and cache counters of a small orders service,
//! shared by the cases that record or name them.

use perf_trace_core::KeySet;

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(store_methods)]
pub enum Method {
    GetOrder,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
pub enum Route {
    #[key(default)]
    Other,
    #[key(rename = "orders.list")]
    OrdersList,
}

/// Counted per route: `by = Route` pairs each outcome with the endpoint.
#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(counters, prefix = "cache", by = Route)]
pub enum CacheOutcome {
    Hit,
    Miss,
    Shared,
}
