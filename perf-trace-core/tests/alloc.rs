//! Recording allocates nothing: a recorded phase, a counted store call, a
//! decision, counters (single, paired, max), a timer, and each of them with
//! no recorder in scope.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;

use common::{Batch, Cache, Endpoint, Method, Phase, Render, TestSchema};
use perf_trace_core::{__private01::TimedGuard, record::Outcome, traced_phase, Recorder};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|a| a.set(a.get() + 1));
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_in(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

#[traced_phase(Phase::Load)]
fn load(x: u64) -> u64 {
    std::hint::black_box(x) * 2
}

#[test]
fn recording_allocates_nothing() {
    let recorder = Recorder::new::<TestSchema>();
    // Warm up the clock and thread-locals outside the measurement.
    recorder.in_scope(|| load(1));
    let n = allocations_in(|| {
        recorder.in_scope(|| {
            for i in 0..1_000 {
                load(i);
                let _call = TimedGuard::store_call(Method::GetUser);
                perf_trace_core::record::time_decision(Outcome::Allow, || ());
            }
        })
    });
    assert_eq!(n, 0);
    let snapshot = recorder.snapshot();
    assert_eq!(snapshot.phase(Phase::Load).count, 1_001);
    assert_eq!(snapshot.store(Method::GetUser).count, 1_000);
}

fn count_and_time(i: u64) {
    perf_trace_core::count(Batch::Count);
    perf_trace_core::record::count_n(Batch::Largest, i);
    perf_trace_core::record::count_by(Endpoint::ThingsList, Cache::Hit);
    perf_trace_core::record::count_n_by(Endpoint::Other, Cache::Shared, 2);
    perf_trace_core::time(Render::Page, || ());
    let _footer = perf_trace_core::record::start_timer(Render::Footer);
    let timed = std::pin::pin!(perf_trace_core::record::time_future(Render::Page, async {
        i
    }));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(timed.poll(&mut cx).is_ready());
}

#[test]
fn counters_and_timers_allocate_nothing() {
    let recorder = Recorder::new::<TestSchema>();
    recorder.in_scope(|| count_and_time(0));
    let n = allocations_in(|| recorder.in_scope(|| (1..=1_000).for_each(count_and_time)));
    assert_eq!(n, 0);
    let snapshot = recorder.snapshot();
    assert_eq!(snapshot.counter(Batch::Count), 1_001);
    assert_eq!(snapshot.counter(Batch::Largest), 1_000);
    assert_eq!(snapshot.counter_by(Endpoint::ThingsList, Cache::Hit), 1_001);
    assert_eq!(snapshot.counter_by(Endpoint::Other, Cache::Shared), 2_002);
    assert_eq!(snapshot.timer(Render::Page).count, 2_002);
    assert_eq!(snapshot.timer(Render::Footer).count, 1_001);
}

#[test]
fn counters_and_timers_with_no_recorder_allocate_nothing() {
    count_and_time(0);
    let n = allocations_in(|| (1..=1_000).for_each(count_and_time));
    assert_eq!(n, 0);
}

#[test]
fn a_phase_with_no_recorder_allocates_nothing() {
    load(1);
    let n = allocations_in(|| {
        for i in 0..1_000 {
            load(i);
        }
    });
    assert_eq!(n, 0);
}
