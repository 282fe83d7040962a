use perf_trace_core::{key, record::count_by};

#[path = "../support/orders.rs"]
mod orders;
use orders::{CacheOutcome, Route};

fn main() {
    count_by(Route::OrdersList, key!(CacheOutcome::Hitt));
}
