//! The benchmark and load clients of the example hub.
#![warn(missing_docs)]

pub mod apibench;
pub mod client;
pub mod machine;
pub mod perf_log;
pub mod report;
pub mod seed_file;
pub mod stats;
pub mod table;
