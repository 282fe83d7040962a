//! Guards against clients that hold the Hub's resources: the request
//! timeout (a JSON 408 when a request has not produced its response in
//! time) and the caps on open event streams (a JSON 429 over the cap).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;

use super::ApiError;
use crate::model::PrincipalRef;

/// Answers 408 `{"error":"request timed out"}` (and closes the connection)
/// when the request has not produced its response head within `limit`. A
/// stream's body is not bounded: only the time to its first byte is. The
/// request's future is dropped, so its perf_trace line is still written.
pub(crate) async fn enforce_request_timeout(
    State(limit): State<Duration>,
    request: Request,
    next: Next,
) -> Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            let mut response =
                ApiError::new(StatusCode::REQUEST_TIMEOUT, "request timed out").into_response();
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            response
        }
    }
}

#[derive(Debug, Default)]
struct OpenStreams {
    total: usize,
    by_principal: HashMap<PrincipalRef, usize>,
}

/// Counts open event streams, in all and per principal, and refuses one
/// over either cap. Cheap to clone (the counts are shared).
#[derive(Debug, Clone)]
pub struct StreamLimiter {
    open: Arc<Mutex<OpenStreams>>,
    per_principal: usize,
    total: usize,
}

/// A stream over a cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StreamCapError {
    /// The principal already has its most streams open.
    #[error("too many event streams open for this caller")]
    PerPrincipal,
    /// The Hub already has its most streams open.
    #[error("too many event streams open")]
    Total,
}

impl From<StreamCapError> for ApiError {
    fn from(e: StreamCapError) -> Self {
        ApiError::new(StatusCode::TOO_MANY_REQUESTS, e.to_string())
    }
}

impl StreamLimiter {
    /// At most `per_principal` streams of one principal and `total` in all.
    pub fn new(per_principal: usize, total: usize) -> Self {
        StreamLimiter {
            open: Arc::default(),
            per_principal,
            total,
        }
    }

    /// Opens a stream for `who`; it counts until the permit is dropped.
    pub(crate) fn try_open(&self, who: &PrincipalRef) -> Result<StreamPermit, StreamCapError> {
        let mut open = self.open.lock();
        if open.total >= self.total {
            return Err(StreamCapError::Total);
        }
        let mine = open.by_principal.entry(who.clone()).or_insert(0);
        if *mine >= self.per_principal {
            return Err(StreamCapError::PerPrincipal);
        }
        *mine += 1;
        open.total += 1;
        Ok(StreamPermit {
            limiter: self.clone(),
            who: who.clone(),
        })
    }

    /// Streams open now.
    pub fn open(&self) -> usize {
        self.open.lock().total
    }
}

/// One open stream, counted until dropped.
#[derive(Debug)]
pub(crate) struct StreamPermit {
    limiter: StreamLimiter,
    who: PrincipalRef,
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        let mut open = self.limiter.open.lock();
        open.total -= 1;
        if let Some(mine) = open.by_principal.get_mut(&self.who) {
            *mine -= 1;
            if *mine == 0 {
                open.by_principal.remove(&self.who);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::routing::get;
    use axum::Router;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    #[test]
    fn streams_are_capped_per_principal_and_in_all_and_freed_on_drop() {
        let limiter = StreamLimiter::new(2, 3);
        let alice = PrincipalRef::user("a");
        let bob = PrincipalRef::user("b");
        let a1 = limiter.try_open(&alice).unwrap();
        let _a2 = limiter.try_open(&alice).unwrap();
        assert_eq!(
            limiter.try_open(&alice).unwrap_err(),
            StreamCapError::PerPrincipal
        );
        let _b1 = limiter.try_open(&bob).unwrap();
        assert_eq!(limiter.try_open(&bob).unwrap_err(), StreamCapError::Total);
        assert_eq!(limiter.open(), 3);
        drop(a1);
        assert_eq!(limiter.open(), 2);
        let _a3 = limiter.try_open(&alice).unwrap();
        let err = ApiError::from(StreamCapError::Total);
        assert_eq!(err.status(), StatusCode::TOO_MANY_REQUESTS);
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_request_is_answered_408_in_json() {
        let app = Router::new()
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    "late"
                }),
            )
            .route("/fast", get(|| async { "ok" }))
            .layer(axum::middleware::from_fn_with_state(
                Duration::from_secs(1),
                enforce_request_timeout,
            ));
        let slow = app
            .clone()
            .oneshot(Request::get("/slow").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(slow.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(slow.headers()[header::CONNECTION], "close");
        let body = slow.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], br#"{"error":"request timed out"}"#);
        let fast = app
            .oneshot(Request::get("/fast").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(fast.status(), StatusCode::OK);
    }
}
