//! Benchmark and load clients for the example Hub, and the demo.
//!
//! They talk to a Hub over HTTP and share only the seed document with it
//! ([`hub_example::seed::SeedDocument`]); the demo also seeds and serves Hubs
//! in-process through `hub-example`'s library.
//!
//! - [`demo`]: seeds Hubs at several sizes, serves each traced and untraced,
//!   runs apibench against the traced one and prints one table
//!   (`hub-bench`, or `hub-bench demo`), then its browser table.
//! - [`hubs`]: the Hubs the demo, the benches and the tests serve in this
//!   process (seeded, traced or not, their log in a file).
//! - [`apibench`]: timed requests to the agent-list endpoints as the seeded
//!   member, joined to the Hub's `perf_trace` lines, written as a JSON report
//!   (`hub-bench apibench`).
//! - [`load`]: virtual users over a weighted endpoint mix for a fixed time,
//!   with exact latency percentiles (`hub-bench load`), the Hub process's
//!   CPU and RSS from `/proc`, its cache table and audit health read at the
//!   end, `load --csv` and `load --compare`.
//! - [`report`]: the JSON types both write, and their writing; [`seed_file`]: reading the
//!   seeder's JSON and its redaction; [`perf_log`]: the Hub's `perf_trace`
//!   lines (read by `perf-trace-cli`) as header-shaped traces, joined to
//!   requests by request id; [`stats`] (the exact distributions of
//!   `perf-trace-cli`), [`table`], [`machine`], [`client`] and [`run_start`]:
//!   shared pieces.
//! - [`web`]: the browser benchmark over headless Chromium
//!   (`hub-bench web`).
//! - [`web_fixture`]: the deterministic answers the web counter budgets
//!   load the project page against, and their schema.
//! - [`cli`]: the command line.
#![warn(missing_docs)]

pub mod apibench;
pub mod cli;
pub mod client;
pub mod demo;
pub mod hubs;
pub mod load;
pub mod machine;
pub mod perf_log;
pub mod report;
pub mod run_start;
pub mod seed_file;
pub mod stats;
pub mod table;
pub mod web;
pub mod web_fixture;

pub use apibench::{run as run_apibench, ApibenchArgs};
pub use demo::DemoArgs;
pub use load::{run_load, LoadArgs};
pub use perf_log::{parse_perf_line, PerfLine};
pub use report::{LoadReport, Report};
pub use seed_file::{LoadedSeed, SeedDocument};
