//! The outermost guards of every request: size limits checked before
//! anything reads the request, and the answer to a handler that panics.
//!
//! The HTTP parser has its own, much larger limits (more than 100 headers,
//! a path over 64 KiB); the server gives its answers to those a JSON body
//! too (see `crate::app::accept`).

use std::any::Any;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ApiError;

/// Longest path accepted, in bytes (percent-encoded, as sent).
pub(crate) const MAX_PATH_BYTES: usize = 2048;
/// Longest query string accepted, in bytes (percent-encoded, as sent).
pub(crate) const MAX_QUERY_BYTES: usize = 8192;
/// Most header bytes accepted (names and values together).
pub(crate) const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Refuses a request whose path or query string is too long (414) or whose
/// headers are too large (431), before authentication reads any of them.
pub(crate) async fn limit_request_size(request: Request, next: Next) -> Response {
    let uri = request.uri();
    if uri.path().len() > MAX_PATH_BYTES {
        return ApiError::new(StatusCode::URI_TOO_LONG, "request path too long").into_response();
    }
    if uri.query().map_or(0, str::len) > MAX_QUERY_BYTES {
        return ApiError::new(StatusCode::URI_TOO_LONG, "query string too long").into_response();
    }
    let header_bytes: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    if header_bytes > MAX_HEADER_BYTES {
        return ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "request headers too large",
        )
        .into_response();
    }
    next.run(request).await
}

/// The answer to a request whose handler panicked: a JSON 500 that says
/// nothing of the panic (its message may hold request data).
pub(crate) fn panic_response(_panic: Box<dyn Any + Send + 'static>) -> Response {
    ApiError::internal().into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::routing::get;
    use axum::Router;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    async fn status_of(request: axum::http::Request<Body>) -> (StatusCode, String) {
        let app = Router::new()
            .route("/x", get(|| async { "ok" }))
            .layer(axum::middleware::from_fn(limit_request_size));
        let response = app.oneshot(request).await.unwrap();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn long_queries_and_large_headers_are_json_errors() {
        let ok = Request::get("/x?a=1").body(Body::empty()).unwrap();
        assert_eq!(status_of(ok).await.0, StatusCode::OK);

        let query = "a".repeat(MAX_QUERY_BYTES + 1);
        let long = Request::get(format!("/x?{query}"))
            .body(Body::empty())
            .unwrap();
        let (status, body) = status_of(long).await;
        assert_eq!(status, StatusCode::URI_TOO_LONG);
        assert_eq!(body, r#"{"error":"query string too long"}"#);

        let big = Request::get("/x")
            .header("x-big", "v".repeat(MAX_HEADER_BYTES))
            .body(Body::empty())
            .unwrap();
        let (status, body) = status_of(big).await;
        assert_eq!(status, StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
        assert!(!body.contains("vvv"), "{body}");
    }
}
