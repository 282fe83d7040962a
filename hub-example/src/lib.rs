//! The example Hub: an HTTP service on SQLite with authorization and event
//! streams, traced with perf-trace.
//!
//! - [`app::Hub`] builds the service (tracing on or off, decided once) and
//!   serves it, in-process or on a port.
//! - [`store::AuthzStore`] is the authorization store, `#[counted_store]`;
//!   [`authz::Authorizer`] reads it only through a request-local memo.
//! - [`listing`] runs the agent lists phase by phase, each phase a
//!   `#[traced_phase]` function; [`keys`] holds the key sets.
//! - [`seed`] writes a reproducible data set into a fresh database.
//! - [`limits`] holds the timeouts and caps `serve` enforces, and
//!   [`shutdown`] the signal that ends event streams and connections.
//! - [`harness`] holds the benchmark and load clients (`apibench`, `load`).
#![warn(missing_docs)]

pub mod api;
pub mod app;
pub mod authz;
pub mod cli;
pub mod clock;
pub mod db;
pub mod demo;
pub mod events;
pub mod harness;
pub mod keys;
pub mod limits;
pub mod listing;
pub mod log;
pub mod model;
pub mod paging;
pub mod perf;
pub mod seed;
mod server;
pub mod settings;
pub mod shutdown;
pub mod store;
pub mod tokens;
pub mod views;

pub use app::{build_router, build_router_with, AppState, Hub, HubOptions, RunningHub};
