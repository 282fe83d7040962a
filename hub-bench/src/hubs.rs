//! The Hubs hub-bench serves itself, in this process, each on a free
//! loopback port: a seeded database opened as `hub-example serve` opens it,
//! traced or not, its log written to a file. The demo's tables, the browser
//! benchmark's tests, the in-process benches and the guide's test start and
//! stop them here; everything else in the crate talks to a Hub over HTTP.
//!
//! - [`seeded_hub`] (and [`seeded_hub_writing_every`]): the Hub itself.
//! - [`start_hub`]: it served with the API alone.
//! - [`WebHub`]: it served with its web client, as `hub-example serve
//!   --enable-web` serves it.
//!
//! Each is traced or not as its [`Tracing`] says.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use parking_lot::Mutex;
use tokio::sync::oneshot;

use hub_example::api::profiling::set_readiness_marks;
use hub_example::app::{Hub, HubOptions, RunningHub};
use hub_example::log::SharedWriter;
use hub_example::perf::exits::HubExits;
use hub_example::serve::SchemaUpdate;
use hub_example::settings::Settings;
use hub_example::store::db::Db;
use hub_example::web::{router, WebOptions};

/// Whether a Hub served here traces its requests (its
/// `server.hub.perf_trace` setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tracing {
    /// Tracing on: the tracing layer and a perf_trace line per request.
    On,
    /// Tracing off: no tracing layer, no perf_trace lines.
    Off,
}

impl Tracing {
    /// The setting's value.
    pub fn is_on(self) -> bool {
        self == Tracing::On
    }
}

/// Serves the seeded database at `db_path` in this process, on a free
/// loopback port, as `hub-example serve` would (see [`seeded_hub`]). Stop
/// it with [`RunningHub::stop`].
pub async fn start_hub(
    db_path: &Path,
    session_secret: &str,
    tracing: Tracing,
    log_path: &Path,
) -> anyhow::Result<RunningHub> {
    let hub = seeded_hub(db_path, session_secret, tracing, log_path)?;
    Ok(hub.spawn(([127, 0, 0, 1], 0).into()).await?)
}

/// A Hub over the seeded database at `db_path`, opened as `hub-example
/// serve` opens it (migrations applied), traced as `tracing` says, without
/// the response cache (the benchmarks measure each request's own work),
/// and every log line written to a new file at `log_path`, buffered as
/// `serve` buffers standard output, the perf_trace lines buffered by their
/// threads as `serve` buffers them (they reach the file within
/// [`hub_example::perf::LINE_FLUSH_INTERVAL`] or so).
pub fn seeded_hub(
    db_path: &Path,
    session_secret: &str,
    tracing: Tracing,
    log_path: &Path,
) -> anyhow::Result<Hub> {
    let interval = hub_example::perf::LINE_FLUSH_INTERVAL;
    let cache = hub_example::settings::CacheSettings::disabled();
    seeded_hub_writing_every(db_path, session_secret, tracing, log_path, interval, cache)
}

/// [`seeded_hub`] with its lines written out every `interval` (the
/// instruction counter, under valgrind, writes them out itself at the
/// end of its window: see `Logger::flush`) and the response cache as
/// `cache` says (the instruction counter also measures cache hits).
pub fn seeded_hub_writing_every(
    db_path: &Path,
    session_secret: &str,
    tracing: Tracing,
    log_path: &Path,
    interval: Duration,
    cache: hub_example::settings::CacheSettings,
) -> anyhow::Result<Hub> {
    let exits = HubExits {
        background_lines: Some(interval),
        ..HubExits::default()
    };
    seeded_hub_with_exits(db_path, session_secret, tracing, log_path, cache, exits)
}

/// [`seeded_hub_writing_every`] with `exits` on its emitter (the benches'
/// tail-sampled side), their `background_lines` included.
pub fn seeded_hub_with_exits(
    db_path: &Path,
    session_secret: &str,
    tracing: Tracing,
    log_path: &Path,
    cache: hub_example::settings::CacheSettings,
    exits: HubExits,
) -> anyhow::Result<Hub> {
    let db = Db::open_for_serving(db_path, SchemaUpdate::Migrate)?;
    let log = File::create(log_path).with_context(|| format!("create {}", log_path.display()))?;
    // Unbuffered, as the Hub's standard output (`hub_example::log::stdout_writer`):
    // the perf_trace lines come in batches.
    let writer: SharedWriter = Arc::new(Mutex::new(Box::new(log)));
    let options = HubOptions {
        session_secret: session_secret.into(),
        settings: Settings {
            perf_trace: tracing.is_on(),
            gcp_logs: false,
            cache,
        },
        log: writer,
    };
    Ok(Hub::builder(db, options).exits(exits).build())
}

/// A served Hub with its web client; stopped when dropped.
pub struct WebHub {
    url: String,
    hub: Hub,
    _stop: oneshot::Sender<()>,
}

impl WebHub {
    /// Serves `hub` (see [`seeded_hub`]) with its web client on a free
    /// loopback port.
    pub async fn serve(hub: Hub) -> anyhow::Result<WebHub> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let (stop, stopped) = oneshot::channel::<()>();
        let web = router(&hub, WebOptions { test_login: false });
        tokio::spawn(hub.serving_router(listener, web, async {
            let _ = stopped.await;
        }));
        Ok(WebHub {
            url,
            hub,
            _stop: stop,
        })
    }

    /// The base URL of the page and the API.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Turns the `profiling.readiness_marks` setting on or off.
    pub fn set_readiness_marks(&self, on: bool) -> anyhow::Result<()> {
        set_readiness_marks(self.hub.db(), on, hub_example::clock::now_ms())?;
        Ok(())
    }
}
