//! What the load report reads from the Hub at the end of a run: the
//! response cache per route (`GET /api/v1/admin/cache`, as the seeded
//! admin) and the audit health (`GET /healthz`).

use serde::{Deserialize, Serialize};

/// One cached route's figures since the Hub started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheRoute {
    /// The route.
    pub route: String,
    /// Its time to live, ms (0: not cached).
    pub ttl_ms: u64,
    /// Answers served from the cache.
    pub hits: u64,
    /// Answers computed.
    pub misses: u64,
    /// Answers that joined a computation in flight.
    pub shared: u64,
    /// The share of answers served from the cache, 0 to 1.
    pub hit_rate: f64,
}

/// The cache table, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheTable {
    /// Whether the Hub answered with the table.
    pub available: bool,
    /// Why not, when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    /// Whether the cache is on.
    #[serde(default)]
    pub enabled: bool,
    /// Per route.
    #[serde(default)]
    pub routes: Vec<CacheRoute>,
}

impl CacheTable {
    /// A table that could not be read, and why.
    pub fn unavailable(reason: impl Into<String>) -> CacheTable {
        CacheTable {
            available: false,
            unavailable_reason: Some(reason.into()),
            enabled: false,
            routes: Vec::new(),
        }
    }

    /// Reads the answer of `GET /api/v1/admin/cache`.
    pub fn from_answer(status: u16, body: &str) -> CacheTable {
        #[derive(Deserialize)]
        struct Wire {
            enabled: bool,
            routes: Vec<CacheRoute>,
        }
        match status {
            200 => match serde_json::from_str::<Wire>(body) {
                Ok(wire) => CacheTable {
                    available: true,
                    unavailable_reason: None,
                    enabled: wire.enabled,
                    routes: wire.routes,
                },
                Err(e) => CacheTable::unavailable(format!("unreadable answer: {e}")),
            },
            404 => CacheTable::unavailable("the Hub has no cache endpoint (404)"),
            other => CacheTable::unavailable(format!("the Hub answered {other}")),
        }
    }
}

impl CacheTable {
    /// The tables of several replicas as one: each route's answers added up
    /// and its hit rate taken over the sum. Unavailable when any replica's
    /// table is (a sum with a hole would read as a lower hit rate).
    pub fn merged(tables: &[CacheTable]) -> CacheTable {
        if let Some(missing) = tables.iter().find(|t| !t.available) {
            return CacheTable::unavailable(format!(
                "a replica's table is unavailable: {}",
                missing
                    .unavailable_reason
                    .as_deref()
                    .unwrap_or("no reason given")
            ));
        }
        let mut routes: Vec<CacheRoute> = Vec::new();
        for route in tables.iter().flat_map(|t| &t.routes) {
            match routes.iter_mut().find(|r| r.route == route.route) {
                Some(sum) => {
                    sum.hits += route.hits;
                    sum.misses += route.misses;
                    sum.shared += route.shared;
                }
                None => routes.push(route.clone()),
            }
        }
        for route in &mut routes {
            let answers = route.hits + route.misses + route.shared;
            route.hit_rate = if answers == 0 {
                0.0
            } else {
                route.hits as f64 / answers as f64
            };
        }
        CacheTable {
            available: true,
            unavailable_reason: None,
            enabled: tables.iter().any(|t| t.enabled),
            routes,
        }
    }
}

/// The audit figures of `/healthz`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditHealth {
    /// `ok` or `degraded`.
    pub status: String,
    /// The backend's name.
    pub backend: String,
    /// Records accepted.
    pub accepted: u64,
    /// Records written.
    pub flushed: u64,
    /// Records refused (queue full).
    pub rejected: u64,
    /// Batches that failed (and were retried).
    pub failed_flushes: u64,
    /// Records accepted, not yet written.
    pub queue_size: u64,
}

impl AuditHealth {
    /// Reads a `/healthz` body; `None` when it has no `audit` object.
    pub fn from_healthz(body: &str) -> Option<AuditHealth> {
        let value: serde_json::Value = serde_json::from_str(body).ok()?;
        let mut audit = value.get("audit")?.clone();
        audit["status"] = value.get("status")?.clone();
        serde_json::from_value(audit).ok()
    }
}

impl AuditHealth {
    /// The audit figures of several replicas added up: `degraded` when any
    /// replica is, the backend named once when all share it.
    pub fn merged(all: &[AuditHealth]) -> Option<AuditHealth> {
        let first = all.first()?;
        let mut sum = AuditHealth {
            status: "ok".into(),
            backend: first.backend.clone(),
            accepted: 0,
            flushed: 0,
            rejected: 0,
            failed_flushes: 0,
            queue_size: 0,
        };
        for one in all {
            if one.status != "ok" {
                sum.status.clone_from(&one.status);
            }
            if one.backend != sum.backend {
                sum.backend = "mixed".into();
            }
            sum.accepted += one.accepted;
            sum.flushed += one.flushed;
            sum.rejected += one.rejected;
            sum.failed_flushes += one.failed_flushes;
            sum.queue_size += one.queue_size;
        }
        Some(sum)
    }
}

/// Reads both from the Hub at `base`. A failure becomes "unavailable": the
/// run's own figures are written whatever the Hub answers here.
pub async fn read(
    client: &reqwest::Client,
    base: &reqwest::Url,
    admin_token: &str,
) -> (CacheTable, Option<AuditHealth>) {
    let cache_url = crate::client::endpoint_url(base, &["api", "v1", "admin", "cache"], &[]);
    let cache = match client
        .get(cache_url)
        .header(
            reqwest::header::AUTHORIZATION,
            format!("Bearer {admin_token}"),
        )
        .send()
        .await
    {
        Ok(response) => {
            let status = response.status().as_u16();
            let body = response.text().await.unwrap_or_default();
            CacheTable::from_answer(status, &body)
        }
        Err(e) => CacheTable::unavailable(format!("no answer: {e}")),
    };
    let health_url = crate::client::endpoint_url(base, &["healthz"], &[]);
    let audit = match client.get(health_url).send().await {
        Ok(response) => AuditHealth::from_healthz(&response.text().await.unwrap_or_default()),
        Err(_) => None,
    };
    (cache, audit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_table_is_read_or_said_unavailable() {
        let body = r#"{"enabled":true,"routes":[{"route":"settings.public","ttlMs":1000,"hits":97,"misses":1,"shared":2,"hitRate":0.97}]}"#;
        let table = CacheTable::from_answer(200, body);
        assert!(table.available && table.enabled);
        assert_eq!(table.routes[0].route, "settings.public");
        assert_eq!((table.routes[0].hits, table.routes[0].shared), (97, 2));
        let missing = CacheTable::from_answer(404, r#"{"error":"not found"}"#);
        assert!(!missing.available);
        assert!(missing.unavailable_reason.unwrap().contains("404"));
        assert!(!CacheTable::from_answer(200, "{}").available);
        let forbidden = CacheTable::from_answer(403, "");
        assert!(forbidden.unavailable_reason.unwrap().contains("403"));
    }

    #[test]
    fn audit_health_comes_from_healthz() {
        let body = r#"{"status":"degraded","audit":{"backend":"sqlite","accepted":10,"flushed":8,"rejected":2,"failedFlushes":0,"queueSize":0}}"#;
        let audit = AuditHealth::from_healthz(body).unwrap();
        assert_eq!(audit.status, "degraded");
        assert_eq!((audit.accepted, audit.flushed, audit.rejected), (10, 8, 2));
        assert_eq!(AuditHealth::from_healthz(r#"{"status":"ok"}"#), None);
    }

    #[test]
    fn replicas_tables_add_up_per_route() {
        let a = CacheTable::from_answer(
            200,
            r#"{"enabled":true,"routes":[{"route":"agents.project","ttlMs":5000,"hits":90,"misses":10,"shared":0,"hitRate":0.9}]}"#,
        );
        let b = CacheTable::from_answer(
            200,
            r#"{"enabled":true,"routes":[{"route":"agents.project","ttlMs":5000,"hits":50,"misses":40,"shared":10,"hitRate":0.5},{"route":"agents.read","ttlMs":2000,"hits":0,"misses":0,"shared":0,"hitRate":0.0}]}"#,
        );
        let sum = CacheTable::merged(&[a.clone(), b]);
        assert!(sum.available && sum.enabled);
        assert_eq!(sum.routes.len(), 2);
        let project = &sum.routes[0];
        assert_eq!(
            (project.hits, project.misses, project.shared),
            (140, 50, 10)
        );
        assert!((project.hit_rate - 0.7).abs() < 1e-9);
        assert_eq!(sum.routes[1].hit_rate, 0.0);
        let hole = CacheTable::merged(&[a, CacheTable::unavailable("no answer")]);
        assert!(!hole.available);
        assert!(hole.unavailable_reason.unwrap().contains("no answer"));
    }

    #[test]
    fn replicas_audit_figures_add_up_and_any_degraded_shows() {
        let ok = AuditHealth::from_healthz(
            r#"{"status":"ok","audit":{"backend":"postgres","accepted":10,"flushed":10,"rejected":0,"failedFlushes":0,"queueSize":0}}"#,
        )
        .unwrap();
        let degraded = AuditHealth::from_healthz(
            r#"{"status":"degraded","audit":{"backend":"postgres","accepted":7,"flushed":5,"rejected":2,"failedFlushes":1,"queueSize":0}}"#,
        )
        .unwrap();
        let sum = AuditHealth::merged(&[ok.clone(), degraded]).unwrap();
        assert_eq!(sum.status, "degraded");
        assert_eq!(sum.backend, "postgres");
        assert_eq!(
            (sum.accepted, sum.flushed, sum.rejected, sum.failed_flushes),
            (17, 15, 2, 1)
        );
        assert_eq!(
            AuditHealth::merged(std::slice::from_ref(&ok)),
            Some(ok.clone())
        );
        assert_eq!(AuditHealth::merged(&[]), None);
    }
}
