//! Tracing one request in a unit test, without starting a server, and the
//! N+1 checks that need no baseline: counts flat across data sizes
//! ([`check_flat`]) and no statement repeated in a request
//! ([`assert_no_repeated_statements`]).

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body::Body;
use http_body_util::BodyExt;
use tower_service::Service;

use crate::keys::Schema;
use crate::recorder::statements::StatementRuns;
use crate::recorder::Recorder;
use crate::snapshot::Snapshot;

#[cfg(feature = "axum")]
mod routes;

#[cfg(feature = "axum")]
pub use routes::{assert_routes, check_routes, UnmatchedRouteKey};

mod n_plus_one;
pub use n_plus_one::{
    assert_flat, assert_no_repeated_statements, check_flat, counts_by_field, repeated_statements,
    FlatnessRun, NotFlat,
};

/// A response collected whole, with the snapshot of its request.
#[derive(Debug, Clone)]
pub struct TracedResponse {
    /// The response status.
    pub status: StatusCode,
    /// The response headers.
    pub headers: HeaderMap,
    /// The whole body.
    pub body: Bytes,
    /// Everything the request recorded, serialize included.
    pub snapshot: Snapshot,
    /// Each distinct statement the request ran, with its text and how
    /// often it ran, most runs first (kept by this test's recorder only).
    pub statements: Vec<StatementRuns>,
}

/// An error of the service or of its body while tracing one request.
#[derive(Debug)]
pub struct TracedRequestError(pub Box<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for TracedRequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "traced request failed: {}", self.0)
    }
}

impl std::error::Error for TracedRequestError {}

/// Serves `request` on `service` with a fresh recorder of schema `S` in scope
/// for the call and the whole body, and returns a [`TracedResponse`]: the
/// status, the headers, the whole body, and `snapshot`, what the request
/// recorded (a [`Snapshot`]: assert its counts, check a
/// [`Budget`](crate::budget::Budget) against it, or review it with
/// `assert_counts_snapshot!`).
///
/// A [`PerfTraceLayer`](crate::PerfTraceLayer) inside `service` reuses this
/// recorder rather than making its own, so the snapshot holds what the layer
/// records too (the endpoint class, `serialize`). Store calls, decisions and
/// phase counts in it are host-independent: assert budgets on them.
pub async fn perf_traced_request<S, Svc, ReqB, ResB>(
    service: Svc,
    request: Request<ReqB>,
) -> Result<TracedResponse, TracedRequestError>
where
    S: Schema,
    Svc: Service<Request<ReqB>, Response = Response<ResB>>,
    Svc::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    ResB: Body,
    ResB::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let recorder = Recorder::builder()
        .method(crate::layer::method_name(request.method()))
        .capture_statements()
        .build::<S>();
    let work = async move {
        let mut service = service;
        std::future::poll_fn(|cx| service.poll_ready(cx))
            .await
            .map_err(|e| TracedRequestError(e.into()))?;
        let response = service
            .call(request)
            .await
            .map_err(|e| TracedRequestError(e.into()))?;
        let (parts, body) = response.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|e| TracedRequestError(e.into()))?
            .to_bytes();
        Ok::<_, TracedRequestError>((parts, body))
    };
    let (parts, body) = recorder.instrument(work).await?;
    Ok(TracedResponse {
        status: parts.status,
        headers: parts.headers,
        body,
        snapshot: recorder.snapshot(),
        statements: recorder.statements(),
    })
}
