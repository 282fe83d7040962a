//! The benchmark and load clients of the example hub.
//!
//! - [`apibench`]: timed requests to the agent-list endpoints as the seeded
//!   member, joined to the hub's `perf_trace` lines, written as a JSON report
//!   (`hub-example apibench`).
//! - [`load`]: virtual users over a weighted endpoint mix for a fixed time,
//!   with exact latency percentiles (`hub-example load`).
//! - [`report`]: the JSON types both write; [`seed_file`]: the seeder's JSON
//!   and its redaction; [`perf_log`]: the `perf_trace` line reader;
//!   [`stats`], [`table`], [`machine`] and [`client`]: shared pieces.
#![warn(missing_docs)]

pub mod apibench;
pub mod client;
pub mod load;
pub mod machine;
pub mod perf_log;
pub mod report;
pub mod seed_file;
pub mod stats;
pub mod table;

pub use apibench::{run as run_apibench, ApibenchArgs};
pub use load::{run_load, LoadArgs};
pub use perf_log::{parse_perf_line, PerfLine};
pub use report::{LoadReport, Report};
pub use seed_file::SeedFile;
