//! The benchmark and load clients of the example hub.
#![warn(missing_docs)]

pub mod perf_log;
pub mod report;
pub mod seed_file;
pub mod stats;
pub mod table;
