//! The calls the overhead benchmarks measure, shared by the criterion
//! benchmark (`overhead.rs`, time) and the instruction counter
//! (`overhead_instructions.rs`): a phase, a counted store call, counters,
//! a timer, the floor a timed call is held to, and a plain call. The keys
//! and the schema are the integration tests' (`tests/common`).

use std::hint::black_box;

use perf_trace_core::traced_phase;

pub use crate::common::{
    Batch, Cache, CountedThingStore, Endpoint, Phase, Render, TestSchema, ThingStore,
};

/// The store's own methods, with nothing counted.
pub struct Direct;

impl ThingStore for Direct {
    #[inline(never)]
    fn get_user(&self, id: u64) -> u64 {
        black_box(id) + 1
    }

    fn list_things(&self) -> u64 {
        0
    }
}

#[inline(never)]
pub fn plain(x: u64) -> u64 {
    black_box(x) + 1
}

#[inline(never)]
#[traced_phase(Phase::Load)]
pub fn traced(x: u64) -> u64 {
    black_box(x) + 1
}

/// The same phase as [`traced`], around a block inside the function.
#[inline(never)]
pub fn traced_block(x: u64) -> u64 {
    perf_trace_core::phase!(Phase::Load, { black_box(x) + 1 })
}

thread_local! {
    static FLOOR_TICKS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The least a timed call can cost: two raw reads of the time-stamp counter
/// around the body and one add into thread-local memory (no key, no
/// recorder, nothing shared). A recorded phase is measured against it.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub fn floor(x: u64) -> u64 {
    use std::arch::x86_64::_rdtsc;
    // SAFETY: `rdtsc` is available on every x86_64 processor.
    let start = unsafe { _rdtsc() };
    let out = black_box(x) + 1;
    let end = unsafe { _rdtsc() };
    FLOOR_TICKS.with(|ticks| ticks.set(ticks.get() + end.wrapping_sub(start)));
    out
}

#[inline(never)]
pub fn counted(x: u64) -> u64 {
    perf_trace_core::count(Batch::Count);
    black_box(x) + 1
}

#[inline(never)]
pub fn counted_max(x: u64) -> u64 {
    perf_trace_core::record::count_n(Batch::Largest, x);
    black_box(x) + 1
}

#[inline(never)]
pub fn counted_by(x: u64) -> u64 {
    perf_trace_core::record::count_by(Endpoint::Other, Cache::Hit);
    black_box(x) + 1
}

#[inline(never)]
pub fn timed(x: u64) -> u64 {
    perf_trace_core::time(Render::Page, || black_box(x) + 1)
}
