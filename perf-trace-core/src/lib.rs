//! Request-scoped performance tracing with keys fixed at compile time.
//!
//! # Getting started
//!
//! A service declares its key sets as enums (`#[derive(KeySet)]`): phases,
//! store methods, endpoint classes (with their routes), and as many counter
//! and timer sets as it needs. It marks functions with [`traced_phase`]
//! (blocks with [`phase!`]) and its store trait with [`counted_store`],
//! counts with [`count`], times blocks with [`time`], ties the sets
//! together in a [`Schema`], and installs the tower layer
//! ([`PerfTraceLayer`]) with [`layer::RoutePolicy`]. Each request then gets
//! one [`Recorder`]: fixed tables indexed by key, filled without a lock or
//! an allocation, turned into one log line (and, for callers allowed to see
//! them, response headers) when the request ends. The crate's README walks
//! through a whole axum service and its tests.
//!
//! # Key concepts
//!
//! - The root holds the everyday names, and [`prelude`] the everyday set in
//!   one import; the rest is in modules named for what they hold:
//!   [`keys`] (roles, schema parts, limits), [`record`] (every way to
//!   record: counters, timers, decisions, the endpoint, pool figures),
//!   [`scope`] (which recorder is current, across tasks), [`snapshot`]
//!   (what a request recorded, and count snapshots), [`layer`], [`sink`]
//!   (where lines go), [`line`](mod@line) (the line, the perf headers and
//!   the Scion contract's names), [`budget`], [`testing`], and the exits
//!   beyond the line in [`exits`]. [`warm_up`] readies the request clock.
//! - The [`LineFormat`] is the profile: [`LineFormat::plain`] a service's
//!   own, [`LineFormat::scion`] the Scion contract's ([`line::scion`]). The
//!   schema says which optional groups of fields it has
//!   ([`keys::Groups`]: decisions, store total, pool figures, SSE); by
//!   default none.
//! - With no recorder in scope a traced phase costs one thread-local read
//!   and a branch; with tracing off a service installs nothing at all.
//! - Beyond the line, the [`Emitter`] hands each finished request to exits
//!   ([`exits::RequestSink`] is the contract), the crate's own in
//!   [`exits`]: a `tracing` event (`exits::tracing_sink`, feature
//!   `tracing`), Prometheus metrics with label sets bounded by the key sets
//!   (`exits::metrics`, feature `metrics`), and [tail
//!   sampling](exits::sampling), decided when the request ends;
//!   OpenTelemetry spans are the `perf-trace-otel` crate. W3C trace context
//!   is [`exits::TraceContext`].
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
//! ```
//!
//! # Features
//!
#![doc = document_features::document_features!()]
#![warn(missing_docs)]

// The derives name `::perf_trace_core`: so they work in the crate's own tests.
#[cfg(test)]
extern crate self as perf_trace_core;

pub mod budget;
mod clock;
mod emitter;
pub mod exits;
mod guard;
mod key_check;
pub mod keys;
#[cfg(feature = "tower")]
pub mod layer;
pub mod line;
pub mod record;
pub mod recorder;
#[cfg(feature = "tower")]
mod request_id;
pub mod sink;
pub mod snapshot;
#[cfg(test)]
mod test_keys;
#[cfg(feature = "tower")]
pub mod testing;
mod timestamp;

pub use clock::warm_up;
pub use emitter::Emitter;
pub use keys::{KeySet, Schema};
#[cfg(feature = "tower")]
pub use layer::PerfTraceLayer;
pub use line::LineFormat;
pub use perf_trace_macros::{counted_store, key, phase, traced_phase, KeySet};
pub use record::{count, time};
pub use recorder::Recorder;
// `scope` lives with the recorder, whose inside it touches; its public
// path stays at the root.
#[doc(inline)]
pub use recorder::scope;
pub use sink::LineSink;
pub use snapshot::Snapshot;

/// The everyday names in one import: `use perf_trace_core::prelude::*;`.
pub mod prelude {
    #[cfg(feature = "tower")]
    pub use crate::layer::{PerfTraceLayer, RoutePolicy, TracePolicy};
    pub use crate::record::{count, count_by, count_n, count_n_by, set_endpoint, time};
    pub use crate::recorder::scope::FutureExt;
    pub use crate::{counted_store, key, phase, traced_phase, KeySet};
    pub use crate::{Emitter, LineFormat, LineSink, Recorder, Schema, Snapshot};
}

/// Support for the macros' expansions. Not public API. Its name carries the
/// crate's version (`01` for 0.1), as thiserror's does, and the macro crate
/// is pinned with `=`: code generated by one release of the macros never
/// names another release's internals.
#[doc(hidden)]
pub mod __private01 {
    pub use crate::guard::{TimedFuture, TimedGuard};
    pub use crate::key_check::{check_key, unknown_key, KeyMessage};
    pub use crate::keys::{
        CounterKey, EndpointKey, KeySet, KeySetInfo, PairedCounterKey, PhaseKey, Role,
        StoreMethodKey, TimerKey, MAX_KEYS, MAX_PAIRS,
    };
    pub use core::{
        any::TypeId, clone::Clone, cmp::Eq, cmp::PartialEq, fmt::Debug, future::Future, hash::Hash,
        marker::Copy, marker::Send, marker::Sync, option::Option, panic, pin::Pin, result::Result,
    };
    pub use perf_trace_macros::KeySet;
    pub use std::boxed::Box;

    /// Compile-time check that a key set fits the recorder's tables.
    pub const fn assert_key_count(count: usize) {
        assert!(
            count <= crate::keys::MAX_KEYS,
            "a perf-trace key set has at most 64 keys"
        );
        assert!(count > 0, "a perf-trace key set needs at least one key");
    }

    /// Compile-time check that a paired counter set fits its table.
    pub const fn assert_pair_count(by: usize, keys: usize) {
        assert!(
            by * keys <= crate::keys::MAX_PAIRS,
            "a paired counter set has at most 1024 slots (keys of its `by` set times its own keys)"
        );
    }
}
