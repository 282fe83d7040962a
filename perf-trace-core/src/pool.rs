//! Database pool figures: a store that owns a connection pool exposes them so
//! each request line can say how contended the pool was.

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
///
/// ```
/// use perf_trace_core::pool::{PoolBaseline, PoolFigures};
///
/// let mut request = http::Request::new(());
/// request.extensions_mut().insert(PoolBaseline(PoolFigures::default()));
/// assert!(request.extensions().get::<PoolBaseline>().is_some());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolBaseline(pub PoolFigures);

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
