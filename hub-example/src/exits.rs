//! The exits beyond the line, each off by default and read once at start:
//! OpenTelemetry export (OTLP/HTTP), Prometheus metrics (on the admin route
//! `GET /api/v1/admin/metrics` or a loopback `--metrics-port`) and tail
//! sampling. They hang on the tracing layer's emitter, so they need
//! `server.hub.perf_trace`; without it they are ignored with a warning.
//!
//! | setting (`--config` YAML) | environment | what |
//! | --- | --- | --- |
//! | `server.hub.otlp_endpoint` | `OTEL_EXPORTER_OTLP_ENDPOINT` | collector base URL; spans go to `{url}/v1/traces` |
//! | `server.hub.metrics` | `SCION_SERVER_HUB_METRICS` | serve metrics to platform admins at `/api/v1/admin/metrics` |
//! | `server.hub.metrics_port` | `SCION_SERVER_HUB_METRICS_PORT` (or `--metrics-port`) | serve `GET /metrics` on `127.0.0.1:<port>` |
//! | `server.hub.sampling.one_in` | `SCION_SERVER_HUB_SAMPLING_ONE_IN` | tail sampling on: keep 1 in N of the unremarkable requests |
//! | `server.hub.sampling.slow_ms` | `SCION_SERVER_HUB_SAMPLING_SLOW_MS` | keep every request slower than this (default 250) |
//! | `server.hub.sampling.slow_ms_by_endpoint` | | per endpoint class: `{agents.project.legacy: 15}` |
//!
//! The environment wins over the file; a bad value stops the start with a
//! message naming the setting, never its value.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Extension;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use perf_trace_core::exits::metrics::MetricsSink;
use perf_trace_core::exits::sampling::TailSampling;
use perf_trace_core::{Emitter, KeySet};
use perf_trace_otel::{OtlpConfig, OtlpSink, ENDPOINT_ENV};

use crate::api::{method_not_allowed, not_found, ApiError};
use crate::authz::Principal;
use crate::keys::EndpointClass;
use crate::settings::{lookup, read_document, SettingsError};

/// The metric names' prefix.
pub const METRICS_NAMESPACE: &str = "scion_hub";
/// The service name spans carry.
pub const SERVICE_NAME: &str = "scion-hub";
/// The admin route of the metrics.
pub const METRICS_ROUTE: &str = "/api/v1/admin/metrics";
/// The OpenMetrics text's content type.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

const OTLP_KEY: &str = "server.hub.otlp_endpoint";
const METRICS_KEY: &str = "server.hub.metrics";
const METRICS_ENV: &str = "SCION_SERVER_HUB_METRICS";
const METRICS_PORT_KEY: &str = "server.hub.metrics_port";
const METRICS_PORT_ENV: &str = "SCION_SERVER_HUB_METRICS_PORT";
const ONE_IN_KEY: &str = "server.hub.sampling.one_in";
const ONE_IN_ENV: &str = "SCION_SERVER_HUB_SAMPLING_ONE_IN";
const SLOW_KEY: &str = "server.hub.sampling.slow_ms";
const SLOW_ENV: &str = "SCION_SERVER_HUB_SAMPLING_SLOW_MS";
const SLOW_BY_ENDPOINT_KEY: &str = "server.hub.sampling.slow_ms_by_endpoint";
const DEFAULT_SLOW_MS: u64 = 250;

/// What the exits' settings ask for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExitSettings {
    /// The collector's base URL: OTLP export on.
    pub otlp_endpoint: Option<String>,
    /// Metrics on the admin route.
    pub metrics: bool,
    /// Metrics on `127.0.0.1:<port>`.
    pub metrics_port: Option<u16>,
    /// Tail sampling: keep 1 in N of the rest (`None`: every line kept).
    pub sampling_one_in: Option<u64>,
    /// The slow threshold of every endpoint class without its own.
    pub slow_ms: u64,
    /// Slow thresholds by endpoint class.
    pub slow_ms_by_endpoint: BTreeMap<String, u64>,
}

fn invalid(name: &'static str, expected: &'static str) -> SettingsError {
    SettingsError::Invalid { name, expected }
}

fn yaml_bool(value: &serde_yaml::Value, name: &'static str) -> Result<bool, SettingsError> {
    match value {
        serde_yaml::Value::Bool(b) => Ok(*b),
        serde_yaml::Value::Null => Ok(false),
        serde_yaml::Value::String(s) => text_bool(s, name),
        _ => Err(invalid(name, "true or false")),
    }
}

fn text_bool(text: &str, name: &'static str) -> Result<bool, SettingsError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" | "" => Ok(false),
        _ => Err(invalid(name, "true or false")),
    }
}

fn yaml_u64(value: &serde_yaml::Value, name: &'static str) -> Result<u64, SettingsError> {
    match value {
        serde_yaml::Value::Number(n) => n.as_u64().ok_or(invalid(name, "a whole number")),
        serde_yaml::Value::String(s) => text_u64(s, name),
        _ => Err(invalid(name, "a whole number")),
    }
}

fn text_u64(text: &str, name: &'static str) -> Result<u64, SettingsError> {
    text.trim()
        .parse()
        .map_err(|_| invalid(name, "a whole number"))
}

fn port(n: u64, name: &'static str) -> Result<u16, SettingsError> {
    u16::try_from(n)
        .ok()
        .filter(|p| *p > 0)
        .ok_or(invalid(name, "a port from 1 to 65535"))
}

fn endpoint_url(text: &str, name: &'static str) -> Result<Option<String>, SettingsError> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    if !(text.starts_with("http://") || text.starts_with("https://")) {
        return Err(invalid(name, "an http:// or https:// URL"));
    }
    Ok(Some(text.to_owned()))
}

impl ExitSettings {
    /// Reads the file, then the environment (which wins).
    pub fn load(
        config: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<ExitSettings, SettingsError> {
        let mut settings = ExitSettings {
            slow_ms: DEFAULT_SLOW_MS,
            ..ExitSettings::default()
        };
        if let Some(doc) = read_document(config)? {
            if let Some(v) = lookup(&doc, OTLP_KEY) {
                settings.otlp_endpoint = match v {
                    serde_yaml::Value::Null => None,
                    serde_yaml::Value::String(s) => endpoint_url(s, OTLP_KEY)?,
                    _ => return Err(invalid(OTLP_KEY, "an http:// or https:// URL")),
                };
            }
            if let Some(v) = lookup(&doc, METRICS_KEY) {
                settings.metrics = yaml_bool(v, METRICS_KEY)?;
            }
            if let Some(v) = lookup(&doc, METRICS_PORT_KEY) {
                settings.metrics_port =
                    Some(port(yaml_u64(v, METRICS_PORT_KEY)?, METRICS_PORT_KEY)?);
            }
            if let Some(v) = lookup(&doc, ONE_IN_KEY) {
                settings.sampling_one_in = Some(yaml_u64(v, ONE_IN_KEY)?);
            }
            if let Some(v) = lookup(&doc, SLOW_KEY) {
                settings.slow_ms = yaml_u64(v, SLOW_KEY)?;
            }
            if let Some(v) = lookup(&doc, SLOW_BY_ENDPOINT_KEY) {
                let expected = "a map of endpoint class to milliseconds";
                let map = v
                    .as_mapping()
                    .ok_or(invalid(SLOW_BY_ENDPOINT_KEY, expected))?;
                for (key, value) in map {
                    let class = key
                        .as_str()
                        .filter(|k| EndpointClass::NAMES.contains(k))
                        .ok_or(invalid(
                            SLOW_BY_ENDPOINT_KEY,
                            "endpoint classes of the Hub (agents.global.legacy, agents.project.legacy, ...)",
                        ))?;
                    let ms = yaml_u64(value, SLOW_BY_ENDPOINT_KEY)?;
                    settings.slow_ms_by_endpoint.insert(class.to_owned(), ms);
                }
            }
        }
        if let Some(v) = env(ENDPOINT_ENV) {
            settings.otlp_endpoint = endpoint_url(&v, ENDPOINT_ENV)?;
        }
        if let Some(v) = env(METRICS_ENV) {
            settings.metrics = text_bool(&v, METRICS_ENV)?;
        }
        if let Some(v) = env(METRICS_PORT_ENV) {
            settings.metrics_port = Some(port(text_u64(&v, METRICS_PORT_ENV)?, METRICS_PORT_ENV)?);
        }
        if let Some(v) = env(ONE_IN_ENV) {
            settings.sampling_one_in = Some(text_u64(&v, ONE_IN_ENV)?);
        }
        if let Some(v) = env(SLOW_ENV) {
            settings.slow_ms = text_u64(&v, SLOW_ENV)?;
        }
        Ok(settings)
    }

    /// [`load`](Self::load) from the process environment.
    pub fn from_process(config: Option<&Path>) -> Result<ExitSettings, SettingsError> {
        ExitSettings::load(config, |name| std::env::var(name).ok())
    }

    /// Whether any exit or sampling is asked for.
    pub fn any(&self) -> bool {
        self.otlp_endpoint.is_some()
            || self.metrics
            || self.metrics_port.is_some()
            || self.sampling_one_in.is_some()
    }

    /// The tail-sampling policy, when asked for.
    pub fn sampling(&self) -> Option<TailSampling> {
        let one_in = self.sampling_one_in?;
        let mut sampling =
            TailSampling::one_in(one_in).slow_over(Duration::from_millis(self.slow_ms));
        for (class, ms) in &self.slow_ms_by_endpoint {
            sampling = sampling.slow_over_for(class.clone(), Duration::from_millis(*ms));
        }
        Some(sampling)
    }
}

/// The exits a Hub is built with (none by default), and where its
/// perf_trace lines are rendered.
#[derive(Clone, Default)]
pub struct HubExits {
    /// The metrics, when on (the admin route or the metrics port).
    pub metrics: Option<Arc<MetricsSink>>,
    /// The OTLP exporter, when on.
    pub otlp: Option<Arc<OtlpSink>>,
    /// Tail sampling, when on.
    pub sampling: Option<TailSampling>,
    /// Serve the metrics on the admin route.
    pub metrics_route: bool,
    /// Buffer each thread's lines and write them out every this often
    /// ([`perf_trace_core::Emitter::in_background`]), instead of writing
    /// each under the log's lock as its request ends. `hub-example serve`
    /// does ([`crate::perf::LINE_FLUSH_INTERVAL`]); off by default, so that
    /// a test reads a request's line as soon as the request ends. The Hub's
    /// own log lines write the buffers out first, so they keep their order.
    pub background_lines: Option<std::time::Duration>,
}

impl std::fmt::Debug for HubExits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubExits")
            .field("metrics", &self.metrics.is_some())
            .field("otlp", &self.otlp)
            .field("sampling", &self.sampling)
            .field("metrics_route", &self.metrics_route)
            .field("background_lines", &self.background_lines)
            .finish()
    }
}

impl HubExits {
    /// Starts what `settings` asks for (the OTLP export thread).
    pub fn start(settings: &ExitSettings) -> Result<HubExits, perf_trace_otel::OtlpError> {
        let otlp = match &settings.otlp_endpoint {
            Some(endpoint) => Some(Arc::new(OtlpSink::start(OtlpConfig::new(
                endpoint.clone(),
                SERVICE_NAME,
            ))?)),
            None => None,
        };
        let metrics_wanted = settings.metrics || settings.metrics_port.is_some();
        Ok(HubExits {
            metrics: metrics_wanted.then(|| Arc::new(MetricsSink::new(METRICS_NAMESPACE))),
            otlp,
            sampling: settings.sampling(),
            metrics_route: settings.metrics,
            background_lines: None,
        })
    }

    /// Whether any exit is on.
    pub fn any(&self) -> bool {
        self.metrics.is_some() || self.otlp.is_some() || self.sampling.is_some()
    }

    /// `emitter` with these exits.
    pub fn apply(&self, mut emitter: Emitter) -> Emitter {
        if let Some(metrics) = &self.metrics {
            emitter = emitter.with_sink(Arc::clone(metrics));
        }
        if let Some(otlp) = &self.otlp {
            emitter = emitter.with_sink(Arc::clone(otlp));
        }
        if let Some(sampling) = &self.sampling {
            emitter = emitter.with_sampling(sampling.clone());
        }
        if let Some(interval) = self.background_lines {
            emitter = emitter.in_background(interval);
        }
        emitter
    }

    /// The admin route, when metrics are served there.
    pub fn admin_routes(&self) -> Option<Router> {
        let metrics = self.metrics.as_ref().filter(|_| self.metrics_route)?;
        Some(
            Router::new()
                .route(METRICS_ROUTE, get(admin_metrics))
                .layer(Extension(Arc::clone(metrics))),
        )
    }
}

fn openmetrics(metrics: &MetricsSink) -> Response {
    (
        [(header::CONTENT_TYPE, OPENMETRICS_CONTENT_TYPE)],
        metrics.encode(),
    )
        .into_response()
}

/// `GET /api/v1/admin/metrics`: unscoped platform admins only.
async fn admin_metrics(
    principal: Option<Extension<Principal>>,
    Extension(metrics): Extension<Arc<MetricsSink>>,
) -> Result<Response, ApiError> {
    let Some(Extension(principal)) = principal else {
        return Err(ApiError::unauthorized("credential required"));
    };
    if !principal.is_unscoped_platform_admin() {
        return Err(ApiError::forbidden());
    }
    Ok(openmetrics(&metrics))
}

/// Most connections the metrics port holds open at once (a scraper needs
/// one); further clients wait in the kernel's queue, holding no descriptor
/// the API needs.
pub const METRICS_MAX_CONNECTIONS: usize = 16;

/// The metrics port's routes: `GET /metrics` (OpenMetrics text), a JSON
/// 404 for any other path and a JSON 405 for another method, all only for
/// requests whose `Host` is `addr`, the address the port was started on
/// (anything else, a page that rebinds its own name to the loopback
/// address among them, is a JSON 421). Serve them behind the Hub's guards
/// ([`crate::Hub::guarded`]) on the Hub's server
/// ([`crate::Hub::serving_listeners`]), capped at
/// [`METRICS_MAX_CONNECTIONS`].
pub fn metrics_router(metrics: Arc<MetricsSink>, addr: SocketAddr) -> Router {
    let host = addr.to_string();
    Router::new()
        .route(
            "/metrics",
            get(move || {
                let metrics = Arc::clone(&metrics);
                async move { openmetrics(&metrics) }
            }),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(
            Arc::<str>::from(host),
            only_host,
        ))
}

/// Refuses a request whose `Host` is not `host` (421, in JSON).
async fn only_host(
    axum::extract::State(host): axum::extract::State<Arc<str>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let sent = request.headers().get(header::HOST).map(|v| v.as_bytes());
    if sent != Some(host.as_bytes()) {
        return ApiError::new(StatusCode::MISDIRECTED_REQUEST, "unknown host").into_response();
    }
    next.run(request).await
}

/// The loopback address of the metrics port.
pub fn metrics_addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::test_files::{file, no_env};

    #[test]
    fn everything_is_off_by_default() {
        let settings = ExitSettings::load(None, no_env).unwrap();
        assert!(!settings.any());
        assert!(settings.sampling().is_none());
    }

    #[test]
    fn the_file_turns_each_exit_on() {
        let f = file(
            "server:\n  hub:\n    otlp_endpoint: http://127.0.0.1:4318\n    metrics: true\n    metrics_port: 9464\n    sampling:\n      one_in: 10\n      slow_ms: 100\n      slow_ms_by_endpoint:\n        agents.project.legacy: 15\n",
        );
        let settings = ExitSettings::load(Some(f.path()), no_env).unwrap();
        assert_eq!(
            settings.otlp_endpoint.as_deref(),
            Some("http://127.0.0.1:4318")
        );
        assert!(settings.metrics);
        assert_eq!(settings.metrics_port, Some(9464));
        let sampling = settings.sampling().unwrap();
        assert_eq!(sampling.rate(), 10);
        assert_eq!(
            sampling.threshold("agents.project.legacy"),
            Some(Duration::from_millis(15))
        );
        assert_eq!(
            sampling.threshold("other"),
            Some(Duration::from_millis(100))
        );
    }

    #[test]
    fn the_environment_wins() {
        let f = file("server.hub.otlp_endpoint: http://file:4318\nserver.hub.metrics: true\n");
        let env = |name: &str| match name {
            "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://env:4318".to_owned()),
            "SCION_SERVER_HUB_METRICS" => Some("false".to_owned()),
            "SCION_SERVER_HUB_SAMPLING_ONE_IN" => Some("4".to_owned()),
            _ => None,
        };
        let settings = ExitSettings::load(Some(f.path()), env).unwrap();
        assert_eq!(settings.otlp_endpoint.as_deref(), Some("http://env:4318"));
        assert!(!settings.metrics);
        assert_eq!(settings.sampling_one_in, Some(4));
    }

    #[test]
    fn a_bad_value_names_the_setting_not_the_value() {
        let cases = [
            ("server.hub.otlp_endpoint: ftp://secret-host\n", OTLP_KEY),
            ("server.hub.metrics: maybe-secret\n", METRICS_KEY),
            ("server.hub.metrics_port: 70000\n", METRICS_PORT_KEY),
            ("server.hub.sampling.one_in: -3\n", ONE_IN_KEY),
            (
                "server.hub.sampling.slow_ms_by_endpoint:\n  /api/secret: 5\n",
                SLOW_BY_ENDPOINT_KEY,
            ),
        ];
        for (text, name) in cases {
            let f = file(text);
            let message = ExitSettings::load(Some(f.path()), no_env)
                .unwrap_err()
                .to_string();
            assert!(message.contains(name), "{message}");
            assert!(!message.contains("secret"), "{message}");
        }
        let env = |name: &str| (name == ENDPOINT_ENV).then(|| "not-a-url".to_owned());
        let message = ExitSettings::load(None, env).unwrap_err().to_string();
        assert!(message.contains(ENDPOINT_ENV) && !message.contains("not-a-url"));
    }
}
