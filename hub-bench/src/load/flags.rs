//! `load`'s flags, and the checks a hand-built [`LoadArgs`] gets too.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use clap::Args;
use reqwest::Url;

use crate::client;

/// The longest run accepted.
pub const MAX_DURATION: Duration = Duration::from_secs(3600);

/// The default cap on requests started in one run.
pub const DEFAULT_MAX_REQUESTS: u64 = 10_000_000;

/// Parses `--duration` with humantime (`30s`, `5s`, `1m`, `1m 30s`); refuses 0
/// and anything over an hour.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text.trim()).map_err(|e| e.to_string())?;
    check_duration(d)?;
    Ok(d)
}

fn check_duration(d: Duration) -> Result<(), String> {
    if d.is_zero() {
        return Err("must be more than 0".to_owned());
    }
    if d > MAX_DURATION {
        return Err("must be at most 1h".to_owned());
    }
    Ok(())
}

/// The flags of `load`.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// Base URL of the hub, e.g. http://127.0.0.1:19810; several replicas
    /// comma-separated (users are spread over them in turn, and each is
    /// also reported on its own)
    #[arg(long, value_name = "URL[,URL...]")]
    pub hub: String,
    /// The seed JSON written by `seed` (project id and member token)
    #[arg(long, value_name = "SEED.json")]
    pub seed: PathBuf,
    /// Virtual users (1 to 10000)
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub users: u32,
    /// How long to run: 30s, 5s, 1m (more than 0, at most 1h)
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Users started per second
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub spawn_rate: u32,
    /// Stop once this many requests have been started (bounds memory)
    #[arg(long, default_value_t = DEFAULT_MAX_REQUESTS, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub max_requests: u64,
    /// Where to write the JSON report
    #[arg(long, value_name = "REPORT.json")]
    pub out: PathBuf,
    /// Free text for the report: anything it cannot capture
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub notes: String,
    /// The Hub's process id, for its CPU% and RSS in the report (found from
    /// the --hub port when not given; with several replicas, each one's is
    /// found from its port)
    #[arg(long, value_name = "PID", value_parser = clap::value_parser!(u32).range(1..))]
    pub hub_pid: Option<u32>,
    /// Also write the per-endpoint figures as CSV into this folder
    #[arg(long, value_name = "DIR")]
    pub csv: Option<PathBuf>,
    /// Print this run beside an earlier report (before/after, change in %)
    #[arg(long, value_name = "BEFORE.json")]
    pub compare: Option<PathBuf>,
}

/// Checks the arguments that clap also checks, for callers that build
/// [`LoadArgs`] by hand.
pub(super) fn validate(args: &LoadArgs) -> anyhow::Result<()> {
    if !(1..=10_000).contains(&args.users) {
        bail!("--users {}: must be 1 to 10000", args.users);
    }
    check_duration(args.duration).map_err(|e| anyhow::anyhow!("--duration: {e}"))?;
    if args.spawn_rate == 0 {
        bail!("--spawn-rate: must be at least 1");
    }
    if args.max_requests == 0 {
        bail!("--max-requests: must be at least 1");
    }
    Ok(())
}

/// The `--hub` URLs, one per replica; `--hub-pid` only with one.
pub(super) fn hub_urls(args: &LoadArgs) -> anyhow::Result<Vec<Url>> {
    let bases = args
        .hub
        .split(',')
        .map(client::parse_hub_url)
        .collect::<anyhow::Result<Vec<_>>>()?;
    if args.hub_pid.is_some() && bases.len() > 1 {
        bail!(
            "--hub-pid names one process: with several --hub URLs each replica's process is found from its port"
        );
    }
    Ok(bases)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: LoadArgs,
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("61m").is_err());
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn flags_defaults_and_bounds() {
        let a = Cli::try_parse_from(["load", "--hub", "http://h", "--seed", "s", "--out", "r"])
            .unwrap()
            .args;
        assert_eq!(a.users, 300);
        assert_eq!(a.duration, Duration::from_secs(30));
        assert_eq!(a.spawn_rate, 100);
        assert_eq!(a.max_requests, DEFAULT_MAX_REQUESTS);
        let a = Cli::try_parse_from([
            "load",
            "--hub",
            "http://h",
            "--seed",
            "s",
            "--out",
            "r",
            "--users",
            "5",
            "--duration",
            "2s",
            "--spawn-rate",
            "10",
        ])
        .unwrap()
        .args;
        assert_eq!(
            (a.users, a.duration, a.spawn_rate),
            (5, Duration::from_secs(2), 10)
        );
        for bad in [
            ["--users", "0"],
            ["--users", "10001"],
            ["--duration", "0s"],
            ["--duration", "2h"],
            ["--spawn-rate", "0"],
            ["--hub-pid", "0"],
            ["--hub-pid", "hub"],
            ["--csv", ""],
            ["--compare", ""],
        ] {
            let mut argv = vec!["load", "--hub", "h", "--seed", "s", "--out", "r"];
            argv.extend(bad);
            let e = Cli::try_parse_from(&argv).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
        }
    }

    #[test]
    fn report_flags_are_read() {
        let a = Cli::try_parse_from([
            "load",
            "--hub",
            "h",
            "--seed",
            "s",
            "--out",
            "r",
            "--hub-pid",
            "4242",
            "--csv",
            "csv-dir",
            "--compare",
            "before.json",
        ])
        .unwrap()
        .args;
        assert_eq!(a.hub_pid, Some(4242));
        assert_eq!(a.csv.as_deref(), Some(std::path::Path::new("csv-dir")));
        assert_eq!(
            a.compare.as_deref(),
            Some(std::path::Path::new("before.json"))
        );
    }

    #[test]
    fn hand_built_args_are_checked() {
        let args = LoadArgs {
            hub: "http://127.0.0.1:1".into(),
            seed: "/nonexistent".into(),
            users: 0,
            duration: Duration::from_secs(1),
            spawn_rate: 1,
            max_requests: 1,
            out: "/nonexistent/out.json".into(),
            notes: String::new(),
            hub_pid: None,
            csv: None,
            compare: None,
        };
        assert!(validate(&args).is_err());
        let ok = LoadArgs {
            users: 1,
            ..args.clone()
        };
        assert!(validate(&ok).is_ok());
        let long = LoadArgs {
            duration: Duration::from_secs(3601),
            ..ok.clone()
        };
        assert!(validate(&long).is_err());
    }
}
