//! Recorders reused by the thread their request ended on: a request's
//! recorder, once its line is written and nothing else holds it, waits in
//! that thread's spares for the thread's next request of the same schema,
//! which zeroes its tables in place instead of allocating new ones.

use std::any::TypeId;
use std::cell::RefCell;
use std::sync::Arc;

use super::{Inner, Recorder, Table};
use crate::clock;
use crate::keys::{Schema, SchemaInfo};
use crate::line::needs_escape;
use crate::record::pool::{PoolFigures, PoolStats};

/// What a layer knows of a request as it starts, borrowed, for
/// [`Recorder::for_request`].
pub(crate) struct RequestStart<'a> {
    pub(crate) method: &'static str,
    pub(crate) request_id: &'a str,
    /// The pool, and the figures its waits count from when read earlier
    /// (else now).
    pub(crate) pool: Option<(&'a Arc<dyn PoolStats>, Option<PoolFigures>)>,
}

impl Recorder {
    /// A request's recorder, reusing one this thread kept (see [`recycle`])
    /// when it has one of this schema: its tables are zeroed in place
    /// instead of allocated, and it keeps its request id's buffer and, when
    /// the pool is the same, its reference to the pool.
    pub(crate) fn for_request<S: Schema>(start: RequestStart<'_>) -> Recorder {
        let schema = SchemaInfo::of::<S>();
        let Some(mut reused) = take_spare(TypeId::of::<S>()) else {
            return Recorder::first_for_request::<S>(start);
        };
        let inner = Arc::get_mut(&mut reused).expect("a recycled recorder is unique");
        // Only the keys the last request touched are reset, and the timers.
        let (stores_at, timers_at) = (inner.stores_at, inner.timers_at);
        for (table, at) in [(Table::Phases, 0), (Table::Stores, stores_at)] {
            let mut touched = std::mem::take(inner.touched[table as usize].get_mut());
            while touched != 0 {
                let stat = &mut inner.stats[at + touched.trailing_zeros() as usize];
                touched &= touched - 1;
                *stat.count.get_mut() = 0;
                *stat.ticks.get_mut() = 0;
            }
        }
        for stat in inner.stats[timers_at..].iter_mut() {
            *stat.count.get_mut() = 0;
            *stat.ticks.get_mut() = 0;
        }
        for (w, word) in inner.counters_touched.iter_mut().enumerate() {
            let mut touched = std::mem::take(word.get_mut());
            while touched != 0 {
                *inner.counters[w * 64 + touched.trailing_zeros() as usize].get_mut() = 0;
                touched &= touched - 1;
            }
        }
        inner.extra.clear();
        inner.statements.clear();
        inner.decisions = Default::default();
        *inner.decision_ticks.get_mut() = 0;
        *inner.sse_events.get_mut() = 0;
        *inner.endpoint.get_mut() = schema.default_endpoint;
        *inner.status.get_mut() = 0;
        *inner.discarded.get_mut() = false;
        *inner.stream.get_mut() = false;
        inner.method = start.method;
        // The layer's methods are `method_name`'s, none of which needs escaping.
        debug_assert!(!needs_escape(start.method));
        inner.method_plain = true;
        inner.request_id.clear();
        inner.request_id.push_str(start.request_id);
        // The layer's id is a UUID (hex digits and hyphens) or one it
        // adopted, of `[A-Za-z0-9._:-]` only.
        debug_assert!(!needs_escape(start.request_id));
        inner.request_id_plain = true;
        let kept = inner.pool.take();
        inner.pool = start.pool.map(|(pool, since)| {
            let pool = match kept {
                Some((kept, _)) if Arc::ptr_eq(&kept, pool) => kept,
                _ => Arc::clone(pool),
            };
            let figures = since.unwrap_or_else(|| pool.pool_figures());
            (pool, figures)
        });
        // Last, as in `build`: the clock starts when the recorder is ready.
        inner.start_ticks = clock::now();
        Recorder(reused)
    }

    /// A request's recorder built afresh, on a thread with none to reuse.
    /// Out of line: a thread builds a few, then reuses them, and inlined
    /// into every request's path the builder's code was fetched with it.
    #[cold]
    #[inline(never)]
    fn first_for_request<S: Schema>(start: RequestStart<'_>) -> Recorder {
        let mut builder = Recorder::builder()
            .method(start.method)
            .request_id(start.request_id);
        if let Some((pool, since)) = start.pool {
            builder = builder.pool(Arc::clone(pool));
            if let Some(since) = since {
                builder = builder.pool_since(since);
            }
        }
        builder.build::<S>()
    }
}

thread_local! {
    /// Recorders of requests that ended on this thread, for its next
    /// requests. Kept by the thread rather than in a pool the threads
    /// share: a request mostly starts and ends on one thread, so its
    /// recorder is reused from that thread's cache, with no atomic operation
    /// and no memory moving between cores.
    static SPARES: RefCell<Vec<Arc<Inner>>> = const { RefCell::new(Vec::new()) };
}

/// Recorders a thread keeps at most: it ends one request at a time, and a
/// recorder ended elsewhere lands here only when a request moved threads.
const SPARES_MAX: usize = 4;

/// Keeps `recorder`, whose request has ended and whose line is written,
/// for this thread's next request, when nothing else holds it (a task the
/// request spawned may still) and the thread has room; else frees it. A
/// kept recorder keeps its pool's handle until it is reused or its thread
/// ends.
pub(crate) fn recycle(recorder: Recorder) {
    let mut inner = recorder.0;
    if Arc::get_mut(&mut inner).is_none() {
        return;
    }
    // A thread tearing down its thread-locals frees the recorder.
    let _ = SPARES.try_with(|spares| {
        if let Ok(mut spares) = spares.try_borrow_mut() {
            if spares.len() < SPARES_MAX {
                spares.push(inner);
            }
        }
    });
}

/// A recorder this thread kept, of schema `schema` (its type's id), if any.
fn take_spare(schema: TypeId) -> Option<Arc<Inner>> {
    SPARES
        .try_with(|spares| {
            let mut spares = spares.try_borrow_mut().ok()?;
            let at = spares.iter().rposition(|inner| inner.schema_id == schema)?;
            Some(spares.swap_remove(at))
        })
        .ok()
        .flatten()
}
