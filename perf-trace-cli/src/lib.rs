//! Reading perf_trace lines of any profile: the library behind the
//! `perf-trace` command.
//!
//! - [`input`]: files, glob patterns, standard input, gzip; [`line`](mod@line): one
//!   line read generically from its field names, or as one profile's whose
//!   figures are known; [`scan`]: the filters and the account of skipped and
//!   malformed lines.
//! - [`dist`]: exact count tables (exact percentiles for any whole-number
//!   figure) and fixed-size time histograms; [`aggregate`]: per endpoint
//!   class; [`summary`]: what `summary` reports; [`suspects`]: the N+1
//!   suspects among a class's store and SQL counts.
//! - [`output`]: table, JSON and CSV; [`html`] and [`svg`]: the report page.
//! - [`bootstrap`]: the ratio of medians and its interval; [`diff`]: what moved.
//! - [`sample`]: sample logs in the lines' real shapes, for tests and the
//!   throughput script; [`cli`]: the command line.
#![warn(missing_docs)]

pub mod aggregate;
pub mod bootstrap;
pub mod cli;
pub mod diff;
pub mod dist;
pub mod html;
pub mod input;
pub mod line;
pub mod output;
mod request_sample;
pub mod sample;
pub mod scan;
pub mod summary;
pub mod suspects;
pub mod svg;
