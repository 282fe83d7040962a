//! `perf-trace`: summaries, diffs and reports of perf_trace lines.

use clap::Parser as _;

fn main() -> std::process::ExitCode {
    perf_trace_cli::cli::run(&perf_trace_cli::cli::Cli::parse())
}
