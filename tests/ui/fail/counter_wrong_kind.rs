use perf_trace_core::keys::CounterSet;
use perf_trace_core::{count, record::count_by, KeySet};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
pub enum Route {
    #[key(default)]
    Other,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Phase {
    Price,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(counters, prefix = "cache", by = Route)]
pub enum CacheOutcome {
    Hit,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(counters, prefix = "batch")]
pub enum Batch {
    Count,
}

// A phase set listed as a counter set.
const SETS: &[CounterSet] = &[CounterSet::of::<Phase>()];

fn main() {
    let _ = SETS;
    // A paired counter needs its `by` key.
    count(CacheOutcome::Hit);
    // A phase is not a counter.
    count(Phase::Price);
    // A single counter has no `by` set.
    count_by(Route::Other, Batch::Count);
}
