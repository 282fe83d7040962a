//! What the macros expand to: guards and futures that time one phase or one
//! store call into the current recorder. With no recorder in scope they cost a
//! thread-local read and a branch.

use std::any::TypeId;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::clock;
use crate::keys::{KeySet, PhaseKey, StoreMethodKey};
use crate::recorder::{add_timed, current_ptr, Inner, Table};

/// With `tracing-spans`, the `tracing` span each phase and store call also
/// opens (entered for a guard's whole life, or at each poll of a future);
/// nothing otherwise, so neither type changes size.
#[cfg(feature = "tracing-spans")]
type SpanSlot = tracing::Span;
#[cfg(not(feature = "tracing-spans"))]
type SpanSlot = ();

/// The span of phase or store call `name` (see [`SpanSlot`]).
#[cfg(feature = "tracing-spans")]
#[inline(always)]
fn open_span(table: Table, name: &'static str) -> SpanSlot {
    match table {
        Table::Phases => tracing::info_span!(target: "perf_trace::span", "phase", key = name),
        Table::Stores => tracing::info_span!(target: "perf_trace::span", "store_call", key = name),
    }
}
#[cfg(not(feature = "tracing-spans"))]
#[inline(always)]
fn open_span(_table: Table, _name: &'static str) -> SpanSlot {}

/// A guard's span, entered until dropped. Unlike `tracing`'s own entered
/// span it is `Send`, as the guard is (a guard may be held across an
/// `.await`).
#[cfg(feature = "tracing-spans")]
#[derive(Debug)]
struct EnteredSlot(tracing::Span);

#[cfg(feature = "tracing-spans")]
impl EnteredSlot {
    fn enter(span: tracing::Span) -> Self {
        span.with_subscriber(|(id, dispatch)| dispatch.enter(id));
        EnteredSlot(span)
    }
}

#[cfg(feature = "tracing-spans")]
impl Drop for EnteredSlot {
    fn drop(&mut self) {
        self.0.with_subscriber(|(id, dispatch)| dispatch.exit(id));
    }
}

/// Adds one timed event to the current recorder if it records `set`.
#[inline(always)]
fn record_now(table: Table, set: TypeId, index: usize, start: u64) {
    let end = clock::now();
    let p = current_ptr();
    if !p.is_null() {
        // SAFETY: a non-null current pointer is kept alive by its scope.
        let inner = unsafe { &*p };
        if inner.set_id(table) == set {
            add_timed(table, index, clock::span(start, end));
        }
    }
}

#[inline(always)]
fn records(p: *const Inner, table: Table, set: TypeId) -> bool {
    // SAFETY: a non-null current pointer is kept alive by its scope.
    !p.is_null() && unsafe { &*p }.set_id(table) == set
}

/// Times a synchronous body: made on entry, records on drop (return, `?`,
/// panic).
#[must_use]
#[derive(Debug)]
pub struct TimedGuard {
    table: Table,
    set: TypeId,
    index: usize,
    /// Zero when nothing is recorded.
    start: u64,
    /// Declared last: the span closes after the time is recorded.
    #[cfg(feature = "tracing-spans")]
    _span: EnteredSlot,
}

impl TimedGuard {
    #[inline(always)]
    fn enter<K: KeySet>(table: Table, key: K) -> Self {
        let set = TypeId::of::<K>();
        let start = if records(current_ptr(), table, set) {
            clock::now().max(1)
        } else {
            0
        };
        TimedGuard {
            table,
            set,
            index: key.index(),
            start,
            #[cfg(feature = "tracing-spans")]
            _span: EnteredSlot::enter(open_span(table, key.name())),
        }
    }

    /// Starts timing phase `key` if a recorder of its set is current.
    #[inline(always)]
    pub fn phase<P: PhaseKey>(key: P) -> Self {
        Self::enter(Table::Phases, key)
    }

    /// Starts timing store call `key` if a recorder of its set is current.
    #[inline(always)]
    pub fn store_call<M: StoreMethodKey>(key: M) -> Self {
        Self::enter(Table::Stores, key)
    }

    /// Ends the timing on the body's normal path, recording as the drop
    /// does. With a call in the body that may unwind, the compiler calls
    /// the drop's glue out of line on every path (it is needed on the
    /// unwinding one too); ended here, the normal path records inline,
    /// and the drop is left to an early return, a `?` or a panic.
    #[inline(always)]
    pub fn finish(self) {
        // With a span to close, the drop does both.
        #[cfg(feature = "tracing-spans")]
        drop(self);
        #[cfg(not(feature = "tracing-spans"))]
        std::mem::ManuallyDrop::new(self).record_end();
    }

    /// Records the time since the guard started, if it started.
    #[inline(always)]
    fn record_end(&self) {
        if self.start != 0 {
            record_now(self.table, self.set, self.index, self.start);
        }
    }
}

impl Drop for TimedGuard {
    #[inline(always)]
    fn drop(&mut self) {
        self.record_end();
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    NotStarted,
    Running(u64),
    Done,
}

pin_project_lite::pin_project! {
    /// Times a future from its first poll until it completes or is dropped
    /// (cancelled); recorded into the recorder current at that moment.
    #[must_use = "futures do nothing unless polled"]
    #[derive(Debug)]
    pub struct TimedFuture<F> {
        #[pin]
        inner: F,
        table: Table,
        set: TypeId,
        index: usize,
        state: State,
        span: SpanSlot,
    }

    impl<F> PinnedDrop for TimedFuture<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let State::Running(start) = *this.state {
                record_now(*this.table, *this.set, *this.index, start);
            }
        }
    }
}

impl<F> TimedFuture<F> {
    fn new<K: KeySet>(table: Table, key: K, inner: F) -> Self {
        TimedFuture {
            inner,
            table,
            set: TypeId::of::<K>(),
            index: key.index(),
            state: State::NotStarted,
            span: open_span(table, key.name()),
        }
    }

    /// Times `inner` as phase `key`.
    pub fn phase<P: PhaseKey>(key: P, inner: F) -> Self {
        Self::new(Table::Phases, key, inner)
    }

    /// Times `inner` as store call `key`.
    pub fn store_call<M: StoreMethodKey>(key: M, inner: F) -> Self {
        Self::new(Table::Stores, key, inner)
    }
}

impl<F: Future> Future for TimedFuture<F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        #[cfg(feature = "tracing-spans")]
        let _entered = this.span.enter();
        if *this.state == State::NotStarted {
            *this.state = if records(current_ptr(), *this.table, *this.set) {
                State::Running(clock::now())
            } else {
                State::Done
            };
        }
        let output = this.inner.poll(cx);
        if output.is_ready() {
            if let State::Running(start) = *this.state {
                record_now(*this.table, *this.set, *this.index, start);
            }
            *this.state = State::Done;
        }
        output
    }
}
