//! Request-scoped performance tracing with keys fixed at compile time.
//!
//! A service declares its phases, store methods and endpoint classes as enums
//! (`#[derive(KeySet)]`), marks functions with [`traced_phase`] and its store
//! trait with [`counted_store`], and installs the tower layer. Each request
//! then gets one [`Recorder`]: fixed tables indexed by key, filled without
//! allocation, turned into one log line (and, for callers allowed to see them,
//! response headers) when the request ends.
//!
//! With no recorder in scope a traced phase costs one thread-local read and a
//! branch; with tracing off a service installs nothing at all.
//!
//! # Example
//!
//! Declare the key sets, mark the phases and the store trait, and read what
//! one request recorded:
//!
//! ```
//! use perf_trace_core::{counted_store, traced_phase, KeySet, Recorder, Schema};
//!
//! #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
//! #[key_set(phases)]
//! enum Phase { ListDbRead, Enrich }
//!
//! #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
//! #[key_set(endpoints)]
//! enum Endpoint { #[key(default)] Other }
//!
//! // Generates `AuthzStoreMethod` (the store's key set) and the decorator
//! // `CountedAuthzStore<S>`, which counts and times every call.
//! #[counted_store]
//! trait AuthzStore {
//!     fn get_user(&self, id: u64) -> Option<String>;
//! }
//!
//! struct App;
//! impl Schema for App {
//!     type Phase = Phase;
//!     type StoreMethod = AuthzStoreMethod;
//!     type Endpoint = Endpoint;
//! }
//!
//! struct Db;
//! impl AuthzStore for Db {
//!     fn get_user(&self, id: u64) -> Option<String> { Some(format!("user{id}")) }
//! }
//!
//! #[traced_phase(Phase::ListDbRead)]
//! fn list_users(store: &impl AuthzStore, ids: &[u64]) -> Vec<String> {
//!     ids.iter().filter_map(|&id| store.get_user(id)).collect()
//! }
//!
//! let store = CountedAuthzStore::new(Db);
//! let recorder = Recorder::new::<App>();
//! let users = recorder.in_scope(|| list_users(&store, &[1, 2, 3]));
//! assert_eq!(users.len(), 3);
//!
//! // Counts are host-independent: assert them in unit tests.
//! let snapshot = recorder.snapshot();
//! assert_eq!(snapshot.phase(Phase::ListDbRead).count, 1);
//! assert_eq!(snapshot.store(AuthzStoreMethod::GetUser).count, 3);
//! assert_eq!(snapshot.authz_store_calls, 3);
//! ```
//!
//! # Features
//!
#![doc = document_features::document_features!()]
#![warn(missing_docs)]

// The README's example compiles and runs as a doctest too.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod budget;
mod clock;
#[cfg(feature = "insta")]
pub mod counts;
mod guard;
mod headers;
mod key;
#[cfg(feature = "tower")]
mod layer;
mod line;
mod pool;
mod recorder;
mod scope;
mod sink;
mod snapshot;
#[cfg(feature = "tower")]
mod testing;
mod timestamp;

pub use budget::{Bound, BudgetCheck, BudgetExceeded, BudgetOutcome, Margin};
pub use clock::warm_up;
pub use headers::{render_headers, PerfHeader, HEADER_SUFFIXES};
pub use key::{EndpointKey, KeySet, PhaseKey, Schema, StoreMethodKey, MAX_KEYS};
#[cfg(feature = "tower")]
pub use layer::{
    InvalidHeaderPrefix, PerfTrace, PerfTraceLayer, ResponseFuture, TracePolicy, TracedBody,
    REQUEST_ID_HEADER,
};
pub use line::LineFormat;
pub use perf_trace_macros::{counted_store, traced_phase, KeySet};
pub use pool::{DbFigures, PoolFigures, PoolStats};
pub use recorder::{Outcome, Recorder, RecorderBuilder};
pub use scope::{bind_current, current, FutureExt, Instrumented};
#[cfg(feature = "tokio")]
pub use scope::{spawn, spawn_blocking};
pub use sink::{Emitter, LineSink};
pub use snapshot::{Decisions, KeyStat, Snapshot, SseStage};
#[cfg(feature = "tower")]
pub use testing::{perf_traced_request, TracedRequestError, TracedResponse};

use scope::with_current;

/// Whether a recorder is current on this thread.
#[inline]
pub fn is_tracing() -> bool {
    !scope::current_ptr().is_null()
}

/// Records one authorization decision without timing its emission.
#[inline]
pub fn record_decision(outcome: Outcome) {
    with_current(|r| r.add_decision(outcome, 0));
}

/// Records one authorization decision, timing `emit` (the audit emitter) as
/// its emission time. With no recorder in scope, just runs `emit`.
#[inline]
pub fn time_decision<R>(outcome: Outcome, emit: impl FnOnce() -> R) -> R {
    let recorder = scope::current_ptr();
    if recorder.is_null() {
        return emit();
    }
    let start = clock::now();
    let result = emit();
    let ticks = clock::span(start, clock::now());
    // Re-read: `emit` may have run in (and left) a nested scope; record only
    // into the recorder that is still current.
    if scope::current_ptr() == recorder {
        // SAFETY: the current pointer is kept alive by its scope.
        unsafe { &*recorder }.add_decision(outcome, ticks);
    }
    result
}

/// Adds `n` written events to the current request's `sse_events`.
#[inline]
pub fn add_sse_events(n: u64) {
    with_current(|r| r.add_sse_events(n));
}

/// Sets the current request's endpoint class (overriding the layer's
/// classification).
#[inline]
pub fn set_endpoint<E: EndpointKey>(endpoint: E) {
    with_current(|r| r.set_endpoint(endpoint));
}

/// Marks the current request so that no line is written for it (a request
/// the service rejects before it is worth tracing, such as a malformed stream
/// subscription).
#[inline]
pub fn discard_line() {
    with_current(|r| r.discard());
}

/// Marks the current request as a stream: its line carries `sse_stage`, and
/// the tower layer writes a `connect` line when the body is first polled.
#[inline]
pub fn mark_stream() {
    with_current(|r| r.mark_stream());
}

/// Support for the macros' expansions. Not public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::guard::{TimedFuture, TimedGuard};
    pub use crate::key::{const_str_eq, lookup_variant};
    pub use crate::key::{EndpointKey, KeySet, PhaseKey, StoreMethodKey, MAX_KEYS};
    pub use core::{
        any::TypeId, clone::Clone, cmp::Eq, cmp::PartialEq, fmt::Debug, future::Future, hash::Hash,
        marker::Copy, marker::Send, marker::Sync, option::Option, panic, pin::Pin, result::Result,
    };
    pub use std::boxed::Box;

    /// Compile-time check that a key set fits the recorder's tables.
    pub const fn assert_key_count(count: usize) {
        assert!(
            count <= crate::MAX_KEYS,
            "a perf-trace key set has at most 64 keys"
        );
        assert!(count > 0, "a perf-trace key set needs at least one key");
    }
}
