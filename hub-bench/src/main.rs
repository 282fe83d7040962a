//! `hub-bench`: the demo, apibench and load against the example Hub.

fn main() -> std::process::ExitCode {
    hub_bench::cli::run(std::env::args_os())
}
