use perf_trace_core::{record::count_by, key, KeySet};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
pub enum Route {
    #[key(default)]
    Other,
    #[key(rename = "orders.list")]
    OrdersList,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(counters, prefix = "cache", by = Route)]
pub enum CacheOutcome {
    Hit,
    Miss,
    Shared,
}

fn main() {
    count_by(Route::OrdersList, key!(CacheOutcome::Hitt));
}
