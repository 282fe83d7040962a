//! The exits beyond the line, each off by default: OpenTelemetry export
//! (OTLP/HTTP), Prometheus metrics (on the admin route
//! `GET /api/v1/admin/metrics` or a loopback `--metrics-port`) and tail
//! sampling. They hang on the tracing layer's emitter, so they need
//! `server.hub.perf_trace`; without it they are ignored with a warning.
//! Their settings are [`ExitSettings`], read once at start.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Extension, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use perf_trace_core::exits::metrics::MetricsSink;
use perf_trace_core::exits::sampling::TailSampling;
use perf_trace_core::Emitter;
use perf_trace_otel::{OtlpConfig, OtlpSink};

use crate::api::{method_not_allowed, not_found, ApiError};
use crate::authz::Principal;
use crate::settings::ExitSettings;

/// The metric names' prefix.
pub(crate) const METRICS_NAMESPACE: &str = "scion_hub";
/// The service name spans carry.
pub(crate) const SERVICE_NAME: &str = "scion-hub";
/// The admin route of the metrics.
pub(crate) const METRICS_ROUTE: &str = "/api/v1/admin/metrics";
/// The OpenMetrics text's content type.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

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
    pub(crate) fn apply(&self, mut emitter: Emitter) -> Emitter {
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
    pub(crate) fn admin_routes(&self) -> Option<Router> {
        let metrics = self.metrics.as_ref().filter(|_| self.metrics_route)?;
        Some(
            Router::new()
                .route(METRICS_ROUTE, get(admin_metrics))
                .with_state(Arc::clone(metrics)),
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
    State(metrics): State<Arc<MetricsSink>>,
    principal: Option<Extension<Principal>>,
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
pub(crate) const METRICS_MAX_CONNECTIONS: usize = 16;

/// The metrics port's routes: `GET /metrics` (OpenMetrics text), a JSON
/// 404 for any other path and a JSON 405 for another method, all only for
/// requests whose `Host` is `addr`, the address the port was started on
/// (anything else, a page that rebinds its own name to the loopback
/// address among them, is a JSON 421). Serve them behind the Hub's guards
/// ([`crate::Hub::guarded`]) on the Hub's server
/// ([`crate::Hub::serving_listeners`]), capped at
/// [`METRICS_MAX_CONNECTIONS`].
pub(crate) fn metrics_router(metrics: Arc<MetricsSink>, addr: SocketAddr) -> Router {
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
pub(crate) fn metrics_addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}
