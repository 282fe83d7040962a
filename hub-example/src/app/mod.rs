//! The Hub: the router over the application state ([`crate::app::state`]), and
//! serving.
//!
//! Tracing on or off is decided once, when the Hub is built. Off, the state
//! holds the plain store (`SqliteStore` or `PostgresStore`, as the
//! database is) and [`ChannelAuditSink`] and the router has
//! no tracing layer; on, the state holds [`CountedAuthzStore`] and
//! [`TracedAuditEmitter`] around them and the router has the layer, innermost
//! (inside authentication).
//!
//! [`Hub::router`] wraps the routes in the guards of [`ServerLimits`] (the
//! request timeout, outermost; the event-stream caps) and the log of
//! refused credentials; [`Hub::guarded`] puts routes of other listeners
//! (the web client's pages, the metrics port) behind the same request
//! guards. [`Hub::serving_listeners`] serves every listener of the process
//! with the connection timeouts and caps of [`crate::app::accept`], and shuts
//! them down together: one deadline for the requests in flight on all of
//! them, then the audit queue drained once, then `shutdown finished`.

pub(crate) mod accept;
pub mod connections;
pub mod serve;
pub mod state;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::routing::{get, put};
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;

use crate::api::{
    admin, agents, audit_events, authenticate, delegations, enforce_request_timeout, events,
    limit_request_size, method_not_allowed, not_found, panic_response, profiling, public,
    ListQuota, StreamLimiter,
};
use crate::app::accept::{Listener, ServerCounters};
use crate::app::connections::{descriptor_limit, ConnectionCaps, ConnectionGate, ConnectionStats};
use crate::app::state::AppState;
use crate::auth::{FailedLogins, TokenSigner};
use crate::authz::audit::{AuditBackend, MemoryAuditBackend, PrincipalLimits, WRITER_BUSY_TIMEOUT};
use crate::authz::{AuditEmitter, AuditLog, ChannelAuditSink, TracedAuditEmitter};
use crate::cache::ResponseCache;
use crate::events::{EventBus, PgEventRelay};
use crate::log::{Logger, SharedWriter};
use crate::perf::exits::HubExits;
use crate::perf::{trace_layers, HubTraceLayer, WebTraceLayer};
use crate::replicas::ReplicaInbox;
use crate::settings::hub::{self, CreatorRoles, InvalidSetting};
use crate::settings::AuditSettings;
use crate::settings::ServerLimits;
use crate::settings::{Settings, PERF_TRACE_KEY};
use crate::store::db::postgres::runtime::off_runtime;
use crate::store::db::Db;
use crate::store::outbox::Outbox;
use crate::store::settings;
use crate::store::{with_authz_store, AuthzStore, CountedAuthzStore, WithAuthzStore};
use crate::web::signin::SignInLimits;

/// Records the audit queue holds before it rejects.
pub const AUDIT_CHANNEL: usize = 16_384;
/// Latest audit records kept for inspection.
const AUDIT_RECENT: usize = 1_024;

/// The startup warning when tracing is on.
pub const PERF_TRACE_WARNING: &str =
    "Request performance tracing is on (server.hub.perf_trace); per-request perf_trace lines are logged";

/// Builds the router over `state`. With `trace`, the tracing layer wraps
/// every route inside authentication (the one place it is installed).
pub fn build_router<S: AuthzStore, A: AuditEmitter>(
    state: AppState<S, A>,
    trace: Option<HubTraceLayer>,
) -> Router {
    build_router_with(state, trace, None)
}

/// [`build_router`] with `extra` routes merged in beside the Hub's own, so
/// they are authenticated, traced and guarded like them. The Hub's command
/// line never adds any; tests use it for routes the real Hub does not have
/// (a handler that panics).
///
/// From the outside in: a handler panic becomes a JSON 500; oversized paths,
/// queries and headers are refused; authentication; tracing; the answer to
/// a failure of the Hub's own while authenticating (a 503 with the database
/// unavailable), so that request is traced; the routes.
/// The panic guard sits outside tracing, so a panicking request still writes
/// its line.
pub fn build_router_with<S: AuthzStore, A: AuditEmitter>(
    state: AppState<S, A>,
    trace: Option<HubTraceLayer>,
    extra: Option<Router>,
) -> Router {
    let routes: Router = Router::new()
        .route("/healthz", get(public::healthz::<S, A>))
        .route(
            "/api/v1/settings/public",
            get(public::public_settings::<S, A>),
        )
        .route(
            "/api/v1/projects/{id}/agents",
            get(agents::project_agents::<S, A>),
        )
        .route("/api/v1/agents", get(agents::global_agents::<S, A>))
        .route("/api/v1/agents/{id}", get(agents::get_agent::<S, A>))
        .route(
            "/api/v1/agents/{id}/status",
            put(agents::put_status::<S, A>),
        )
        .route("/events", get(events::events::<S, A>))
        .route(
            "/api/v1/admin/server-config",
            put(admin::put_server_config::<S, A>),
        )
        .route(
            "/api/v1/projects/{id}/delegations",
            get(delegations::get_project_delegations::<S, A>),
        )
        .route("/api/v1/profiling", get(profiling::get_profiling::<S, A>))
        .route(
            "/api/v1/admin/profiling",
            put(profiling::put_profiling::<S, A>),
        )
        .route("/api/v1/admin/cache", get(admin::get_cache::<S, A>))
        .route(
            "/api/v1/admin/audit-events",
            get(audit_events::audit_events::<S, A>),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state.clone());
    let routes = match extra {
        Some(extra) => routes.merge(extra),
        None => routes,
    };
    // Authenticating reads the database before the tracing layer starts:
    // its pool waits belong to the request's line too.
    let state = match trace.is_some() {
        true => state.noting_pool_baseline(),
        false => state,
    };
    // One stack, so one `Router::layer`: axum wraps every route once per
    // `layer` call, and each wrap costs every request a boxed clone of the
    // route and a boxed future.
    let guards = ServiceBuilder::new()
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(axum::middleware::from_fn(limit_request_size))
        .layer(axum::middleware::from_fn_with_state(
            state,
            authenticate::authenticate::<S, A>,
        ));
    let answer_failure = axum::middleware::from_fn(authenticate::answer_authentication_failure);
    match trace {
        Some(trace) => routes.layer(guards.layer(trace).layer(answer_failure)),
        None => routes.layer(guards.layer(answer_failure)),
    }
}

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

/// A built Hub, ready to serve.
pub struct Hub {
    router: Router,
    web_trace: Option<WebTraceLayer>,
    limits: ServerLimits,
    streams: StreamLimiter,
    list_quota: Option<ListQuota>,
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
        Self::build(db, options, None, None, HubExits::default())
    }

    /// Builds the Hub over `db` with its audit records written through
    /// `backend` from a queue of `capacity` records, instead of into the
    /// database's `audit_events` table from a queue of [`AUDIT_CHANNEL`]:
    /// for tests of the audit pipeline (a writer that stalls or fails).
    pub fn with_audit_backend(
        db: Db,
        options: HubOptions,
        backend: Box<dyn AuditBackend>,
        capacity: usize,
    ) -> Hub {
        Self::build(
            db,
            options,
            None,
            Some((backend, capacity)),
            HubExits::default(),
        )
    }

    /// Builds the Hub over `db` with `extra` routes beside its own (see
    /// [`build_router_with`]): for tests that need a route the real Hub does
    /// not have. The command line never calls it.
    pub fn with_extra_routes(db: Db, options: HubOptions, extra: Router) -> Hub {
        Self::build(db, options, Some(extra), None, HubExits::default())
    }

    /// Builds the Hub over `db` with `exits` on its tracing layer's emitter
    /// (metrics, OTLP export, tail sampling) and the metrics admin route
    /// when asked for. Exits need tracing on; without it they are ignored,
    /// with a warning.
    pub fn with_exits(db: Db, options: HubOptions, exits: HubExits) -> Hub {
        Self::build(db, options, None, None, exits)
    }

    /// The exits the Hub was built with.
    pub fn exits(&self) -> &HubExits {
        &self.exits
    }

    /// Builds the Hub in named steps: the event bus shared with replicas,
    /// the audit pipeline, the exits and tracing layers in force, then the
    /// router over the store of the database's dialect.
    fn build(
        db: Db,
        options: HubOptions,
        extra: Option<Router>,
        audit: Option<(Box<dyn AuditBackend>, usize)>,
        exits: HubExits,
    ) -> Hub {
        let logger = Logger::new(options.log.clone(), options.settings.gcp_logs);
        let signer = TokenSigner::from_session_secret(&options.session_secret);
        let cache = ResponseCache::new(options.settings.cache);
        let bus = shared_with_replicas(&db, EventBus::default(), &cache, &logger);
        let (backend, capacity) =
            audit.unwrap_or_else(|| (audit_backend(&db, &logger), AUDIT_CHANNEL));
        let (sink, audit_log) = ChannelAuditSink::start_limited(
            backend,
            capacity,
            AUDIT_RECENT,
            PrincipalLimits::default(),
        );
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
        let connections = ConnectionStats::default();
        let routes = RouterParts {
            state: StateParts {
                connections: connections.clone(),
                db: db.clone(),
                bus: bus.clone(),
                signer: signer.clone(),
                cache: cache.clone(),
                creator_roles: checked_hub_settings(&db, &logger),
                extra: with_admin_routes(extra, &exits),
                trace,
            },
            sink,
        };
        let (router, store_type, audit_type) = with_authz_store(&db, routes);
        let limits = ServerLimits::default();
        Hub {
            router,
            web_trace,
            streams: StreamLimiter::new(limits.max_streams_per_principal, limits.max_streams),
            limits,
            list_quota: None,
            failed_logins: FailedLogins::new(logger.clone()),
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

    /// The Hub with these timeouts and caps instead of the defaults.
    pub fn with_limits(mut self, limits: ServerLimits) -> Hub {
        self.streams = StreamLimiter::new(limits.max_streams_per_principal, limits.max_streams);
        self.sign_ins = SignInLimits::new(&limits);
        self.limits = limits;
        self
    }

    /// The Hub with these bounds on its audit trail: rows kept for
    /// `settings.retention`, each principal's rows written at up to
    /// `settings.record_rate` (past it, summarized), and each principal's
    /// uncached lists limited to its bucket (a Hub built without them keeps
    /// rows 30 days, writes each principal's rows at the default rate and
    /// limits no one's lists, as tests and in-process measurements want).
    pub fn with_audit_settings(mut self, settings: AuditSettings) -> Hub {
        self.audit_log.set_retention(settings.retention);
        self.audit_log.set_limits(PrincipalLimits {
            record_rate: settings.record_rate,
        });
        self.list_quota = Some(ListQuota::new(&settings));
        self
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
    pub fn sign_ins(&self) -> &SignInLimits {
        &self.sign_ins
    }

    /// The open event streams, counted against their caps.
    pub fn streams(&self) -> &StreamLimiter {
        &self.streams
    }

    /// The router (cheap to clone), for serving or for calling in-process:
    /// the routes inside the request timeout, with the stream caps, the
    /// quota of uncached lists and the log of refused credentials.
    pub fn router(&self) -> Router {
        let routes = match &self.list_quota {
            Some(quota) => self.router.clone().layer(axum::Extension(quota.clone())),
            None => self.router.clone(),
        };
        // One `layer` call for the same reason as in `build_router_with`.
        routes.layer(
            ServiceBuilder::new()
                .layer(axum::middleware::from_fn_with_state(
                    self.limits.request_timeout,
                    enforce_request_timeout,
                ))
                .layer(axum::Extension(self.failed_logins.clone()))
                .layer(axum::Extension(self.limits))
                .layer(axum::Extension(self.streams.clone())),
        )
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
    pub fn failed_logins(&self) -> &FailedLogins {
        &self.failed_logins
    }

    /// The bearer-token signer (the web client's sign-in checks tokens with it).
    pub fn signer(&self) -> &TokenSigner {
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
    pub fn guarded_web(&self, routes: Router) -> Router {
        self.guard(routes, self.web_trace.clone())
    }

    fn guard(&self, routes: Router, trace: Option<WebTraceLayer>) -> Router {
        let routes = match trace {
            Some(trace) => routes.layer(trace),
            None => routes,
        };
        routes.layer(
            ServiceBuilder::new()
                .layer(axum::middleware::from_fn_with_state(
                    self.limits.request_timeout,
                    enforce_request_timeout,
                ))
                .layer(CatchPanicLayer::custom(panic_response))
                .layer(axum::middleware::from_fn(limit_request_size)),
        )
    }

    /// Serves on `listener` until `shutdown` completes, then shuts down
    /// gracefully within the shutdown deadline (see [`crate::app::accept`]).
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
    /// then shuts them all down together (see [`crate::app::accept`]): each
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
            let cut_off = crate::app::accept::serve(
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

/// `bus` relaying to the other replicas sharing `db` (PostgreSQL), so
/// they see each other's events and each other's writes invalidate their
/// caches; on SQLite, `bus` as it is.
fn shared_with_replicas(
    db: &Db,
    bus: EventBus,
    cache: &ResponseCache,
    logger: &Logger,
) -> EventBus {
    let Some(outbox) = Outbox::of(db) else {
        return bus;
    };
    let inbox = ReplicaInbox::new(bus.local_sender(), cache.clone());
    match outbox.and_then(|outbox| PgEventRelay::start(outbox, inbox)) {
        Ok(relay) => bus.with_relay(Arc::new(relay)),
        Err(e) => {
            // Alone, the cache is right; beside other replicas it is stale
            // up to its TTL after their writes.
            cache.resume();
            logger.warn(
                "events and cache invalidations are not shared with other replicas",
                &[("error", e.to_string().into())],
            );
            bus
        }
    }
}

/// `exits` when tracing is on; none (with a warning when some were asked
/// for) when it is off, since exits read the tracing layer's lines.
fn exits_in_force(exits: HubExits, perf_trace: bool, logger: &Logger) -> HubExits {
    if exits.any() && !perf_trace {
        logger.warn(
            "metrics, OTLP export and sampling need tracing on; ignored",
            &[("setting", PERF_TRACE_KEY.into())],
        );
    }
    if perf_trace {
        exits
    } else {
        HubExits::default()
    }
}

/// The extra routes with the exits' admin routes (the metrics route) beside
/// them.
fn with_admin_routes(extra: Option<Router>, exits: &HubExits) -> Option<Router> {
    match (extra, exits.admin_routes()) {
        (Some(extra), Some(admin)) => Some(extra.merge(admin)),
        (extra, admin) => extra.or(admin),
    }
}

/// What the router is built from: given the store of the database's
/// dialect ([`with_authz_store`]), it builds the router over it, with the
/// counting store and the traced audit emitter when tracing is on.
struct RouterParts {
    state: StateParts,
    sink: ChannelAuditSink,
}

/// The application state's parts besides the store and the audit emitter,
/// and the router's own.
struct StateParts {
    connections: ConnectionStats,
    db: Db,
    bus: EventBus,
    signer: TokenSigner,
    cache: ResponseCache,
    creator_roles: Arc<CreatorRoles>,
    extra: Option<Router>,
    trace: Option<HubTraceLayer>,
}

impl StateParts {
    /// The router over `store` and `audit`, with the type names the Hub
    /// reports.
    fn assemble<S: AuthzStore, A: AuditEmitter>(
        self,
        store: S,
        audit: A,
    ) -> (Router, &'static str, &'static str) {
        let state = AppState::new(store, audit, self.db, self.bus, self.signer)
            .with_cache(self.cache)
            .with_creator_roles(self.creator_roles)
            .with_connections(self.connections);
        (
            build_router_with(state, self.trace, self.extra),
            std::any::type_name::<S>(),
            std::any::type_name::<A>(),
        )
    }
}

impl WithAuthzStore for RouterParts {
    type Output = (Router, &'static str, &'static str);

    fn visit<S: AuthzStore + Clone>(self, store: S) -> Self::Output {
        let RouterParts { state, sink } = self;
        if state.trace.is_some() {
            return state.assemble(CountedAuthzStore::new(store), TracedAuditEmitter::new(sink));
        }
        // The spans peer opens a span per store call in the counted store,
        // as the traced Hub counts one there.
        #[cfg(feature = "peer-tracing")]
        if crate::perf::peers::spans_at_store_calls() {
            return state.assemble(CountedAuthzStore::new(store), sink);
        }
        state.assemble(store, sink)
    }
}

/// Once no request is left, writes what the audit queue still holds within
/// `deadline` and logs the outcome once: `accepted == flushed + lost`.
async fn drain_audit(audit_log: AuditLog, logger: Logger, deadline: std::time::Duration) {
    let drain = tokio::task::spawn_blocking(move || audit_log.drain(deadline)).await;
    let Ok(drain) = drain else { return };
    let fields = [
        ("accepted", drain.accepted.into()),
        ("flushed", drain.flushed.into()),
        ("lost", drain.lost.into()),
        ("rejected", drain.rejected.into()),
    ];
    if drain.summaries_lost > 0 {
        // Summaries are not on the queue: their loss is named apart.
        let mut fields = fields.to_vec();
        fields.push(("summarized_lost", drain.summaries_lost.into()));
        logger.warn("audit records lost at shutdown", &fields);
    } else if drain.lost > 0 {
        logger.warn("audit records lost at shutdown", &fields);
    } else {
        logger.info("audit drained", &fields);
    }
}

/// The Hub's audit backend: the `audit_events` table of its database,
/// SQLite or PostgreSQL. When the writer cannot be set up, records are kept
/// in memory only and the Hub says so once, at startup.
fn audit_backend(db: &Db, logger: &Logger) -> Box<dyn AuditBackend> {
    match crate::store::audit::open(db, WRITER_BUSY_TIMEOUT) {
        Ok(writer) => Box::new(writer),
        Err(error) => {
            logger.warn(
                "audit records are not persisted: cannot open the audit writer",
                &[("error", error.to_string().into())],
            );
            Box::new(MemoryAuditBackend)
        }
    }
}

/// Checks the stored hub settings the Hub reads at run time: one it cannot
/// use (stored by hand, bypassing the API) is named in one warning line,
/// without its value, and its default is used. The creator role's later
/// changes are checked, and reported, by the returned [`CreatorRoles`].
fn checked_hub_settings(db: &Db, logger: &Logger) -> Arc<CreatorRoles> {
    let report = {
        let logger = logger.clone();
        move |invalid: &InvalidSetting| {
            let fields = [
                ("setting", invalid.key.clone().into()),
                ("expected", invalid.expected.into()),
            ];
            logger.warn(hub::IGNORED_MESSAGE, &fields);
        }
    };
    let roles = CreatorRoles::new(report.clone());
    for key in hub::KNOWN {
        // A database that cannot be read now fails each request instead,
        // as it would have without this check.
        let Ok(Some(stored)) = off_runtime(|| settings::hub_setting(db, key)) else {
            continue;
        };
        if key == hub::CREATOR_ROLE {
            roles.role(Some(&stored));
        } else if let Err(invalid) = hub::check_stored(key, &stored) {
            report(&invalid);
        }
    }
    Arc::new(roles)
}

/// A Hub serving in the background.
#[derive(Debug)]
pub struct RunningHub {
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

impl RunningHub {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

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
