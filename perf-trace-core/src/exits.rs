//! The crate's own exits beyond the line, built on the contract the core
//! hands every finished request over with ([`export`](crate::export)):
//! [`sampling`] (tail sampling, whether a request keeps its line),
//! `tracing_sink` (a `tracing` event per kept request, feature `tracing`)
//! and `metrics` (Prometheus metrics, feature `metrics`). OpenTelemetry
//! export is the `perf-trace-otel` crate, built on the same contract.
//!
//! These modules import the core; nothing in the core imports them, as an
//! exit in a crate of its own could not be.

#[cfg(feature = "metrics")]
pub mod metrics;
pub mod sampling;
#[cfg(feature = "tracing")]
pub mod tracing_sink;
