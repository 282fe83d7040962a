//! Where spans go and how they are batched.

use std::time::Duration;

/// The environment variable that names the collector (as every
/// OpenTelemetry SDK reads it): a base URL, `/v1/traces` is appended.
pub const ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// How to export: the collector, the service's name, the queue and batches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpConfig {
    /// The collector's base URL (`http://127.0.0.1:4318`); `/v1/traces` is
    /// appended unless the URL already ends with it.
    pub endpoint: String,
    /// The resource's `service.name`.
    pub service_name: String,
    /// Spans waiting for export at most; beyond, new spans are dropped and
    /// counted.
    pub queue_size: usize,
    /// Spans per export request at most.
    pub batch_size: usize,
    /// How long the oldest queued span waits for a batch to fill.
    pub batch_delay: Duration,
    /// How long one export request may take before it counts as failed.
    pub export_timeout: Duration,
}

impl OtlpConfig {
    /// Export to `endpoint` as `service_name`, with a queue of 2048 spans,
    /// batches of up to 512, sent at least every second, each export
    /// given 5 s.
    pub fn new(endpoint: impl Into<String>, service_name: impl Into<String>) -> Self {
        OtlpConfig {
            endpoint: endpoint.into(),
            service_name: service_name.into(),
            queue_size: 2048,
            batch_size: 512,
            batch_delay: Duration::from_secs(1),
            export_timeout: Duration::from_secs(5),
        }
    }

    /// The configuration named by [`ENDPOINT_ENV`], if it is set and not
    /// empty.
    pub fn from_env(service_name: impl Into<String>) -> Option<Self> {
        let endpoint = std::env::var(ENDPOINT_ENV).ok()?;
        let endpoint = endpoint.trim();
        (!endpoint.is_empty()).then(|| Self::new(endpoint, service_name))
    }

    /// The URL spans are posted to.
    ///
    /// ```
    /// use perf_trace_otel::OtlpConfig;
    /// assert_eq!(OtlpConfig::new("http://c:4318", "svc").traces_url(), "http://c:4318/v1/traces");
    /// assert_eq!(OtlpConfig::new("http://c:4318/", "svc").traces_url(), "http://c:4318/v1/traces");
    /// assert_eq!(OtlpConfig::new("http://c/v1/traces", "svc").traces_url(), "http://c/v1/traces");
    /// ```
    pub fn traces_url(&self) -> String {
        let base = self.endpoint.trim_end_matches('/');
        if base.ends_with("/v1/traces") {
            base.to_owned()
        } else {
            format!("{base}/v1/traces")
        }
    }
}
