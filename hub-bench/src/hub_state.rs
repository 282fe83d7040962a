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
}
