//! Per-route totals since start (hits, misses, shared) and the report
//! `GET /api/v1/admin/cache` returns: seed 001's "Cache behavior" table.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use perf_trace_core::KeySet;
use serde::Serialize;

use crate::perf::keys::{CacheOutcome, CacheRoute};
use crate::settings::CacheSettings;

/// The outcome totals of every route.
#[derive(Debug, Default)]
pub struct CacheStats {
    // Per route, per outcome, in the key sets' orders.
    counts: [[AtomicU64; CacheOutcome::ALL.len()]; CacheRoute::ALL.len()],
}

impl CacheStats {
    /// Counts one request of `route` with `outcome`.
    pub fn record(&self, route: CacheRoute, outcome: CacheOutcome) {
        self.counts[route.index()][outcome.index()].fetch_add(1, Relaxed);
    }

    /// The total of `outcome` on `route` since start.
    pub fn count(&self, route: CacheRoute, outcome: CacheOutcome) -> u64 {
        self.counts[route.index()][outcome.index()].load(Relaxed)
    }

    /// The report of every route under `settings`.
    pub fn report(&self, settings: &CacheSettings) -> CacheReport {
        CacheReport {
            enabled: settings.enabled,
            routes: CacheRoute::ALL
                .iter()
                .map(|&route| {
                    let hits = self.count(route, CacheOutcome::Hit);
                    let misses = self.count(route, CacheOutcome::Miss);
                    let shared = self.count(route, CacheOutcome::Shared);
                    let total = hits + misses + shared;
                    RouteReport {
                        route: route.name(),
                        ttl_ms: settings.ttl(route).as_millis() as u64,
                        hits,
                        misses,
                        shared,
                        hit_rate: if total == 0 {
                            0.0
                        } else {
                            hits as f64 / total as f64
                        },
                    }
                })
                .collect(),
        }
    }
}

/// What `GET /api/v1/admin/cache` answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheReport {
    /// Whether the cache is on.
    pub enabled: bool,
    /// One row per cached route.
    pub(crate) routes: Vec<RouteReport>,
}

/// One route's totals since start.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RouteReport {
    /// The route's name (`agents.project`).
    pub route: &'static str,
    /// Its TTL in milliseconds (0: not cached).
    pub ttl_ms: u64,
    /// Requests answered from a stored entry.
    pub hits: u64,
    /// Requests that computed their response.
    pub misses: u64,
    /// Requests that joined another's computation in flight.
    pub shared: u64,
    /// `hits / (hits + misses + shared)`, from 0 to 1 (0 before any request).
    pub hit_rate: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_has_the_admin_shape() {
        let stats = CacheStats::default();
        for _ in 0..3 {
            stats.record(CacheRoute::AgentsProject, CacheOutcome::Hit);
        }
        stats.record(CacheRoute::AgentsProject, CacheOutcome::Shared);
        let report = stats.report(&CacheSettings::default());
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["enabled"], true);
        let project = json["routes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["route"] == "agents.project")
            .unwrap();
        assert_eq!(
            project,
            &serde_json::json!({"route": "agents.project", "ttlMs": 5000, "hits": 3,
                "misses": 0, "shared": 1, "hitRate": 0.75})
        );
        assert_eq!(
            json["routes"].as_array().unwrap().len(),
            CacheRoute::ALL.len()
        );
    }
}
