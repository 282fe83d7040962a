//! The Hub's command line (`hub-example`'s), built in this package so its
//! tests can run real Hub processes and kill them: cargo gives a package's
//! tests the paths of its own binaries only.

fn main() -> std::process::ExitCode {
    hub_example::cli::run(std::env::args_os())
}
