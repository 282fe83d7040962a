//! `hub-example`: the example Hub's command line.

fn main() -> std::process::ExitCode {
    hub_example::cli::run(std::env::args_os())
}
