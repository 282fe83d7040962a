//! The command line: `demo` (also what runs with no subcommand), `apibench`,
//! `load` and `web`. A bad flag is a one-line usage error (exit status 2); a
//! failed run is one line on standard error and exit status 1.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use hub_example::cli::parse_or_exit;

use crate::apibench::{self, ApibenchArgs};
use crate::demo::{self, DemoArgs};
use crate::load::{self, LoadArgs};
use crate::web::{self, WebArgs};

/// Benchmark and load clients for the example Hub, and the demo.
#[derive(Debug, Parser)]
#[command(
    name = "hub-bench",
    version,
    about,
    propagate_version = true,
    // `hub-bench --sizes 25` is the demo; flags before a subcommand are not.
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// What to run; the demo when none is given.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The demo's flags, when no subcommand is given.
    #[command(flatten)]
    pub demo: DemoArgs,
}

/// The subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Seed Hubs at 25, 100 and 500 agents, serve them traced, benchmark them and print a summary
    Demo(DemoArgs),
    /// Time the agent-list endpoints as the seeded member and write a JSON report
    Apibench(ApibenchArgs),
    /// Run virtual users over a weighted endpoint mix and write a JSON report
    Load(LoadArgs),
    /// Measure the project page's views and live updates in headless Chromium and write a JSON report
    Web(WebArgs),
}

impl Command {
    /// Runs the subcommand; a report is written to its `--out`, the demo's
    /// files to its `--out-dir`.
    pub async fn run(self) -> anyhow::Result<()> {
        match self {
            Command::Demo(args) => demo::run(args).await.map(drop),
            Command::Apibench(args) => apibench::run(args).await.map(drop),
            Command::Load(args) => load::run_load(args).await.map(drop),
            Command::Web(args) => web::run(args).await.map(drop),
        }
    }
}

/// Clap's rendered usage error on one line: its first line without the
/// `error: ` prefix, joined by the next line when it ends in a colon.
fn usage_line(rendered: &str) -> String {
    let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut first = lines.next().unwrap_or("invalid arguments").to_owned();
    // "the following required arguments were not provided:" names
    // them on the next line; keep it on the one line.
    if first.ends_with(':') {
        if let Some(named) = lines.next() {
            first = format!("{first} {named}");
        }
    }
    first.strip_prefix("error: ").unwrap_or(&first).to_owned()
}

/// Parses `args` and runs the command; returns the process exit code.
pub fn run(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let cli = match parse_or_exit::<Cli>("hub-bench", args, usage_line) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let command = cli.command.unwrap_or(Command::Demo(cli.demo));
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|runtime| runtime.block_on(command.run()));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // `{:#}` keeps the context chain on one line, whatever the source
            // error looks like.
            let message = format!("{e:#}");
            eprintln!(
                "hub-bench: error: {}",
                message.lines().collect::<Vec<_>>().join(" ")
            );
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_subcommand_runs_the_demo_and_demo_takes_its_flags() {
        let cli = Cli::try_parse_from(["hub-bench"]).unwrap();
        assert!(cli.command.is_none());
        let defaults = DemoArgs::default();
        assert_eq!(cli.demo.sizes, defaults.sizes);
        assert_eq!(
            (cli.demo.runs, cli.demo.compare_rounds),
            (defaults.runs, defaults.compare_rounds)
        );
        let flags = ["--sizes", "25,100", "--runs", "1", "--compare-rounds", "20"];
        let bare = Cli::try_parse_from(std::iter::once("hub-bench").chain(flags)).unwrap();
        assert!(bare.command.is_none());
        let named = Cli::try_parse_from(["hub-bench", "demo"].into_iter().chain(flags)).unwrap();
        let Some(Command::Demo(args)) = named.command else {
            panic!("not the demo: {:?}", named.command);
        };
        for args in [bare.demo, args] {
            assert_eq!(args.sizes, [25, 100]);
            assert_eq!((args.runs, args.compare_rounds), (1, 20));
            assert!(args.out_dir.is_none());
        }
        let error = Cli::try_parse_from(["hub-bench", "demo", "--sizes", "0"]).unwrap_err();
        assert_eq!(error.kind(), clap::error::ErrorKind::ValueValidation);
        // The demo's flags do not go with another subcommand.
        let error = Cli::try_parse_from(["hub-bench", "--runs", "1", "load"]).unwrap_err();
        assert_eq!(error.kind(), clap::error::ErrorKind::ArgumentConflict);
    }
}
