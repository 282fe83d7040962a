//! The command line: `serve` and `seed` (the benchmark and load clients and
//! the demo are the `hub-bench` crate's). Every failure is one line on
//! standard error and a non-zero exit.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::app::accept::Listener;
use crate::app::serve::SchemaUpdate;
use crate::app::{Hub, HubOptions};
use crate::log::stdout_writer;
use crate::perf::exits::{metrics_addr, metrics_router, HubExits, METRICS_MAX_CONNECTIONS};
use crate::seed::{seed_to_file, SeedOptions};
use crate::settings::ServerLimits;
use crate::settings::StartupSettings;
use crate::store::db::Db;

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

/// The environment variable that can hold the session secret.
pub(crate) const SESSION_SECRET_ENV: &str = "SCION_SESSION_SECRET";

/// Where `serve` and `seed` take the session secret from: a file (recommended: it is
/// neither in the process list nor inherited by child processes), the
/// `SCION_SESSION_SECRET` environment variable, or the command line
/// (visible to `ps`). Exactly one.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub(crate) struct SessionSecretSource {
    /// Secret the bearer-token signing key is derived from (visible to
    /// `ps`: prefer --session-secret-file or SCION_SESSION_SECRET).
    #[arg(long, value_name = "S", env = SESSION_SECRET_ENV, hide_env_values = true)]
    pub session_secret: Option<String>,
    /// File holding the secret (surrounding whitespace is ignored).
    #[arg(long, value_name = "FILE")]
    pub(crate) session_secret_file: Option<PathBuf>,
}

impl SessionSecretSource {
    /// Reads the secret.
    pub(crate) fn read(&self) -> Result<String, CliError> {
        let secret = match (&self.session_secret, &self.session_secret_file) {
            (Some(secret), _) => secret.clone(),
            (None, Some(path)) => std::fs::read_to_string(path)
                .map_err(|e| {
                    CliError(format!(
                        "cannot read session secret file {}: {e}",
                        path.display()
                    ))
                })?
                .trim()
                .to_owned(),
            (None, None) => return Err(CliError("no session secret given".into())),
        };
        if secret.is_empty() {
            return Err(CliError("the session secret is empty".into()));
        }
        Ok(secret)
    }
}

/// `serve`'s timeouts and caps; each overrides the settings file and the
/// environment (see [`ServerLimits`]).
#[derive(Debug, Args)]
pub(crate) struct LimitArgs {
    /// Longest time to receive a request head [default: 10s].
    #[arg(long, value_name = "DURATION")]
    pub header_read_timeout: Option<humantime::Duration>,
    /// Longest time a connection stays open with nothing to do [default: 60s].
    #[arg(long, value_name = "DURATION")]
    pub idle_timeout: Option<humantime::Duration>,
    /// Longest time a request may take to its response head [default: 30s].
    #[arg(long, value_name = "DURATION")]
    pub request_timeout: Option<humantime::Duration>,
    /// Longest time shutdown waits for requests in flight [default: 10s].
    #[arg(long, value_name = "DURATION")]
    pub shutdown_timeout: Option<humantime::Duration>,
    /// Most open event streams of one caller [default: 16].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_streams_per_principal: Option<u32>,
    /// Most open event streams in all [default: 1024].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_streams: Option<u32>,
    /// How often an event stream re-checks its credential and access [default: 5s].
    #[arg(long, value_name = "DURATION")]
    pub stream_recheck_interval: Option<humantime::Duration>,
    /// Most connections open at once over every listener [default: derived
    /// from the descriptor limit].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..))]
    pub max_connections: Option<u32>,
    /// Most connections of one client address before its further ones
    /// must carry a credential [default: half of --max-connections].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections_per_address: Option<u32>,
}

impl LimitArgs {
    /// `limits` with the flags given applied over them.
    pub(crate) fn apply(&self, mut limits: ServerLimits) -> Result<ServerLimits, CliError> {
        let positive = |d: &humantime::Duration, flag: &str| {
            let d: std::time::Duration = (*d).into();
            if d.is_zero() {
                Err(CliError(format!("--{flag} must be above zero")))
            } else {
                Ok(d)
            }
        };
        if let Some(d) = &self.header_read_timeout {
            limits.header_read_timeout = positive(d, "header-read-timeout")?;
        }
        if let Some(d) = &self.idle_timeout {
            limits.idle_timeout = positive(d, "idle-timeout")?;
        }
        if let Some(d) = &self.request_timeout {
            limits.request_timeout = positive(d, "request-timeout")?;
        }
        if let Some(d) = &self.shutdown_timeout {
            limits.shutdown_timeout = positive(d, "shutdown-timeout")?;
        }
        if let Some(d) = &self.stream_recheck_interval {
            limits.stream_recheck_interval = positive(d, "stream-recheck-interval")?;
        }
        if let Some(n) = self.max_streams_per_principal {
            limits.max_streams_per_principal = n as usize;
        }
        if let Some(n) = self.max_streams {
            limits.max_streams = n as usize;
        }
        if let Some(n) = self.max_connections {
            limits.max_connections = Some(n as usize);
        }
        if let Some(n) = self.max_connections_per_address {
            limits.max_connections_per_address = Some(n as usize);
        }
        Ok(limits)
    }
}

/// `hub-example serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// SQLite database file (created by `seed`), or a PostgreSQL URL
    /// (`postgres://user@host:5432/db`).
    #[arg(long, value_name = "PATH")]
    pub db: PathBuf,
    /// The session secret.
    #[command(flatten)]
    pub(crate) secret: SessionSecretSource,
    /// Timeouts and caps.
    #[command(flatten)]
    pub(crate) limits: LimitArgs,
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
    pub(crate) no_auto_migrate: bool,
    /// Also serve the web client, with the API, on --web-port (--port keeps
    /// serving the API alone).
    #[arg(long)]
    pub(crate) enable_web: bool,
    /// Port of the web client and its API.
    #[arg(long, default_value_t = 18080, requires = "enable_web")]
    pub web_port: u16,
    /// Mount a sign-in by email without any token, for a disposable
    /// benchmark Hub only (never on by default).
    #[arg(long, requires = "enable_web")]
    pub(crate) enable_test_login: bool,
    /// Serve Prometheus metrics (`GET /metrics`, OpenMetrics text) on this
    /// port of 127.0.0.1 only; needs tracing on.
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) metrics_port: Option<u16>,
}

impl ServeArgs {
    /// What opening the database does with an outdated schema.
    fn schema_update(&self) -> SchemaUpdate {
        match self.no_auto_migrate {
            true => SchemaUpdate::Refuse,
            false => SchemaUpdate::Migrate,
        }
    }
}

/// `hub-example seed`.
#[derive(Debug, Args)]
pub struct SeedArgs {
    /// SQLite database file, or a PostgreSQL URL; must not exist or be
    /// empty (a PostgreSQL database: no table in its schema).
    #[arg(long, value_name = "PATH")]
    pub db: PathBuf,
    /// The session secret the Hub will be started with.
    #[command(flatten)]
    pub(crate) secret: SessionSecretSource,
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
pub(crate) struct CliError(String);

impl CliError {
    fn from(e: impl std::fmt::Display) -> Self {
        // One line, whatever the source error looks like.
        CliError(e.to_string().lines().collect::<Vec<_>>().join(" "))
    }
}

/// Parses `args` as `C`, or answers the exit code to leave with: success
/// after `--help` or `--version` (printed as clap prints them), 2 after a
/// usage error, shown on standard error as `{bin}: error: {message} (see
/// --help)` where `one_line` makes the `message` of clap's rendered error.
pub fn parse_or_exit<C: Parser>(
    bin: &str,
    args: impl IntoIterator<Item = OsString>,
    one_line: fn(&str) -> String,
) -> Result<C, ExitCode> {
    match C::try_parse_from(args) {
        Ok(cli) => Ok(cli),
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            Err(ExitCode::SUCCESS)
        }
        Err(e) => {
            let message = one_line(&e.render().to_string());
            eprintln!("{bin}: error: {message} (see --help)");
            Err(ExitCode::from(2))
        }
    }
}

/// Clap's rendered usage error on one line: its first line without the
/// `error: ` prefix, then the indented lines that complete it (such as the
/// missing arguments).
fn usage_line(rendered: &str) -> String {
    let mut lines = rendered.lines();
    let first = lines.next().unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let detail: Vec<&str> = lines
        .take_while(|l| l.starts_with(' '))
        .map(str::trim)
        .collect();
    std::iter::once(first)
        .chain(detail)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Parses `args` and runs the command; returns the process exit code.
pub fn run(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let cli = match parse_or_exit::<Cli>("hub-example", args, usage_line) {
        Ok(cli) => cli,
        Err(code) => return code,
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

/// Blocking passes (a request's authorization and store calls) running at
/// once. The rest wait in the runtime's queue, first come first served,
/// before they start: a pass makes a dozen checkouts from a pool of 8, and
/// with hundreds of passes in flight each checkout would queue behind all
/// of them, so a request's wait grew with the load a dozen times over (and
/// past the checkout timeout under 1,000 users).
const BLOCKING_PASSES: usize = 32;

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .max_blocking_threads(BLOCKING_PASSES)
        .enable_all()
        .build()
        .map_err(CliError::from)
}

fn serve(args: ServeArgs) -> Result<(), CliError> {
    let session_secret = args.secret.read()?;
    let StartupSettings {
        hub: settings,
        limits,
        audit: audit_settings,
        exits: mut exit_settings,
    } = StartupSettings::from_process(args.config.as_deref()).map_err(CliError::from)?;
    let limits = args.limits.apply(limits)?;
    if let Some(port) = args.metrics_port {
        exit_settings.metrics_port = Some(port);
    }
    // As Go's runtime does: the soft descriptor limit up to the hard one,
    // before anything is opened; the connection cap is derived from it.
    let raised = crate::connections::raise_descriptor_limit();
    let rt = runtime()?;
    // Opened in the runtime's context: a PostgreSQL pool drives its
    // connections on the Hub's runtime.
    let db = {
        let _runtime = rt.enter();
        Db::open_for_serving(&args.db, args.schema_update()).map_err(CliError::from)?
    };
    let addr = resolve(&args.host, args.port)?;
    let web_addr = match args.enable_web {
        true => Some(resolve(&args.host, args.web_port)?),
        false => None,
    };
    let web_options = crate::web::WebOptions {
        test_login: args.enable_test_login,
    };
    rt.block_on(async move {
        perf_trace_core::warm_up();
        let exits = HubExits {
            background_lines: Some(crate::perf::LINE_FLUSH_INTERVAL),
            ..HubExits::start(&exit_settings).map_err(|e| CliError(e.to_string()))?
        };
        let options = HubOptions {
            session_secret,
            settings,
            log: stdout_writer(),
        };
        let hub = Hub::builder(db, options)
            .exits(exits)
            .limits(limits)
            .audit_settings(audit_settings)
            .build();
        if let Err(e) = raised {
            hub.logger().warn(
                "cannot raise the descriptor limit; connections are capped below it",
                &[("error", e.to_string().into())],
            );
        }
        let bind = |addr: SocketAddr| async move {
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| CliError(format!("cannot listen on {addr}: {e}")))
        };
        let api = hub.router();
        #[cfg(feature = "peer-tracing")]
        let api = crate::perf::peers::from_env(api).map_err(CliError)?;
        let mut listeners = vec![Listener::new("api", bind(addr).await?, api)];
        if let Some(web_addr) = web_addr {
            let socket = bind(web_addr).await?;
            if web_options.test_login {
                hub.logger().warn(
                    "test login is on: anyone who can reach the web port can sign in as any user by email",
                    &[("web_addr", web_addr.to_string().into())],
                );
            }
            let router = crate::web::router(&hub, web_options);
            listeners.push(Listener::new("web", socket, router));
        }
        if let (Some(port), Some(metrics)) = (exit_settings.metrics_port, &hub.exits().metrics) {
            let addr = metrics_addr(port);
            let router = hub.guarded(metrics_router(std::sync::Arc::clone(metrics), addr));
            listeners.push(
                Listener::new("metrics", bind(addr).await?, router)
                    .with_max_connections(METRICS_MAX_CONNECTIONS),
            );
        }
        // One server for every listener: one shutdown, one audit drain.
        hub.serving_listeners(listeners, crate::shutdown::termination_signal())
            .await
            .map_err(CliError::from)
    })
}

/// The socket address of `host` (an address or a name) and `port`.
fn resolve(host: &str, port: u16) -> Result<SocketAddr, CliError> {
    format!("{host}:{port}")
        .parse()
        .or_else(|_| {
            use std::net::ToSocketAddrs;
            (host, port)
                .to_socket_addrs()
                .ok()
                .and_then(|mut a| a.next())
                .ok_or(())
        })
        .map_err(|_| CliError(format!("cannot resolve host {host}")))
}

fn seed(args: SeedArgs) -> Result<(), CliError> {
    let options = SeedOptions {
        db_path: args.db,
        session_secret: args.secret.read()?,
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
