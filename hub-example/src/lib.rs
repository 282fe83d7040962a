//! The example Hub: an HTTP service on SQLite with authorization and event
//! streams, traced with perf-trace.
//!
//! - [`app::Hub`] builds the service (tracing on or off, decided once) and
//!   serves it, in-process or on a port.
//! - [`auth`] authenticates callers: bearer and access tokens, browser
//!   sessions, credential expiry and the log of refused credentials.
//! - [`store::AuthzStore`] is the authorization store, `#[counted_store]`;
//!   [`authz::Authorizer`] reads it only through a request-local memo.
//! - [`listing`] runs the agent lists phase by phase, each phase a
//!   `#[traced_phase]` function.
//! - [`perf`] is the perf-trace wiring: the key sets, the policy, the
//!   tracing layers and the exits.
//! - [`seed`] writes a reproducible data set into a fresh database;
//!   [`store::db::Db::open_for_serving`] opens one for serving.
//! - [`connections`] bounds the connections the Hub holds open (the
//!   descriptor limit raised, one cap with headroom, a cap per address);
//!   [`rate`] keeps the token buckets of the quotas and sign-in rates.
//! - [`settings`] reads the settings file and the environment once, into a
//!   plain struct per group (the timeouts and caps `serve` enforces among
//!   them), and [`shutdown`] holds the signal that ends event streams and
//!   connections.
//!
//! The benchmark and load clients and the demo are the `hub-bench` crate's.
#![warn(missing_docs)]

pub mod api;
pub mod app;
pub mod auth;
pub mod authz;
pub mod cache;
pub mod cli;
pub mod clock;
pub mod connections;
pub mod events;
pub mod listing;
pub mod log;
pub mod model;
pub mod paging;
pub mod perf;
pub mod rate;
pub mod replicas;
pub mod seed;
pub mod settings;
pub mod shutdown;
pub mod store;
pub mod views;
pub mod web;

/// The application state, at its path from before it moved beside its
/// handlers.
pub use api::state;
pub use api::state::AppState;
pub use app::accept::Listener;
/// Opening a database for serving, at its path from before the `app` folder.
pub use app::serve;
pub use app::{build_router, Hub, HubBuilder, HubOptions, RunningHub};
