//! The application state every API handler reads, beside its handlers:
//! the router that mounts them (`crate::app`) builds it, and nothing here
//! reads from there, so no arrow points back up.

use std::sync::Arc;

use super::{ListQuota, StreamLimiter};
use crate::auth::tokens::TokenSigner;
use crate::auth::FailedLogins;
use crate::authz::{AuditEmitter, Authorizer, Principal};
use crate::cache::ResponseCache;
use crate::connections::ConnectionStats;
use crate::events::EventBus;
use crate::replicas::{Invalidation, ReplicaMessage};
use crate::settings::hub::CreatorRoles;
use crate::settings::{CacheSettings, ServerLimits};
use crate::store::db::Db;
use crate::store::AuthzStore;

struct Shared<S, A> {
    store: S,
    audit: A,
    db: Db,
    bus: EventBus,
    signer: TokenSigner,
}

/// The Hub's guards over its API's requests, fixed when the Hub is built:
/// its timeouts and caps, the event-stream caps, the quota of uncached
/// lists and the log of refused credentials. A router built without a Hub
/// has the default timeouts and none of the others.
#[derive(Clone, Default)]
pub(crate) struct Guards {
    pub(crate) limits: ServerLimits,
    pub(crate) streams: Option<StreamLimiter>,
    pub(crate) list_quota: Option<ListQuota>,
    pub(crate) failed_logins: Option<FailedLogins>,
}

/// What every handler reads: the authorization store `S`, the audit
/// emitter `A`, the database, the event bus, the token signer, the
/// response cache and the Hub's guards. It is the one way app-wide values
/// reach a handler; a request's extensions carry only what is the
/// request's own (its principal, its connection's address and shutdown).
pub struct AppState<S, A> {
    shared: Arc<Shared<S, A>>,
    cache: ResponseCache,
    guards: Arc<Guards>,
    /// The creator role as last read, shared by every request.
    creator_roles: Arc<CreatorRoles>,
    connections: ConnectionStats,
    /// Authentication puts the pool's figures in each request's extensions
    /// first (a traced Hub: see `perf::pool_baseline`).
    pool_baseline: bool,
}

impl<S, A> Clone for AppState<S, A> {
    fn clone(&self) -> Self {
        AppState {
            shared: Arc::clone(&self.shared),
            cache: self.cache.clone(),
            guards: Arc::clone(&self.guards),
            creator_roles: Arc::clone(&self.creator_roles),
            connections: self.connections.clone(),
            pool_baseline: self.pool_baseline,
        }
    }
}

impl<S, A> AppState<S, A> {
    /// The Hub's guards over its requests.
    pub(crate) fn guards(&self) -> &Guards {
        &self.guards
    }

    /// State over these parts, with the response cache off (every request
    /// computes its response); `AppState::with_cache` sets one.
    pub fn new(store: S, audit: A, db: Db, bus: EventBus, signer: TokenSigner) -> Self {
        AppState {
            shared: Arc::new(Shared {
                store,
                audit,
                db,
                bus,
                signer,
            }),
            cache: ResponseCache::new(CacheSettings::disabled()),
            guards: Arc::default(),
            creator_roles: Arc::default(),
            connections: ConnectionStats::default(),
            pool_baseline: false,
        }
    }

    /// The same state with `cache` as its response cache.
    pub(crate) fn with_cache(mut self, cache: ResponseCache) -> Self {
        self.cache = cache;
        self
    }

    /// The same state with `guards` over its requests.
    pub(crate) fn with_guards(mut self, guards: Guards) -> Self {
        self.guards = Arc::new(guards);
        self
    }

    /// The same state with `roles` keeping the creator role as last read
    /// (one that reports nothing otherwise).
    pub(crate) fn with_creator_roles(mut self, roles: Arc<CreatorRoles>) -> Self {
        self.creator_roles = roles;
        self
    }

    /// The same state over `store` and `audit` instead: the Hub builds its
    /// state's other parts first, then picks the store of its database's
    /// engine (and, traced, the counting decorators).
    pub(crate) fn with_authz<S2, A2>(self, store: S2, audit: A2) -> AppState<S2, A2> {
        let Shared {
            db, bus, signer, ..
        } = &*self.shared;
        AppState {
            shared: Arc::new(Shared {
                store,
                audit,
                db: db.clone(),
                bus: bus.clone(),
                signer: signer.clone(),
            }),
            cache: self.cache,
            guards: self.guards,
            creator_roles: self.creator_roles,
            connections: self.connections,
            pool_baseline: self.pool_baseline,
        }
    }

    /// The same state reading the connections' figures from `stats` (the
    /// Hub's, which its accept loop keeps).
    pub(crate) fn with_connections(mut self, stats: ConnectionStats) -> Self {
        self.connections = stats;
        self
    }
}

impl<S: AuthzStore, A: AuditEmitter> AppState<S, A> {
    /// The authorization service for one request by `principal`, reading
    /// the creator role through the state's [`CreatorRoles`].
    pub(crate) fn authorizer<'a>(&'a self, principal: &'a Principal) -> Authorizer<'a, S, A> {
        Authorizer::new(self.store(), self.audit(), principal)
            .with_creator_roles(&self.creator_roles)
    }

    /// An authorizer whose audit records go to `audit` instead of the
    /// Hub's pipeline (a stream's re-check collects them, to write only
    /// the outcomes that changed).
    pub(crate) fn authorizer_reporting_to<'a, E: AuditEmitter>(
        &'a self,
        principal: &'a Principal,
        audit: &'a E,
    ) -> Authorizer<'a, S, E> {
        Authorizer::new(self.store(), audit, principal).with_creator_roles(&self.creator_roles)
    }

    /// The connections' figures.
    pub(crate) fn connections(&self) -> &ConnectionStats {
        &self.connections
    }

    /// Has authentication note the pool's figures as each request arrives,
    /// for the tracing layer inside it.
    pub(crate) fn noting_pool_baseline(mut self) -> Self {
        self.pool_baseline = true;
        self
    }

    /// Whether authentication notes the pool's figures.
    pub(crate) fn notes_pool_baseline(&self) -> bool {
        self.pool_baseline
    }

    /// The response cache.
    pub(crate) fn cache(&self) -> &ResponseCache {
        &self.cache
    }

    /// After a write committed: cached responses showing what it changed
    /// are not found again, on this replica at once and on the others as
    /// soon as they are told (see [`crate::replicas`]).
    pub(crate) fn invalidate(&self, invalidation: Invalidation) {
        invalidation.apply(self.cache.generations());
        self.shared
            .bus
            .tell_replicas(&ReplicaMessage::Invalidate(invalidation));
    }

    /// The authorization store.
    pub fn store(&self) -> &S {
        &self.shared.store
    }

    /// The audit emitter.
    pub(crate) fn audit(&self) -> &A {
        &self.shared.audit
    }

    /// The database (for agent rows and writes).
    pub fn db(&self) -> &Db {
        &self.shared.db
    }

    /// The event bus.
    pub fn bus(&self) -> &EventBus {
        &self.shared.bus
    }

    /// The bearer-token signer.
    pub(crate) fn signer(&self) -> &TokenSigner {
        &self.shared.signer
    }
}
