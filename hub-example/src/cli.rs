//! The command line: `serve` and `seed` (the benchmark and load clients and
//! the demo are the `hub-bench` crate's). Every failure is one line on
//! standard error and a non-zero exit.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::app::{Hub, HubOptions};
use crate::log::stdout_writer;
use crate::seed::{seed_to_file, SeedOptions};
use crate::serve::open_for_serving;
use crate::settings::Settings;

/// The example Hub, traced with perf-trace.
#[derive(Debug, Parser)]
#[command(name = "hub-example", version, about, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the Hub API on a seeded database.
    Serve(ServeArgs),
    /// Write a reproducible data set into a fresh database.
    Seed(SeedArgs),
}

/// `hub-example serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// SQLite database file (created by `seed`).
    #[arg(long, value_name = "PATH")]
    pub db: PathBuf,
    /// Secret the bearer-token signing key is derived from.
    #[arg(long, value_name = "S")]
    pub session_secret: String,
    /// Port to listen on.
    #[arg(long, default_value_t = 19810)]
    pub port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// YAML settings file (`server.hub.perf_trace: true` turns tracing on).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Do not apply schema migrations; refuse an outdated schema instead.
    #[arg(long)]
    pub no_auto_migrate: bool,
}

/// `hub-example seed`.
#[derive(Debug, Args)]
pub struct SeedArgs {
    /// SQLite database file; must not exist or be empty.
    #[arg(long, value_name = "PATH")]
    pub db: PathBuf,
    /// The session secret the Hub will be started with.
    #[arg(long, value_name = "S")]
    pub session_secret: String,
    /// Agents in the main project.
    #[arg(long, value_name = "N")]
    pub agents: u32,
    /// Slug of the main project.
    #[arg(long, value_name = "SLUG", default_value = "bench")]
    pub project_slug: String,
    /// Seed of the synthetic data (same seed, same data).
    #[arg(long, value_name = "N", default_value_t = 42)]
    pub rand_seed: u64,
    /// Where to write the seed document (JSON).
    #[arg(long, value_name = "SEED.json")]
    pub out: PathBuf,
}

/// A failure of a command, shown as one line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CliError(String);

impl CliError {
    fn from(e: impl std::fmt::Display) -> Self {
        // One line, whatever the source error looks like.
        CliError(e.to_string().lines().collect::<Vec<_>>().join(" "))
    }
}

/// Parses `args` and runs the command; returns the process exit code.
pub fn run(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            let rendered = e.render().to_string();
            let first = rendered.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("hub-example: error: {first} (see --help)");
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Serve(args) => serve(args),
        Command::Seed(args) => seed(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hub-example: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(CliError::from)
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

fn serve(args: ServeArgs) -> Result<(), CliError> {
    let settings = Settings::from_process(args.config.as_deref()).map_err(CliError::from)?;
    let db = open_for_serving(&args.db, !args.no_auto_migrate).map_err(CliError::from)?;
    let addr: SocketAddr = format!("{}:{}", args.host, args.port)
        .parse()
        .or_else(|_| {
            use std::net::ToSocketAddrs;
            (args.host.as_str(), args.port)
                .to_socket_addrs()
                .ok()
                .and_then(|mut a| a.next())
                .ok_or(())
        })
        .map_err(|_| CliError(format!("cannot resolve host {}", args.host)))?;
    let rt = runtime()?;
    rt.block_on(async move {
        perf_trace_core::warm_up();
        let hub = Hub::new(
            db,
            HubOptions {
                session_secret: args.session_secret,
                settings,
                log: stdout_writer(),
            },
        );
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| CliError(format!("cannot listen on {addr}: {e}")))?;
        hub.serve(listener, shutdown_signal())
            .await
            .map_err(CliError::from)
    })
}

fn seed(args: SeedArgs) -> Result<(), CliError> {
    let options = SeedOptions {
        db_path: args.db,
        session_secret: args.session_secret,
        agents: args.agents,
        project_slug: args.project_slug,
        rand_seed: args.rand_seed,
    };
    let doc = seed_to_file(&options, &args.out).map_err(CliError::from)?;
    eprintln!(
        "seeded {} agents into project {} ({}); seed document: {}",
        doc.agent_count,
        doc.project_slug,
        doc.project_id,
        args.out.display()
    );
    Ok(())
}
