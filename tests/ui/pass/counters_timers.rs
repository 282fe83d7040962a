use perf_trace_core::keys::{CounterSet, Groups, PairedCounterKey, TimerSet};
use perf_trace_core::{count, record::count_by, record::count_n, key, time, KeySet, Recorder, Schema};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Phase {
    Price,
}

#[path = "../support/orders.rs"]
mod orders;
use orders::{CacheOutcome, Method, Route};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(counters, prefix = "audit_queue", rename_all = "kebab-case")]
pub enum AuditQueue {
    Enqueued,
    #[key(max)]
    PeakDepth,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(timers, prefix = "render")]
pub enum Render {
    Invoice,
}

pub struct Orders;

impl Schema for Orders {
    type Phase = Phase;
    type StoreMethod = Method;
    type Endpoint = Route;
    const COUNTERS: &'static [CounterSet] =
        &[CounterSet::of::<CacheOutcome>(), CounterSet::of::<AuditQueue>()];
    const TIMERS: &'static [TimerSet] = &[TimerSet::of::<Render>()];
    const GROUPS: Groups = Groups::NONE;
}

fn by_of<K: PairedCounterKey>(_: K) -> &'static [&'static str] {
    <K::By as KeySet>::NAMES
}

fn main() {
    assert_eq!(by_of(CacheOutcome::Hit), ["other", "orders.list"]);
    assert_eq!(AuditQueue::NAMES, ["enqueued", "peak-depth"]);
    assert_eq!(AuditQueue::INFO.max_mask, 0b10);
    assert_eq!(AuditQueue::INFO.header, "Audit-Queue");
    assert_eq!(Render::INFO.header_counts, "Render-Counts");
    let recorder = Recorder::new::<Orders>();
    recorder.in_scope(|| {
        count_by(Route::OrdersList, key!(CacheOutcome::Shared));
        count(AuditQueue::Enqueued);
        count_n(AuditQueue::PeakDepth, 4);
        time(key!(Render::Invoice), || ());
    });
    let snapshot = recorder.snapshot();
    assert_eq!(snapshot.counter_by(Route::OrdersList, CacheOutcome::Shared), 1);
    assert_eq!(snapshot.counter(AuditQueue::PeakDepth), 4);
    assert_eq!(snapshot.timer(Render::Invoice).count, 1);
}
