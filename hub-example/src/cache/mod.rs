//! The response cache: a short-TTL cache of whole responses in front of the
//! read-mostly GET routes, with single-flight.
//!
//! Built on moka's future cache: `entry(..).or_try_insert_with` runs one
//! computation per key and hands its result to every request waiting on
//! it; when the computing request is cancelled a waiter computes instead,
//! and an error reaches the requests waiting then without being stored.
//!
//! - What is stored: the body bytes of a 200 (errors are never stored), so
//!   a hit is a lookup and a copy: no store call, no decision.
//! - Under what: a `CacheKey`, everything the response depends on
//!   (route, path id, normalized query, the caller's identity and scope,
//!   and the invalidation stamp), so a caller is never served what it could
//!   not get fresh.
//! - Until when: the route's TTL, checked against the cache's own clock
//!   (injectable, so tests move time themselves: moka's expiry clock is not
//!   public), with moka's per-entry expiry evicting at the same TTL.
//! - Invalidation: writes move the stamps of `Generations`, on this
//!   replica and (see the `replicas` module) on the others.
//! - Suspension: while a replica may miss another's writes (its listening
//!   connection is away) the cache is suspended: every request computes its
//!   response, and nothing is served or stored.
//!
//! Every request of a cached route records its outcome, hit, miss or shared
//! (joined another request's computation), per route into its perf_trace
//! line (`cache_<route>_<outcome>`) and into the totals behind
//! `GET /api/v1/admin/cache`.

mod generations;
mod key;
mod stats;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use moka::future::Cache;
use moka::Expiry;

pub(crate) use generations::Generations;
pub(crate) use key::{normalize_query, CacheKey, CallerKey};
pub(crate) use stats::CacheReport;
pub(crate) use stats::CacheStats;

use crate::perf::keys::{CacheOutcome, CacheRoute};
use crate::settings::CacheSettings;

/// Most bytes of bodies the cache holds; beyond it moka evicts the least
/// used entries.
const MAX_CACHED_BYTES: u64 = 64 * 1024 * 1024;

/// Milliseconds on a monotonic clock: the cache's notion of now.
pub(crate) type CacheClock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// One stored response: the body of a 200.
#[derive(Debug)]
struct CachedBody {
    body: Bytes,
    /// When its computation started, on the cache's clock.
    computed_at_ms: u64,
    ttl: Duration,
}

impl CachedBody {
    fn fresh_at(&self, now_ms: u64) -> bool {
        now_ms.saturating_sub(self.computed_at_ms) < self.ttl.as_millis() as u64
    }
}

/// moka evicts each entry after its route's TTL (the logical check above
/// decides freshness; this bounds memory).
struct RouteTtl;

impl Expiry<CacheKey, Arc<CachedBody>> for RouteTtl {
    fn expire_after_create(
        &self,
        _key: &CacheKey,
        value: &Arc<CachedBody>,
        _created_at: Instant,
    ) -> Option<Duration> {
        Some(value.ttl)
    }
}

struct Inner {
    settings: CacheSettings,
    entries: Cache<CacheKey, Arc<CachedBody>>,
    generations: Generations,
    suspended: AtomicBool,
    stats: CacheStats,
    clock: CacheClock,
}

/// The Hub's response cache (cheap to clone: clones share it).
#[derive(Clone)]
pub struct ResponseCache {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ResponseCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseCache")
            .field("settings", &self.inner.settings)
            .finish_non_exhaustive()
    }
}

impl Default for ResponseCache {
    fn default() -> Self {
        ResponseCache::new(CacheSettings::default())
    }
}

impl ResponseCache {
    /// A cache with `settings`, on a monotonic clock.
    pub fn new(settings: CacheSettings) -> Self {
        let start = Instant::now();
        Self::with_clock(
            settings,
            Arc::new(move || start.elapsed().as_millis() as u64),
        )
    }

    /// A cache whose freshness is judged on `clock` (tests move it).
    pub(crate) fn with_clock(settings: CacheSettings, clock: CacheClock) -> Self {
        let entries = Cache::builder()
            .max_capacity(MAX_CACHED_BYTES)
            .weigher(|key: &CacheKey, value: &Arc<CachedBody>| {
                let size = value.body.len() + key.query.len() + 128;
                u32::try_from(size).unwrap_or(u32::MAX)
            })
            .expire_after(RouteTtl)
            .build();
        ResponseCache {
            inner: Arc::new(Inner {
                settings,
                entries,
                generations: Generations::default(),
                suspended: AtomicBool::new(false),
                stats: CacheStats::default(),
                clock,
            }),
        }
    }

    /// Whether `route`'s responses are cached.
    pub(crate) fn caches(&self, route: CacheRoute) -> bool {
        self.inner.settings.caches(route)
    }

    /// The invalidation stamps: read them into keys, move them on writes.
    pub(crate) fn generations(&self) -> &Generations {
        &self.inner.generations
    }

    /// Stops serving and storing: until [`ResponseCache::resume`], every
    /// request computes its response and records nothing, as on a route
    /// the settings do not cache. For a replica that may be missing other
    /// replicas' writes.
    pub(crate) fn suspend(&self) {
        self.inner.suspended.store(true, Ordering::Release);
    }

    /// Serves and stores again after `ResponseCache::suspend`. Entries
    /// stored before are found again unless their stamps moved meanwhile.
    pub(crate) fn resume(&self) {
        self.inner.suspended.store(false, Ordering::Release);
    }

    /// The outcome totals since start.
    pub fn stats(&self) -> &CacheStats {
        &self.inner.stats
    }

    /// What `GET /api/v1/admin/cache` answers.
    pub(crate) fn report(&self) -> CacheReport {
        self.inner.stats.report(&self.inner.settings)
    }

    fn record(&self, route: CacheRoute, outcome: CacheOutcome) {
        self.inner.stats.record(route, outcome);
        perf_trace_core::record::count_by(route, outcome);
    }

    /// The body stored under `key` while fresh; otherwise the body `compute`
    /// returns, computed once for every request that asks for `key` while it
    /// runs, and stored for the route's TTL. An error is returned to this
    /// request and those waiting now, and not stored.
    ///
    /// A route the settings do not cache, or any route while the cache is
    /// suspended, runs `compute` and records nothing.
    pub(crate) async fn get_or_compute<E: Clone + Send + Sync + 'static>(
        &self,
        key: CacheKey,
        compute: impl AsyncFnOnce() -> Result<Bytes, E>,
    ) -> Result<Bytes, E> {
        let route = key.route;
        let settings = &self.inner.settings;
        if !settings.caches(route) || self.inner.suspended.load(Ordering::Acquire) {
            return compute().await;
        }
        let clock = &self.inner.clock;
        if let Some(found) = self.inner.entries.get(&key).await {
            if found.fresh_at(clock()) {
                self.record(route, CacheOutcome::Hit);
                return Ok(found.body.clone());
            }
            // Stale on the cache's clock: drop it so the computation below
            // is shared like a first one. A fresher entry removed by a race
            // only costs one more miss.
            self.inner.entries.remove(&key).await;
        }
        let ttl = settings.ttl(route);
        let mut computed = false;
        let result = self
            .inner
            .entries
            .entry(key)
            .or_try_insert_with(async {
                computed = true;
                let computed_at_ms = clock();
                compute().await.map(|body| {
                    Arc::new(CachedBody {
                        body,
                        computed_at_ms,
                        ttl,
                    })
                })
            })
            .await;
        self.record(
            route,
            if computed {
                CacheOutcome::Miss
            } else {
                CacheOutcome::Shared
            },
        );
        match result {
            Ok(entry) => Ok(entry.into_value().body.clone()),
            Err(error) => Err(E::clone(&error)),
        }
    }
}

#[cfg(test)]
mod tests;
