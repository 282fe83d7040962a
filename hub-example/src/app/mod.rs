//! The Hub: the router over the application state ([`crate::api::state`]), and
//! serving.
//!
//! Tracing on or off is decided once, when the Hub is built. Off, the state
//! holds the plain store (`SqliteStore` or `PostgresStore`, as the
//! database is) and [`ChannelAuditSink`] and the router has
//! no tracing layer; on, the state holds [`CountedAuthzStore`](crate::store::CountedAuthzStore) and
//! [`TracedAuditEmitter`](crate::authz::TracedAuditEmitter) around them and the router has the layer, innermost
//! (inside authentication).
//!
//! A Hub is built by [`HubBuilder`] ([`Hub::new`] for the plain one), which
//! fixes everything its handlers read in their state, the Hub's guards
//! included (its [`ServerLimits`], stream caps, quota of uncached lists and
//! log of refused credentials); its routes are `build_router_with`'s. Every
//! router gets its layers from one function, `layers::stack`, in one
//! order: the API's ([`Hub::router`]) and another listener's
//! ([`Hub::guarded`]: the web client's pages, the metrics port).
//! [`Hub::serving_listeners`] serves every listener of the process with the
//! connection timeouts and caps of `crate::app::accept`, and shuts them
//! down together: one deadline for the requests in flight on all of them,
//! then the audit queue drained once, then `shutdown finished`.

pub(crate) mod accept;
mod layers;
mod parts;
mod routes;
pub mod serve;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::api::state::{AppState, Guards};
use crate::api::{ListQuota, StreamLimiter};
use crate::auth::{FailedLogins, TokenSigner};
use crate::authz::audit::{AuditBackend, PrincipalLimits};
use crate::authz::{AuditLog, ChannelAuditSink};
use crate::cache::ResponseCache;
use crate::connections::{descriptor_limit, ConnectionCaps, ConnectionGate, ConnectionStats};
use crate::events::EventBus;
use crate::log::{Logger, SharedWriter};
use crate::perf::exits::HubExits;
use crate::perf::{trace_layers, WebTraceLayer};
use crate::settings::AuditSettings;
use crate::settings::ServerLimits;
use crate::settings::{Settings, PERF_TRACE_KEY};
use crate::store::db::Db;
use crate::store::with_authz_store;
use crate::web::signin::SignInLimits;
use accept::{Listener, ServerCounters};
use layers::Scope;
use parts::{
    audit_backend, checked_hub_settings, drain_audit, exits_in_force, shared_with_replicas,
    with_admin_routes, RouterParts,
};
pub use routes::build_router;

/// Records the audit queue holds before it rejects.
pub(crate) const AUDIT_CHANNEL: usize = 16_384;
/// Latest audit records kept for inspection.
const AUDIT_RECENT: usize = 1_024;

/// The startup warning when tracing is on.
pub const PERF_TRACE_WARNING: &str =
    "Request performance tracing is on (server.hub.perf_trace); per-request perf_trace lines are logged";

/// How to build a Hub.
#[derive(Clone)]
pub struct HubOptions {
    /// The secret bearer-token keys derive from.
    pub session_secret: String,
    /// Startup settings (tracing, log format).
    pub settings: Settings,
    /// Where log and perf_trace lines go.
    pub log: SharedWriter,
}

impl std::fmt::Debug for HubOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubOptions")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Hub`]: over a database with its options, and with what
/// tests, measurements and the command line add to them.
#[must_use = "a builder does nothing until `build`"]
pub struct HubBuilder {
    db: Db,
    options: HubOptions,
    limits: ServerLimits,
    audit_settings: Option<AuditSettings>,
    extra: Option<Router>,
    audit: Option<(Box<dyn AuditBackend>, usize)>,
    exits: HubExits,
}

impl std::fmt::Debug for HubBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubBuilder")
            .field("options", &self.options)
            .field("limits", &self.limits)
            .field("audit_settings", &self.audit_settings)
            .field("extra_routes", &self.extra.is_some())
            .field(
                "audit_capacity",
                &self.audit.as_ref().map(|(_, capacity)| capacity),
            )
            .finish_non_exhaustive()
    }
}

impl HubBuilder {
    /// These timeouts and caps instead of the defaults.
    pub fn limits(mut self, limits: ServerLimits) -> Self {
        self.limits = limits;
        self
    }

    /// These bounds on the audit trail: rows kept for
    /// `settings.retention`, each principal's rows written at up to
    /// `settings.record_rate` (past it, summarized), and each principal's
    /// uncached lists limited to its bucket. A Hub built without them keeps
    /// rows 30 days, writes each principal's rows at the default rate and
    /// limits no one's lists, as tests and in-process measurements want.
    pub fn audit_settings(mut self, settings: AuditSettings) -> Self {
        self.audit_settings = Some(settings);
        self
    }

    /// `extra` routes beside the Hub's own (see `build_router_with`):
    /// for tests that need a route the real Hub does not have. The command
    /// line never adds any.
    pub fn extra_routes(mut self, extra: Router) -> Self {
        self.extra = Some(extra);
        self
    }

    /// Audit records written through `backend` from a queue of `capacity`
    /// records, instead of into the database's `audit_events` table from a
    /// queue of `AUDIT_CHANNEL`: for tests of the audit pipeline (a
    /// writer that stalls or fails).
    pub fn audit_backend(mut self, backend: Box<dyn AuditBackend>, capacity: usize) -> Self {
        self.audit = Some((backend, capacity));
        self
    }

    /// `exits` on the tracing layer's emitter (metrics, OTLP export, tail
    /// sampling) and the metrics admin route when asked for. Exits need
    /// tracing on; without it they are ignored, with a warning.
    pub fn exits(mut self, exits: HubExits) -> Self {
        self.exits = exits;
        self
    }

    /// Builds the Hub in named steps: the event bus shared with replicas,
    /// the audit pipeline, the exits and tracing layers in force, the
    /// guards over every request, then the router over the store of the
    /// database's dialect.
    pub fn build(self) -> Hub {
        let HubBuilder {
            db,
            options,
            limits,
            audit_settings,
            extra,
            audit,
            exits,
        } = self;
        let logger = Logger::new(options.log.clone(), options.settings.gcp_logs);
        let signer = TokenSigner::from_session_secret(&options.session_secret);
        let cache = ResponseCache::new(options.settings.cache);
        let bus = shared_with_replicas(&db, EventBus::default(), &cache, &logger);
        let (backend, capacity) =
            audit.unwrap_or_else(|| (audit_backend(&db, &logger), AUDIT_CHANNEL));
        let principal_limits =
            audit_settings
                .as_ref()
                .map_or_else(PrincipalLimits::default, |settings| PrincipalLimits {
                    record_rate: settings.record_rate,
                });
        let (sink, audit_log) =
            ChannelAuditSink::start_limited(backend, capacity, AUDIT_RECENT, principal_limits);
        if let Some(settings) = &audit_settings {
            audit_log.set_retention(settings.retention);
        }
        let perf_trace = options.settings.perf_trace;
        let exits = exits_in_force(exits, perf_trace, &logger);
        let layers = perf_trace.then(|| {
            logger.warn(PERF_TRACE_WARNING, &[("setting", PERF_TRACE_KEY.into())]);
            trace_layers(&logger, db.pool_stats(), &exits)
        });
        let (trace, web_trace) = match layers {
            Some(layers) => (Some(layers.hub), Some(layers.web)),
            None => (None, None),
        };
        let streams = StreamLimiter::new(limits.max_streams_per_principal, limits.max_streams);
        let failed_logins = FailedLogins::new(logger.clone());
        let guards = Guards {
            limits,
            streams: Some(streams.clone()),
            list_quota: audit_settings.as_ref().map(ListQuota::new),
            failed_logins: Some(failed_logins.clone()),
        };
        let connections = ConnectionStats::default();
        let state = AppState::new((), (), db.clone(), bus.clone(), signer.clone())
            .with_cache(cache.clone())
            .with_creator_roles(checked_hub_settings(&db, &logger))
            .with_connections(connections.clone())
            .with_guards(guards);
        let routes = RouterParts {
            state,
            sink,
            extra: with_admin_routes(extra, &exits),
            trace,
        };
        let (router, store_type, audit_type) = with_authz_store(&db, routes);
        Hub {
            router,
            web_trace,
            streams,
            limits,
            failed_logins,
            counters: Arc::default(),
            connections,
            sign_ins: SignInLimits::new(&limits),
            logger,
            db,
            bus,
            audit_log,
            cache,
            perf_trace,
            store_type,
            audit_type,
            signer,
            exits,
        }
    }
}

/// A built Hub, ready to serve.
pub struct Hub {
    router: Router,
    web_trace: Option<WebTraceLayer>,
    limits: ServerLimits,
    streams: StreamLimiter,
    failed_logins: FailedLogins,
    counters: Arc<ServerCounters>,
    connections: ConnectionStats,
    sign_ins: SignInLimits,
    logger: Logger,
    db: Db,
    bus: EventBus,
    audit_log: AuditLog,
    cache: ResponseCache,
    perf_trace: bool,
    store_type: &'static str,
    audit_type: &'static str,
    signer: TokenSigner,
    exits: HubExits,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("perf_trace", &self.perf_trace)
            .field("store_type", &self.store_type)
            .field("audit_type", &self.audit_type)
            .finish_non_exhaustive()
    }
}

impl Hub {
    /// Builds the Hub over `db`. Tracing on logs the startup warning and
    /// installs the layer and both decorators; off installs none of them.
    pub fn new(db: Db, options: HubOptions) -> Hub {
        Hub::builder(db, options).build()
    }

    /// A builder of the Hub over `db`, for a Hub with more than its options
    /// say: limits, audit bounds, exits, extra routes, an audit backend of
    /// its own.
    pub fn builder(db: Db, options: HubOptions) -> HubBuilder {
        HubBuilder {
            db,
            options,
            limits: ServerLimits::default(),
            audit_settings: None,
            extra: None,
            audit: None,
            exits: HubExits::default(),
        }
    }

    /// The exits the Hub was built with.
    pub fn exits(&self) -> &HubExits {
        &self.exits
    }

    /// The timeouts and caps in force.
    pub fn limits(&self) -> &ServerLimits {
        &self.limits
    }

    /// Requests being served now (their head received, their answer not
    /// yet sent in full), over every connection [`Hub::serve`] accepted.
    pub fn requests_in_flight(&self) -> usize {
        self.counters.requests_in_flight()
    }

    /// The connections' figures (open, caps, refused) while serving.
    pub fn connections(&self) -> &ConnectionStats {
        &self.connections
    }

    /// The sign-in rates and cap of sessions, shared by every web router
    /// over the Hub.
    pub(crate) fn sign_ins(&self) -> &SignInLimits {
        &self.sign_ins
    }

    /// The open event streams, counted against their caps.
    pub fn streams(&self) -> &StreamLimiter {
        &self.streams
    }

    /// The router (cheap to clone), for serving or for calling in-process:
    /// the routes with every layer of the `layers` module, reading the
    /// Hub's guards (its limits, stream caps, quota of uncached lists and
    /// log of refused credentials) from their state.
    pub fn router(&self) -> Router {
        self.router.clone()
    }

    /// Whether request tracing is on.
    pub fn perf_trace(&self) -> bool {
        self.perf_trace
    }

    /// The type name of the authorization store the handlers use.
    pub fn store_type(&self) -> &'static str {
        self.store_type
    }

    /// The type name of the audit emitter the handlers use.
    pub fn audit_type(&self) -> &'static str {
        self.audit_type
    }

    /// The audit pipeline's figures.
    pub fn audit_log(&self) -> &AuditLog {
        &self.audit_log
    }

    /// The response cache (its settings, stamps and outcome totals).
    pub fn cache(&self) -> &ResponseCache {
        &self.cache
    }

    /// The event bus.
    pub fn bus(&self) -> &EventBus {
        &self.bus
    }

    /// The database.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// The logger.
    pub fn logger(&self) -> &Logger {
        &self.logger
    }

    /// The log of refused credentials (the web client's sign-in adds to it).
    pub(crate) fn failed_logins(&self) -> &FailedLogins {
        &self.failed_logins
    }

    /// The bearer-token signer (the web client's sign-in checks tokens with it).
    pub(crate) fn signer(&self) -> &TokenSigner {
        &self.signer
    }

    /// `routes` of another listener (the metrics port's) behind the
    /// request guards of the Hub's own: the request timeout (a JSON 408,
    /// the body's upload included), a handler's panic answered as a JSON
    /// 500, and the limits on the path, query and headers. Untraced.
    pub fn guarded(&self, routes: Router) -> Router {
        self.guard(routes, None)
    }

    /// The web client's own routes behind the same guards as
    /// [`Hub::guarded`], and traced (when tracing is on) with the web
    /// client's endpoint classes (`web.page`, `web.asset`, `web.auth`).
    pub(crate) fn guarded_web(&self, routes: Router) -> Router {
        self.guard(routes, self.web_trace.clone())
    }

    fn guard(&self, routes: Router, trace: Option<WebTraceLayer>) -> Router {
        layers::stack(
            routes,
            self.limits.request_timeout,
            Scope::Listener { trace },
        )
    }

    /// Serves on `listener` until `shutdown` completes, then shuts down
    /// gracefully within the shutdown deadline (see `crate::app::accept`).
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        self.serving(listener, shutdown).await
    }

    /// [`Hub::serve`] without giving up the Hub (its parts are shared), for
    /// tests that keep reading its log and database while it serves.
    pub fn serving(
        &self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> impl Future<Output = std::io::Result<()>> + Send + 'static {
        self.serving_listeners(
            vec![Listener::new("api", listener, self.router())],
            shutdown,
        )
    }

    /// [`Hub::serving`] with another router over the Hub's parts (the web
    /// client's, [`crate::web::router`]), under the same connection
    /// timeouts, caps and graceful shutdown.
    pub fn serving_router(
        &self,
        listener: TcpListener,
        router: Router,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> impl Future<Output = std::io::Result<()>> + Send + 'static {
        self.serving_listeners(vec![Listener::new("web", listener, router)], shutdown)
    }

    /// Serves every listener in one accept loop until `shutdown` completes,
    /// then shuts them all down together (see `crate::app::accept`): each
    /// stops accepting, the requests in flight on any of them finish or are
    /// cut off at one deadline, the audit queue is drained once, and
    /// `shutdown finished` is the last line.
    pub fn serving_listeners(
        &self,
        listeners: Vec<Listener>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> impl Future<Output = std::io::Result<()>> + Send + 'static {
        let logger = self.logger.clone();
        let (limits, streams) = (self.limits, self.streams.clone());
        let counters = Arc::clone(&self.counters);
        let perf_trace = self.perf_trace;
        let audit_log = self.audit_log.clone();
        let soft_limit = descriptor_limit().ok().map(|limit| limit.soft);
        let gate = ConnectionGate::new(
            ConnectionCaps::derive(&limits, soft_limit),
            self.connections.clone(),
        );
        let pruning = crate::auth::session::prune_periodically(
            self.db.clone(),
            limits.session_prune_interval,
            logger.clone(),
        );
        async move {
            let pruning = tokio::spawn(pruning);
            for listener in &listeners {
                logger.info(
                    "hub listening",
                    &[
                        ("addr", listener.local_addr()?.to_string().into()),
                        ("serves", listener.name().into()),
                        ("perf_trace", perf_trace.into()),
                    ],
                );
            }
            let cut_off = accept::serve(
                listeners,
                logger.clone(),
                limits,
                streams,
                counters,
                gate,
                shutdown,
            )
            .await;
            pruning.abort();
            drain_audit(audit_log, logger.clone(), limits.shutdown_timeout).await;
            cut_off.log_finished(&logger);
            Ok(())
        }
    }

    /// Serves in the background on `addr` (port 0 for a free one), for tests
    /// and benchmarks in the same process.
    pub async fn spawn(self, addr: SocketAddr) -> std::io::Result<RunningHub> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(self.serve(listener, async {
            let _ = rx.await;
        }));
        Ok(RunningHub {
            addr,
            shutdown: Some(tx),
            task,
        })
    }
}

/// A Hub serving in the background.
#[derive(Debug)]
pub struct RunningHub {
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

impl RunningHub {
    /// Its base URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting, ends event streams, lets open requests finish within
    /// the shutdown deadline, and waits.
    pub async fn stop(mut self) -> std::io::Result<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        (&mut self.task).await.map_err(std::io::Error::other)?
    }
}
