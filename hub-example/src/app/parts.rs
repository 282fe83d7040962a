//! The Hub's parts, built in named steps by [`super::HubBuilder`]: the
//! event bus shared with replicas, the audit backend and its drain at
//! shutdown, the exits in force, the stored hub settings checked, and the
//! router over the store of the database's dialect.

use std::sync::Arc;

use axum::Router;

use crate::api::state::AppState;
use crate::authz::audit::{AuditBackend, MemoryAuditBackend, WRITER_BUSY_TIMEOUT};
use crate::authz::{AuditEmitter, AuditLog, ChannelAuditSink, TracedAuditEmitter};
use crate::cache::ResponseCache;
use crate::events::{EventBus, PgEventRelay};
use crate::log::Logger;
use crate::perf::exits::HubExits;
use crate::perf::HubTraceLayer;
use crate::replicas::ReplicaInbox;
use crate::settings::hub::{self, CreatorRoles, InvalidSetting};
use crate::settings::PERF_TRACE_KEY;
use crate::store::db::Db;
use crate::store::outbox::Outbox;
use crate::store::postgres::runtime::off_runtime;
use crate::store::settings;
use crate::store::{AuthzStore, CountedAuthzStore, WithAuthzStore};

use super::routes::build_router_with;

/// `bus` relaying to the other replicas sharing `db` (PostgreSQL), so
/// they see each other's events and each other's writes invalidate their
/// caches; on SQLite, `bus` as it is.
pub(super) fn shared_with_replicas(
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
pub(super) fn exits_in_force(exits: HubExits, perf_trace: bool, logger: &Logger) -> HubExits {
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
pub(super) fn with_admin_routes(extra: Option<Router>, exits: &HubExits) -> Option<Router> {
    match (extra, exits.admin_routes()) {
        (Some(extra), Some(admin)) => Some(extra.merge(admin)),
        (extra, admin) => extra.or(admin),
    }
}

/// What the router is built from: given the store of the database's
/// dialect ([`crate::store::with_authz_store`]), it builds the router over
/// it, with the counting store and the traced audit emitter when tracing is
/// on.
pub(super) struct RouterParts {
    /// The handlers' state but for its store and audit emitter.
    pub(super) state: AppState<(), ()>,
    pub(super) sink: ChannelAuditSink,
    pub(super) extra: Option<Router>,
    pub(super) trace: Option<HubTraceLayer>,
}

impl RouterParts {
    /// The router over `store` and `audit`, with the type names the Hub
    /// reports.
    fn assemble<S: AuthzStore, A: AuditEmitter>(
        self,
        store: S,
        audit: A,
    ) -> (Router, &'static str, &'static str) {
        (
            build_router_with(self.state.with_authz(store, audit), self.trace, self.extra),
            std::any::type_name::<S>(),
            std::any::type_name::<A>(),
        )
    }
}

impl WithAuthzStore for RouterParts {
    type Output = (Router, &'static str, &'static str);

    fn visit<S: AuthzStore + Clone>(self, store: S) -> Self::Output {
        let sink = self.sink.clone();
        if self.trace.is_some() {
            return self.assemble(CountedAuthzStore::new(store), TracedAuditEmitter::new(sink));
        }
        // The spans peer opens a span per store call in the counted store,
        // as the traced Hub counts one there.
        #[cfg(feature = "peer-tracing")]
        if crate::perf::peers::spans_at_store_calls() {
            return self.assemble(CountedAuthzStore::new(store), sink);
        }
        self.assemble(store, sink)
    }
}

/// Once no request is left, writes what the audit queue still holds within
/// `deadline` and logs the outcome once: `accepted == flushed + lost`.
pub(super) async fn drain_audit(
    audit_log: AuditLog,
    logger: Logger,
    deadline: std::time::Duration,
) {
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
pub(super) fn audit_backend(db: &Db, logger: &Logger) -> Box<dyn AuditBackend> {
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
pub(super) fn checked_hub_settings(db: &Db, logger: &Logger) -> Arc<CreatorRoles> {
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
