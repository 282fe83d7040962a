//! The Hub's perf-trace wiring, the part this example exists to show:
//!
//! - [`keys`]: the key sets (phases, endpoint classes, cache and batch
//!   counters) and the schema that ties them to the store's methods;
//! - `policy`: how a request is classified, and who may see the perf
//!   headers;
//! - [`layer`]: the tracing layers, their emitter over the Hub's log, and
//!   the pool figures a request's line starts from;
//! - [`exits`]: metrics, OTLP export and tail sampling on that emitter, and
//!   the metrics routes (their settings are
//!   [`crate::settings::ExitSettings`]);
//! - `peers` (feature `peer-tracing`, benchmarks only): the Hub traced the
//!   ways a team would otherwise do it, to compare with.

pub mod exits;
pub mod keys;
pub mod layer;
#[cfg(feature = "peer-tracing")]
pub mod peers;
pub(crate) mod policy;

pub(crate) use layer::{pool_baseline, trace_layers, HubTraceLayer, WebTraceLayer};
pub use layer::{trace_layer, LINE_FLUSH_INTERVAL};
