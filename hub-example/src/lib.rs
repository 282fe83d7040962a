//! The example Hub: an HTTP service on SQLite with authorization and event
//! streams, traced with perf-trace.
#![warn(missing_docs)]

pub mod authz;
pub mod db;
mod interim;
pub mod keys;
pub mod model;
pub mod store;
