//! A small orders API traced with perf-trace's plain profile.
//!
//! It is not the Scion Hub and does not follow its contract: its own phases
//! (`load`, `price`, `serialize`), its own counted store
//! ([`store::OrderStore`]), its own endpoint classes, one counter set (the
//! per-request price cache), no decisions, no pool, no event streams, and
//! lines under its own subsystem with `X-Orders-Perf-*` headers.
//!
//! - [`keys`]: the key sets and the schema;
//! - [`store`]: the store trait and its in-memory implementation;
//! - [`api`]: the routes and handlers;
//! - [`perf`]: the tracing policy, profile and layer.

pub mod api;
pub mod keys;
pub mod perf;
pub mod store;
