//! Database pool figures: a store that owns a connection pool exposes them so
//! each request line can say how contended the pool was (re-exported by
//! [`record`](crate::record), and [`DbFigures`] by [`snapshot`](crate::snapshot)).

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Cumulative figures of a connection pool, read at the start and end of a request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolFigures {
    /// Checkouts that had to wait for a connection, since the pool was created.
    pub wait_count: u64,
    /// Total time spent waiting for a connection, since the pool was created.
    pub wait_time: Duration,
    /// Connections checked out right now.
    pub in_use: u64,
    /// Connections open right now (idle or in use).
    pub open: u64,
}

/// Implemented by a store (or its pool) that can report [`PoolFigures`].
///
/// Wait figures must be cumulative counters: the recorder takes the difference
/// across the request. `in_use` and `open` are read as they are at the end.
pub trait PoolStats: Send + Sync + 'static {
    /// The pool's figures now.
    fn pool_figures(&self) -> PoolFigures;
}

/// The pool's figures read by a middleware in front of the layer when the
/// request arrived. Put in the request's extensions, it is where the
/// layer's wait deltas start, so a checkout made before the layer (while
/// authenticating the caller, say) shows in the request's line.
/// [`with_baseline`] hands the same figures over without the extension's
/// allocation and map insert.
///
/// ```
/// use perf_trace_core::record::{PoolBaseline, PoolFigures};
///
/// let mut request = http::Request::new(());
/// request.extensions_mut().insert(PoolBaseline(PoolFigures::default()));
/// assert!(request.extensions().get::<PoolBaseline>().is_some());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolBaseline(pub PoolFigures);

thread_local! {
    /// The baseline [`WithBaseline`] hands over for the length of its
    /// future's first poll, for the request the layer starts in it.
    static HANDED: Cell<Option<PoolFigures>> = const { Cell::new(None) };
}

/// Hands `baseline` to the request the tracing layer starts while `future`
/// is first polled: a middleware in front of the layer reads the pool's
/// figures as the request arrives and wraps the rest of the stack's future,
/// so that checkouts it makes itself (authenticating the caller, say) show
/// in the request's line. The same as a [`PoolBaseline`] in the request's
/// extensions, with no allocation; where both are given, this one counts.
///
/// The figures are set for the first poll only, which is when a service
/// stack calls the layer, and taken by the first request the layer starts
/// in it: a request started later, or inside that request's handler, starts
/// from its own reading.
///
/// ```
/// use perf_trace_core::record::{with_baseline, PoolFigures};
///
/// # async fn run(next: impl std::future::Future<Output = ()>) {
/// let arrived = PoolFigures::default(); // read as the request arrived
/// with_baseline(arrived, next).await;
/// # }
/// ```
pub fn with_baseline<F: Future>(baseline: PoolFigures, future: F) -> WithBaseline<F> {
    WithBaseline {
        inner: future,
        baseline: Some(baseline),
    }
}

pin_project_lite::pin_project! {
    /// The future of [`with_baseline`].
    #[derive(Debug)]
    pub struct WithBaseline<F> {
        #[pin]
        inner: F,
        baseline: Option<PoolFigures>,
    }
}

impl<F: Future> Future for WithBaseline<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let Some(baseline) = this.baseline.take() else {
            return this.inner.poll(cx);
        };
        /// Restores the slot however the poll ends (a panic included), so
        /// figures no request took never reach a later one.
        struct Restore(Option<PoolFigures>);
        impl Drop for Restore {
            fn drop(&mut self) {
                HANDED.set(self.0.take());
            }
        }
        let _restore = Restore(HANDED.replace(Some(baseline)));
        this.inner.poll(cx)
    }
}

/// The baseline handed to the request starting now, if any (taken: a
/// second request in the same poll starts from its own reading).
pub(crate) fn take_handed() -> Option<PoolFigures> {
    HANDED.take()
}

/// The pool figures of one request: pool-wide wait deltas over the request and
/// the gauges read at its end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DbFigures {
    /// Waits for a connection, pool-wide, while the request ran.
    pub wait_count: u64,
    /// Time spent waiting for a connection, pool-wide, while the request ran.
    pub wait_time: Duration,
    /// Connections in use at the end of the request.
    pub in_use: u64,
    /// Connections open at the end of the request.
    pub open: u64,
}

impl DbFigures {
    pub(crate) fn between(start: PoolFigures, end: PoolFigures) -> Self {
        DbFigures {
            wait_count: end.wait_count.saturating_sub(start.wait_count),
            wait_time: end.wait_time.saturating_sub(start.wait_time),
            in_use: end.in_use,
            open: end.open,
        }
    }
}
