//! The benchmark and load clients of the example hub.
//!
//! - [`apibench`]: timed requests to the agent-list endpoints as the seeded
//!   member, joined to the hub's `perf_trace` lines, written as a JSON report
//!   (`hub-example apibench`).
//! - [`load`]: virtual users over a weighted endpoint mix for a fixed time,
//!   with exact latency percentiles (`hub-example load`).
//! - [`report`]: the JSON types both write; [`seed_file`]: reading the seeder's JSON
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
pub use seed_file::{LoadedSeed, SeedDocument};

/// The harness's subcommands, ready to mount in the hub's command line
/// (`#[command(flatten)]` inside its subcommand enum, or as a field).
#[derive(Debug, Clone, clap::Subcommand)]
pub enum HarnessCommand {
    /// Time the agent-list endpoints as the seeded member and write a JSON report
    Apibench(ApibenchArgs),
    /// Run virtual users over a weighted endpoint mix and write a JSON report
    Load(LoadArgs),
}

impl HarnessCommand {
    /// Runs the subcommand; its report is written to its `--out`.
    pub async fn run(self) -> anyhow::Result<()> {
        match self {
            HarnessCommand::Apibench(args) => run_apibench(args).await.map(drop),
            HarnessCommand::Load(args) => run_load(args).await.map(drop),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory as _, Parser};

    #[derive(Debug, Parser)]
    #[command(name = "hub-example")]
    struct Cli {
        #[command(subcommand)]
        command: HarnessCommand,
    }

    #[test]
    fn subcommands_parse() {
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from([
            "hub-example",
            "apibench",
            "--hub",
            "http://127.0.0.1:19810",
            "--seed",
            "seed-25.json",
            "--runs",
            "5",
            "--warmup",
            "1",
            "--want-perf-trace",
            "--hub-perf-log",
            "hub25.log",
            "--out",
            "api-25.json",
            "--notes",
            "one hub, otherwise idle host",
        ])
        .unwrap();
        assert!(
            matches!(cli.command, HarnessCommand::Apibench(ref a) if a.want_perf_trace && a.runs == 5)
        );
        let cli = Cli::try_parse_from([
            "hub-example",
            "load",
            "--hub",
            "http://127.0.0.1:19810",
            "--seed",
            "seed.json",
            "--users",
            "300",
            "--duration",
            "30s",
            "--out",
            "load.json",
        ])
        .unwrap();
        assert!(matches!(cli.command, HarnessCommand::Load(ref a) if a.users == 300));
        let help = Cli::try_parse_from(["hub-example", "apibench", "--help"]).unwrap_err();
        assert_eq!(help.kind(), clap::error::ErrorKind::DisplayHelp);
        assert!(help.to_string().contains("--hub-perf-log <LOG>"));
    }
}
